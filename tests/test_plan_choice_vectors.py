"""The shared plan-choice vectors (testdata/plan_choice_vectors.json) against ``safe_plans``:
the plan ``auto`` runs and its cost, as the JVM's ``PlanChoice`` (PlanChoiceVectorsSuite)
computes them from the same file."""
import json
from pathlib import Path

import pytest

from punctuated.safety.model import build_query
from punctuated.safety.plan_cost import CostModel, Statistics, plan_cost, probe_orders
from punctuated.safety.plans import safe_plans
from punctuated.safety.tree import plan_to_str

CASES = json.loads((Path(__file__).parent.parent / "testdata" / "plan_choice_vectors.json")
                   .read_text(encoding="utf-8"))["cases"]


def _numbers(plan, names):
    return names.index(plan) if isinstance(plan, str) else tuple(_numbers(c, names) for c in plan)


def test_enough_cases_of_every_kind():
    assert len(CASES) >= 50
    kinds = [c["expect"]["kind"] for c in CASES]
    assert kinds.count("tree") >= 10 and kinds.count("mjoin") >= 10
    assert sum(not c["expect"]["safe"] for c in CASES) >= 5
    assert {len(c["inputs"]) for c in CASES} >= {3, 4, 5, 6}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_safe_plans_choose_as_the_vectors_say(case):
    qd = case["query"]
    q = build_query(qd["streams"], qd["predicates"], qd["schemes"])
    names = list(q.streams)
    # the vector's class k is the Python class of its first member
    ids = [q.cls[tuple(c[0].split("."))] for c in case["classes"]]
    assert [sorted(ids[k] for k in i["classes"]) for i in case["inputs"]] == [sorted(q.touches[s]) for s in names]
    numbered = Statistics.from_dict(case["statistics"])
    stats = Statistics(numbered.rate, numbered.stored,
                       tuple({ids[c]: f for c, f in m.items()} for m in numbered.fanout))
    found = safe_plans(q, limit=3, statistics=stats)
    want = case["expect"]
    assert [{"plan": plan_to_str(p.plan), "cost": p.cost} for p in found.plans] == want["ranked"]
    assert bool(found.plans) == want["safe"]
    chosen = _numbers(found.plans[0].plan, names) if found.plans else tuple(range(len(names)))
    assert plan_to_str(found.plans[0].plan if found.plans else tuple(names)) == want["plan"]
    assert plan_cost(chosen, stats) == want["cost"] == plan_cost(chosen, numbered, CostModel(numbered))
    assert probe_orders(chosen, numbered) == want["probeOrders"]
    assert ("mjoin" if all(isinstance(c, int) for c in chosen) else "tree") == want["kind"]
