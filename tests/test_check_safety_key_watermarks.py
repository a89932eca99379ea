"""check_safety of joins whose key holds a watermarked column, on the real local SparkSession.

A watermark is the range punctuation ``ts<=w`` (Tucker et al. 2003): on a join-key column of a
binary join without a time band it purges the other input's rows (Li et al. 2006, Theorem 1),
and ``start()`` in strict mode counts it (the extension's ``KeyWatermarkSafety``).
``check_safety`` must say the same, join by join: the describe document lists the watermark as
that stream's range scheme (source ``watermark``).
"""

from __future__ import annotations

import uuid

import pytest

from punctuated.safety.spark import check_safety


@pytest.fixture
def key_tables(spark):
    """A declared table ``a`` (scheme ``k``, marker ``p``) and an undeclared one ``b``, both
    ``(k INT, ts TIMESTAMP, v INT)``, under unique names; dropped after the test."""
    suffix = uuid.uuid4().hex[:8]
    a, b = f"wmk_a_{suffix}", f"wmk_b_{suffix}"
    spark.sql(f"CREATE TABLE {a} (k INT, ts TIMESTAMP, v INT, p BOOLEAN) USING parquet "
              "TBLPROPERTIES ('punctuated.schemes' = 'k', 'punctuated.marker' = 'p')")
    spark.sql(f"CREATE TABLE {b} (k INT, ts TIMESTAMP, v INT) USING parquet")
    yield a, b
    for name in (a, b):
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def _agrees_with_start(report) -> None:
    """The plan verdict check_safety prints is the one start() enforces, join by join."""
    ours = [list(o.purgeable) for o in report.plan_report.operators]
    assert ours == [e["purgeable"] for e in report.enforced], (ours, report.enforced)


def _join(spark, a: str, b: str, *, watermark: str | None, on_ts: bool = True):
    left = spark.readStream.table(a)
    right = spark.readStream.table(b)
    if watermark:
        right = right.withWatermark(watermark, "1 minute")
    cond = (left.k == right.k) & (left.ts == right.ts) if on_ts else (left.k == right.k)
    return left.join(right, cond).select(left.k, left.v, right.v.alias("bv"))


def test_a_watermark_on_a_join_key_column_purges_the_other_input(spark, key_tables):
    a, b = key_tables
    r = check_safety(spark, _join(spark, a, b, watermark="ts"))
    assert r.safe and r.unpurgeable == [], r.explain()
    _agrees_with_start(r)
    # the watermark is b's range scheme on ts, and a's key scheme purges b
    assert r.join_graph["schemes"][b] == [["ts<="]], r.join_graph["schemes"]


def test_without_it_or_off_the_key_the_declared_input_is_never_purged(spark, key_tables):
    a, b = key_tables
    for df in (_join(spark, a, b, watermark=None), _join(spark, a, b, watermark="ts", on_ts=False)):
        r = check_safety(spark, df)
        assert not r.safe and r.unpurgeable == [a], r.explain()
        _agrees_with_start(r)
        assert b not in r.join_graph["schemes"], r.join_graph["schemes"]


def test_start_in_strict_mode_agrees(spark, key_tables, tmp_path):
    a, b = key_tables
    q = _join(spark, a, b, watermark="ts").writeStream.format("memory").queryName(
        f"wmk_{uuid.uuid4().hex[:8]}").option("checkpointLocation", str(tmp_path / "cp")).start()
    try:
        assert q.isActive
    finally:
        q.stop()
    from pyspark.errors import AnalysisException
    with pytest.raises(AnalysisException, match="PUNCTUATED_UNSAFE_QUERY"):
        _join(spark, a, b, watermark=None).writeStream.format("memory").queryName(
            f"wmk_{uuid.uuid4().hex[:8]}").option("checkpointLocation", str(tmp_path / "cp2")).start()
