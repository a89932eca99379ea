"""Column names that are no plain identifier -- blanks, backquotes, non-ASCII letters --
declared in ``TBLPROPERTIES`` (backquoted as the scheme grammar requires), joined in SQL:
``check_safety`` names them as spelled, ``start()`` runs, punctuations purge the state."""

from __future__ import annotations

import uuid

import pytest

from punctuated.safety.spark import check_safety, format_report


@pytest.fixture
def names(spark):
    """Two declared tables under unique names: ``encheres`` with columns ``bid id``,
    ``a`b``, ``prix€`` and ``offres`` with ``enchère``; dropped after the test."""
    suffix = uuid.uuid4().hex[:8]
    e, o = f"encheres_{suffix}", f"offres_{suffix}"
    spark.sql(f"CREATE TABLE {e} (`bid id` BIGINT, `a``b` BIGINT, `prix€` DOUBLE, is_punct BOOLEAN) "
              "USING parquet TBLPROPERTIES ("
              "'punctuated.schemes' = '`bid id`; `a``b`, `prix€`<=', 'punctuated.marker' = 'is_punct')")
    spark.sql(f"CREATE TABLE {o} (`enchère` BIGINT, montant DOUBLE, is_punct BOOLEAN) USING parquet "
              "TBLPROPERTIES ('punctuated.schemes' = '`enchère`', 'punctuated.marker' = 'is_punct')")
    yield e, o
    for t in (e, o):
        spark.sql(f"DROP TABLE IF EXISTS {t}")


def test_check_safety_reads_names_as_spelled(spark, names):
    e, o = names
    r = check_safety(spark, f"SELECT * FROM STREAM({e}) x JOIN STREAM({o}) y ON x.`bid id` = y.`enchère`")
    assert r.safe and r.unpurgeable == [], r.explain()
    assert r.join_graph["streams"][e] == ["bid id", "a`b", "prix€", "is_punct"]
    assert r.join_graph["predicates"] == [f"{e}.`bid id` = {o}.`enchère`"]
    assert r.join_graph["schemes"] == {e: [["`bid id`"], ["`a``b`", "`prix€`<="]], o: [["`enchère`"]]}
    assert [v["purgeable"] for v in r.enforced] == [[True, True]]


def test_check_safety_names_the_unclosed_column_and_the_fix(spark, names):
    e, o = names
    r = check_safety(spark, f"SELECT * FROM STREAM({e}) x JOIN STREAM({o}) y ON x.`a``b` = y.`enchère`")
    assert not r.safe and r.unpurgeable == [o]
    assert [s.as_schemes() for s in r.suggestions] == [{e: [["a`b"]]}]
    (fix,) = r.fixes(r.suggestions[0])
    # the statement applies as printed: names backquoted as the scheme grammar requires
    assert "'`bid id`; `a``b`, `prix€`<=; `a``b`'" in fix, fix
    assert "add " + str(r.suggestions[0]) in format_report(r)
    spark.sql(fix)
    assert check_safety(spark, f"SELECT * FROM STREAM({e}) x JOIN STREAM({o}) y "
                               f"ON x.`a``b` = y.`enchère`").safe


def test_running_join_purges_state_on_quoted_names(spark, names):
    e, o = names
    sink = "quoted_" + uuid.uuid4().hex[:8]
    query = (spark.sql(f"SELECT x.`bid id`, x.`prix€`, y.montant FROM STREAM({e}) x "
                       f"JOIN STREAM({o}) y ON x.`bid id` = y.`enchère`")
             .writeStream.format("memory").queryName(sink).outputMode("append").start())
    try:
        spark.sql(f"INSERT INTO {e} VALUES (1, 7, 1.5, false), (2, 8, 2.5, false)")
        spark.sql(f"INSERT INTO {o} VALUES (1, 10.0, false), (2, 20.0, false), (2, 21.0, false)")
        query.processAllAvailable()
        rows = sorted(tuple(r) for r in spark.table(sink).collect())
        assert rows == [(1, 1.5, 10.0), (2, 2.5, 20.0), (2, 2.5, 21.0)]
        assert _join_rows(query) == 5                       # nothing closed yet
        # both sides close bid 1: its rows leave the state, bid 2's stay
        spark.sql(f"INSERT INTO {e} VALUES (1, NULL, NULL, true)")
        spark.sql(f"INSERT INTO {o} VALUES (1, NULL, true)")
        query.processAllAvailable()
        assert _join_rows(query) == 3
        assert spark.table(sink).count() == 3                # punctuations are no results
    finally:
        query.stop()
        spark.catalog.dropTempView(sink)


def _join_rows(query) -> int:
    (op,) = [op for op in query.lastProgress["stateOperators"] if "oin" in op["operatorName"]]
    return op["numRowsTotal"]


def test_dataframe_streams_with_quoted_names(spark):
    import punctuated

    rate = spark.readStream.format("rate").load()
    a = punctuated.with_schemes(rate.selectExpr("value AS `bid id`", "value % 3 AS `prix€`",
                                                "false AS `est ponct`"),
                                schemes=["`bid id`"], marker="est ponct", name="ench ères")
    b = punctuated.with_schemes(rate.selectExpr("value AS `enchère`", "value AS `a``b`", "false AS p"),
                                schemes=["`enchère`"], marker="p", name="offres")
    r = check_safety(spark, a.join(b, a["`bid id`"] == b["`enchère`"]))
    assert r.safe and r.join_graph["predicates"] == ["`ench ères`.`bid id` = offres.`enchère`"]
    # judged as the tree Spark runs, not only as one multi-way join
    assert r.plan == ("ench ères", "offres") and r.plan_report is not None and r.plan_report.safe
    r = check_safety(spark, a.join(b, a["`prix€`"] == b["`a``b`"]))
    assert not r.safe and r.unpurgeable == ["ench ères", "offres"]
    assert [str(s) for s in r.suggestions] == ["ench ères(prix€) + offres(a`b)"]
    assert "schemes=['`enchère`', '`a``b`'], marker='p', name='offres'" in "\n".join(r.fixes(r.suggestions[0]))
