"""Errors of a declaration: :class:`DeclarationError` (error class
``PUNCTUATED_INVALID_DECLARATION.<CONDITION>``, the same conditions and fixes as the
Scala ``DeclarationError``), and how messages repeat user text (at most
:data:`MAX_ECHO` characters).

>>> DeclarationError("EMPTY_SCHEME", "bids", SCHEMES_PROPERTY, "", "no scheme is given", text="").sub_class
'PUNCTUATED_INVALID_DECLARATION.EMPTY_SCHEME'
"""

from __future__ import annotations

from typing import Optional

from punctuated.declaration.types import SCHEMES_PROPERTY  # noqa: F401 (examples)

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


_FIXES = {
    "MALFORMED": (
        "write schemes as 'a; b, c<=' (schemes separated by ';', attributes by ',', "
        "'<=' or '>=' after an attribute for a range; names plain or `backquoted`) "
        "and the unique key as 'a, b' (no ';', '<=' or '>=')"
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
        "use a constant attribute (drop the '<=' or '>='); ranges need a numeric, STRING, "
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


def _error(p: _Problem, table: Optional[str], prop: str, text: Optional[str]) -> DeclarationError:
    return DeclarationError(p.condition, table, prop, p.offending, p.detail, fix=p.fix, text=text)


# where users import it from (and how tracebacks name it)
DeclarationError.__module__ = "punctuated.declaration"
