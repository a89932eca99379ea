"""The ``punctuated`` command line as a user runs it: a subprocess."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest


def run_cli(*args, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "punctuated", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_version():
    done = run_cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"punctuated {metadata.version('punctuated')}"


@pytest.mark.parametrize(
    "statements, condition, statement",
    [
        # a misspelt property: the error is the first thing the user sees, on one line
        (["CREATE TABLE bids (auction BIGINT, is_punct BOOLEAN) USING parquet "
          "TBLPROPERTIES ('punctuated.scheme' = 'auction', 'punctuated.marker' = 'is_punct')",
          "INSERT INTO bids VALUES (1, false)",
          "SELECT auction FROM STREAM(bids)"],
         "PUNCTUATED_INVALID_DECLARATION.UNKNOWN_PROPERTY", "statement 3 (SELECT auction FROM STREAM(bids))"),
        (["SELECT nosuch FROM range(3)"], "UNRESOLVED_COLUMN", "statement 1"),
        # a streaming query that fails while running: the cause's error class, not only STREAM_FAILED
        (["CREATE TABLE bids (auction BIGINT, bidder BIGINT, is_punct BOOLEAN) USING parquet "
          "TBLPROPERTIES ('punctuated.schemes' = 'auction', 'punctuated.marker' = 'is_punct')",
          "INSERT INTO bids VALUES (1, 2, false), (NULL, 5, true)",
          "SELECT auction, count(*) AS n FROM STREAM(bids) GROUP BY auction"],
         "[STREAM_FAILED]: [PUNCTUATED_INVALID_PUNCTUATION] Punctuation row (auction=NULL)",
         "statement 3"),
    ],
)
def test_run_sql_reports_a_failing_statement_in_one_line(tmp_path, statements, condition, statement):
    sql = tmp_path / "bad.sql"
    sql.write_text(";\n".join(statements) + ";\n")
    done = run_cli("run-sql", str(sql), cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert condition in errors[0] and f"bad.sql, {statement}" in errors[0], errors[0]
    for noise in ("Traceback", "py4j", "\tat ", "JVM stacktrace"):
        assert noise not in done.stderr, done.stderr
    assert "Results:" not in done.stdout


def test_run_sql_missing_file(tmp_path):
    done = run_cli("run-sql", str(tmp_path / "none.sql"))
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: SQL file {tmp_path / 'none.sql'} not found"
