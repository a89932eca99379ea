"""Resolution: ``punctuated.*`` properties and a table's columns to a :class:`Declaration`
(:func:`parse_declaration`), in the Scala resolver's order of checks (first error wins,
``testdata/README.md``): an unknown ``punctuated.*`` property, the marker, the schemes,
then the unique key. Names resolve case-insensitively to the schema's spelling.

>>> resolve_declaration("bids", {"punctuated.schemes": "`Bid ID`", "punctuated.marker": "p"},
...                     [("bid id", "BIGINT"), ("p", "BOOLEAN")]).schemes[0].names
('bid id',)
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Tuple

from punctuated.declaration.errors import DeclarationError, _Problem, _error, _shorten
from punctuated.declaration.text import _RawAttribute, _parse_schemes, _parse_unique, format_scheme
from punctuated.declaration.types import (
    MARKER_PROPERTY,
    PROPERTIES,
    RANGE,
    SCHEMES_PROPERTY,
    UNIQUE_PROPERTY,
    Declaration,
    Scheme,
    SchemeAttribute,
    is_boolean_type,
    is_ordered_type,
    is_range,
    operator_of,
)

Schema = Sequence[Tuple[str, Optional[str]]]


def _resolver(schema: Schema):
    exact = {name: (name, typ) for name, typ in schema}
    folded: dict = {}
    for name, typ in schema:
        folded.setdefault(name.lower(), (name, typ))

    def resolve(name: str) -> Optional[Tuple[str, Optional[str]]]:
        return exact.get(name) or folded.get(name.lower())

    return resolve


def _columns_hint(schema: Schema) -> str:
    names = [n for n, _ in schema]
    shown = ", ".join(names[:12])
    return shown + (", ..." if len(names) > 12 else "")


def _resolve_marker(text: Optional[str], schemes_given: bool, unique_given: bool,
                    resolve, schema: Schema) -> Optional[str]:
    """The marker: the column named by the property text, white space
    trimmed (a plain column name, not an identifier expression: no
    backquotes, as in the Scala resolver)."""
    if text is None:
        if schemes_given:
            raise _Problem(
                "MARKER_MISSING", "",
                "schemes are declared but no marker column says which rows are punctuations",
            )
        return None
    written = text.strip()
    found = resolve(written)
    if found is None:
        raise _Problem(
            "MARKER_MISSING", written,
            f"marker column '{_shorten(written)}' does not exist (columns: {_columns_hint(schema)})",
        )
    name, typ = found
    if typ is not None and not is_boolean_type(typ):
        raise _Problem("MARKER_NOT_BOOLEAN", written, f"marker column '{name}' is {typ}, not BOOLEAN")
    if not schemes_given and not unique_given:
        raise _Problem(
            "MARKER_WITHOUT_SCHEMES", written,
            f"marker '{name}' is declared but no scheme or unique key is",
        )
    return name


def _resolve_attributes(raw: Sequence[_RawAttribute], marker: Optional[str], resolve,
                        schema: Schema) -> Tuple[SchemeAttribute, ...]:
    seen: set = set()
    out = []
    for a in raw:
        found = resolve(a.name)
        if found is None:
            raise _Problem(
                "UNKNOWN_COLUMN", a.name,
                f"unknown column '{_shorten(a.name)}' (columns: {_columns_hint(schema)})",
            )
        name, typ = found
        if name in seen:
            raise _Problem(
                "DUPLICATE_ATTRIBUTE", a.name,
                f"'{_shorten(a.name)}' names column '{name}' a second time in one scheme",
            )
        seen.add(name)
        if marker is not None and name == marker:
            raise _Problem(
                "MARKER_IN_SCHEME", a.name,
                f"'{name}' is the marker column and cannot be an attribute",
            )
        if is_range(a.kind) and typ is not None and not is_ordered_type(typ):
            written = a.name + operator_of(a.kind)
            raise _Problem(
                "UNORDERED_RANGE", written,
                f"'{written}' is a range on column '{name}' of type {typ}, which has no order",
            )
        out.append(SchemeAttribute(name, a.kind))
    return tuple(out)


def _edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: the fewest single-character edits turning ``a`` into ``b``.

    >>> _edit_distance("punctuated.scheme", "punctuated.schemes")
    1
    """
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j - 1] + (ca != cb), previous[j] + 1, current[j - 1] + 1))
        previous = current
    return previous[-1]


def _is_punctuated_key(key: str) -> bool:
    return str(key).lower().startswith("punctuated.")


def _check_property_names(properties: Mapping[str, Any], table: Optional[str]) -> None:
    """``UNKNOWN_PROPERTY`` for the first (sorted) ``punctuated.*`` key that is
    not one of :data:`PROPERTIES`: a typo such as ``punctuated.scheme`` would
    otherwise leave the declaration silently incomplete."""
    unknown = sorted(k for k in properties if _is_punctuated_key(k) and k not in PROPERTIES)
    if not unknown:
        return
    key = unknown[0]
    value = str(properties[key])
    distance, nearest = min((_edit_distance(key.lower(), k), i) for i, k in enumerate(PROPERTIES))
    where = table or "<table>"
    rename = f"ALTER TABLE {where} UNSET TBLPROPERTIES ('{_shorten(key)}')"
    if distance <= 3:
        known = PROPERTIES[nearest]
        fix = (f"did you mean '{known}'? Rename it: {rename}; ALTER TABLE {where} SET TBLPROPERTIES "
               f"('{known}' = '{_shorten(value)}')")
    else:
        fix = f"remove it ({rename}) or use one of the known properties"
    raise DeclarationError(
        "UNKNOWN_PROPERTY", table, key, key,
        f"'{_shorten(key)}' is not a punctuation property (known: {', '.join(PROPERTIES)})",
        fix=fix, text=value,
    )


def _check_scheme(scheme: Scheme, earlier: Sequence[Scheme]) -> None:
    """A resolved scheme as a whole, against the schemes declared before it:
    a punctuation row is matched to its scheme by the columns it sets (user
    contract), so two schemes over the same columns cannot be told apart.
    (A scheme may have several ranges: its punctuations close regions,
    :mod:`punctuated.region`.)"""
    written = format_scheme(scheme)
    for i, same in enumerate(earlier, start=1):
        if same.attribute_set != scheme.attribute_set:
            continue
        position = f"scheme {len(earlier) + 1} '{_shorten(written)}'"
        if set(same.attributes) == set(scheme.attributes):
            raise _Problem("DUPLICATE_SCHEME", written, f"{position} repeats scheme {i}")
        raise _Problem(
            "AMBIGUOUS_SCHEMES", written,
            f"{position} sets the same columns as scheme {i} '{_shorten(format_scheme(same))}', "
            "so a punctuation row setting them could instantiate either",
        )


def parse_declaration(
    properties: Mapping[str, Any],
    schema: Schema,
    table: Optional[str] = None,
) -> Declaration:
    """Parse and validate the ``punctuated.*`` properties against a schema.

    ``properties`` may hold other keys (all table properties); ``schema`` is a
    list of ``(column, Spark SQL type string)`` (a type of ``None`` is not
    checked); ``table`` names the table in errors (``None``: a stream that is
    no catalog table).  Raises :class:`DeclarationError`.

    >>> schema = [("auction", "BIGINT"), ("bidder", "BIGINT"), ("day", "INT"), ("is_punct", "BOOLEAN")]
    >>> d = parse_declaration({"punctuated.schemes": "auction; Bidder, day<=",
    ...                        "punctuated.marker": "is_punct"}, schema, "bids")
    >>> [str(s) for s in d.schemes], d.marker, d.unique
    (['auction', 'bidder, day<='], 'is_punct', ())
    >>> parse_declaration({"punctuated.schemes": "auction; bidr", "punctuated.marker": "is_punct"},
    ...                   schema, "bids")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    punctuated.declaration.DeclarationError: [PUNCTUATED_INVALID_DECLARATION.UNKNOWN_COLUMN] Table bids, property 'punctuated.schemes' = 'auction; bidr': unknown column 'bidr' ...
    """
    schema = [(str(n), t) for n, t in schema]
    _check_property_names(properties, table)
    resolve = _resolver(schema)
    schemes_text = properties.get(SCHEMES_PROPERTY)
    marker_text = properties.get(MARKER_PROPERTY)
    unique_text = properties.get(UNIQUE_PROPERTY)

    try:
        marker = _resolve_marker(marker_text, schemes_text is not None, unique_text is not None,
                                 resolve, schema)
    except _Problem as p:
        raise _error(p, table, MARKER_PROPERTY, marker_text) from None

    schemes: Tuple[Scheme, ...] = ()
    if schemes_text is not None:
        try:
            resolved: List[Scheme] = []
            for raw_scheme in _parse_schemes(schemes_text):
                scheme = Scheme(_resolve_attributes(raw_scheme, marker, resolve, schema))
                _check_scheme(scheme, resolved)
                resolved.append(scheme)
            schemes = tuple(resolved)
        except _Problem as p:
            raise _error(p, table, SCHEMES_PROPERTY, schemes_text) from None

    unique: Tuple[str, ...] = ()
    if unique_text is not None:
        try:
            raw_key = _parse_unique(unique_text)
            unique = tuple(a.attr for a in _resolve_attributes(raw_key, marker, resolve, schema))
        except _Problem as p:
            raise _error(p, table, UNIQUE_PROPERTY, unique_text) from None

    return Declaration(schemes, marker, unique)


def resolve_declaration(table: Optional[str], properties: Mapping[str, Any], schema: Schema) -> Declaration:
    """:func:`parse_declaration` with the Scala resolver's argument order
    (``DeclarationResolver.resolve(table, properties, schema)``).

    >>> resolve_declaration("auctions", {"punctuated.unique": "ID"}, [("id", "bigint")]).unique
    ('id',)
    """
    return parse_declaration(properties, schema, table)
