"""Declaring punctuation schemes from Python (user contract: "Declaring punctuation schemes").

Both helpers write the same three properties the SQL form uses
(``punctuated.schemes``, ``punctuated.marker``, ``punctuated.unique``); the
extension validates them at analysis, so a bad declaration fails with
``PUNCTUATED_INVALID_DECLARATION.<condition>`` naming table, property and text.
"""

from __future__ import annotations

import json

from punctuated.declaration import (
    MARKER_PROPERTY,
    SCHEMES_PROPERTY,
    UNIQUE_PROPERTY,
    DeclarationError,
    format_tblproperties,
    properties_from_arguments,
    resolve_declaration,
)

#: Column-metadata key of the ``with_schemes`` form (read by the JVM's DeclaredStreams).
METADATA_KEY = "punctuated"
STREAM_NAME_KEY = "punctuated.stream"

#: Error class of :class:`NotAStreamError`.
NOT_A_STREAM = "PUNCTUATED_WITH_SCHEMES_NOT_A_STREAM"


class NotAStreamError(ValueError):
    """``with_schemes`` on a batch DataFrame: error class ``PUNCTUATED_WITH_SCHEMES_NOT_A_STREAM``.

    A batch DataFrame has no punctuation semantics: the declaration would be
    accepted and do nothing, and punctuation rows would be read as data.
    """

    error_class = NOT_A_STREAM

    def __init__(self, name: str | None):
        self.name = name
        what = f"DataFrame {name!r}" if name else "the DataFrame"
        super().__init__(
            f"[{NOT_A_STREAM}] with_schemes declares the punctuations of a stream, but {what} is "
            "a batch DataFrame (df.isStreaming is False): the declaration would do nothing and its "
            "punctuation rows would be read as data. Fix: read the source with spark.readStream "
            "(e.g. spark.readStream.format(...).load()), or, for a catalog table, declare the "
            "schemes on the table (punctuated.register_schemes or ALTER TABLE ... SET TBLPROPERTIES): "
            "streaming reads then use them and batch reads leave punctuation rows out."
        )


def register_schemes(spark, table: str, schemes=None, marker=None, unique=None) -> None:
    """Declare punctuation schemes on a catalog table (``ALTER TABLE ... SET TBLPROPERTIES``).

    The declaration replaces the table's previous one: properties not given are unset.
    It is validated against the table's columns before anything is written; errors
    name the table.

    >>> register_schemes(spark, "bids", schemes=["auction"], marker="is_punct")  # doctest: +SKIP
    """
    try:
        props = properties_from_arguments(schemes, marker, unique)
    except DeclarationError as e:  # syntax, checked before the table was known
        raise e.on_table(table) from None
    fields = [(f.name, f.dataType.simpleString()) for f in spark.table(table).schema.fields]
    resolve_declaration(table, props, fields)
    if props:
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({format_tblproperties(props)})")
    unset = [k for k in (SCHEMES_PROPERTY, MARKER_PROPERTY, UNIQUE_PROPERTY) if k not in props]
    if unset:
        keys = ", ".join("'" + k + "'" for k in unset)
        spark.sql(f"ALTER TABLE {table} UNSET TBLPROPERTIES IF EXISTS ({keys})")


def with_schemes(df, schemes=None, marker=None, unique=None, name: str | None = None):
    """Attach a punctuation declaration to a streaming DataFrame that is not a catalog table.

    Every column gets the declaration as metadata (under ``"punctuated"``), the way
    ``withWatermark`` marks its column, so it survives projections. ``name`` names
    the stream in messages. A batch DataFrame is refused (:class:`NotAStreamError`):
    declare a catalog table instead, whose batch reads leave punctuation rows out.

    >>> bids = with_schemes(spark.readStream.format("rate").load(), ...)  # doctest: +SKIP
    """
    if not df.isStreaming:
        raise NotAStreamError(name)
    try:
        props = properties_from_arguments(schemes, marker, unique)
    except DeclarationError as e:
        raise (e.on_table(name) if name else e) from None
    if name is not None:
        props[STREAM_NAME_KEY] = name
    from punctuated import _connect

    if _connect.is_connect(df.sparkSession):  # a Connect DataFrame takes Connect columns
        from pyspark.sql.connect import functions as F
    else:
        from pyspark.sql import functions as F

    columns = []
    for field in df.schema.fields:
        metadata = dict(field.metadata or {})
        metadata[METADATA_KEY] = props
        columns.append(F.col(_quote(field.name)).alias(field.name, metadata=metadata))
    return df.select(*columns)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def declarations(df) -> list[dict]:
    """The declarations the extension reads for the streams ``df`` reads (JVM's view).

    Each item: ``{"table", "schemes": [[{"attr", "kind"}]], "marker", "unique"}``.
    Over Spark Connect the server's ``punctuated_declarations`` table function gives the
    same list (docs/connect.md).
    """
    from punctuated import _connect
    from punctuated._session import require_extension

    require_extension(df.sparkSession)
    if _connect.is_connect(df.sparkSession):  # no Py4J: the server's punctuated_declarations
        return _connect.declarations(df)
    jvm = df.sparkSession._jvm
    return json.loads(jvm.punctuated.spark.PythonApi.declarations(df._jdf))
