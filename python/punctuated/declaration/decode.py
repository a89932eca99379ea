"""Decoding of rows: the punctuation a punctuation row (marker true) stands for
(:func:`punctuation_of`), and the one a data row implies through its unique key
(:func:`unique_punctuation_of`), as :class:`punctuated.model.Punctuation` s.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from punctuated.declaration.types import (  # noqa: F401 (examples)
    RANGE,
    RANGE_AT_LEAST,
    Declaration,
    Scheme,
    SchemeAttribute,
)
from punctuated.model import WILDCARD, Constant, Punctuation, Range


def _row_values(columns: Sequence[str], row: Any) -> dict:
    if isinstance(row, Mapping):
        return {c: row.get(c) for c in columns}
    if hasattr(row, "asDict"):  # pyspark.sql.Row, without importing pyspark
        d = row.asDict()
        return {c: d.get(c) for c in columns}
    values = list(row)
    if len(values) != len(columns):
        raise ValueError(f"row has {len(values)} values for {len(columns)} columns")
    return dict(zip(columns, values))


def _column_of(declared: str, columns: Sequence[str]) -> str:
    if declared in columns:
        return declared
    for c in columns:
        if c.lower() == declared.lower():
            return c
    raise ValueError(f"declared column {declared!r} is not among the row's columns {list(columns)}")


def punctuation_of(declaration: Declaration, columns: Sequence[str], row: Any) -> Optional[Punctuation]:
    """The punctuation a punctuation row (marker true) stands for, or
    ``None`` when the row is an *invalid punctuation*.

    User contract, "Declaring punctuation schemes": in a punctuation row the
    attributes of one scheme are set and every other column except the
    marker is NULL (a wildcard).  The scheme is the one whose attribute set
    equals the set of the row's non-NULL, non-marker columns (the first one
    declared: only the unique key may share a declared scheme's columns); a constant attribute gives
    ``Constant(value)``, an ``attr<=`` one ``Range(hi=value)`` inclusive, an ``attr>=`` one
    ``Range(lo=value)`` inclusive.
    ``row`` is a mapping, a ``Row`` or a sequence aligned with ``columns``;
    the result has every non-marker column.

    >>> d = Declaration((Scheme((SchemeAttribute("auction"),)),
    ...                  Scheme((SchemeAttribute("bidder"), SchemeAttribute("day", RANGE)))), "p")
    >>> punctuation_of(d, ["auction", "bidder", "day", "p"], [None, 7, 17, True])
    Punctuation({auction: *, bidder: Constant(7), day: (-inf, 17]})
    >>> punctuation_of(d, ["auction", "bidder", "day", "p"], [None, 7, None, True]) is None
    True
    """
    if declaration.marker is None:
        raise ValueError("the declaration has no marker: no row is a punctuation")
    values = _row_values(columns, row)
    marker = _column_of(declaration.marker, columns)
    if values.get(marker) is not True:
        raise ValueError(f"not a punctuation row: marker {marker!r} is {values.get(marker)!r}")
    given = frozenset(c for c in columns if c != marker and values[c] is not None)
    for scheme in declaration.punctuation_schemes():
        kinds = {_column_of(a.attr, columns): a.kind for a in scheme.attributes}
        if frozenset(kinds) == given:
            out = []
            for c in columns:
                if c == marker:
                    continue
                if c not in kinds:
                    out.append((c, WILDCARD))
                elif kinds[c] == RANGE:
                    out.append((c, Range.at_most(values[c])))
                elif kinds[c] == RANGE_AT_LEAST:
                    out.append((c, Range.at_least(values[c])))
                else:
                    out.append((c, Constant(values[c])))
            return Punctuation(out)
    return None


def unique_punctuation_of(declaration: Declaration, columns: Sequence[str], row: Any) -> Punctuation:
    """The punctuation a data row implies through ``punctuated.unique``
    ("no more rows with these values", Li et al. §1, user contract): the
    key's values as constants, every other non-marker column a wildcard.

    >>> unique_punctuation_of(Declaration(unique=("id",)), ["id", "seller"], [3, 9])
    Punctuation({id: Constant(3), seller: *})
    """
    if not declaration.unique:
        raise ValueError("the declaration has no unique key")
    values = _row_values(columns, row)
    key = {_column_of(a, columns) for a in declaration.unique}
    marker = _column_of(declaration.marker, columns) if declaration.marker else None
    for k in key:
        if values[k] is None:
            raise ValueError(f"unique key column {k!r} is NULL: the row implies no punctuation")
    return Punctuation(
        (c, Constant(values[c]) if c in key else WILDCARD) for c in columns if c != marker
    )
