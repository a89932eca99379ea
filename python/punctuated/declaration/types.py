"""The types of a punctuation declaration: property names, attribute kinds, the column
types a range may be declared on, and the parsed, resolved :class:`Declaration` (its
:class:`Scheme` s of :class:`SchemeAttribute` s), with how a name is written back
(:func:`quote_identifier`). Nothing here parses or resolves text.

>>> str(Scheme((SchemeAttribute("order date"), SchemeAttribute("day", RANGE))))
'`order date`, day<='
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Tuple

SCHEMES_PROPERTY = "punctuated.schemes"
MARKER_PROPERTY = "punctuated.marker"
UNIQUE_PROPERTY = "punctuated.unique"
PROPERTIES = (SCHEMES_PROPERTY, MARKER_PROPERTY, UNIQUE_PROPERTY)

CONSTANT = "constant"
RANGE = "range"  # attr<=: "no more rows with attr <= v"
RANGE_AT_LEAST = "range_at_least"  # attr>=: "no more rows with attr >= v"
KINDS = (CONSTANT, RANGE, RANGE_AT_LEAST)
_OPERATORS = {CONSTANT: "", RANGE: "<=", RANGE_AT_LEAST: ">="}


def is_range(kind: str) -> bool:
    """Is an attribute of this kind a range pattern (``attr<=`` or ``attr>=``)?

    >>> is_range(RANGE), is_range(RANGE_AT_LEAST), is_range(CONSTANT)
    (True, True, False)
    """
    return kind in (RANGE, RANGE_AT_LEAST)


def operator_of(kind: str) -> str:
    """The operator an attribute of this kind is written with: ``""``, ``"<="`` or ``">="``.

    >>> operator_of(RANGE_AT_LEAST)
    '>='
    """
    return _OPERATORS[kind]

_PLAIN_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quote_identifier(name: str) -> str:
    """A name as written in a declaration: plain if it can be, else backquoted.

    >>> quote_identifier("day"), quote_identifier("order date"), quote_identifier("a`b")
    ('day', '`order date`', '`a``b`')
    """
    if _PLAIN_IDENT.fullmatch(name):
        return name
    return "`" + name.replace("`", "``") + "`"


_ORDERED_TYPE = re.compile(
    r"""(?:TINYINT|BYTE|SMALLINT|SHORT|INT|INTEGER|BIGINT|LONG|FLOAT|REAL|DOUBLE
         |(?:DECIMAL|DEC|NUMERIC)(?:\(\d+(?:,\d+)?\))?
         |STRING(?:COLLATE[A-Z0-9_]+)?|(?:VARCHAR|CHAR|CHARACTER)\(\d+\)
         |DATE|TIMESTAMP|TIMESTAMP_NTZ|TIMESTAMP_LTZ)""",
    re.VERBOSE,
)


def _type_key(sql_type: str) -> str:
    return re.sub(r"\s+", "", sql_type).upper()


def is_ordered_type(sql_type: str) -> bool:
    """May ``attr<=`` (or ``attr>=``) be declared on a column of this Spark SQL type?

    The numeric types, STRING (any collation; VARCHAR/CHAR), DATE,
    TIMESTAMP (= TIMESTAMP_LTZ), TIMESTAMP_NTZ (``testdata/README.md``).
    Case and white space are ignored.

    >>> [is_ordered_type(t) for t in ("BIGINT", "decimal(10, 2)", "VARCHAR(10)", "TIMESTAMP_NTZ")]
    [True, True, True, True]
    >>> [is_ordered_type(t) for t in ("BOOLEAN", "MAP<STRING,INT>", "BINARY", "ARRAY<INT>")]
    [False, False, False, False]
    """
    return _ORDERED_TYPE.fullmatch(_type_key(sql_type)) is not None


def is_boolean_type(sql_type: str) -> bool:
    """Is this the BOOLEAN type (the marker's type)?

    >>> is_boolean_type("boolean"), is_boolean_type("INT")
    (True, False)
    """
    return _type_key(sql_type) == "BOOLEAN"


@dataclass(frozen=True)
class SchemeAttribute:
    """One attribute of a scheme: ``kind`` is ``"constant"``, ``"range"`` (``attr<=``)
    or ``"range_at_least"`` (``attr>=``).

    >>> str(SchemeAttribute("day", RANGE)), str(SchemeAttribute("countdown", RANGE_AT_LEAST))
    ('day<=', 'countdown>=')
    """

    attr: str
    kind: str = CONSTANT

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind is one of {', '.join(map(repr, KINDS))}, not {self.kind!r}")

    def __str__(self) -> str:
        return quote_identifier(self.attr) + operator_of(self.kind)


@dataclass(frozen=True)
class Scheme:
    """A punctuation scheme: the attributes a punctuation gives values to.

    >>> s = Scheme((SchemeAttribute("bidder"), SchemeAttribute("day", RANGE)))
    >>> str(s), s.names, sorted(s.attribute_set)
    ('bidder, day<=', ('bidder', 'day'), ['bidder', 'day'])
    """

    attributes: Tuple[SchemeAttribute, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "attributes", tuple(self.attributes))

    @property
    def names(self) -> Tuple[str, ...]:
        return tuple(a.attr for a in self.attributes)

    @property
    def attribute_set(self) -> frozenset:
        return frozenset(self.names)

    def kind_of(self, attr: str) -> Optional[str]:
        """The kind of ``attr`` in this scheme, ``None`` if absent."""
        for a in self.attributes:
            if a.attr == attr:
                return a.kind
        return None

    def __iter__(self):
        return iter(self.attributes)

    def __len__(self) -> int:
        return len(self.attributes)

    def __str__(self) -> str:
        return ", ".join(str(a) for a in self.attributes)


@dataclass(frozen=True)
class Declaration:
    """The parsed, resolved declaration of one table or stream.

    ``schemes`` as declared, ``marker`` (``None`` when absent), ``unique``
    (``()`` when absent); names are spelled as in the schema.

    >>> d = Declaration(unique=("id",), marker="is_punct")
    >>> [str(s) for s in d.punctuation_schemes()]
    ['id']
    """

    schemes: Tuple[Scheme, ...] = ()
    marker: Optional[str] = None
    unique: Tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "schemes", tuple(self.schemes))
        object.__setattr__(self, "unique", tuple(self.unique))

    @property
    def is_empty(self) -> bool:
        """True when nothing is declared (the table is not punctuated)."""
        return not self.schemes and self.marker is None and not self.unique

    def punctuation_schemes(self) -> Tuple[Scheme, ...]:
        """The schemes punctuation rows may instantiate: the declared ones,
        plus the unique key as an all-constant scheme when there is a marker
        and no declared scheme has the key's attribute set."""
        out = list(self.schemes)
        if self.marker is not None and self.unique:
            key = frozenset(self.unique)
            if all(s.attribute_set != key for s in self.schemes):
                out.append(Scheme(tuple(SchemeAttribute(a, CONSTANT) for a in self.unique)))
        return tuple(out)
