"""Punctuation-scheme declarations: the ``punctuated.*`` table properties.

User contract, "Declaring punctuation schemes (SQL)"::

    ALTER TABLE bids SET TBLPROPERTIES (
      'punctuated.schemes' = 'auction; bidder, day<=',
      'punctuated.marker'  = 'is_punct');

* ``punctuated.schemes`` -- schemes separated by ``;``, a scheme's attributes
  by ``,``, white space ignored.  A plain attribute is a *constant* pattern,
  ``attr<=`` a *range* pattern ``(-inf, value]``, ``attr>=`` one
  ``[value, +inf)``.  A punctuation instantiates
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

This package is pure Python and never imports pyspark; the shared vectors
``testdata/punctuation_vectors.json`` pin its behaviour to the Scala one.

The package is split by job; every name is importable from ``punctuated.declaration``:
:mod:`~punctuated.declaration.types` (the declaration and its schemes),
:mod:`~punctuated.declaration.text` (the scheme-text parser, and text back from schemes),
:mod:`~punctuated.declaration.resolve` (properties and columns to a declaration),
:mod:`~punctuated.declaration.errors` and :mod:`~punctuated.declaration.decode`
(rows to punctuations).
"""

from __future__ import annotations

from punctuated.declaration.decode import punctuation_of, unique_punctuation_of
from punctuated.declaration.errors import ERROR_CLASS, MAX_ECHO, DeclarationError
from punctuated.declaration.resolve import parse_declaration, resolve_declaration
from punctuated.declaration.text import (
    declaration_to_json,
    declaration_to_properties,
    format_scheme,
    format_schemes,
    format_tblproperties,
    format_unique,
    parse_attribute_text,
    parse_schemes_text,
    parse_unique_text,
    properties_from_arguments,
)
from punctuated.declaration.types import (
    CONSTANT,
    MARKER_PROPERTY,
    PROPERTIES,
    RANGE,
    RANGE_AT_LEAST,
    SCHEMES_PROPERTY,
    UNIQUE_PROPERTY,
    Declaration,
    Scheme,
    SchemeAttribute,
    is_boolean_type,
    is_ordered_type,
    is_range,
    operator_of,
    quote_identifier,
)

__all__ = [
    "SCHEMES_PROPERTY",
    "MARKER_PROPERTY",
    "UNIQUE_PROPERTY",
    "PROPERTIES",
    "ERROR_CLASS",
    "MAX_ECHO",
    "CONSTANT",
    "RANGE",
    "RANGE_AT_LEAST",
    "is_range",
    "operator_of",
    "DeclarationError",
    "SchemeAttribute",
    "Scheme",
    "Declaration",
    "is_ordered_type",
    "is_boolean_type",
    "parse_schemes_text",
    "parse_unique_text",
    "parse_attribute_text",
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
