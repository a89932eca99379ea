"""Punctuation-scheme declarations: the ``punctuated.*`` table properties.

User contract, "Declaring punctuation schemes (SQL)"::

    ALTER TABLE bids SET TBLPROPERTIES (
      'punctuated.schemes' = 'auction; bidder, day<=',
      'punctuated.marker'  = 'is_punct');

* ``punctuated.schemes`` -- schemes separated by ``;``, a scheme's attributes
  by ``,``, white space ignored.  A plain attribute is a *constant* pattern,
  ``attr<=`` a *range* pattern ``(-inf, value]``.  A punctuation instantiates
  exactly one scheme (the punctuation schemes of Li et al. 2006; patterns of
  Tucker et al. 2003, section 3).
* ``punctuated.marker`` -- a BOOLEAN column; rows where it is true are
  punctuations.
* ``punctuated.unique`` -- attributes forming a key of the stream; every data
  row implies the punctuation "no more rows with these values".  With a
  marker, the key is also a scheme punctuation rows may instantiate (so a
  marker without schemes is allowed then, ``testdata/README.md``).

Attribute names are plain (``[A-Za-z_][A-Za-z0-9_]*``) or backquoted (a
backquote inside is doubled, as in Spark SQL); the marker is one column name,
white space trimmed.  Names resolve case-insensitively to the schema's
spelling.  Validation order (first error wins, ``testdata/README.md``): an
unknown ``punctuated.*`` property (a typo; the nearest known one is named),
the marker, then the schemes (syntax of the whole text -- ``MALFORMED``
anywhere before ``EMPTY_SCHEME`` -- then each scheme left to right: its
attributes left to right -- unknown column, duplicate attribute, marker in a
scheme, ``<=`` on a type without an order -- then the scheme as a whole:
more than one range, the same scheme twice, the same columns as an earlier
scheme), then the unique key.  A row whose marker is NULL or false is a data
row, whatever it looks like.  Messages repeat at most 200 characters of any
text (then its length).  Errors are
:class:`DeclarationError` with an error class
``PUNCTUATED_INVALID_DECLARATION.<CONDITION>`` naming the table, the
property, the offending text and a fix.

This module is pure Python and never imports pyspark; the shared vectors
``testdata/punctuation_vectors.json`` pin its behaviour to the Scala one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from punctuated.model import Constant, Punctuation, Range, WILDCARD

__all__ = [
    "SCHEMES_PROPERTY",
    "MARKER_PROPERTY",
    "UNIQUE_PROPERTY",
    "PROPERTIES",
    "ERROR_CLASS",
    "MAX_ECHO",
    "CONSTANT",
    "RANGE",
    "DeclarationError",
    "SchemeAttribute",
    "Scheme",
    "Declaration",
    "is_ordered_type",
    "is_boolean_type",
    "parse_schemes_text",
    "parse_unique_text",
    "parse_declaration",
    "resolve_declaration",
    "punctuation_of",
    "unique_punctuation_of",
    "quote_identifier",
    "format_scheme",
    "format_schemes",
    "format_unique",
    "declaration_to_properties",
    "properties_from_arguments",
    "declaration_to_json",
    "format_tblproperties",
]

SCHEMES_PROPERTY = "punctuated.schemes"
MARKER_PROPERTY = "punctuated.marker"
UNIQUE_PROPERTY = "punctuated.unique"
PROPERTIES = (SCHEMES_PROPERTY, MARKER_PROPERTY, UNIQUE_PROPERTY)

ERROR_CLASS = "PUNCTUATED_INVALID_DECLARATION"

#: The most characters of user text a message repeats (as the Scala ``DeclarationError.MaxEcho``).
MAX_ECHO = 200


def _shorten(text: str) -> str:
    """User text as messages repeat it: whole up to :data:`MAX_ECHO`
    characters, else its start and its length.

    >>> _shorten("a" * 300)[-22:]
    'aaaa… (300 characters)'
    """
    return text if len(text) <= MAX_ECHO else f"{text[:MAX_ECHO]}… ({len(text)} characters)"

CONSTANT = "constant"
RANGE = "range"

# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------

_FIXES = {
    "MALFORMED": (
        "write schemes as 'a; b, c<=' (schemes separated by ';', attributes by ',', "
        "'<=' after an attribute for a range; names plain or `backquoted`) "
        "and the unique key as 'a, b' (no ';' or '<=')"
    ),
    "EMPTY_SCHEME": "give every scheme at least one attribute, or remove the property",
    "UNKNOWN_COLUMN": "name a column of the table (names are case-insensitive)",
    "DUPLICATE_ATTRIBUTE": "name each attribute once per scheme",
    "MARKER_IN_SCHEME": "remove the marker column from the scheme; it only flags punctuation rows",
    "DUPLICATE_SCHEME": "declare each scheme once",
    "AMBIGUOUS_SCHEMES": (
        "keep one of the two (a range 'k<=' also closes each single value a constant 'k' would)"
    ),
    "UNORDERED_RANGE": (
        "use a constant attribute (drop '<='); ranges need a numeric, STRING, "
        "DATE or TIMESTAMP column"
    ),
    "MARKER_MISSING": (
        "set 'punctuated.marker' to the BOOLEAN column that is true on punctuation rows "
        "(add such a column if the table has none)"
    ),
    "MARKER_NOT_BOOLEAN": (
        "name a BOOLEAN column as 'punctuated.marker' (true on punctuation rows; "
        "false or NULL: a data row)"
    ),
    "MARKER_WITHOUT_SCHEMES": "declare 'punctuated.schemes' or 'punctuated.unique', or remove the marker",
}


class DeclarationError(ValueError):
    """An invalid declaration: error class ``PUNCTUATED_INVALID_DECLARATION``.

    Fields: ``condition`` (e.g. ``UNKNOWN_COLUMN``), ``table`` (the table or
    stream; ``None`` when text is checked alone), ``property``, ``text`` (the whole
    property value, ``None`` when absent), ``offending`` (the text at fault),
    ``detail`` and ``fix``.

    >>> e = DeclarationError("UNKNOWN_COLUMN", "bids", SCHEMES_PROPERTY, "bidr",
    ...                      "unknown column 'bidr'", text="auction; bidr")
    >>> str(e).split(". Fix:")[0]
    "[PUNCTUATED_INVALID_DECLARATION.UNKNOWN_COLUMN] Table bids, property 'punctuated.schemes' = 'auction; bidr': unknown column 'bidr'"
    """

    error_class = ERROR_CLASS

    def __init__(
        self,
        condition: str,
        table: Optional[str],
        property: str,
        offending: str,
        detail: str,
        fix: Optional[str] = None,
        text: Optional[str] = None,
    ):
        self.condition = condition
        self.table = table
        self.property = property
        self.offending = offending
        self.detail = detail
        self.fix = fix if fix is not None else _FIXES.get(condition, "")
        self.text = text
        subject = f"Table {table}" if table else "Declaration"
        value = "is not set" if text is None else f"= '{_shorten(text)}'"
        super().__init__(
            f"[{ERROR_CLASS}.{condition}] {subject}, property '{property}' {value}: "
            f"{detail}. Fix: {self.fix}."
        )

    @property
    def sub_class(self) -> str:
        """``PUNCTUATED_INVALID_DECLARATION.<condition>``."""
        return f"{ERROR_CLASS}.{self.condition}"

    def on_table(self, table: str) -> "DeclarationError":
        """The same error, about ``table`` (for text checked before its table was known).

        >>> DeclarationError("MALFORMED", None, SCHEMES_PROPERTY, "a b", "bad", text="a b").on_table("bids").table
        'bids'
        """
        return DeclarationError(self.condition, table, self.property, self.offending, self.detail,
                                fix=self.fix, text=self.text)


class _Problem(Exception):
    """A problem found before the table and property are known."""

    def __init__(self, condition: str, offending: str, detail: str, fix: Optional[str] = None):
        super().__init__(detail)
        self.condition, self.offending, self.detail, self.fix = condition, offending, detail, fix


# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------

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
    """May ``attr<=`` be declared on a column of this Spark SQL type?

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


# --------------------------------------------------------------------------
# Lexing and syntax
# --------------------------------------------------------------------------

_PLAIN_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: One word that would be a name if backquoted (as the Scala parser's ``Word``).
_WORD = re.compile(r"[^\s`,;<=>]+")


class _Token(NamedTuple):
    kind: str  # "ident", "<=", ",", ";"
    text: str  # as written (backquotes included for an identifier)
    name: str  # the identifier's name (backquotes removed), else ""


def _tokenize(text: str) -> List[_Token]:
    """Tokens of a property value; any lexical error is ``MALFORMED``."""
    tokens: List[_Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in ",;":
            tokens.append(_Token(ch, ch, ""))
            i += 1
        elif text.startswith("<=", i):
            tokens.append(_Token("<=", "<=", ""))
            i += 2
        elif ch == "`":
            j, name = i + 1, []
            while True:
                if j >= n:
                    raise _Problem("MALFORMED", text, f"unclosed backquote at position {i}")
                if text[j] == "`":
                    if text.startswith("``", j):
                        name.append("`")
                        j += 2
                        continue
                    break
                name.append(text[j])
                j += 1
            if not name:
                raise _Problem("MALFORMED", text, f"empty backquoted name at position {i}")
            tokens.append(_Token("ident", text[i : j + 1], "".join(name)))
            i = j + 1
        else:
            m = _PLAIN_IDENT.match(text, i)
            word = _WORD.match(text, i)
            if word and (not m or m.end() < word.end()):
                # prénom, 1st: a name, but not a plain one
                raise _Problem(
                    "MALFORMED", text,
                    f"'{_shorten(word.group())}' is not a plain name ([A-Za-z_][A-Za-z0-9_]*): "
                    f"backquote it: `{_shorten(word.group())}`",
                )
            if not m:
                raise _Problem(
                    "MALFORMED", text,
                    f"unexpected {text[i:i + 2].strip()!r} at position {i} "
                    "(a name is [A-Za-z_][A-Za-z0-9_]* or `backquoted`)",
                )
            tokens.append(_Token("ident", m.group(), m.group()))
            i = m.end()
    return tokens


def _split(tokens: Sequence[_Token], sep: str) -> List[List[_Token]]:
    parts: List[List[_Token]] = [[]]
    for tok in tokens:
        if tok.kind == sep:
            parts.append([])
        else:
            parts[-1].append(tok)
    return parts


class _RawAttribute(NamedTuple):
    name: str  # identifier, backquotes removed
    written: str  # identifier as written (backquotes kept)
    kind: str  # CONSTANT or RANGE


def _attribute(tokens: Sequence[_Token], text: str) -> _RawAttribute:
    """``name`` or ``name <=``; anything else is ``MALFORMED``."""
    if not tokens:
        raise _Problem("MALFORMED", text, "an attribute is empty (two ',' in a row?)")
    if tokens[0].kind != "ident":
        raise _Problem("MALFORMED", text, f"expected a column name, found {tokens[0].text!r}")
    rest = [t.text for t in tokens[1:]]
    if not rest:
        return _RawAttribute(tokens[0].name, tokens[0].text, CONSTANT)
    if rest == ["<="]:
        return _RawAttribute(tokens[0].name, tokens[0].text, RANGE)
    raise _Problem(
        "MALFORMED", text,
        f"unexpected {_shorten(' '.join(rest))!r} after {_shorten(tokens[0].text)!r} "
        "(an attribute is a name optionally followed by '<='; missing ',' or ';'?)",
    )


def _parse_schemes(text: str) -> List[List[_RawAttribute]]:
    """Syntax of a schemes text.  ``MALFORMED`` anywhere wins over an empty
    scheme (``EMPTY_SCHEME`` is reported only for otherwise well-formed text,
    as the Scala parser does)."""
    parts = _split(_tokenize(text), ";")
    schemes = [[_attribute(a, text) for a in _split(part, ",")] for part in parts if part]
    if len(schemes) < len(parts):
        if not text.strip():
            raise _Problem("EMPTY_SCHEME", text, "no scheme is given")
        number = next(i for i, part in enumerate(parts, start=1) if not part)
        raise _Problem("EMPTY_SCHEME", text, f"scheme {number} has no attribute (a ';' too many?)")
    return schemes


def _parse_unique(text: str) -> List[_RawAttribute]:
    """Syntax of a unique key: the schemes syntax, then exactly one scheme of
    constant attributes (else ``MALFORMED``)."""
    schemes = _parse_schemes(text)
    if len(schemes) != 1 or any(a.kind == RANGE for a in schemes[0]):
        raise _Problem(
            "MALFORMED", text,
            "the unique key is one list of attribute names separated by ',' (no ';', no '<=')",
        )
    return schemes[0]


def parse_schemes_text(text: str) -> List[List[Tuple[str, str]]]:
    """Syntax of ``punctuated.schemes`` alone: ``[[(name, kind), ...], ...]``
    (names unresolved, backquotes removed).  Raises :class:`DeclarationError`
    (``MALFORMED`` or ``EMPTY_SCHEME``, table unknown).

    >>> parse_schemes_text("auction; bidder, `day` <=")
    [[('auction', 'constant')], [('bidder', 'constant'), ('day', 'range')]]
    """
    try:
        return [[(a.name, a.kind) for a in s] for s in _parse_schemes(text)]
    except _Problem as p:
        raise _error(p, None, SCHEMES_PROPERTY, text) from None


def parse_unique_text(text: str) -> List[str]:
    """Syntax of ``punctuated.unique`` alone: the key's names, unresolved.

    >>> parse_unique_text(" auction , bidder ")
    ['auction', 'bidder']
    """
    try:
        return [a.name for a in _parse_unique(text)]
    except _Problem as p:
        raise _error(p, None, UNIQUE_PROPERTY, text) from None


def _error(p: _Problem, table: Optional[str], prop: str, text: Optional[str]) -> DeclarationError:
    return DeclarationError(p.condition, table, prop, p.offending, p.detail, fix=p.fix, text=text)


# --------------------------------------------------------------------------
# Typed model
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemeAttribute:
    """One attribute of a scheme: ``kind`` is ``"constant"`` or ``"range"``.

    >>> str(SchemeAttribute("day", RANGE))
    'day<='
    """

    attr: str
    kind: str = CONSTANT

    def __post_init__(self) -> None:
        if self.kind not in (CONSTANT, RANGE):
            raise ValueError(f"kind is {CONSTANT!r} or {RANGE!r}, not {self.kind!r}")

    def __str__(self) -> str:
        return quote_identifier(self.attr) + ("<=" if self.kind == RANGE else "")


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
        return format_scheme(self)


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


# --------------------------------------------------------------------------
# Resolution against a schema
# --------------------------------------------------------------------------

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
        if a.kind == RANGE and typ is not None and not is_ordered_type(typ):
            raise _Problem(
                "UNORDERED_RANGE", f"{a.name}<=",
                f"'{a.name}<=' is a range on column '{name}' of type {typ}, which has no order",
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
    contract), so two schemes over the same columns cannot be told apart;
    and no operator purges with a scheme of two ranges."""
    written = format_scheme(scheme)
    ranges = [a for a in scheme.attributes if a.kind == RANGE]
    if len(ranges) > 1:
        last = max(i for i, a in enumerate(scheme.attributes) if a.kind == RANGE)
        one_range = format_scheme(Scheme(tuple(
            SchemeAttribute(a.attr, RANGE if i == last else CONSTANT)
            for i, a in enumerate(scheme.attributes))))
        raise _Problem(
            "MULTIPLE_RANGES", written,
            f"scheme '{_shorten(written)}' has {len(ranges)} range attributes "
            f"({', '.join(a.attr for a in ranges)}): no join, aggregation or deduplication "
            "purges with such punctuations",
            fix=(f"keep at most one '<=' per scheme: make the others constants ('{one_range}') "
                 f"or declare each range as a scheme of its own ('{'; '.join(str(a) for a in ranges)}')"),
        )
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


# --------------------------------------------------------------------------
# Punctuation rows
# --------------------------------------------------------------------------


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
    ``Constant(value)``, an ``attr<=`` one ``Range(hi=value)`` inclusive.
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


# --------------------------------------------------------------------------
# Rendering back to property text
# --------------------------------------------------------------------------


def quote_identifier(name: str) -> str:
    """A name as written in a declaration: plain if it can be, else backquoted.

    >>> quote_identifier("day"), quote_identifier("order date"), quote_identifier("a`b")
    ('day', '`order date`', '`a``b`')
    """
    if _PLAIN_IDENT.fullmatch(name):
        return name
    return "`" + name.replace("`", "``") + "`"


def format_scheme(scheme: Scheme) -> str:
    """``'bidder, day<='``.

    >>> format_scheme(Scheme((SchemeAttribute("bidder"), SchemeAttribute("day", RANGE))))
    'bidder, day<='
    """
    return ", ".join(str(a) for a in scheme.attributes)


def format_schemes(schemes: Iterable[Scheme]) -> str:
    """``'auction; bidder, day<='``: the ``punctuated.schemes`` text.

    >>> format_schemes([Scheme((SchemeAttribute("auction"),)), Scheme((SchemeAttribute("d", RANGE),))])
    'auction; d<='
    """
    return "; ".join(format_scheme(s) for s in schemes)


def format_unique(unique: Iterable[str]) -> str:
    """``'auction, bidder'``: the ``punctuated.unique`` text.

    >>> format_unique(["auction", "bidder"])
    'auction, bidder'
    """
    return ", ".join(quote_identifier(a) for a in unique)


def declaration_to_properties(declaration: Declaration) -> dict:
    """The ``punctuated.*`` properties that declare ``declaration``; absent
    parts are left out.  ``parse_declaration`` of the result gives it back.

    >>> d = Declaration((Scheme((SchemeAttribute("auction"),)),), "is_punct")
    >>> declaration_to_properties(d)
    {'punctuated.schemes': 'auction', 'punctuated.marker': 'is_punct'}
    """
    props = {}
    if declaration.schemes:
        props[SCHEMES_PROPERTY] = format_schemes(declaration.schemes)
    if declaration.marker is not None:
        props[MARKER_PROPERTY] = declaration.marker
    if declaration.unique:
        props[UNIQUE_PROPERTY] = format_unique(declaration.unique)
    return props


SchemeLike = Union[Scheme, str, Sequence[Union[str, SchemeAttribute]]]


def _scheme_from_argument(item: SchemeLike) -> Scheme:
    if isinstance(item, Scheme):
        return item
    if isinstance(item, str):
        parsed = parse_schemes_text(item)
        if len(parsed) != 1:
            raise DeclarationError(
                "MALFORMED", None, SCHEMES_PROPERTY, item,
                "one list item is one scheme (no ';')", text=item,
            )
        return Scheme(tuple(SchemeAttribute(n, k) for n, k in parsed[0]))
    attrs = []
    for a in item:
        if isinstance(a, SchemeAttribute):
            attrs.append(a)
            continue
        parsed = parse_schemes_text(a)
        if len(parsed) != 1 or len(parsed[0]) != 1:
            raise DeclarationError(
                "MALFORMED", None, SCHEMES_PROPERTY, a,
                "an attribute is one name, optionally followed by '<='", text=a,
            )
        attrs.append(SchemeAttribute(*parsed[0][0]))
    if not attrs:
        raise DeclarationError("EMPTY_SCHEME", None, SCHEMES_PROPERTY, "", "a scheme has no attribute", text="")
    return Scheme(tuple(attrs))


def properties_from_arguments(
    schemes: Optional[Iterable[SchemeLike]] = None,
    marker: Optional[str] = None,
    unique: Union[None, str, Sequence[str]] = None,
) -> dict:
    """Property text for ``register_schemes(spark, table, schemes=[...],
    marker=..., unique=...)`` / ``with_schemes``: each scheme is a string
    (``"bidder, day<="``), a list of attributes (``["bidder", "day<="]``) or
    a :class:`Scheme`; ``unique`` a string or a list of names.  Checks syntax
    only; names are resolved by :func:`parse_declaration` against the table.

    >>> properties_from_arguments(["auction", ["bidder", "day<="]], marker="is_punct")
    {'punctuated.schemes': 'auction; bidder, day<=', 'punctuated.marker': 'is_punct'}
    >>> properties_from_arguments(unique=["id"], marker="is_punct")
    {'punctuated.marker': 'is_punct', 'punctuated.unique': 'id'}
    """
    props = {}
    if schemes is not None:
        if isinstance(schemes, str):  # the whole property text, 'a; b, c<='
            parsed = parse_schemes_text(schemes)
            scheme_objs = [Scheme(tuple(SchemeAttribute(n, k) for n, k in s)) for s in parsed]
        else:
            scheme_objs = [_scheme_from_argument(s) for s in schemes]
        if scheme_objs:
            props[SCHEMES_PROPERTY] = format_schemes(scheme_objs)
    if marker is not None:
        props[MARKER_PROPERTY] = marker.strip()
    if unique is not None:
        key = parse_unique_text(unique) if isinstance(unique, str) else list(unique)
        if key:
            props[UNIQUE_PROPERTY] = format_unique(key)
    return props


def declaration_to_json(declaration: Declaration) -> dict:
    """The declaration in the vectors' ``expect`` form.

    >>> declaration_to_json(Declaration(unique=("id",)))
    {'schemes': [], 'marker': None, 'unique': ['id']}
    """
    return {
        "schemes": [[{"attr": a.attr, "kind": a.kind} for a in s.attributes] for s in declaration.schemes],
        "marker": declaration.marker,
        "unique": list(declaration.unique),
    }


def _sql_string(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def format_tblproperties(properties: Mapping[str, str]) -> str:
    """The body of ``ALTER TABLE t SET TBLPROPERTIES (...)`` as Spark SQL.

    >>> format_tblproperties({"punctuated.schemes": "auction", "punctuated.marker": "is_punct"})
    "'punctuated.schemes' = 'auction', 'punctuated.marker' = 'is_punct'"
    """
    return ", ".join(f"{_sql_string(k)} = {_sql_string(v)}" for k, v in properties.items())
