"""Properties of the punctuation model (Tucker et al. 2003, §3.1), checked on
random patterns over a small numeric domain, NULL included."""

import doctest
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

import punctuated.declaration
import punctuated.model
from punctuated.model import (
    Constant,
    Empty,
    ListPattern,
    Punctuation,
    Range,
    Wildcard,
    combine,
    from_json,
    intersect,
    match,
    normalize,
    set_combine,
    set_match,
    to_json,
)

COLUMNS = ("a", "b")
BOUNDS = st.integers(-1, 4)
# tuple values: the bounds, points between them, a Decimal, and NULL
VALUES = st.one_of(
    st.none(),
    st.integers(-2, 5),
    st.sampled_from([0.5, 2.5, Decimal("1.5"), 3.0]),
)

patterns = st.one_of(
    st.just(Wildcard()),
    st.just(Empty()),
    BOUNDS.map(Constant),
    st.builds(
        Range,
        st.none() | BOUNDS,
        st.none() | BOUNDS,
        st.booleans(),
        st.booleans(),
    ),
    st.lists(BOUNDS, max_size=4).map(ListPattern),
)
punctuations = st.fixed_dictionaries({c: patterns for c in COLUMNS}).map(Punctuation)
tuples = st.fixed_dictionaries({c: VALUES for c in COLUMNS})


def matches_combined(t, p1, p2):
    c = combine(p1, p2)
    return c is not None and match(t, c)


@given(punctuations, punctuations, tuples)
def test_combine_is_intersection(p1, p2, t):
    """match(t, combine(p1, p2)) <=> match(t, p1) and match(t, p2); Ψ matches nothing."""
    assert matches_combined(t, p1, p2) == (match(t, p1) and match(t, p2))


@given(punctuations, punctuations)
def test_combine_is_commutative(p1, p2):
    assert combine(p1, p2) == combine(p2, p1)


@given(punctuations, punctuations, punctuations)
def test_combine_is_associative(p1, p2, p3):
    left = combine(p1, p2)
    right = combine(p2, p3)
    lhs = None if left is None else combine(left, p3)
    rhs = None if right is None else combine(p1, right)
    assert lhs == rhs


@given(punctuations, tuples)
def test_combine_with_itself_describes_the_same_tuples(p, t):
    assert matches_combined(t, p, p) == match(t, p)


@given(patterns)
def test_normalize_is_idempotent(p):
    n = normalize(p)
    assert normalize(n) == n


@given(patterns, VALUES)
def test_normalize_matches_the_same_values(p, v):
    assert normalize(p).matches(v) == p.matches(v)


@given(patterns)
def test_normal_forms(p):
    n = normalize(p)
    if isinstance(n, ListPattern):
        assert len(n.values) >= 2 and list(n.values) == sorted(set(n.values))
    if isinstance(n, Range) and n.lo is not None and n.hi is not None:
        assert n.lo < n.hi


@given(patterns, patterns)
def test_intersect_is_normalised(p, q):
    r = intersect(p, q)
    assert normalize(r) == r


@given(st.lists(punctuations, max_size=3), st.lists(punctuations, max_size=3), tuples)
def test_set_combine_is_intersection_of_unions(ps1, ps2, t):
    """Table 1: setCombine keeps every non-Ψ combination."""
    assert set_match(t, set_combine(ps1, ps2)) == (set_match(t, ps1) and set_match(t, ps2))


@given(punctuations)
def test_json_round_trip(p):
    assert from_json(to_json(p)) == p
    assert to_json(from_json(to_json(p))) == to_json(p)


@settings(max_examples=1)
@given(st.just(None))
def test_null_matches_only_the_wildcard(_):
    for p in (Constant(0), Range(), Range(hi=3), ListPattern([0, 1]), Empty()):
        assert not p.matches(None)
    assert Wildcard().matches(None)


def test_docstring_examples():
    for module in (punctuated.model, punctuated.declaration):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
        assert result.attempted > 0
