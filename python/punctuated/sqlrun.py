"""Run a file of SQL statements, streaming queries included (the examples in ``sql/``).

Statements run in order. A query that reads ``STREAM(...)`` runs as a streaming
query over everything available (``trigger(availableNow=True)``) into a memory
table whose rows are returned.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

_STREAM = re.compile(r"\bSTREAM\s*\(", re.IGNORECASE)
_QUERY = re.compile(r"^\s*(SELECT|WITH|FROM)\b", re.IGNORECASE)


def split_statements(text: str) -> list[str]:
    """Split SQL text on ``;`` outside quotes and ``--`` comments.

    >>> split_statements("SELECT ';' AS x; -- a; comment\\nSELECT 2;")
    ["SELECT ';' AS x", '-- a; comment\\nSELECT 2']
    """
    statements, current, quote, i = [], [], None, 0
    while i < len(text):
        ch = text[i]
        if quote:
            current.append(ch)
            if ch == "\\" and i + 1 < len(text):
                current.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
            current.append(ch)
        elif text.startswith("--", i):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            current.append(text[i:end])
            i = end
            continue
        elif ch == ";":
            statements.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    statements.append("".join(current))
    return [s.strip() for s in statements if _strip_comments(s).strip()]


def _strip_comments(statement: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in statement.splitlines())


def is_streaming_query(statement: str) -> bool:
    """A query (SELECT/WITH/FROM) that reads a stream.

    >>> is_streaming_query("SELECT * FROM STREAM(bids)")
    True
    """
    body = _strip_comments(statement)
    return bool(_QUERY.match(body) and _STREAM.search(body))


def run_streaming(spark, df, checkpoint: str | None = None, progress: list | None = None):
    """Run a streaming DataFrame over all available input; return its rows.

    ``progress``, if given, receives the query's progress reports (``recentProgress``).
    """
    name = "punctuated_" + uuid.uuid4().hex[:12]
    writer = df.writeStream.format("memory").queryName(name).outputMode("append")
    if checkpoint:
        writer = writer.option("checkpointLocation", checkpoint)
    query = writer.trigger(availableNow=True).start()
    try:
        query.awaitTermination()
        if progress is not None:
            progress.extend(query.recentProgress)
        return spark.table(name).collect()
    finally:
        query.stop()
        spark.catalog.dropTempView(name)


def run_file(spark, path: str | Path, on_query=None, progress: list | None = None) -> list:
    """Run every statement of a SQL file; return the rows of its last query.

    An error is raised as it is, with a note naming the file and the statement
    (``bids.sql, statement 3 (SELECT ...)``).

    ``on_query(statement, df)`` is called before each streaming query starts; ``progress``
    receives the streaming queries' progress reports.
    """
    rows: list = []
    for number, statement in enumerate(split_statements(Path(path).read_text()), start=1):
        try:
            df = spark.sql(statement)
            if is_streaming_query(statement):
                if on_query:
                    on_query(statement, df)
                rows = run_streaming(spark, df, progress=progress)
            elif _QUERY.match(_strip_comments(statement)):
                rows = df.collect()
        except Exception as e:
            e.add_note(f"{Path(path).name}, statement {number} ({_first_words(statement)})")
            raise
    return rows


def _first_words(statement: str, limit: int = 60) -> str:
    """The statement's start on one line, for messages.

    >>> _first_words("SELECT a,\\n  b FROM t", 12)
    'SELECT a, b…'
    """
    text = " ".join(_strip_comments(statement).split())
    return text if len(text) <= limit else text[:limit].rstrip() + "…"
