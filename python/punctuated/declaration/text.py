"""The text of ``punctuated.schemes`` / ``punctuated.unique``: the one parser of scheme
text in Python (the Scala one is ``SchemeParser``; the shared vectors keep them in step),
and the way back, from schemes and arguments to property text.

Grammar (user contract)::

    text       := scheme (';' scheme)*
    scheme     := attribute (',' attribute)*
    attribute  := identifier ['<=' | '>=']  -- plain: constant pattern; '<=', '>=': range pattern
    identifier := [A-Za-z_][A-Za-z0-9_]* | '`' (any-but-backquote | '``')+ '`'

>>> parse_schemes_text("`bid id`; `a``b`, `prix€`<=")
[[('bid id', 'constant')], [('a`b', 'constant'), ('prix€', 'range')]]
>>> parse_attribute_text("day<="), parse_attribute_text("countdown >=")
(('day', 'range'), ('countdown', 'range_at_least'))
"""

from __future__ import annotations

import re
from typing import Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from punctuated.declaration.errors import DeclarationError, _Problem, _error, _shorten
from punctuated.declaration.types import (
    _PLAIN_IDENT,
    CONSTANT,
    MARKER_PROPERTY,
    RANGE,
    RANGE_AT_LEAST,
    SCHEMES_PROPERTY,
    UNIQUE_PROPERTY,
    Declaration,
    Scheme,
    SchemeAttribute,
    is_range,
    quote_identifier,
)

#: One word that would be a name if backquoted (as the Scala parser's ``Word``).
_WORD = re.compile(r"[^\s`,;<=>]+")


class _Token(NamedTuple):
    kind: str  # "ident", "<=", ">=", ",", ";"
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
        elif text.startswith("<=", i) or text.startswith(">=", i):
            tokens.append(_Token(text[i:i + 2], text[i:i + 2], ""))
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
    kind: str  # CONSTANT, RANGE or RANGE_AT_LEAST


def _attribute(tokens: Sequence[_Token], text: str) -> _RawAttribute:
    """``name``, ``name <=`` or ``name >=``; anything else is ``MALFORMED``."""
    if not tokens:
        raise _Problem("MALFORMED", text, "an attribute is empty (two ',' in a row?)")
    if tokens[0].kind != "ident":
        raise _Problem("MALFORMED", text, f"expected a column name, found {tokens[0].text!r}")
    rest = [t.text for t in tokens[1:]]
    if not rest:
        return _RawAttribute(tokens[0].name, tokens[0].text, CONSTANT)
    if rest == ["<="]:
        return _RawAttribute(tokens[0].name, tokens[0].text, RANGE)
    if rest == [">="]:
        return _RawAttribute(tokens[0].name, tokens[0].text, RANGE_AT_LEAST)
    raise _Problem(
        "MALFORMED", text,
        f"unexpected {_shorten(' '.join(rest))!r} after {_shorten(tokens[0].text)!r} "
        "(an attribute is a name optionally followed by '<=' or '>='; missing ',' or ';'?)",
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
    if len(schemes) != 1 or any(is_range(a.kind) for a in schemes[0]):
        raise _Problem(
            "MALFORMED", text,
            "the unique key is one list of attribute names separated by ',' (no ';', no '<=' or '>=')",
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


def parse_attribute_text(text: str) -> Tuple[str, str]:
    """One attribute as a scheme writes it -- a name, optionally followed by ``<=`` or ``>=`` --
    as ``(name, kind)``. Raises :class:`DeclarationError` (``MALFORMED``) for anything else.

    >>> parse_attribute_text("`order date`"), parse_attribute_text(" day <= ")
    (('order date', 'constant'), ('day', 'range'))
    """
    parsed = parse_schemes_text(text)
    if len(parsed) != 1 or len(parsed[0]) != 1:
        raise DeclarationError(
            "MALFORMED", None, SCHEMES_PROPERTY, text,
            "an attribute is one name, optionally followed by '<=' or '>='", text=text,
        )
    return parsed[0][0]


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
    attrs = [a if isinstance(a, SchemeAttribute) else SchemeAttribute(*parse_attribute_text(a))
             for a in item]
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
