"""check_safety and ``punctuated check`` on the real local SparkSession (Li et al., VLDB 2006)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

import punctuated
from punctuated.cli import main as cli_main
from punctuated.safety import analyze_safety
from punctuated.safety.spark import check_safety, format_report, report_from_join_graph

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
def written(spark):
    """Runs a test with ``spark.punctuated.join.plan=written``: joins run as the tree of binary
    joins the query spells (otherwise inner joins of three or more streams run as one
    multi-way join, judged by Theorems 2/4)."""
    key = "spark.punctuated.join.plan"
    old = spark.conf.get(key, None)
    spark.conf.set(key, "written")
    yield
    if old is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, old)


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


def test_three_way_with_undeclared_stream_is_unsafe(spark, written, auction, tmp_path):
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


def test_join_tree_verdict_is_what_start_enforces(spark, written, tables):
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


def test_star_join_written_with_where_is_punctuated_and_safe(spark, written, tables):
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


# ------------------------------------------------- check_safety runs nothing

NON_QUERIES = [
    "DROP TABLE {t}",
    "INSERT INTO {t} VALUES (1, 2, DATE'2024-01-01', false)",
    "ALTER TABLE {t} SET TBLPROPERTIES ('punctuated.schemes' = 'bidder')",
    "CREATE TABLE {t}_new (a INT) USING parquet",
    "CACHE TABLE {t}",
    "SET spark.punctuated.safety.mode=off",
    "SELECT * FROM STREAM({t}); DROP TABLE {t}",
]


@pytest.mark.parametrize("statement", NON_QUERIES)
def test_check_safety_refuses_anything_but_a_query_and_runs_nothing(spark, tables, statement):
    t = tables("guard", BIDS)
    spark.sql(f"INSERT INTO {t} VALUES (7, 1, DATE'2024-01-01', false)")
    before = dict(spark.sql(f"SHOW TBLPROPERTIES {t}").collect())
    with pytest.raises(ValueError, match="runs nothing") as e:
        check_safety(spark, statement.format(t=t))
    assert statement.format(t=t)[:20] in str(e.value)
    # the table is untouched: still there, same rows, same properties, not cached
    assert spark.catalog.tableExists(t)
    assert [tuple(r) for r in spark.table(t).select("auction").collect()] == [(7,)]
    assert dict(spark.sql(f"SHOW TBLPROPERTIES {t}").collect()) == before
    assert not spark.catalog.isCached(t)
    assert not spark.catalog.tableExists(f"{t}_new")
    assert spark.conf.get("spark.punctuated.safety.mode", "strict") == "strict"


def test_a_query_with_a_trailing_semicolon_is_still_a_query(spark, auction):
    r = check_safety(spark, f"SELECT * FROM STREAM({auction['a']}) x JOIN STREAM({auction['b']}) y "
                            f"ON x.id = y.auction ;")
    assert r.safe


# ---------------------------------- aggregations and deduplications are judged

ORDERS = ("(order_id BIGINT, customer BIGINT, amount DOUBLE, is_punct BOOLEAN) USING parquet "
          "TBLPROPERTIES ('punctuated.schemes' = 'order_id', 'punctuated.marker' = 'is_punct')")
SHIPMENTS = ("(order_id BIGINT, carrier STRING, is_punct BOOLEAN) USING parquet "
             "TBLPROPERTIES ('punctuated.schemes' = 'order_id', 'punctuated.marker' = 'is_punct')")


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


def test_group_by_a_column_the_join_never_closes_is_unsafe(spark, tables):
    o, s = tables("orders", ORDERS), tables("shipments", SHIPMENTS)
    join = f"FROM STREAM({o}) o JOIN STREAM({s}) s ON o.order_id = s.order_id"
    sql = f"SELECT o.customer, count(*) AS n {join} GROUP BY o.customer"
    r = check_safety(spark, sql)
    assert not r.safe and "aggregation GROUP BY customer" in r.unpurgeable, r.explain()
    assert r.plan_report.safe          # the join itself purges
    assert "GROUP BY customer" in r.explain() and "both its inputs close" in r.explain()
    assert r.to_dict()["stateful"][0]["closed"] is False
    assert not _starts(spark, sql, "append") and not _starts(spark, sql, "update")
    by_key = f"SELECT o.order_id, count(*) AS n {join} GROUP BY o.order_id"
    ok = check_safety(spark, by_key)
    assert ok.safe, ok.explain()
    assert _starts(spark, by_key)


def test_range_scheme_then_join_then_aggregation_is_unsafe(spark, tables):
    a = tables("auctions", "(id BIGINT, seller BIGINT, is_punct BOOLEAN) USING parquet TBLPROPERTIES "
                           "('punctuated.schemes' = 'id', 'punctuated.marker' = 'is_punct')")
    b = tables("bids", "(auction BIGINT, price DOUBLE, is_punct BOOLEAN) USING parquet TBLPROPERTIES "
                       "('punctuated.schemes' = 'auction<=', 'punctuated.marker' = 'is_punct')")
    sql = (f"SELECT a.id, count(*) AS n FROM STREAM({a}) a JOIN STREAM({b}) b ON a.id = b.auction "
           f"GROUP BY a.id")
    r = check_safety(spark, sql)
    assert not r.safe and "auction<=" in r.explain(), r.explain()
    assert not _starts(spark, sql)


def test_aggregation_and_distinct_over_one_stream_are_judged(spark, auction):
    b = auction["b"]
    per_bidder = f"SELECT bidder, count(*) AS n FROM STREAM({b}) GROUP BY bidder"
    r = check_safety(spark, per_bidder)
    assert not r.safe and r.stream_joins == 0 and "NOT SAFE" in r.explain(), r.explain()
    assert not _starts(spark, per_bidder, "append")     # ours, not Spark's output-mode error
    distinct = f"SELECT DISTINCT bidder FROM STREAM({b})"
    assert not check_safety(spark, distinct).safe and not _starts(spark, distinct, "update")
    closed = f"SELECT auction, count(*) AS n FROM STREAM({b}) GROUP BY auction"
    assert check_safety(spark, closed).safe and _starts(spark, closed)


# --------------------------------------------- fixes are applicable as printed

def test_table_fix_applied_as_printed_makes_check_and_start_accept(spark, tables):
    a = tables("auctions", AUCTIONS)
    b = tables("bids", "(auction BIGINT, bidder BIGINT, closed BOOLEAN) USING parquet "
                       "TBLPROPERTIES ('punctuated.schemes' = 'bidder', 'punctuated.marker' = 'closed')")
    sql = f"SELECT * FROM STREAM({a}) x JOIN STREAM({b}) y ON x.id = y.auction"
    r = check_safety(spark, sql)
    assert not r.safe and str(r.suggestions[0]) == f"{b}(auction)"
    fix = r.fixes(r.suggestions[0])
    assert fix == [f"ALTER TABLE spark_catalog.default.{b} SET TBLPROPERTIES "
                   "('punctuated.schemes' = 'bidder; auction', 'punctuated.marker' = 'closed')"]
    assert fix[0] in format_report(r)
    for statement in fix:
        spark.sql(statement)
    assert check_safety(spark, sql).safe and _starts(spark, sql)


def test_table_without_declaration_or_boolean_column_gets_one(spark, tables):
    a = tables("auctions", AUCTIONS)
    b = tables("bids", "(auction BIGINT, bidder BIGINT) USING parquet")
    sql = f"SELECT * FROM STREAM({a}) x JOIN STREAM({b}) y ON x.id = y.auction"
    r = check_safety(spark, sql)
    fix = r.fixes(r.suggestions[0])
    assert fix == [f"ALTER TABLE spark_catalog.default.{b} ADD COLUMNS (is_punct BOOLEAN)",
                   f"ALTER TABLE spark_catalog.default.{b} SET TBLPROPERTIES "
                   "('punctuated.schemes' = 'auction', 'punctuated.marker' = 'is_punct')"]
    for statement in fix:
        spark.sql(statement)
    assert check_safety(spark, sql).safe and _starts(spark, sql)


def test_dataframe_fix_is_a_with_schemes_call_that_works_when_run(spark, auction):
    df = spark.readStream.format("rate").load().selectExpr(
        "value AS auction", "timestamp", "false AS closed")
    b = spark.readStream.table(auction["b"])
    r = check_safety(spark, df.join(b, "auction"))
    assert not r.safe and r.suggestions
    fix = r.fixes(r.suggestions[0])
    assert len(fix) == 1 and fix[0].startswith("punctuated.with_schemes(df, schemes=['auction'], "
                                                "marker='closed'"), fix
    assert "ALTER TABLE" not in format_report(r)
    declared = eval(fix[0].split("  #")[0], {"punctuated": punctuated, "df": df})
    fixed = declared.join(b, "auction")
    assert check_safety(spark, fixed).safe
    q = fixed.writeStream.format("memory").queryName(f"t{uuid.uuid4().hex[:8]}").start()
    q.stop()


def test_expression_join_key_says_no_declaration_can_fix_it(spark, tables):
    a = tables("auctions", AUCTIONS)
    b = tables("bids", BIDS)
    r = check_safety(spark, f"SELECT * FROM STREAM({a}) x JOIN STREAM({b}) y ON x.id + 1 = y.auction")
    text = format_report(r)
    assert not r.safe
    assert "no declaration can make punctuations close" in text, text
    assert "'punctuated.schemes' = '(" not in text


def test_sql_example_file_fix_that_works(spark, written, tmp_path, capsys):
    """The 3-way query of sql/safety_check.sql: no declaration fixes the tree Spark runs,
    and the report says so; the documented alternative (people as a static table) is SAFE
    and starts."""
    db = f"cs_fix_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {db}")
    spark.sql(f"USE {db}")
    try:
        three = ("SELECT * FROM STREAM(people) p JOIN STREAM(auctions) a ON p.pid = a.seller "
                 "JOIN STREAM(bids) b ON a.id = b.auction")
        rc = cli_main(["check", "--setup", str(ROOT / "sql" / "safety_check.sql"), "--sql", three])
        out = capsys.readouterr().out
        assert rc == 1 and "no punctuation declaration makes the tree of binary joins" in out, out
        static = ("SELECT * FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id = b.auction "
                  "JOIN people p ON p.pid = a.seller")
        assert cli_main(["check", "--sql", static]) == 0
        assert _starts(spark, static)
    finally:
        spark.sql("USE default")
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


def test_cli_check_refuses_a_statement_and_runs_nothing(spark, tables, capsys):
    t = tables("cli_guard", BIDS)
    assert cli_main(["check", "--sql", f"DROP TABLE {t}"]) == 2
    err = capsys.readouterr().err
    assert "runs nothing" in err and "DropTable" in err, err
    assert spark.catalog.tableExists(t)
