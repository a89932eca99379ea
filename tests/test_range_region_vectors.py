"""Range regions (punctuated.region): the shared vectors
(testdata/range_region_vectors.json, read by the scalatest suite too) and a
property test against the definition (Tucker et al. 2003, Table 1, setMatch):
a point is closed iff some added punctuation's corner is at or above it in
every range attribute."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punctuated.region import RangeRegion

VECTORS = json.loads((Path(__file__).resolve().parents[1] / "testdata" / "range_region_vectors.json")
                     .read_text(encoding="utf-8"))


def test_every_group_is_covered():
    assert set(VECTORS) == {"regions", "unions"} and all(VECTORS.values())


@pytest.mark.parametrize("case", VECTORS["regions"], ids=[c["name"] for c in VECTORS["regions"]])
def test_region(case):
    region = RangeRegion.of(case["directions"], case["add"])
    assert set(region.corners) == {tuple(c) for c in case["corners"]}
    for point, expected in case["covers"]:
        assert region.covers(point) is expected, point


@pytest.mark.parametrize("case", VECTORS["unions"], ids=[c["name"] for c in VECTORS["unions"]])
def test_union(case):
    a, b = (RangeRegion.of(case["directions"], case[k]) for k in ("a", "b"))
    union = a.union(b)
    assert set(union.corners) == {tuple(c) for c in case["corners"]}
    assert a.contains(b) is case["a_contains_b"]
    assert union.contains(a) is case["union_contains_a"] and union.contains(b)
    assert union == b.union(a)
    both = a.intersect(b)
    assert set(both.corners) == {tuple(c) for c in case["intersection"]}
    assert a.contains(both) and b.contains(both) and both == b.intersect(a)


def test_bad_input_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="no range attribute"):
        RangeRegion(())
    with pytest.raises(ValueError, match="got '<'"):
        RangeRegion(("<",))
    with pytest.raises(ValueError, match="a point of 1 values in a region of 2"):
        RangeRegion(("<=", "<=")).covers((1,))


directions = st.lists(st.sampled_from(["<=", ">="]), min_size=1, max_size=3)


@settings(max_examples=300, deadline=None)
@given(directions.flatmap(lambda ds: st.tuples(
    st.just(tuple(ds)),
    st.lists(st.tuples(*[st.integers(0, 6)] * len(ds)), max_size=8),
    st.lists(st.tuples(*[st.integers(-1, 7)] * len(ds)), min_size=1, max_size=20))))
def test_region_is_the_union_of_the_added_down_sets(case):
    ds, added, points = case
    region = RangeRegion.of(ds, added)

    def below(p, c):
        return all((x <= y) if d == "<=" else (x >= y) for d, x, y in zip(ds, p, c))

    for p in points:
        assert region.covers(p) == any(below(p, c) for c in added), (p, added)
    # the corners are maximal: none is below another, and each is one of those added
    assert all(not below(a, b) for a in region.corners for b in region.corners if a != b)
    assert set(region.corners) <= {tuple(c) for c in added}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=6),
       st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=6),
       st.lists(st.tuples(st.integers(-1, 7), st.integers(-1, 7)), min_size=1, max_size=20))
def test_intersection_closes_what_both_close(a, b, points):
    ra, rb = RangeRegion.of(("<=", ">="), a), RangeRegion.of(("<=", ">="), b)
    both = ra.intersect(rb)
    for p in points:
        assert both.covers(p) == (ra.covers(p) and rb.covers(p)), (p, a, b)
