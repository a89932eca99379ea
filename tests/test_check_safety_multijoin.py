"""check_safety on joins of three or more streams that run as one multi-way join (real Spark).

Under ``spark.punctuated.join.plan=auto`` (the default) or ``mjoin``, a group of inner
stream-stream equi-joins over three or more streams runs as one operator and is judged as one
by Li et al. 2006, Theorems 2/4 -- by ``start()`` in strict mode and by ``check_safety`` alike;
under ``written`` the tree of binary joins is judged join by join (Theorem 1).
"""

from __future__ import annotations

import json
import uuid

import pytest
from pyspark.errors import AnalysisException

from punctuated.safety.spark import check_safety, format_report

PLAN = "spark.punctuated.join.plan"


@pytest.fixture
def tables(spark):
    """``tables(role, ddl)`` creates a table under a unique name; all are dropped afterwards."""
    created = []
    suffix = uuid.uuid4().hex[:8]

    def make(role: str, ddl: str) -> str:
        name = f"mj_{role}_{suffix}"
        spark.sql(f"CREATE TABLE {name} {ddl}")
        created.append(name)
        return name

    yield make
    for name in created:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


@pytest.fixture
def join_plan(spark):
    """``join_plan(value)`` sets spark.punctuated.join.plan for the test; restored afterwards."""
    old = spark.conf.get(PLAN, None)
    yield lambda value: spark.conf.set(PLAN, value)
    if old is None:
        spark.conf.unset(PLAN)
    else:
        spark.conf.set(PLAN, old)


def _kv(schemes: str) -> str:
    return ("(k BIGINT, v STRING, p BOOLEAN) USING parquet TBLPROPERTIES "
            f"('punctuated.schemes' = '{schemes}', 'punctuated.marker' = 'p')")


def _starts(spark, sql: str) -> bool:
    try:
        spark.sql(sql).writeStream.format("memory").queryName(f"t{uuid.uuid4().hex[:8]}").start().stop()
        return True
    except AnalysisException as e:
        assert "PUNCTUATED_UNSAFE_QUERY" in str(e)
        return False


def _document(spark, sql: str) -> dict:
    df = spark.sql(sql)
    return json.loads(df.sparkSession._jvm.punctuated.spark.PythonApi.describe(df._jdf))


def _chain(x, y, z):
    return (f"SELECT * FROM STREAM({x}) x JOIN STREAM({y}) y ON x.k = y.k "
            f"JOIN STREAM({z}) z ON y.v = z.v")


def test_chain_is_safe_as_one_multi_way_join_and_unsafe_as_the_written_tree(spark, tables, join_plan):
    """Li et al. 2006, Theorem 2: the chain x(k) ⋈ y(k, v) ⋈ z(v), y punctuating k and v, is
    safe as one multi-way join; the tree ((x ⋈ y) ⋈ z) never purges z."""
    x, y, z = tables("x", _kv("k")), tables("y", _kv("k; v")), tables("z", _kv("v"))
    chain = _chain(x, y, z)
    r = check_safety(spark, chain)
    assert r.plan == (x, y, z), r.explain()
    assert r.safe and r.unpurgeable == [] and r.query_safe, r.explain()
    (op,) = r.plan_report.operators
    assert op.purgeable == (True, True, True) and op.theorem == "Theorem 2"
    assert f"({x} ⋈ {y} ⋈ {z})" in r.explain() and "SAFE" in r.explain()
    assert r.to_dict()["plan"] == {"plan": [x, y, z], "safe": True,
                                   "operators": [{"operator": [x, y, z], "purgeable": [True, True, True]}]}
    # the document: one multiJoin node, its verdict the JVM's, no binary join verdict
    doc = _document(spark, chain)
    assert doc["version"] == 2
    assert doc["tree"] == {"multiJoin": {"inputs": [{"stream": x}, {"stream": y}, {"stream": z}],
                                         "verdict": 0}}
    assert doc["verdicts"]["joins"] == []
    assert doc["verdicts"]["multiJoins"] == [{"inputs": [x, y, z], "purgeable": [True, True, True],
                                              "problems": []}]
    assert _starts(spark, chain)

    join_plan("written")
    w = check_safety(spark, chain)
    assert w.plan == ((x, y), z) and not w.safe and w.unpurgeable == [z], w.explain()
    assert "multiJoin" not in json.dumps(_document(spark, chain)["tree"])
    assert not _starts(spark, chain)

    join_plan("mjoin")
    assert check_safety(spark, chain).safe and _starts(spark, chain)


def test_unsafe_multi_way_join_names_the_input_and_a_fix_that_works(spark, tables):
    """y punctuates k only: z reaches no other input (nothing else closes v); x and y are purged."""
    x, y, z = tables("x", _kv("k")), tables("y", _kv("k")), tables("z", _kv("v"))
    chain = _chain(x, y, z)
    r = check_safety(spark, chain)
    assert r.plan == (x, y, z) and not r.safe and r.unpurgeable == [z], r.explain()
    assert r.plan_report.operators[0].purgeable == (True, True, False)
    (verdict,) = r.enforced
    assert verdict["purgeable"] == [True, True, False]
    (problem,) = verdict["problems"]
    assert f"The state of input {z} of the multi-way join" in problem and "Theorems 2/4" in problem
    assert f"ALTER TABLE spark_catalog.default.{y} SET TBLPROPERTIES ('punctuated.schemes' = 'k; v'" in problem, problem
    # a suggestion of the report, applied as printed, makes check_safety and start() accept it
    assert not _starts(spark, chain)
    assert r.suggestions, format_report(r)
    fix = next(s for s in r.suggestions if y in s.as_schemes())
    for statement in r.fixes(fix):
        spark.sql(statement)
    fixed = check_safety(spark, chain)
    assert fixed.safe, fixed.explain()
    assert _starts(spark, chain)


def test_five_streams_a_cycle_and_a_tail(spark, tables):
    """A cycle a-b-c over three keys, d on the cycle's third key, e on d's other column: one
    operator of five inputs (Theorem 2). Classes: K1 = {a.k1, b.k1}, K2 = {b.k2, c.k1},
    K3 = {c.k2, a.k2, d.k1}, K4 = {d.k2, e.k2}. Only e closes K4, so from e nothing is
    reached: e alone is never purged, until d closes its k2 too."""
    ddl = ("(k1 BIGINT, k2 BIGINT, p BOOLEAN) USING parquet "
           "TBLPROPERTIES ('punctuated.schemes' = '{}', 'punctuated.marker' = 'p')")
    a, b, c = (tables(n, ddl.format("k1; k2")) for n in "abc")
    d, e = tables("d", ddl.format("k1")), tables("e", ddl.format("k2"))
    sql = (f"SELECT * FROM STREAM({a}) a JOIN STREAM({b}) b ON a.k1 = b.k1 "
           f"JOIN STREAM({c}) c ON b.k2 = c.k1 AND c.k2 = a.k2 "
           f"JOIN STREAM({d}) d ON d.k1 = c.k2 JOIN STREAM({e}) e ON e.k2 = d.k2")
    r = check_safety(spark, sql)
    assert r.plan == (a, b, c, d, e), r.explain()
    assert not r.safe and r.unpurgeable == [e], r.explain()
    (jvm,) = _document(spark, sql)["verdicts"]["multiJoins"]
    assert jvm["purgeable"] == [True, True, True, True, False]
    assert list(r.plan_report.operators[0].purgeable) == jvm["purgeable"]
    assert not _starts(spark, sql)
    spark.sql(f"ALTER TABLE {d} SET TBLPROPERTIES ('punctuated.schemes' = 'k1; k2')")
    fixed = check_safety(spark, sql)
    assert fixed.safe and fixed.unpurgeable == [], fixed.explain()
    assert _starts(spark, sql)


def test_a_multi_way_join_under_an_aggregation_and_one_whose_punctuations_are_needed(spark, tables):
    """GROUP BY a column no punctuation closes: Spark's own aggregation over the group, which
    runs as one multi-way join (a node of the document's tree, linked to the aggregation's
    verdict). GROUP BY y.k, which a punctuated aggregation closes with the joins' output
    punctuations: the group keeps the tree of binary joins, which emits them."""
    x, y, z = tables("x", _kv("k")), tables("y", _kv("k; v")), tables("z", _kv("v"))
    joins = (f"FROM STREAM({x}) x JOIN STREAM({y}) y ON x.k = y.k "
             f"JOIN STREAM({z}) z ON y.v = z.v")
    doc = _document(spark, f"SELECT x.v, count(*) {joins} GROUP BY x.v")
    assert doc["tree"] == {"aggregate": {
        "keys": ["v"], "punctuated": False, "verdict": 0,
        "input": {"multiJoin": {"inputs": [{"stream": x}, {"stream": y}, {"stream": z}], "verdict": 0}}}}
    assert doc["verdicts"]["multiJoins"][0]["purgeable"] == [True, True, True]
    r = check_safety(spark, f"SELECT x.v, count(*) {joins} GROUP BY x.v")
    assert r.plan == (x, y, z) and r.unpurgeable == ["aggregation GROUP BY v"], r.explain()

    doc = _document(spark, f"SELECT y.k, count(*) {joins} GROUP BY y.k")
    assert doc["tree"]["aggregate"]["punctuated"] is True
    assert doc["tree"]["aggregate"]["input"] == {"join": [{"join": [{"stream": x}, {"stream": y}]}, {"stream": z}]}
    assert doc["verdicts"]["multiJoins"] == [] and len(doc["verdicts"]["joins"]) == 2


def test_range_schemes_on_join_columns_run_and_are_judged_as_one_multi_way_join(spark, tables):
    """A range scheme (``v<=``) binds its class as a constant does (Li et al. 2006, §4.2, with
    Tucker et al. 2003's range patterns): the chain x(k) ⋈ y(k, v) ⋈ z(v) with y punctuating
    ``k; v<=`` and z ``v<=`` is safe as one multi-way join, runs as one, and drains to no rows
    once the punctuations cover everything."""
    x, y, z = tables("x", _kv("k")), tables("y", _kv("k; v<=")), tables("z", _kv("v<="))
    # v is a STRING: a range over its order ('b' covers 'a' and 'b')
    chain = _chain(x, y, z)
    r = check_safety(spark, chain)
    assert r.plan == (x, y, z) and r.safe and r.unpurgeable == [], r.explain()
    assert r.plan_report.operators[0].purgeable == (True, True, True)
    doc = _document(spark, chain)
    assert doc["verdicts"]["multiJoins"][0]["purgeable"] == [True, True, True]
    # without y's range scheme nothing closes v for z's rows: z is unpurgeable
    x2, y2, z2 = tables("x2", _kv("k")), tables("y2", _kv("k")), tables("z2", _kv("v<="))
    assert check_safety(spark, _chain(x2, y2, z2)).unpurgeable == [z2]

    spark.sql(f"INSERT INTO {x} VALUES (1, 'a', false), (1, NULL, true)")
    spark.sql(f"INSERT INTO {y} VALUES (1, 'a', false), (1, 'b', false), (1, NULL, true), (NULL, 'b', true)")
    spark.sql(f"INSERT INTO {z} VALUES (NULL, 'a', false), (NULL, 'b', true)")
    name = f"t{uuid.uuid4().hex[:8]}"
    q = (spark.sql(f"SELECT x.k, y.v FROM STREAM({x}) x JOIN STREAM({y}) y ON x.k = y.k "
                   f"JOIN STREAM({z}) z ON y.v = z.v")
         .writeStream.format("memory").queryName(name).start())
    try:
        q.processAllAvailable()
        (op,) = [o for o in q.lastProgress["stateOperators"] if o["operatorName"].startswith("punctuated")]
        assert op["operatorName"] == "punctuatedMultiJoin", q.lastProgress
        assert sorted(tuple(r) for r in spark.table(name).collect()) == [(1, "a")]
        assert op["numRowsTotal"] == 0, op
    finally:
        q.stop()
