"""The punctuation model of Tucker et al. 2003, section 3 and 3.1.

A *punctuation* is "an ordered set of patterns, each pattern corresponding to
an attribute of a tuple" and describes the tuples that will no longer appear
in the stream.  Five kinds of pattern (section 3):

* :class:`Wildcard` (``*``) matches all values, NULL included;
* :class:`Constant` matches one value;
* :class:`Range` matches the values between two bounds, each inclusive
  (``[a, b]``), exclusive (``(a, b)``) or absent (unbounded);
* :class:`ListPattern` (``{a, b, c}``) matches the values listed;
* :class:`Empty` (``∅``) matches nothing.

Section 3.1 defines ``match(t, p)`` and ``combine(p1, p2)`` (the intersection
of the tuple sets of two punctuations, or Ψ -- here ``None`` -- when it is
empty) with the law::

    match(t, combine(p1, p2)) <=> match(t, p1) and match(t, p2)

and Table 1 derives the helpers :func:`nomatch`, :func:`set_match`,
:func:`set_nomatch`, :func:`set_match_ts`, :func:`set_nomatch_ts`,
:func:`set_nomatch_ps` and :func:`set_combine`.

Values are those Spark hands to Python: ``int``, ``float`` and
``decimal.Decimal`` compare numerically with each other, ``str`` by code point,
``datetime.date``/``datetime.datetime`` chronologically; ``None`` is SQL NULL
and matches only the wildcard (user contract, "Semantics of punctuations": a
NULL column of a punctuation row is a wildcard, and a NULL value of a data row
is equal to no value).  Floating NaN follows Spark: NaN equals NaN and is
greater than every other number.

The JSON form (:func:`to_json` / :func:`from_json`) is the one of the shared
test vectors ``testdata/punctuation_vectors.json`` (see
``testdata/README.md``), so that this module and the Scala implementation
can be checked against the same cases.

This module is pure Python and never imports pyspark.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence, Tuple, Union

__all__ = [
    "Pattern",
    "Wildcard",
    "Constant",
    "Range",
    "ListPattern",
    "Empty",
    "WILDCARD",
    "EMPTY",
    "Punctuation",
    "compare_values",
    "matches",
    "intersect",
    "normalize",
    "match",
    "nomatch",
    "combine",
    "set_match",
    "set_nomatch",
    "set_match_ts",
    "set_nomatch_ts",
    "set_nomatch_ps",
    "set_combine",
    "tups",
    "puncts",
    "pattern_to_json",
    "pattern_from_json",
    "punctuation_to_json",
    "punctuation_from_json",
    "to_json",
    "from_json",
]


# --------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------


def _is_nan(v: Any) -> bool:
    if isinstance(v, float):
        return math.isnan(v)
    if isinstance(v, Decimal):
        return v.is_nan()
    return False


def compare_values(a: Any, b: Any) -> int:
    """Three-way comparison of two non-NULL values: -1, 0 or 1.

    Numbers (``int``, ``float``, ``Decimal``) compare numerically, strings by
    code point; NaN equals NaN and is above every other number (as in Spark).

    >>> compare_values(2, 2.0), compare_values(1, Decimal("1.5")), compare_values("b", "a")
    (0, -1, 1)
    >>> compare_values(float("nan"), 1e308)
    1
    """
    if a is None or b is None:
        raise TypeError("NULL has no order: it matches only the wildcard")
    a_nan, b_nan = _is_nan(a), _is_nan(b)
    if a_nan or b_nan:
        return (a_nan > b_nan) - (a_nan < b_nan)
    try:
        if a == b:
            return 0
        return -1 if a < b else 1
    except TypeError:
        raise TypeError(
            f"cannot compare {a!r} ({type(a).__name__}) with {b!r} "
            f"({type(b).__name__}): one column holds values of one type"
        ) from None


_sort_key = functools.cmp_to_key(compare_values)


def _sorted_distinct(values: Iterable[Any]) -> Tuple[Any, ...]:
    out: list = []
    for v in sorted(values, key=_sort_key):
        if not out or compare_values(out[-1], v) != 0:
            out.append(v)
    return tuple(out)


def _check_value(v: Any, what: str) -> None:
    if v is None:
        raise ValueError(f"{what} cannot be NULL (None): NULL matches only the wildcard")


# --------------------------------------------------------------------------
# Patterns (section 3)
# --------------------------------------------------------------------------


class Pattern:
    """Base of the five pattern kinds; immutable, compared by value."""

    kind: str = ""

    __slots__ = ()

    def matches(self, value: Any) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclass(frozen=True)
class Wildcard(Pattern):
    """``*``: matches every value, NULL included.

    >>> Wildcard().matches(None)
    True
    """

    kind = "wildcard"

    def matches(self, value: Any) -> bool:
        return True

    def __repr__(self) -> str:
        return "*"


@dataclass(frozen=True)
class Empty(Pattern):
    """``∅``: matches no value.

    >>> Empty().matches(1)
    False
    """

    kind = "empty"

    def matches(self, value: Any) -> bool:
        return False

    def __repr__(self) -> str:
        return "∅"


@dataclass(frozen=True)
class Constant(Pattern):
    """A single value; matches only that value (never NULL).

    >>> Constant(42).matches(42), Constant(42).matches(42.0), Constant(42).matches(None)
    (True, True, False)
    """

    value: Any
    kind = "constant"

    def __post_init__(self) -> None:
        _check_value(self.value, "a constant pattern")

    def matches(self, value: Any) -> bool:
        return value is not None and compare_values(value, self.value) == 0

    def __repr__(self) -> str:
        return f"Constant({self.value!r})"


@dataclass(frozen=True)
class Range(Pattern):
    """Values between ``lo`` and ``hi``; a ``None`` bound is unbounded.

    ``lo_inclusive``/``hi_inclusive`` give ``[a, b]`` (True) or ``(a, b)``
    (False); the flag of an absent bound is always False.  A range never
    matches NULL, not even an unbounded one.

    >>> r = Range(hi=17)                 # the scheme ``day<=`` with value 17
    >>> r.matches(17), r.matches(18), r.matches(None)
    (True, False, False)
    >>> Range(3, 10, lo_inclusive=False).matches(3)
    False
    """

    lo: Any = None
    hi: Any = None
    lo_inclusive: bool = True
    hi_inclusive: bool = True
    kind = "range"

    def __post_init__(self) -> None:
        if self.lo is None:
            object.__setattr__(self, "lo_inclusive", False)
        if self.hi is None:
            object.__setattr__(self, "hi_inclusive", False)
        object.__setattr__(self, "lo_inclusive", bool(self.lo_inclusive))
        object.__setattr__(self, "hi_inclusive", bool(self.hi_inclusive))

    @staticmethod
    def at_most(hi: Any) -> "Range":
        """``(-inf, hi]``: what a punctuation of an ``attr<=`` scheme says.

        >>> Range.at_most(5) == Range(None, 5, False, True)
        True
        """
        _check_value(hi, "a range bound from a punctuation")
        return Range(hi=hi, hi_inclusive=True)

    @staticmethod
    def at_least(lo: Any) -> "Range":
        """``[lo, +inf)``: what a punctuation of an ``attr>=`` scheme says.

        >>> Range.at_least(5) == Range(5, None, True, False)
        True
        """
        _check_value(lo, "a range bound from a punctuation")
        return Range(lo=lo, lo_inclusive=True)

    def matches(self, value: Any) -> bool:
        if value is None:
            return False
        if self.lo is not None:
            c = compare_values(value, self.lo)
            if c < 0 or (c == 0 and not self.lo_inclusive):
                return False
        if self.hi is not None:
            c = compare_values(value, self.hi)
            if c > 0 or (c == 0 and not self.hi_inclusive):
                return False
        return True

    def __repr__(self) -> str:
        lo = "-inf" if self.lo is None else repr(self.lo)
        hi = "+inf" if self.hi is None else repr(self.hi)
        return f"{'[' if self.lo_inclusive else '('}{lo}, {hi}{']' if self.hi_inclusive else ')'}"


@dataclass(frozen=True)
class ListPattern(Pattern):
    """``{a, b, c}``: matches the values listed (kept as given; see
    :func:`normalize` for the sorted, distinct form).

    >>> ListPattern([1001, 2004]).matches(2004)
    True
    """

    values: Tuple[Any, ...] = ()
    kind = "list"

    def __post_init__(self) -> None:
        values = tuple(self.values)
        for v in values:
            _check_value(v, "a list pattern value")
        object.__setattr__(self, "values", values)

    def matches(self, value: Any) -> bool:
        return value is not None and any(compare_values(value, v) == 0 for v in self.values)

    def __repr__(self) -> str:
        return "{" + ", ".join(repr(v) for v in self.values) + "}"


WILDCARD = Wildcard()
EMPTY = Empty()


def matches(pattern: Pattern, value: Any) -> bool:
    """Does one attribute value match one pattern?

    >>> matches(ListPattern([1, 3]), 2)
    False
    """
    return pattern.matches(value)


def normalize(pattern: Pattern) -> Pattern:
    """The canonical form of a pattern (testdata/README.md, ``combine``).

    A list becomes sorted and distinct, a list of one value a constant, an
    empty list ``empty``; a closed range ``[a, a]`` becomes a constant and a
    range holding no value ``empty``.  Idempotent; matches the same values.

    >>> normalize(ListPattern([3, 1, 3]))
    {1, 3}
    >>> normalize(ListPattern([7])), normalize(ListPattern([]))
    (Constant(7), ∅)
    >>> normalize(Range(3, 3)), normalize(Range(3, 3, True, False)), normalize(Range(5, 2))
    (Constant(3), ∅, ∅)
    """
    if isinstance(pattern, ListPattern):
        values = _sorted_distinct(pattern.values)
        if not values:
            return EMPTY
        if len(values) == 1:
            return Constant(values[0])
        return ListPattern(values)
    if isinstance(pattern, Range):
        if pattern.lo is not None and pattern.hi is not None:
            c = compare_values(pattern.lo, pattern.hi)
            if c > 0:
                return EMPTY
            if c == 0:
                if pattern.lo_inclusive and pattern.hi_inclusive:
                    return Constant(pattern.lo)
                return EMPTY
        return pattern
    if isinstance(pattern, (Wildcard, Empty, Constant)):
        return pattern
    raise TypeError(f"not a pattern: {pattern!r}")


def _tighter_lo(a: Range, b: Range) -> Tuple[Any, bool]:
    if a.lo is None:
        return b.lo, b.lo_inclusive
    if b.lo is None:
        return a.lo, a.lo_inclusive
    c = compare_values(a.lo, b.lo)
    if c > 0:
        return a.lo, a.lo_inclusive
    if c < 0:
        return b.lo, b.lo_inclusive
    return a.lo, a.lo_inclusive and b.lo_inclusive


def _tighter_hi(a: Range, b: Range) -> Tuple[Any, bool]:
    if a.hi is None:
        return b.hi, b.hi_inclusive
    if b.hi is None:
        return a.hi, a.hi_inclusive
    c = compare_values(a.hi, b.hi)
    if c < 0:
        return a.hi, a.hi_inclusive
    if c > 0:
        return b.hi, b.hi_inclusive
    return a.hi, a.hi_inclusive and b.hi_inclusive


def intersect(a: Pattern, b: Pattern) -> Pattern:
    """The normalised pattern matching exactly the values both match.

    >>> intersect(Range(1, 10), Range(5, 20, True, False))
    [5, 10]
    >>> intersect(ListPattern([1, 5, 9, 12]), Range(5, 10))
    {5, 9}
    >>> intersect(Constant(10), Range(hi=10, hi_inclusive=False))
    ∅
    """
    if isinstance(a, Empty) or isinstance(b, Empty):
        return EMPTY
    if isinstance(a, Wildcard):
        return normalize(b)
    if isinstance(b, Wildcard):
        return normalize(a)
    if isinstance(a, Constant):
        return a if b.matches(a.value) else EMPTY
    if isinstance(b, Constant):
        return b if a.matches(b.value) else EMPTY
    if isinstance(a, ListPattern):
        return normalize(ListPattern(v for v in a.values if b.matches(v)))
    if isinstance(b, ListPattern):
        return normalize(ListPattern(v for v in b.values if a.matches(v)))
    if isinstance(a, Range) and isinstance(b, Range):
        lo, lo_inc = _tighter_lo(a, b)
        hi, hi_inc = _tighter_hi(a, b)
        return normalize(Range(lo, hi, lo_inc, hi_inc))
    raise TypeError(f"not patterns: {a!r}, {b!r}")


# --------------------------------------------------------------------------
# Punctuations
# --------------------------------------------------------------------------


class Punctuation(Mapping[str, Pattern]):
    """A punctuation: column -> pattern; a column not given is a wildcard.

    The columns given are kept in order (``to_json`` renders them all, explicit
    wildcards included), but equality and hashing ignore wildcards: two
    punctuations are equal when they put the same patterns on the same
    columns.  Immutable.

    >>> p = Punctuation({"auction": Constant(42), "bidder": WILDCARD})
    >>> p["auction"], p["price"], p == Punctuation({"auction": Constant(42)})
    (Constant(42), *, True)
    >>> list(p)
    ['auction', 'bidder']
    """

    __slots__ = ("_patterns",)

    def __init__(self, patterns: Union[Mapping[str, Pattern], Iterable[Tuple[str, Pattern]]] = ()):
        items = patterns.items() if isinstance(patterns, Mapping) else patterns
        d: dict = {}
        for col, pat in items:
            if not isinstance(col, str):
                raise TypeError(f"column names are strings, got {col!r}")
            if not isinstance(pat, Pattern):
                raise TypeError(f"column {col!r}: not a pattern: {pat!r}")
            if col in d:
                raise ValueError(f"column {col!r} given twice")
            d[col] = pat
        self._patterns = d

    def __getitem__(self, column: str) -> Pattern:
        return self._patterns.get(column, WILDCARD)

    def __contains__(self, column: object) -> bool:
        return column in self._patterns

    def __iter__(self) -> Iterator[str]:
        return iter(self._patterns)

    def __len__(self) -> int:
        return len(self._patterns)

    def constrained(self) -> dict:
        """The columns whose pattern is not the wildcard.

        >>> Punctuation({"a": WILDCARD, "b": Constant(1)}).constrained()
        {'b': Constant(1)}
        """
        return {c: p for c, p in self._patterns.items() if not isinstance(p, Wildcard)}

    def is_empty(self) -> bool:
        """True when some pattern is empty, so that no tuple matches.

        >>> Punctuation({"a": EMPTY}).is_empty()
        True
        """
        return any(isinstance(p, Empty) for p in self._patterns.values())

    def normalized(self) -> "Punctuation":
        """Each pattern normalised (see :func:`normalize`)."""
        return Punctuation((c, normalize(p)) for c, p in self._patterns.items())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Punctuation):
            return NotImplemented
        return self.constrained() == other.constrained()

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(frozenset(self.constrained().items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{c}: {p!r}" for c, p in self._patterns.items())
        return f"Punctuation({{{inner}}})"


def _value_of(t: Any, column: str) -> Any:
    """``t[column]`` for a mapping or a ``pyspark.sql.Row``."""
    return t[column]


def match(t: Any, p: Punctuation) -> bool:
    """Does tuple ``t`` (column -> value: a mapping or a Row) belong to ``p``?

    Every attribute must match its pattern (section 3); only the columns ``p``
    constrains are read.

    >>> p = Punctuation({"a": Constant(42), "b": WILDCARD})
    >>> match({"a": 42, "b": 7}, p), match({"a": None, "b": 7}, p)
    (True, False)
    """
    return all(pat.matches(_value_of(t, col)) for col, pat in p.constrained().items())


def nomatch(t: Any, p: Punctuation) -> bool:
    """Table 1: ``not match(t, p)``.

    >>> nomatch({"a": 1}, Punctuation({"a": Constant(2)}))
    True
    """
    return not match(t, p)


def combine(p1: Punctuation, p2: Punctuation) -> Optional[Punctuation]:
    """Section 3.1: the punctuation describing the tuples both describe, or
    ``None`` for Ψ when no tuple is described by both.

    Patterns are intersected column by column and normalised; the result has
    the columns of ``p1`` then those only in ``p2``.

    >>> combine(Punctuation({"a": WILDCARD, "b": Constant(1)}),
    ...         Punctuation({"a": Constant(5), "b": WILDCARD}))
    Punctuation({a: Constant(5), b: Constant(1)})
    >>> combine(Punctuation({"a": Constant(5)}), Punctuation({"a": Constant(6)})) is None
    True
    """
    columns = list(p1) + [c for c in p2 if c not in p1]
    out = []
    for col in columns:
        pat = intersect(p1[col], p2[col])
        if isinstance(pat, Empty):
            return None
        out.append((col, pat))
    return Punctuation(out)


# --------------------------------------------------------------------------
# Table 1 helpers
# --------------------------------------------------------------------------


def set_match(t: Any, ps: Iterable[Punctuation]) -> bool:
    """Table 1 ``setMatch``: True if ``t`` matches any ``p`` in ``ps``.

    >>> set_match({"a": 1}, [Punctuation({"a": Constant(2)}), Punctuation({"a": Constant(1)})])
    True
    """
    return any(match(t, p) for p in ps)


def set_nomatch(t: Any, ps: Iterable[Punctuation]) -> bool:
    """Table 1 ``setNomatch``: True if ``t`` matches no ``p`` in ``ps``.

    >>> set_nomatch({"a": 1}, [])
    True
    """
    return not set_match(t, ps)


def set_match_ts(ts: Iterable[Any], ps: Sequence[Punctuation]) -> list:
    """Table 1 ``setMatchTs``: the tuples of ``ts`` that match some ``p``.

    >>> set_match_ts([{"a": 1}, {"a": 2}], [Punctuation({"a": Constant(2)})])
    [{'a': 2}]
    """
    ps = list(ps)
    return [t for t in ts if set_match(t, ps)]


def set_nomatch_ts(ts: Iterable[Any], ps: Sequence[Punctuation]) -> list:
    """Table 1 ``setNomatchTs``: the tuples of ``ts`` matching no ``p``.

    >>> set_nomatch_ts([{"a": 1}, {"a": 2}], [Punctuation({"a": Constant(2)})])
    [{'a': 1}]
    """
    ps = list(ps)
    return [t for t in ts if set_nomatch(t, ps)]


def set_nomatch_ps(ts: Sequence[Any], ps: Iterable[Punctuation]) -> list:
    """Table 1 ``setNomatchPs``: the punctuations of ``ps`` no tuple of ``ts`` matches.

    >>> set_nomatch_ps([{"a": 1}], [Punctuation({"a": Constant(1)}), Punctuation({"a": Constant(2)})])
    [Punctuation({a: Constant(2)})]
    """
    ts = list(ts)
    return [p for p in ps if not any(match(t, p) for t in ts)]


def set_combine(ps1: Iterable[Punctuation], ps2: Iterable[Punctuation]) -> list:
    """Table 1 ``setCombine``: all non-Ψ combinations of a ``p1`` in ``ps1``
    with a ``p2`` in ``ps2`` (in the order of ``ps1``, then ``ps2``).

    >>> set_combine([Punctuation({"a": Range(hi=5)})],
    ...             [Punctuation({"a": Constant(3)}), Punctuation({"a": Constant(9)})])
    [Punctuation({a: Constant(3)})]
    """
    ps2 = list(ps2)
    out = []
    for p1 in ps1:
        for p2 in ps2:
            c = combine(p1, p2)
            if c is not None:
                out.append(c)
    return out


def tups(elements: Iterable[Any]) -> list:
    """Section 3.1 ``tups``: the tuples of a mixed list of stream elements.

    >>> tups([{"a": 1}, Punctuation({"a": Constant(1)})])
    [{'a': 1}]
    """
    return [e for e in elements if not isinstance(e, Punctuation)]


def puncts(elements: Iterable[Any]) -> list:
    """Section 3.1 ``puncts``: the punctuations of a mixed list of stream elements.

    >>> puncts([{"a": 1}, Punctuation({"a": Constant(1)})])
    [Punctuation({a: Constant(1)})]
    """
    return [e for e in elements if isinstance(e, Punctuation)]


# --------------------------------------------------------------------------
# JSON (format of testdata/punctuation_vectors.json)
# --------------------------------------------------------------------------


def pattern_to_json(p: Pattern) -> dict:
    """A pattern as a JSON-ready dict (values are left as they are).

    >>> pattern_to_json(Range(hi=17))
    {'kind': 'range', 'lo': None, 'loInclusive': False, 'hi': 17, 'hiInclusive': True}
    """
    if isinstance(p, Wildcard):
        return {"kind": "wildcard"}
    if isinstance(p, Empty):
        return {"kind": "empty"}
    if isinstance(p, Constant):
        return {"kind": "constant", "value": p.value}
    if isinstance(p, Range):
        return {
            "kind": "range",
            "lo": p.lo,
            "loInclusive": p.lo_inclusive,
            "hi": p.hi,
            "hiInclusive": p.hi_inclusive,
        }
    if isinstance(p, ListPattern):
        return {"kind": "list", "values": list(p.values)}
    raise TypeError(f"not a pattern: {p!r}")


def _require(d: Mapping[str, Any], key: str) -> Any:
    if key not in d:
        raise ValueError(f"pattern {dict(d)!r} lacks {key!r}")
    return d[key]


def pattern_from_json(d: Mapping[str, Any]) -> Pattern:
    """A pattern from its JSON dict.

    >>> pattern_from_json({"kind": "list", "values": [1, 2004]})
    {1, 2004}
    """
    kind = d.get("kind") if isinstance(d, Mapping) else None
    if kind == "wildcard":
        return WILDCARD
    if kind == "empty":
        return EMPTY
    if kind == "constant":
        return Constant(_require(d, "value"))
    if kind == "range":
        lo, hi = _require(d, "lo"), _require(d, "hi")
        lo_inc = bool(_require(d, "loInclusive")) if lo is not None else False
        hi_inc = bool(_require(d, "hiInclusive")) if hi is not None else False
        return Range(lo, hi, lo_inc, hi_inc)
    if kind == "list":
        return ListPattern(_require(d, "values"))
    raise ValueError(f"not a pattern: {d!r} (kind is wildcard, constant, range, list or empty)")


def punctuation_to_json(p: Punctuation) -> dict:
    """A punctuation as ``{column: pattern}``, every given column included.

    >>> punctuation_to_json(Punctuation({"a": Constant(1), "b": WILDCARD}))
    {'a': {'kind': 'constant', 'value': 1}, 'b': {'kind': 'wildcard'}}
    """
    return {c: pattern_to_json(pat) for c, pat in p._patterns.items()}


def punctuation_from_json(d: Mapping[str, Any]) -> Punctuation:
    """A punctuation from ``{column: pattern}``.

    >>> punctuation_from_json({"a": {"kind": "constant", "value": 42}})
    Punctuation({a: Constant(42)})
    """
    return Punctuation((c, pattern_from_json(v)) for c, v in d.items())


def _is_pattern_json(d: Any) -> bool:
    return isinstance(d, Mapping) and isinstance(d.get("kind"), str)


def to_json(obj: Union[Pattern, Punctuation, None]) -> Any:
    """A pattern, a punctuation or Ψ (``None``) in the vectors' JSON form.

    >>> to_json(None), to_json(WILDCARD)
    (None, {'kind': 'wildcard'})
    """
    if obj is None:
        return None
    if isinstance(obj, Punctuation):
        return punctuation_to_json(obj)
    return pattern_to_json(obj)


def from_json(d: Any) -> Union[Pattern, Punctuation, None]:
    """Inverse of :func:`to_json`: a dict with a string ``kind`` is a pattern,
    any other dict a punctuation, ``None`` is Ψ.

    >>> from_json({"a": {"kind": "wildcard"}})
    Punctuation({a: *})
    """
    if d is None:
        return None
    if _is_pattern_json(d):
        return pattern_from_json(d)
    if isinstance(d, Mapping):
        return punctuation_from_json(d)
    raise ValueError(f"not a pattern or punctuation: {d!r}")
