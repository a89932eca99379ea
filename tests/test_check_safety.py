"""check_safety and ``punctuated check`` on the real local SparkSession (Li et al., VLDB 2006)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

import punctuated
from punctuated.cli import main as cli_main
from punctuated.safety import analyze_safety
from punctuated.safety.spark import check_safety, report_from_join_graph

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tables(spark):
    """Creates declared tables under unique names; drops them after the test.

    ``tables("auctions", "(cols) USING parquet ...")`` returns the unique name.
    """
    created = []
    suffix = uuid.uuid4().hex[:8]

    def make(role: str, ddl: str) -> str:
        name = f"cs_{role}_{suffix}"
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"CREATE TABLE {name} {ddl}")
        created.append(name)
        return name

    yield make
    for name in created:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


AUCTIONS = ("(id BIGINT, seller BIGINT, is_punct BOOLEAN) USING parquet "
            "TBLPROPERTIES ('punctuated.unique' = 'id', 'punctuated.marker' = 'is_punct')")
BIDS = ("(auction BIGINT, bidder BIGINT, day DATE, is_punct BOOLEAN) USING parquet "
        "TBLPROPERTIES ('punctuated.schemes' = 'auction; bidder, day<=', 'punctuated.marker' = 'is_punct')")
PEOPLE = "(pid BIGINT, name STRING) USING parquet"


@pytest.fixture
def auction(tables):
    return {"a": tables("auctions", AUCTIONS), "b": tables("bids", BIDS), "p": tables("people", PEOPLE)}


def test_sql_auction_join_is_safe(spark, auction):
    a, b = auction["a"], auction["b"]
    r = check_safety(spark, f"SELECT * FROM STREAM({a}) x JOIN STREAM({b}) y ON x.id = y.auction")
    assert r.safe and r.unpurgeable == [] and r.undeclared == []
    assert r.join_graph["predicates"] == [f"{a}.id = {b}.auction"]
    # the marker column stays in the attribute lists; schemes: unique key, declared ones
    assert r.join_graph["streams"][a] == ["id", "seller", "is_punct"]
    assert r.join_graph["schemes"] == {a: [["id"]], b: [["auction"], ["bidder", "day<="]]}
    assert r.explain().startswith(f"As Spark runs it, ({a} ⋈ {b}), the query is SAFE")
    assert "The query is SAFE" in r.explain()   # and as one MJoin (Theorem 2)
    assert r.suggestions == []
    assert set(r.graph.nodes) >= {a, b}
    json.dumps(r.to_dict())


def test_dataframe_input(spark, auction):
    a = spark.readStream.table(auction["a"])
    b = spark.readStream.table(auction["b"])
    r = check_safety(spark, a.join(b, a.id == b.auction))
    assert r.safe and r.source is None
    assert r.stream_joins == 1


def test_where_clause_predicate_counts_as_join(spark, auction):
    a, b = auction["a"], auction["b"]
    r = check_safety(spark, f"SELECT * FROM STREAM({a}) x, STREAM({b}) y "
                            f"WHERE x.id = y.auction AND y.bidder > 3")
    assert r.safe, r.explain()
    assert r.join_graph["predicates"] == [f"{a}.id = {b}.auction"]


def test_three_way_with_undeclared_stream_is_unsafe(spark, auction, tmp_path):
    a, b, p = auction["a"], auction["b"], auction["p"]
    r = check_safety(spark, f"SELECT * FROM STREAM({p}) p JOIN STREAM({a}) a ON p.pid = a.seller "
                            f"JOIN STREAM({b}) b ON a.id = b.auction")
    assert not r.safe
    assert p in r.unpurgeable and r.undeclared == [p]
    assert p in r.explain()
    # as one MJoin, schemes on p and a's seller would do (Theorem 2); in the tree Spark runs,
    # ((p ⋈ a) ⋈ b), the lower join passes on punctuations of seller only, never of a's id:
    # no scheme makes b's state purgeable there
    assert r.query_suggestions and r.suggestions == []
    assert "Spark runs this tree of binary joins" not in r.explain() or not r.query_safe
    fix = r.query_suggestions[0].as_schemes()
    assert p in fix
    schemes = {s: list(v) for s, v in r.join_graph["schemes"].items()}
    for s, extra in fix.items():
        schemes.setdefault(s, []).extend(extra)
    fixed = analyze_safety(r.join_graph["streams"], r.join_graph["predicates"], schemes)
    assert fixed.safe
    r.draw(tmp_path / "g.svg")
    assert (tmp_path / "g.svg").read_text().lstrip().startswith(("<?xml", "<svg"))


def _kv(schemes: str) -> str:
    return ("(k BIGINT, v STRING, p BOOLEAN) USING parquet TBLPROPERTIES "
            f"('punctuated.schemes' = '{schemes}', 'punctuated.marker' = 'p')")


def _agrees_with_start(spark, report, sql):
    """The Python plan verdict is the JVM check's, and start() in strict mode follows it."""
    assert [tuple(e["purgeable"]) for e in report.enforced] == \
        [o.purgeable for o in report.plan_report.operators], report.explain()
    from pyspark.errors import AnalysisException
    try:
        q = spark.sql(sql).writeStream.format("memory").queryName(f"t{uuid.uuid4().hex[:8]}").start()
        q.stop()
        started = True
    except AnalysisException as e:
        assert "PUNCTUATED_UNSAFE_QUERY" in str(e)
        started = False
    assert started == report.safe


def test_join_tree_verdict_is_what_start_enforces(spark, tables):
    """Paper 000 says the chain X(k) ⋈ Y(k, v) ⋈ Z(v) is safe (Theorem 2: as one MJoin, or a
    tree whose intermediate carries Y's v scheme, Lemma 1); Spark runs ((X ⋈ Y) ⋈ Z), whose
    lower join passes on punctuations of its key k only: Z's state is never purged there."""
    x, y, z = tables("x", _kv("k")), tables("y", _kv("k; v")), tables("z", _kv("v"))
    chain = (f"SELECT * FROM STREAM({x}) x JOIN STREAM({y}) y ON x.k = y.k "
             f"JOIN STREAM({z}) z ON y.v = z.v")
    r = check_safety(spark, chain)
    assert r.plan == ((x, y), z)
    assert r.query_safe and not r.safe and r.unpurgeable == [z], r.explain()
    assert [o.purgeable for o in r.plan_report.operators] == [(True, True), (True, False)]
    assert "Spark runs this tree of binary joins" in r.explain()
    assert r.to_dict()["plan"]["safe"] is False and r.to_dict()["query_safe"] is True
    _agrees_with_start(spark, r, chain)
    # the star on k: every join's key is punctuated by every stream below it
    star = (f"SELECT * FROM STREAM({x}) x JOIN STREAM({y}) y ON x.k = y.k "
            f"JOIN STREAM({z}) z ON y.k = z.k")
    r2 = check_safety(spark, star)
    # z punctuates v, not k: the pair (x, y) waits forever for z's rows of its key
    assert not r2.safe and f"({x} ⋈ {y})" in r2.unpurgeable and z not in r2.unpurgeable, r2.explain()
    _agrees_with_start(spark, r2, star)


def test_star_join_written_with_where_is_punctuated_and_safe(spark, tables):
    x, y, z = tables("x", _kv("k")), tables("y", _kv("k")), tables("z", _kv("k"))
    sql = (f"SELECT x.k, x.v, y.v, z.v FROM STREAM({x}) x, STREAM({y}) y, STREAM({z}) z "
           f"WHERE x.k = y.k AND y.k = z.k AND z.v <> 'skip'")
    r = check_safety(spark, sql)
    assert r.safe and r.query_safe and r.plan == ((x, y), z), r.explain()
    assert {f"{x}.k = {y}.k", f"{y}.k = {z}.k"} <= set(r.join_graph["predicates"])
    _agrees_with_start(spark, r, sql)


def test_no_stream_join_has_no_join_state(spark, auction):
    a, b = auction["a"], auction["b"]
    single = check_safety(spark, f"SELECT * FROM STREAM({b}) WHERE NOT is_punct")
    assert single.safe and single.stream_joins == 0 and single.suggestions == []
    union = check_safety(spark, f"SELECT auction FROM STREAM({b}) UNION ALL SELECT id FROM STREAM({a})")
    assert union.safe and "no stream-stream join" in union.explain()
    static = check_safety(spark, f"SELECT * FROM STREAM({b}) y JOIN {a} x ON x.id = y.auction")
    assert static.safe and list(static.join_graph["streams"]) == [b]


def test_cross_join_of_streams_is_unsafe(spark, auction):
    a, b = auction["a"], auction["b"]
    r = check_safety(spark, f"SELECT * FROM STREAM({b}) y CROSS JOIN STREAM({a}) x")
    assert not r.safe and r.unpurgeable == sorted([a, b])


def test_self_join_names_both_sides(spark, auction):
    b = auction["b"]
    r = check_safety(spark, f"SELECT * FROM STREAM({b}) x JOIN STREAM({b}) y ON x.bidder = y.auction")
    assert set(r.join_graph["streams"]) == {b, f"{b}_2"}
    assert not r.safe  # x is only purged by y(bidder), which no scheme of bids provides alone


def test_non_streaming_query_is_a_value_error(spark, auction):
    with pytest.raises(ValueError, match=r"not a streaming query.*STREAM\("):
        check_safety(spark, f"SELECT * FROM {auction['a']}")
    with pytest.raises(ValueError, match="readStream"):
        check_safety(spark, spark.table(auction["a"]))
    with pytest.raises(TypeError):
        check_safety(spark, 42)


def test_with_schemes_on_rate_stream(spark, auction):
    rate = spark.readStream.format("rate").load().selectExpr(
        "value AS auction", "timestamp", "false AS closed")
    ticks = punctuated.with_schemes(rate, schemes=["auction"], marker="closed", name="ticks")
    b = spark.readStream.table(auction["b"])
    r = check_safety(spark, ticks.join(b, "auction"))
    assert r.safe, r.explain()
    assert r.join_graph["schemes"]["ticks"] == [["auction"]]
    assert r.undeclared == []
    # without the declaration the rate stream is undeclared and its bids are never purged
    plain = check_safety(spark, rate.join(b, "auction"))
    assert not plain.safe and plain.undeclared == ["rate"]
    # attributes are traced back to the source: the alias `auction` is the rate column `value`
    assert str(plain.suggestions[0]) == "rate(value)"


def test_report_from_join_graph_without_spark():
    r = report_from_join_graph({"streams": [
        {"name": "S1", "attributes": ["a"], "schemes": [["a"]], "declared": True},
        {"name": "S2", "attributes": ["a"], "schemes": [], "declared": False}],
        "predicates": ["S1.a = S2.a"]}, stream_joins=1)
    assert not r.safe and r.unpurgeable == ["S1"] and r.undeclared == ["S2"]
    with pytest.raises(ValueError, match="reads no stream"):
        report_from_join_graph({"streams": [], "predicates": []})


# ---------------------------------------------------------------------- CLI

def _setup_file(tmp_path, statements):
    path = tmp_path / "setup.sql"
    path.write_text(";\n".join(statements) + ";\n")
    return str(path)


def test_cli_safe_and_unsafe(spark, tmp_path, capsys):
    sfx = uuid.uuid4().hex[:8]
    a, b, p = f"cli_auctions_{sfx}", f"cli_bids_{sfx}", f"cli_people_{sfx}"
    setup = _setup_file(tmp_path, [f"CREATE TABLE {a} {AUCTIONS}", f"CREATE TABLE {b} {BIDS}",
                                   f"CREATE TABLE {p} {PEOPLE}"])
    try:
        png = tmp_path / "unsafe.png"
        rc = cli_main(["check", "--setup", setup, "--draw", str(png), "--sql",
                       f"SELECT * FROM STREAM({p}) p JOIN STREAM({a}) a ON p.pid = a.seller "
                       f"JOIN STREAM({b}) b ON a.id = b.auction"])
        out = capsys.readouterr().out
        assert rc == 1
        assert "NOT SAFE" in out and f"Undeclared streams: {p}" in out and "Suggestions" in out
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        svg = tmp_path / "safe.svg"
        rc = cli_main(["check", "--draw", str(svg), "--sql",
                       f"SELECT * FROM STREAM({a}) a JOIN STREAM({b}) b ON a.id = b.auction"])
        assert rc == 0 and "is SAFE" in capsys.readouterr().out
        assert svg.stat().st_size > 0
    finally:
        for t in (a, b, p):
            spark.sql(f"DROP TABLE IF EXISTS {t}")
    assert spark.sql("SELECT 1").collect()  # the shared session is still alive


def test_cli_errors(spark, tmp_path, capsys):
    assert cli_main(["check", "--setup", str(tmp_path / "missing.sql"), "--sql", "SELECT 1"]) == 2
    assert cli_main(["check", "--sql", "SELECT * FROM STREAM(no_such_table_xyz)"]) == 2
    assert cli_main(["check", "--sql", "SELECT 1"]) == 2
    assert "not a streaming query" in capsys.readouterr().err
    assert cli_main(["check", "--draw", "x.pdf", "--sql", "SELECT 1"]) == 2


def test_sql_example_file(spark, tmp_path, capsys):
    """sql/safety_check.sql with the command of its header comment, in a database of its own."""
    db = f"cs_example_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {db}")
    spark.sql(f"USE {db}")
    try:
        rc = cli_main(["check", "--setup", str(ROOT / "sql" / "safety_check.sql"), "--sql",
                       "SELECT * FROM STREAM(people) p JOIN STREAM(auctions) a ON p.pid = a.seller "
                       "JOIN STREAM(bids) b ON a.id = b.auction"])
        out = capsys.readouterr().out
        assert rc == 1 and "auctions(seller) + people(pid)" in out
        rc = cli_main(["check", "--sql",
                       "SELECT * FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id = b.auction"])
        assert rc == 0
    finally:
        spark.sql("USE default")
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


def test_docstring_examples():
    import doctest

    import punctuated.safety.spark as mod

    assert doctest.testmod(mod).failed == 0
