"""The one document ``check_safety`` reads from the extension (``PythonApi.describe``,
``docs/python-document.md``): its shape on a real query, and its version checked."""

from __future__ import annotations

import json

import pytest

from punctuated.safety.spark import DOCUMENT_VERSION, report_from_document


def test_document_of_a_query(spark):
    a = spark.readStream.format("rate").load().selectExpr("value AS k", "false AS p")
    b = spark.readStream.format("rate").load().selectExpr("value AS `k 2`")
    import punctuated

    a = punctuated.with_schemes(a, schemes=["k"], marker="p", name="a")
    df = a.join(b, a["k"] == b["`k 2`"]).groupBy("k").count()
    doc = json.loads(spark._jvm.punctuated.spark.PythonApi.describe(df._jdf))
    assert doc["version"] == DOCUMENT_VERSION == 2
    assert set(doc) == {"version", "streams", "predicates", "stream_joins", "bands", "tree", "refusals", "verdicts"}
    assert doc["bands"] == []  # no time band in this join (tests/test_check_safety_bands.py has them)
    assert doc["refusals"] == []  # start() refuses nothing here (tests/test_safety_shedding.py has some)
    (sa,) = [s for s in doc["streams"] if s["name"] == "a"]
    assert sa["schemes"] == [{"source": "declared", "attributes": [{"name": "k", "kind": "constant"}]}]
    assert sa["marker"] == "p" and sa["declared"]
    (pred,) = doc["predicates"]
    # an undeclared stream's column is named as its source has it (rate's `value`)
    assert pred["left"] == {"stream": "a", "attribute": "k"}
    assert pred["right"]["attribute"] == "value" and pred["right"]["stream"] != "a"
    assert doc["stream_joins"] == 1 and len(doc["verdicts"]["joins"]) == 1
    assert [(v["operator"], v["keys"]) for v in doc["verdicts"]["stateful"]] == [("aggregation", ["k"])]
    # the tree Spark runs: the GROUP BY over the join, linked to its verdict (punctuated: the
    # extension runs it, though no punctuation that reaches it closes a group)
    b_name = pred["right"]["stream"]
    assert doc["tree"] == {"aggregate": {
        "keys": ["k"], "input": {"join": [{"stream": "a"}, {"stream": b_name}]},
        "punctuated": True, "verdict": 0}}
    assert not doc["verdicts"]["stateful"][0]["closed"]
    # the Python reader still judges the joins alone
    assert report_from_document(doc).plan == ("a", b_name)


def _doc(spark, df):
    return json.loads(spark._jvm.punctuated.spark.PythonApi.describe(df._jdf))


def test_deduplications_are_nodes_of_the_tree(spark):
    import punctuated

    # a constant marker: the optimizer folds it away, and the document is read without it
    a = spark.readStream.format("rate").load().selectExpr("value AS k", "value % 3 AS v", "false AS p")
    a = punctuated.with_schemes(a, schemes=["k"], marker="p", name="a")
    doc = _doc(spark, a.dropDuplicates(["k", "v"]))
    assert doc["tree"] == {"deduplicate": {"keys": ["k", "v"], "input": {"stream": "a"},
                                           "punctuated": True, "verdict": 0}}
    (verdict,) = doc["verdicts"]["stateful"]
    assert verdict["operator"] == "deduplication" and verdict["closed"]
    assert report_from_document(doc).plan is None  # no join

    # over an undeclared stream: Spark's own deduplication, judged by no verdict
    plain = spark.readStream.format("rate").load().selectExpr("value AS x")
    doc = _doc(spark, plain.dropDuplicates(["x"]))
    assert doc["tree"] == {"deduplicate": {"keys": ["x"], "input": {"stream": doc["streams"][0]["name"]},
                                           "punctuated": False, "verdict": None}}
    assert doc["verdicts"]["stateful"] == []

    # each operator in the plan's order, each linked to its own verdict
    doc = _doc(spark, a.dropDuplicates(["k", "v"]).groupBy("k").count())
    assert doc["tree"] == {"aggregate": {
        "keys": ["k"], "punctuated": True, "verdict": 0,
        "input": {"deduplicate": {"keys": ["k", "v"], "input": {"stream": "a"},
                                  "punctuated": True, "verdict": 1}}}}
    assert [(v["operator"], v["keys"]) for v in doc["verdicts"]["stateful"]] == [
        ("aggregation", ["k"]), ("deduplication", ["k", "v"])]


def test_a_plain_join_is_the_tree_it_was(spark):
    import punctuated

    a = punctuated.with_schemes(spark.readStream.format("rate").load().selectExpr("value AS k", "false AS p"),
                                schemes=["k"], marker="p", name="a")
    b = punctuated.with_schemes(spark.readStream.format("rate").load().selectExpr("value AS j", "false AS q"),
                                schemes=["j"], marker="q", name="b")
    doc = _doc(spark, a.join(b, a["k"] == b["j"]))
    assert doc["tree"] == {"join": [{"stream": "a"}, {"stream": "b"}]}
    assert doc["verdicts"]["stateful"] == []
    assert report_from_document(doc).plan == ("a", "b")
    # no stateful operator: no tree
    assert _doc(spark, a.where("k > 1"))["tree"] is None


def test_another_version_is_refused():
    with pytest.raises(ValueError, match="document version 1, this package reads version 2"):
        report_from_document({"version": 1, "streams": []})


def test_operators_between_stateful_ones_are_not_nodes(spark):
    x = spark.readStream.format("rate").load().selectExpr("value AS x")
    y = spark.readStream.format("rate").load().selectExpr("value AS x")

    def dedup(stream):
        return {"deduplicate": {"keys": ["x"], "input": {"stream": stream},
                                "punctuated": False, "verdict": None}}

    # a join with a static table is no stateful operator, on either side of the deduplication
    static = spark.range(3).selectExpr("id AS x", "id AS s")
    for df in (x.join(static, "x").dropDuplicates(["x"]), x.dropDuplicates(["x"]).join(static, "x")):
        doc = _doc(spark, df)
        assert doc["tree"] == dedup(doc["streams"][0]["name"])
    # SQL DISTINCT is a deduplication on all columns
    x.createOrReplaceTempView("document_xs")
    doc = _doc(spark, spark.sql("SELECT DISTINCT x FROM document_xs"))
    assert doc["tree"] == dedup(doc["streams"][0]["name"])
    # deduplications under a join, each on its own input
    doc = _doc(spark, x.dropDuplicates(["x"]).join(y.dropDuplicates(["x"]), "x"))
    first, second = (s["name"] for s in doc["streams"])
    assert doc["tree"] == {"join": [dedup(first), dedup(second)]}
    assert report_from_document(doc).plan == (first, second)
    # operators over a union of streams form no single tree
    assert _doc(spark, x.union(y).dropDuplicates(["x"]))["tree"] is None
