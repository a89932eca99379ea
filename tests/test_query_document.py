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
    assert doc["version"] == DOCUMENT_VERSION == 1
    assert set(doc) == {"version", "streams", "predicates", "stream_joins", "tree", "verdicts"}
    (sa,) = [s for s in doc["streams"] if s["name"] == "a"]
    assert sa["schemes"] == [{"source": "declared", "attributes": [{"name": "k", "kind": "constant"}]}]
    assert sa["marker"] == "p" and sa["declared"]
    (pred,) = doc["predicates"]
    # an undeclared stream's column is named as its source has it (rate's `value`)
    assert pred["left"] == {"stream": "a", "attribute": "k"}
    assert pred["right"]["attribute"] == "value" and pred["right"]["stream"] != "a"
    assert doc["stream_joins"] == 1 and len(doc["verdicts"]["joins"]) == 1
    assert [(v["operator"], v["keys"]) for v in doc["verdicts"]["stateful"]] == [("aggregation", ["k"])]


def test_another_version_is_refused():
    with pytest.raises(ValueError, match="document version 2, this package reads version 1"):
        report_from_document({"version": 2, "streams": []})
