"""check_safety with load shedding: a budget bounds the unpurgeable state of a binary
punctuated join, so strict mode accepts the query and the report says results may be
partial (Das, Gehrke and Riedewald 2005; docs/joins.md "Load shedding")."""
from __future__ import annotations

import doctest

import pytest

import punctuated
from punctuated import check_safety
from punctuated.safety import shedding


def _query(spark):
    left = spark.readStream.format("rate").load().selectExpr(
        "value % 10 AS k", "value AS v", "false AS closed")
    left = punctuated.with_schemes(left, schemes=["k"], marker="closed", name="ticks")
    right = spark.readStream.format("rate").load().selectExpr("value % 10 AS k", "value AS w")
    return left.join(right, "k")


@pytest.fixture
def budget(spark):
    spark.conf.set(shedding.MAX_STATE_ROWS, "1000")
    yield
    spark.conf.unset(shedding.MAX_STATE_ROWS)


def test_without_budget_the_report_names_no_bound(spark):
    r = check_safety(spark, _query(spark))
    assert not r.safe and r.shedding is None and r.bounded_by_budget == [] and not r.partial_results
    assert "load shedding" not in r.explain()


def test_budget_bounds_the_unpurgeable_join_and_results_may_be_partial(spark, budget):
    r = check_safety(spark, _query(spark))
    assert not r.safe                              # punctuations still never purge it
    assert r.shedding == {"maxStateRows": 1000, "policy": "prob"}
    assert r.partial_results and r.bounded_by_budget == r.unpurgeable and r.unpurgeable
    text = r.explain()
    assert "strict mode accepts the query" in text and "partial" in text
    assert r.to_dict()["bounded_by_budget"] == r.bounded_by_budget


def test_a_budget_over_an_outer_join_is_reported_as_refused_not_bounded(spark, budget):
    """start() refuses shedding where results would be wrong whatever the safety mode: the
    report says so (``refusals``), and never that the budget makes strict mode accept it."""
    ticks = punctuated.with_schemes(spark.readStream.format("rate").load().selectExpr(
        "value % 10 AS k", "value AS v", "false AS closed"), schemes=["k"], marker="closed", name="ticks")
    other = spark.readStream.format("rate").load().selectExpr("value % 10 AS k", "value AS w")
    r = check_safety(spark, ticks.join(other, "k", "left_outer"))
    assert not r.safe and [x["condition"] for x in r.refusals] == ["PUNCTUATED_SHEDDING_UNSUPPORTED"], r.refusals
    assert r.bounded_by_budget == [] and not r.partial_results
    text = r.explain()
    assert text.startswith("The query CANNOT RUN") and "outer, semi or anti join" in text, text
    assert "strict mode accepts" not in text
    assert r.to_dict()["refusals"] == r.refusals
    # the inner join is not refused
    assert check_safety(spark, _query(spark)).refusals == []


def _chain(spark):
    """a(k) JOIN b(k, v) JOIN c(v), each punctuating its first column: one multi-way join where
    c's state is never purged (b never punctuates v: Li et al. 2006, Theorems 2/4)."""
    def rate(cols, name):
        df = spark.readStream.format("rate").load().selectExpr(*cols, f"false AS {name}_p")
        return punctuated.with_schemes(df, schemes=[cols[0].split()[-1]], marker=f"{name}_p", name=name)
    a = rate(["value % 10 AS a_k", "value AS a_w"], "a")
    b = rate(["value % 10 AS b_k", "value % 7 AS b_v"], "b")
    c = rate(["value % 7 AS c_v", "value AS c_w"], "c")
    return a.join(b, a.a_k == b.b_k).join(c, b.b_v == c.c_v)


def test_budget_bounds_a_multi_way_join(spark, budget):
    """The multi-way join sheds under the budget too (docs/joins.md "Load shedding"): its
    unpurgeable inputs are bounded, strict mode accepts it, and nothing refuses it."""
    r = check_safety(spark, _chain(spark))
    assert not r.safe and r.refusals == []
    assert r.partial_results and r.bounded_by_budget == r.unpurgeable and r.unpurgeable
    assert "strict mode accepts the query" in r.explain()


def test_a_budget_with_parallel_track_is_refused(spark, budget):
    spark.conf.set("spark.punctuated.migration.strategy", "parallel_track")
    try:
        r = check_safety(spark, _chain(spark))
    finally:
        spark.conf.unset("spark.punctuated.migration.strategy")
    assert [x["condition"] for x in r.refusals] == ["PUNCTUATED_SHEDDING_UNSUPPORTED"], r.refusals
    assert "parallel_track" in r.refusals[0]["message"] and r.bounded_by_budget == []


def test_settings_from_a_dict():
    assert shedding.settings({}) is None
    assert shedding.settings({shedding.MAX_STATE_ROWS: "5", shedding.POLICY: "RAND"}) == \
        {"maxStateRows": 5, "policy": "rand"}


def test_docstring_examples():
    assert doctest.testmod(shedding).failed == 0
