"""testdata/safety_vectors.json: shared with the future Scala implementation."""
import json
from pathlib import Path

import pytest

from punctuated.safety import analyze_plan, analyze_safety
from punctuated.safety.bruteforce import Oracle

VECTORS = json.loads((Path(__file__).resolve().parents[2] / "testdata" / "safety_vectors.json").read_text())
CASES = VECTORS["cases"]


def _plan(p):
    return p if isinstance(p, str) else tuple(_plan(c) for c in p)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vector(case):
    r = analyze_safety(case["streams"], case["predicates"], case["schemes"])
    exp = case["expected"]
    assert r.safe == exp["safe"]
    assert r.unpurgeable == exp["unpurgeable"]
    if "theorem" in exp:
        assert r.theorem == exp["theorem"]
    if "suggestions" in exp:
        got = {frozenset((s, tuple(a)) for s, a in x.schemes) for x in r.suggestions}
        assert got == {frozenset((s, tuple(a)) for s, a in x) for x in exp["suggestions"]}
    for p in case["plans"]:
        rep = analyze_plan(case["streams"], case["predicates"], case["schemes"], _plan(p["plan"]))
        assert rep.to_dict() == {"plan": p["plan"], "safe": p["safe"], "operators": p["operators"]}


@pytest.mark.parametrize("case", CASES[:13], ids=[c["name"] for c in CASES[:13]])
def test_vector_still_matches_oracle(case):
    o = Oracle(case["streams"], case["predicates"], case["schemes"])
    assert o.query_safe() == case["expected"]["safe"]
    assert o.unpurgeable() == case["expected"]["unpurgeable"]


def test_vectors_cover_the_interesting_cases():
    assert len(CASES) >= 50
    assert {c["expected"]["safe"] for c in CASES} == {True, False}
    assert any(p["safe"] for c in CASES for p in c["plans"]) and any(
        len(p["plan"]) > 2 for c in CASES for p in c["plans"])


SPARK = [(c, p) for c in CASES for p in c.get("spark_plans", [])]


@pytest.mark.parametrize("case,plan", SPARK, ids=[f"{c['name']}:{i}" for i, (c, _) in enumerate(SPARK)])
def test_spark_plan_vector(case, plan):
    """What the JVM start-time check enforces (SafetyVectorsSuite checks the same vectors)."""
    rep = analyze_plan(case["streams"], case["predicates"], case["schemes"], _plan(plan["plan"]), "spark")
    assert [list(o.purgeable) for o in rep.operators] == plan["purgeable"]
    # our Spark join passes on a subset of what Lemmas 1-2 allow: never purgeable where the paper says not
    lemma = analyze_plan(case["streams"], case["predicates"], case["schemes"], _plan(plan["plan"]))
    for s_ok, l_ok in zip(rep.operators, lemma.operators):
        assert all(l or not s for s, l in zip(s_ok.purgeable, l_ok.purgeable))


def test_spark_vectors_cover_trees_where_propagation_matters():
    assert len(SPARK) >= 100
    assert any(len(p["purgeable"]) >= 3 for _, p in SPARK)          # four streams or more
    lemma_differs = 0
    for c, p in SPARK:
        lemma = analyze_plan(c["streams"], c["predicates"], c["schemes"], _plan(p["plan"]))
        lemma_differs += [list(o.purgeable) for o in lemma.operators] != p["purgeable"]
    assert 0 < lemma_differs < len(SPARK)


MULTI = [c for c in CASES if len(c["streams"]) >= 3]


@pytest.mark.parametrize("case", MULTI, ids=[c["name"] for c in MULTI])
def test_multi_way_join_of_the_plan_spark_runs(case):
    """A group that runs as one multi-way join (the n-ary node of the plan Spark runs under
    ``spark.punctuated.join.plan=auto``) is judged as the query as one MJoin (Theorems 2/4):
    its unpurgeable inputs are the vector's; SafetyVectorsSuite checks the JVM's on the same."""
    streams = tuple(case["streams"])
    rep = analyze_plan(case["streams"], case["predicates"], case["schemes"], streams, "spark")
    (op,) = rep.operators
    assert sorted(s for s, ok in zip(streams, op.purgeable) if not ok) == sorted(case["expected"]["unpurgeable"])
    assert rep.safe == case["expected"]["safe"]
    assert op.theorem == case["expected"].get("theorem", op.theorem)
