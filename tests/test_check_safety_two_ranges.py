"""check_safety of queries over schemes with two range attributes (``day<=, level<=``: "no
more rows with day <= d and level <= l"), on the real local SparkSession.

Their punctuations close a staircase of corners (punctuated.region): an aggregation grouped by
both columns, or a deduplication on them, is closed by them, and so is a binary join on both
columns, and so does the multi-way join three such streams run as (a scheme's ranges bind
their classes as constants do: Li et al. 2006, §4.2). ``check_safety`` must say what
``start()`` enforces.
"""

from __future__ import annotations

import uuid

import pytest
from pyspark.errors import AnalysisException

from punctuated.safety.spark import check_safety


@pytest.fixture
def level_tables(spark):
    """``a``, ``b`` and ``c`` over (day, level), each declaring ``day<=, level<=``."""
    suffix = uuid.uuid4().hex[:8]
    names = tuple(f"two_{t}_{suffix}" for t in "abc")
    for name in names:
        spark.sql(f"CREATE TABLE {name} (day INT, level INT, v INT, p BOOLEAN) USING parquet "
                  "TBLPROPERTIES ('punctuated.schemes' = 'day<=, level<=', 'punctuated.marker' = 'p')")
    yield names
    for name in names:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def _start(df, tmp_path, name, mode="append"):
    q = df.writeStream.format("memory").queryName(f"{name}_{uuid.uuid4().hex[:8]}") \
        .outputMode(mode).option("checkpointLocation", str(tmp_path / name)).start()
    q.stop()


def test_an_aggregation_on_both_range_columns_is_closed(spark, level_tables, tmp_path):
    a, _, _ = level_tables
    df = spark.readStream.table(a).groupBy("day", "level").count()
    r = check_safety(spark, df)
    assert r.safe, r.explain()
    assert [o["closed"] for o in r.stateful] == [True], r.stateful
    _start(df, tmp_path, "two_agg")   # strict mode accepts it too


def test_a_binary_join_is_purged_by_them(spark, level_tables, tmp_path):
    a, b, _ = level_tables
    left, right = spark.readStream.table(a), spark.readStream.table(b)
    df = left.join(right, (left.day == right.day) & (left.level == right.level)).select(left.v)
    r = check_safety(spark, df)
    assert r.safe and r.unpurgeable == [], r.explain()
    assert r.join_graph["schemes"][a] == [["day<=", "level<="]], r.join_graph["schemes"]
    ours = [list(o.purgeable) for o in r.plan_report.operators]
    assert ours == [e["purgeable"] for e in r.enforced] == [[True, True]], (ours, r.enforced)
    _start(df, tmp_path, "two_join")   # strict mode accepts it too


def test_a_three_way_join_agrees_with_the_start_time_check(spark, level_tables, tmp_path):
    a, b, c = level_tables
    x, y, z = (spark.readStream.table(t) for t in (a, b, c))
    df = (x.join(y, (x.day == y.day) & (x.level == y.level))
          .join(z, (x.day == z.day) & (x.level == z.level)).select(x.v))
    r = check_safety(spark, df)
    ours = [list(o.purgeable) for o in r.plan_report.operators]
    assert ours == [e["purgeable"] for e in r.enforced], (ours, r.enforced)
    # one multi-way join of the three streams, every input purged by the others' staircases
    assert r.safe and ours == [[True, True, True]], (r.explain(), ours)
    _start(df, tmp_path, "two_three")
