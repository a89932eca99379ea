"""``check_safety`` judges aggregations and deduplications as ``start()`` does: the shared
vectors ``testdata/stateful_safety_vectors.json`` (also run by the scalatest suite
``StatefulSafetyVectorsSuite`` against the start-time check) on a real session."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from punctuated.declaration import format_tblproperties
from punctuated.safety.spark import check_safety

VECTORS = json.loads((Path(__file__).resolve().parents[1] / "testdata" / "stateful_safety_vectors.json")
                     .read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def vector_tables(spark):
    """The vectors' tables, in a database of their own, current while the module runs."""
    db = "stateful_vectors_" + uuid.uuid4().hex[:8]
    spark.sql(f"CREATE DATABASE {db}")
    spark.sql(f"USE {db}")
    try:
        for name, t in VECTORS["tables"].items():
            props = (f" TBLPROPERTIES ({format_tblproperties(t['properties'])})"
                     if t["properties"] else "")
            spark.sql(f"CREATE TABLE {name} ({t['columns']}) USING parquet{props}")
        yield db
    finally:
        spark.sql("USE default")
        spark.sql(f"DROP DATABASE {db} CASCADE")


def test_there_are_vectors_both_ways():
    verdicts = [c["expect"]["safe"] for c in VECTORS["cases"]]
    assert verdicts.count(True) >= 5 and verdicts.count(False) >= 5


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["name"] for c in VECTORS["cases"]])
def test_check_safety_agrees_with_start(spark, vector_tables, case):
    r = check_safety(spark, case["query"])
    expect = case["expect"]
    got = [{"operator": op["operator"], "keys": op["keys"], "closed": op["closed"]} for op in r.stateful]
    assert got == expect["operators"], r.explain()
    assert r.safe == expect["safe"], r.explain()
    # every never-closed operator is named, with its keys as spelled, in the verdict and the text
    text = r.explain()
    for op, problem in zip(expect["operators"], r.stateful):
        if not op["closed"]:
            assert problem["problem"] and all(k in problem["problem"] for k in op["keys"]), problem
            assert problem["problem"] in text
