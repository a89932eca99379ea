"""Punctuated over Spark Connect: the extension's SQL table functions instead of Py4J.

A Spark Connect session (``SparkSession.builder.remote("sc://host:port")``) has no Py4J
gateway: there is no ``df._jdf`` and no ``spark._jvm``. The extension injects SQL table
functions that answer the same questions on the server, for any client (docs/connect.md)::

    SELECT * FROM punctuated_declarations('bids')
    SELECT document, streaming FROM punctuated_describe('SELECT ... FROM STREAM(a) JOIN STREAM(b) ON ...')
    SELECT safe, problems FROM punctuated_check_safety('SELECT ...')
    SELECT plans FROM punctuated_join_plan('<query id>')
    SELECT request FROM punctuated_migrate('<query id>', '((a ⋈ b) ⋈ c)')

``punctuated.declarations``, ``punctuated.check_safety``, ``punctuated.join_plan`` and
``punctuated.migrate`` use
them when the session is a Connect session; their answers are those Py4J gives (the JVM
writes both from one place, ``punctuated.spark.PythonApi``). A DataFrame built with the
DataFrame API has no SQL text: it is registered as a temporary view on the server for the
duration of the call and the functions read the view.
"""

from __future__ import annotations

import json
import uuid
from contextlib import contextmanager

DECLARATIONS = "punctuated_declarations"
DESCRIBE = "punctuated_describe"
CHECK_SAFETY = "punctuated_check_safety"
JOIN_PLAN = "punctuated_join_plan"
MIGRATE = "punctuated_migrate"
#: Error class of a table function's bad argument.
ARGUMENT_ERROR = "PUNCTUATED_TABLE_FUNCTION_ARGUMENT"


def is_connect(spark) -> bool:
    """Whether ``spark`` (a session, or a DataFrame's session) is a Spark Connect session.

    Connect sessions are ``pyspark.sql.connect.session.SparkSession``; classic ones reach
    the JVM through Py4J.
    """
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def sql_literal(text: str) -> str:
    r"""``text`` as a Spark SQL string literal (backslash escapes, Spark's default parser).

    >>> print(sql_literal("it's"))
    'it\'s'
    """
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def call(spark, function: str, text: str, columns: str = "*") -> list:
    """The rows of ``SELECT columns FROM function('text')`` (computed on the server)."""
    return spark.sql(f"SELECT {columns} FROM {function}({sql_literal(text)})").collect()


@contextmanager
def query_text(df):
    """SQL text that reads ``df``: a temporary view on the server, dropped afterwards.

    A Connect DataFrame is a plan on the client; the server analyses it when the view is
    created, with the declarations (table properties, ``with_schemes`` column metadata) it
    carries, so the functions see what ``df.writeStream.start()`` would run.
    """
    name = "punctuated_query_" + uuid.uuid4().hex
    df.createOrReplaceTempView(name)
    try:
        yield f"SELECT * FROM `{name}`"
    finally:
        df.sparkSession.catalog.dropTempView(name)


def declarations(df) -> list[dict]:
    """``punctuated.declarations(df)`` over Connect (``punctuated_declarations``)."""
    with query_text(df) as text:
        rows = call(df.sparkSession, DECLARATIONS, text, "json")
    return [json.loads(r[0]) for r in rows]


def describe(spark, text: str) -> tuple[dict, bool]:
    """The query document of SQL text and whether it streams (``punctuated_describe``).

    The server parses ``text`` as one query and runs nothing: a statement (``DROP``,
    ``INSERT``, ``SET`` ...) or text that does not parse raises ``ValueError`` (the server's
    ``PUNCTUATED_TABLE_FUNCTION_ARGUMENT`` message), as classic ``check_safety`` does.
    """
    try:
        (row,) = call(spark, DESCRIBE, text, "document, streaming")
    except Exception as e:
        # as classic check_safety: a text that is not one query is a ValueError (nothing ran)
        message = str(e)
        if ARGUMENT_ERROR in message and ("it was not run" in message or "not one statement" in message):
            raise ValueError(message.split("\n\nJVM stacktrace")[0]) from None
        raise
    return json.loads(row[0]), bool(row[1])


def describe_dataframe(df) -> tuple[dict, bool]:
    """:func:`describe` for a DataFrame built with the DataFrame API (through a temporary view)."""
    with query_text(df) as text:
        return describe(df.sparkSession, text)


def join_plans(spark, query) -> list[dict]:
    """``MigrationRequests.joinPlans`` for a running query of the server (``punctuated_join_plan``)."""
    (row,) = call(spark, JOIN_PLAN, str(query.id), "plans")
    return json.loads(row[0])


def migrate(spark, query, plan: str) -> int:
    """``MigrationRequests.request`` for a running query of the server (``punctuated_migrate``):
    the request's number. A plan the query cannot run raises ``ValueError`` with the server's
    message (what does not fit, and an example); nothing is written then."""
    try:
        (row,) = spark.sql(f"SELECT request FROM {MIGRATE}({sql_literal(str(query.id))}, "
                           f"{sql_literal(plan)})").collect()
    except Exception as e:
        message = str(e)
        if ARGUMENT_ERROR in message and "cannot be applied" in message:
            raise ValueError(message.split("\n\nJVM stacktrace")[0]) from None
        raise
    return int(row[0])


__all__ = ["is_connect", "sql_literal", "call", "query_text", "declarations", "describe",
           "describe_dataframe", "join_plans", "migrate"]
