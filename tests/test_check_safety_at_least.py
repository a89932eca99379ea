"""check_safety of queries over ``attr>=`` schemes ("no more rows with attr >= v"), on the real
local SparkSession.

A ``>=`` range is a punctuation on its attribute like any other for Li et al. 2006 (Theorem 1:
a join input is purged by the other input's schemes on the join key), and a join passes a key
punctuation on only when both inputs close the same scheme, direction included (the JVM's
``KeyScheme``). Windows and other time expressions close only on ``ts<=`` (their groups end at
increasing times). ``check_safety`` must say what ``start()`` enforces.
"""

from __future__ import annotations

import uuid

import pytest
from pyspark.errors import AnalysisException

from punctuated.safety.spark import check_safety


@pytest.fixture
def backfill_tables(spark):
    """``a`` (``k>=``), ``b`` (``k``) and ``c`` (``ts>=``), under unique names; dropped after."""
    suffix = uuid.uuid4().hex[:8]
    names = (f"atl_a_{suffix}", f"atl_b_{suffix}", f"atl_c_{suffix}")
    for name, schemes in zip(names, ("k>=", "k", "ts>=")):
        spark.sql(f"CREATE TABLE {name} (k INT, ts TIMESTAMP, v INT, p BOOLEAN) USING parquet "
                  f"TBLPROPERTIES ('punctuated.schemes' = '{schemes}', 'punctuated.marker' = 'p')")
    yield names
    for name in names:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def _start(df, tmp_path, name):
    q = df.writeStream.format("memory").queryName(f"{name}_{uuid.uuid4().hex[:8]}") \
        .outputMode("append").option("checkpointLocation", str(tmp_path / name)).start()
    q.stop()


def test_a_join_on_an_at_least_range_is_safe_and_shows_it(spark, backfill_tables, tmp_path):
    a, b, _ = backfill_tables
    left, right = spark.readStream.table(a), spark.readStream.table(b)
    df = left.join(right, left.k == right.k).select(left.k, left.v, right.v.alias("bv"))
    r = check_safety(spark, df)
    assert r.safe and r.unpurgeable == [], r.explain()
    assert r.join_graph["schemes"][a] == [["k>="]], r.join_graph["schemes"]
    ours = [list(o.purgeable) for o in r.plan_report.operators]
    assert ours == [e["purgeable"] for e in r.enforced], (ours, r.enforced)
    _start(df, tmp_path, "atl_join")   # strict mode accepts it too


def test_a_window_over_an_at_least_range_is_unsafe_and_says_why(spark, backfill_tables, tmp_path):
    _, _, c = backfill_tables
    from pyspark.sql import functions as F
    df = spark.readStream.table(c).groupBy(F.window("ts", "1 hour")).count()
    r = check_safety(spark, df)
    assert not r.safe, r.explain()
    assert "'ts>=' punctuations close no group of window(ts" in r.explain(), r.explain()
    with pytest.raises(AnalysisException, match="PUNCTUATED_UNSAFE_QUERY"):
        _start(df, tmp_path, "atl_window")
