"""The values of a scheme's range attributes that its punctuations closed.

Tucker et al. 2003, section 3 and Table 1 (``setMatch``): a set of punctuations
excludes the union of the tuples each one matches.  A punctuation of a scheme
with range attributes ``a1<=, ..., ak<=`` (a ``>=`` attribute compares in the
reversed order) has one bound per range attribute, its *corner*; it closes
every point at or below the corner in every attribute.  The union of those
down-sets is described exactly by its maximal corners (the Pareto staircase):
one corner, the greatest bound, for one range attribute; a staircase for two.

>>> r = RangeRegion.of(("<=", "<="), [(3, 10), (5, 4), (2, 8)])
>>> r.corners
((3, 10), (5, 4))
>>> r.covers((3, 9)), r.covers((4, 9)), r.covers((5, 4))
(True, False, True)

Mirrors ``punctuated.model.RangeRegion`` in Scala; the shared vectors
``testdata/range_region_vectors.json`` hold both to the same cases.  Pure
Python, no pyspark.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence, Tuple

from punctuated.model import compare_values

__all__ = ["RangeRegion"]

DIRECTIONS = ("<=", ">=")


def _below(directions: Sequence[str], point: Sequence[Any], corner: Sequence[Any]) -> bool:
    """Is ``point`` at or below ``corner`` in every attribute (``>=``: reversed order)?

    >>> _below(("<=", ">="), (1, 9), (2, 5))
    True
    """
    for d, p, c in zip(directions, point, corner):
        cmp = compare_values(p, c)
        if (cmp > 0) if d == "<=" else (cmp < 0):
            return False
    return True


class RangeRegion:
    """The maximal corners closed so far over range attributes with these directions.

    Immutable: :meth:`add` and :meth:`union` return a new region.
    """

    __slots__ = ("directions", "corners")

    def __init__(self, directions: Sequence[str], corners: Tuple[Tuple[Any, ...], ...] = ()):
        if not directions:
            raise ValueError("a region over no range attribute")
        bad = [d for d in directions if d not in DIRECTIONS]
        if bad:
            raise ValueError(f"range directions are '<=' or '>=', got {bad[0]!r}")
        self.directions = tuple(directions)
        self.corners = tuple(tuple(c) for c in corners)

    @classmethod
    def of(cls, directions: Sequence[str], corners: Iterable[Sequence[Any]]) -> "RangeRegion":
        """The region closed by punctuations with these corners, added in order."""
        region = cls(directions)
        for c in corners:
            region = region.add(c)
        return region

    def _check(self, point: Sequence[Any], what: str) -> None:
        if len(point) != len(self.directions):
            raise ValueError(f"a {what} of {len(point)} values in a region of {len(self.directions)}")

    def covers(self, point: Sequence[Any]) -> bool:
        """Is ``point`` closed (at or below some corner)?  A NULL (None) value never is."""
        self._check(point, "point")
        return all(v is not None for v in point) and any(
            _below(self.directions, point, c) for c in self.corners
        )

    def contains(self, other: "RangeRegion") -> bool:
        """Does this region close everything ``other`` closes?"""
        return all(self.covers(c) for c in other.corners)

    def add(self, corner: Sequence[Any]) -> "RangeRegion":
        """The region once a punctuation with this corner is added (corners it covers dropped)."""
        self._check(corner, "corner")
        corner = tuple(corner)
        if any(v is None for v in corner) or self.covers(corner):
            return self
        kept = tuple(c for c in self.corners if not _below(self.directions, c, corner))
        return RangeRegion(self.directions, kept + (corner,))

    def union(self, other: "RangeRegion") -> "RangeRegion":
        """The union of two regions over the same attributes."""
        region = self
        for c in other.corners:
            region = region.add(c)
        return region

    def intersect(self, other: "RangeRegion") -> "RangeRegion":
        """What both regions close: over each pair of corners, the corner of their smaller values.

        >>> RangeRegion.of(("<=", "<="), [(3, 10), (5, 4)]).intersect(RangeRegion.of(("<=", "<="), [(4, 8)])).corners
        ((3, 8), (4, 4))
        """
        def smaller(a: Sequence[Any], b: Sequence[Any]) -> Tuple[Any, ...]:
            return tuple(x if ((compare_values(x, y) <= 0) == (d == "<=")) else y
                         for d, x, y in zip(self.directions, a, b))
        return RangeRegion.of(self.directions, [smaller(a, b) for a in self.corners for b in other.corners])

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, RangeRegion) and self.directions == other.directions
                and set(self.corners) == set(other.corners))

    def __hash__(self) -> int:
        return hash((self.directions, frozenset(self.corners)))

    def __repr__(self) -> str:
        return f"RangeRegion({self.directions!r}, {self.corners!r})"
