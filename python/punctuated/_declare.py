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
    format_tblproperties,
    properties_from_arguments,
    resolve_declaration,
)

#: Column-metadata key of the ``with_schemes`` form (read by the JVM's DeclaredStreams).
METADATA_KEY = "punctuated"
STREAM_NAME_KEY = "punctuated.stream"


def register_schemes(spark, table: str, schemes=None, marker=None, unique=None) -> None:
    """Declare punctuation schemes on a catalog table (``ALTER TABLE ... SET TBLPROPERTIES``).

    The declaration replaces the table's previous one: properties not given are unset.
    It is validated against the table's columns before anything is written.

    >>> register_schemes(spark, "bids", schemes=["auction"], marker="is_punct")  # doctest: +SKIP
    """
    props = properties_from_arguments(schemes, marker, unique)
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
    the stream in messages.

    >>> bids = with_schemes(spark.readStream.format("rate").load(), ...)  # doctest: +SKIP
    """
    props = properties_from_arguments(schemes, marker, unique)
    if name is not None:
        props[STREAM_NAME_KEY] = name
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
    """
    from punctuated._session import require_extension

    require_extension(df.sparkSession)
    jvm = df.sparkSession._jvm
    return json.loads(jvm.punctuated.spark.PythonApi.declarations(df._jdf))
