"""The auction demo (``punctuated demo``) at a tiny size, on the shared real SparkSession."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from punctuated import auction_stream
from punctuated.demo import OUR_QUERY, run_demo
from punctuated.sqlrun import run_file, split_statements

REPO = Path(__file__).resolve().parents[1]
SIZE = {"auctions": 5, "steps": 3, "seed": 3, "max_bids": 4}


def test_generator_is_deterministic_and_well_formed():
    stream = auction_stream.generate(auctions=30, steps=8, seed=11)
    assert stream == auction_stream.generate(auctions=30, steps=8, seed=11)
    assert stream != auction_stream.generate(auctions=30, steps=8, seed=12)
    opened = {row[0]: k for k, s in enumerate(stream) for row in s.auctions}
    closes = auction_stream.closes(stream)
    assert len(opened) == 30 and set(closes) == set(opened)  # every auction opens and closes once
    assert sum(s.punctuations for s in stream) == 30
    assert all(opened[a] < closes[a] for a in opened)
    prices: dict = {}
    for k, s in enumerate(stream):
        for auction, bidder, price, punct in s.bids:
            if punct:
                assert (bidder, price) == (None, None)  # a punctuation sets its scheme only
                continue
            assert opened[auction] <= k <= closes[auction]  # bids while the auction is open
            assert price > prices.get(auction, 0)  # prices rise
            prices[auction] = price
    assert set(auction_stream.totals(stream)) == set(opened)


def test_generator_docstring_examples():
    import doctest

    assert doctest.testmod(auction_stream).failed == 0


def test_sql_example_runs_the_demo_query():
    """sql/auction.sql and the demo ask the same question."""
    query = split_statements((REPO / "sql" / "auction.sql").read_text())[-1]
    query = "\n".join(line.split("--", 1)[0] for line in query.splitlines())
    assert " ".join(query.split()) == " ".join(OUR_QUERY.replace("{db}.", "").split())


@pytest.fixture(scope="module")
def demo(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("demo-output")
    printed = io.StringIO()
    result = run_demo(spark, out_dir=out, progress=False, out=printed, **SIZE)
    return result, out, printed.getvalue()


def test_demo_writes_plot_table_and_csv(demo):
    result, out, printed = demo
    png, md, table = out / "state.png", out / "state.md", out / "state.csv"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = md.read_text()
    assert "state rows after the last step" in text
    assert len(re.findall(r"^\| \d+ \|", text, re.M)) == SIZE["steps"]  # one table row a step
    with open(table) as f:
        rows = list(csv.DictReader(f))
    assert [int(r["step"]) for r in rows] == list(range(SIZE["steps"]))
    assert "Check" in printed and str(png) in printed


def _spark_joins_in_update_mode() -> bool:
    """Spark 4.2 runs a stream-stream join in update mode; 4.0 and 4.1 refuse it."""
    import pyspark

    from punctuated.spark_version import minor_at_least

    return minor_at_least(pyspark.__version__, "4.2")


def _everything(stream) -> int:
    """Every data row of the stream and one group per auction: what a plan that never drops holds."""
    return sum(s.rows - s.punctuations for s in stream) + len(auction_stream.totals(stream))


def test_spark_plan_keeps_every_row(demo):
    result, _, printed = demo
    stream = auction_stream.generate(**SIZE)
    if not _spark_joins_in_update_mode():
        # no mode runs Spark's own plan of this query without a watermark: the demo says so
        refused = "Join between two streaming DataFrames/Datasets is not supported in Update output mode"
        assert result["errors"]["spark"].startswith(refused), result["errors"]
        assert f"Spark's own (update) plan stopped at step 0: {refused}" in printed
        assert all(r["spark_state"] is None for r in result["steps"])
        return
    assert result["errors"]["spark"] is None
    states = [r["spark_state"] for r in result["steps"]]
    assert all(a <= b for a, b in zip(states, states[1:])) and states[-1] > states[0]
    # it holds every auction, every bid and one group per auction: nothing is ever dropped
    assert states[-1] == _everything(stream)
    # its latest update per auction is the batch answer, which is the generator's
    assert result["totals"]["spark"] == result["totals"]["batch"] == auction_stream.totals(stream)
    assert result["check"]["spark_match"]


def test_our_plan_emits_final_totals_on_close_and_forgets(demo):
    result, _, printed = demo
    assert result["errors"]["ours"] is None, result["errors"]["ours"]
    assert result["totals"]["ours"] == result["totals"]["batch"]
    assert result["check"]["ours_match"] and result["check"]["ours_once_on_close"]
    assert "Check OK" in printed
    steps = result["steps"]
    everything = _everything(auction_stream.generate(**SIZE))
    # every auction has closed by the last step: what remains is (almost) nothing
    assert steps[-1]["ours_state"] <= max(1, everything // 10)
    # never more than Spark's plan holds (where Spark runs it), which is everything
    assert all(r["ours_state"] <= (everything if r["spark_state"] is None else r["spark_state"]) for r in steps)


def test_sql_example_emits_closed_auctions(spark):
    for t in ("auctions", "bids"):
        spark.sql(f"DROP TABLE IF EXISTS {t}")
    try:
        rows = run_file(spark, REPO / "sql" / "auction.sql")
        assert sorted(tuple(r) for r in rows) == [(1, 3, 2, 12.5, 7.5), (3, 5, 2, 21.0, 12.0)]
    finally:
        for t in ("auctions", "bids"):
            spark.sql(f"DROP TABLE IF EXISTS {t}")
