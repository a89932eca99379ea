"""The runnable SQL examples in sql/: each runs on real Spark with the extension, and its
final rows and state are the ones its comments promise."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from punctuated.sqlrun import run_file

SQL = Path(__file__).resolve().parents[1] / "sql"


@pytest.fixture
def fresh_database(spark):
    name = "examples_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE DATABASE {name}")
    spark.sql(f"USE {name}")
    try:
        yield name
    finally:
        spark.sql("USE default")
        spark.sql(f"DROP DATABASE {name} CASCADE")


def _punctuated_state(progress) -> list[int]:
    last = progress[-1]
    return [op["numRowsTotal"] for op in last["stateOperators"] if op["operatorName"].startswith("punctuated")]


def test_warehouse_query_emits_hours_every_hall_closed(spark, fresh_database):
    progress: list = []
    rows = run_file(spark, SQL / "warehouse.sql", progress=progress)
    assert [tuple(r) for r in rows] == [(9, 24.0, 3)]
    # hours 10 and 11 are still open: they are the aggregation's whole state
    assert _punctuated_state(progress) == [2]


def test_auction_query_emits_closed_auctions_once(spark, fresh_database):
    progress: list = []
    rows = run_file(spark, SQL / "auction.sql", progress=progress)
    assert sorted(tuple(r) for r in rows) == [(1, 3, 2, 12.5, 7.5), (3, 5, 2, 21.0, 12.0)]
    ops = {op["operatorName"]: op for op in progress[-1]["stateOperators"]}
    assert ops["punctuatedAggregate"]["numRowsTotal"] == 1     # auction 2, still open


def test_band_only_join_runs_on_time_buckets_and_purges_by_time(spark, fresh_database):
    progress: list = []
    rows = run_file(spark, SQL / "band_only_join.sql", progress=progress)
    assert sorted(tuple(r) for r in rows) == [(1, 100), (2, 101)]
    # impression 3 (one or two bucket copies) and click 102 are the join's whole state
    assert _punctuated_state(progress)[0] in (2, 3), progress[-1]["stateOperators"]
    from punctuated.safety.spark import check_safety
    report = check_safety(spark, "SELECT i.ad, c.user FROM STREAM(impressions) i JOIN STREAM(clicks) c "
                                 "ON c.ts BETWEEN i.ts AND i.ts + INTERVAL 10 MINUTES")
    assert report.safe and report.unpurgeable == [] and report.refusals == [], report.explain()
    # what cannot run on buckets: check_safety says why, as start() would, whatever the mode
    for join, why in (("FULL OUTER JOIN", "full outer join is not supported"),
                      ("JOIN", "open on one side")):
        band = ("c.ts BETWEEN i.ts AND i.ts + INTERVAL 10 MINUTES" if "OUTER" in join else "c.ts >= i.ts")
        report = check_safety(spark, f"SELECT i.ad, c.user FROM STREAM(impressions) i {join} STREAM(clicks) c "
                                     f"ON {band}")
        assert not report.safe and [r["condition"] for r in report.refusals] == ["PUNCTUATED_BAND_ONLY_JOIN"]
        text = report.explain()
        assert text.startswith("The query CANNOT RUN") and why in text and "Fix:" in text, text
