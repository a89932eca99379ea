"""check_safety and strict start() on aggregations keyed by windows and time expressions of a
range-punctuated timestamp (``ts<=``): monotone keys are closed, ``hour(ts)`` is not (it wraps
around), and the report names the expression and why (docs/aggregation.md, "Windows and time
expressions")."""

from __future__ import annotations

import uuid

import pytest

from punctuated.safety.spark import check_safety, format_report

READINGS = ("(sensor BIGINT, ts TIMESTAMP, temp DOUBLE, is_punct BOOLEAN) USING parquet "
            "TBLPROPERTIES ('punctuated.schemes' = 'ts<=', 'punctuated.marker' = 'is_punct')")


@pytest.fixture
def readings(spark):
    name = f"et_readings_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} {READINGS}")
    yield name
    spark.sql(f"DROP TABLE IF EXISTS {name}")


def _starts(spark, sql, mode="append"):
    from pyspark.errors import AnalysisException
    try:
        q = spark.sql(sql).writeStream.format("memory").queryName(f"t{uuid.uuid4().hex[:8]}") \
            .outputMode(mode).start()
        q.stop()
        return True
    except AnalysisException as e:
        assert "PUNCTUATED_UNSAFE_QUERY" in str(e), str(e)[:500]
        return False


@pytest.mark.parametrize("key", [
    "window(ts, '10 minutes')",
    "window(ts, '10 minutes', '5 minutes')",
    "date_trunc('hour', ts)",
    "to_date(ts)",
    "unix_seconds(ts) div 60",
])
def test_windows_and_monotone_time_keys_are_closed(spark, readings, key):
    sql = f"SELECT {key} AS k, count(*) AS n FROM STREAM({readings}) GROUP BY {key}"
    r = check_safety(spark, sql)
    assert r.safe, r.explain()
    assert _starts(spark, sql)          # append mode, no watermark


def test_hour_of_a_timestamp_is_refused_naming_the_expression(spark, readings):
    sql = f"SELECT hour(ts) AS h, count(*) AS n FROM STREAM({readings}) GROUP BY hour(ts)"
    r = check_safety(spark, sql)
    text = format_report(r)
    assert not r.safe, text
    assert "hour(ts)" in text and "wraps around" in text and "date_trunc('hour', ts)" in text, text
    assert not _starts(spark, sql, "update")


@pytest.mark.parametrize("key,safe", [
    ("date_trunc('hour', ts)", True),
    ("to_date(ts)", True),
    ("hour(ts)", False),
])
def test_deduplication_keys_computed_from_time(spark, readings, key, safe):
    """DISTINCT over a projection computing a key from ts: a monotone expression is closed by
    ``ts<=`` as a group is; ``hour(ts)`` is refused, named with why (the start-time verdict)."""
    sql = f"SELECT DISTINCT sensor, {key} AS k FROM STREAM({readings})"
    r = check_safety(spark, sql)
    text = format_report(r)
    assert r.safe == safe, text
    assert _starts(spark, sql) == safe
    if not safe:
        assert "close no key of hour(ts)" in text and "date_trunc('hour', ts)" in text, text
