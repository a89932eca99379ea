"""check_safety of joins with a time band, on the real local SparkSession.

A band (``b.ts BETWEEN a.ts - 2 AND a.ts + 3``) adds an edge to Li et al.'s punctuation graph:
a stored row goes once the other input's range punctuation ``ts<=c`` passes the row's band
(``punctuated.safety.band``). ``start()`` in strict mode counts it (the extension's
``TimeBandSafety``); ``check_safety`` must say the same, join by join, and explain it.
"""

from __future__ import annotations

import uuid

import pytest

from punctuated.safety.band import Band
from punctuated.safety.spark import check_safety, format_report, report_from_join_graph


@pytest.fixture
def band_tables(spark, tmp_path):
    """``band_tables(a_schemes, b_schemes)``: two declared tables (k, ts, v, p) under unique
    names, dropped after the test."""
    created = []

    def make(a_schemes: str, b_schemes: str) -> tuple[str, str]:
        suffix = uuid.uuid4().hex[:8]
        names = []
        for role, schemes in (("a", a_schemes), ("b", b_schemes)):
            name = f"band_{role}_{suffix}"
            spark.sql(f"CREATE TABLE {name} (k INT, ts BIGINT, v INT, p BOOLEAN) USING parquet "
                      f"TBLPROPERTIES ('punctuated.schemes' = '{schemes}', 'punctuated.marker' = 'p')")
            created.append(name)
            names.append(name)
        return names[0], names[1]

    yield make
    for name in created:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def _join(a: str, b: str, band: str) -> str:
    return f"SELECT a.k, a.ts, b.ts FROM STREAM({a}) a JOIN STREAM({b}) b ON a.k = b.k AND {band}"


def _agrees_with_start(report) -> None:
    """The plan verdict check_safety prints is the one start() enforces, join by join."""
    ours = [list(o.purgeable) for o in report.plan_report.operators]
    assert ours == [e["purgeable"] for e in report.enforced], (ours, report.enforced)


def test_a_band_and_a_range_scheme_purge_what_the_key_does_not(spark, band_tables, tmp_path):
    a, b = band_tables("k", "ts<=")  # b punctuates no key: a's rows go by the band alone
    r = check_safety(spark, _join(a, b, "b.ts BETWEEN a.ts - 2 AND a.ts + 3"))
    assert r.safe and r.query_safe and r.unpurgeable == []
    _agrees_with_start(r)
    assert r.bands and r.bands[0].lo == -2 and r.bands[0].hi == 3
    text = r.explain()
    assert "the time band" in text and "never used" not in text, text
    assert r.suggestions == [] and "Suggestions" not in format_report(r)
    # the band edge is an edge of the drawn graph, from the stored input to the punctuating one
    assert r.graph.has_edge(a, b)
    r.draw(str(tmp_path / "band.svg"))
    assert "time band" in (tmp_path / "band.svg").read_text()


def test_a_band_that_does_not_bound_an_input_leaves_it_unpurged(spark, band_tables):
    # b.ts <= a.ts + 3 bounds how far b runs ahead of a's rows, not the other way round
    a, b = band_tables("ts<=", "k")
    r = check_safety(spark, _join(a, b, "b.ts <= a.ts + 3"))
    assert not r.safe and r.unpurgeable == [b], r.unpurgeable
    _agrees_with_start(r)
    assert f"never purged for: {b}" in r.explain()
    # the lower bound makes a's range punctuations close b's rows too
    r2 = check_safety(spark, _join(a, b, "b.ts <= a.ts + 3 AND b.ts >= a.ts - 2"))
    assert r2.safe, r2.explain()
    _agrees_with_start(r2)


def test_a_band_without_the_other_inputs_range_scheme_is_no_edge(spark, band_tables):
    a, b = band_tables("k", "v")  # b declares no ts<=: the band alone purges nothing
    r = check_safety(spark, _join(a, b, "b.ts BETWEEN a.ts - 2 AND a.ts + 3"))
    assert not r.safe and r.unpurgeable == [a]
    _agrees_with_start(r)
    assert r.suggestions, "a fix is still suggested"


def test_a_band_edge_in_a_hand_written_graph_and_a_watermark():
    """Without Spark: the band edge from a watermark on the other input's band column."""
    graph = {"streams": [{"name": "a", "attributes": ["k", "ts"], "schemes": [["k"]], "declared": True},
                         {"name": "b", "attributes": ["k", "ts"], "schemes": [], "declared": False}],
             "predicates": ["a.k = b.k"], "tree": ["a", "b"]}
    plain = report_from_join_graph(graph, stream_joins=1)
    assert plain.unpurgeable == ["a"]
    from punctuated.safety.spark import _report  # the document's path, with its bands
    marked = Band(("a", "ts"), ("b", "ts"), lo=-2, hi=3, watermarked=(False, True))
    streams = {"a": ["k", "ts"], "b": ["k", "ts"]}
    from punctuated.safety.model import parse_predicate
    r = _report(graph["streams"], streams, [parse_predicate("a.k = b.k", streams)],
                {"a": [["k"]]}, 1, None, ("a", "b"), None, None, [marked])
    assert r.safe and r.unpurgeable == [], r.explain()
    assert "b(ts<= by its watermark)" in r.explain()


def test_a_window_of_a_band_joins_time_closes_by_its_output_punctuations(spark, band_tables):
    """The band join's output carries `a.ts<=` (min of a's bound and b's less the band): an
    aggregation over it grouped by a (monotone) expression of a.ts is safe, grouped by a
    column no punctuation closes it is not — as start() decides it."""
    a, b = band_tables("ts<=", "ts<=")
    join = (f"FROM STREAM({a}) a JOIN STREAM({b}) b ON a.k = b.k AND b.ts BETWEEN a.ts - 2 AND a.ts + 3")
    by_time = check_safety(spark, f"SELECT a.ts div 10 AS w, count(*) AS n {join} GROUP BY a.ts div 10")
    assert by_time.safe and by_time.unpurgeable == [], by_time.explain()
    by_other = check_safety(spark, f"SELECT a.v, count(*) AS n {join} GROUP BY a.v")
    assert not by_other.safe and by_other.unpurgeable == ["aggregation GROUP BY v"], by_other.unpurgeable
