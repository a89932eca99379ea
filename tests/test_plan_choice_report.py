"""check_safety's report names the plan ``auto`` chooses for each multi-way group and judges
every state of it (Li et al. 2006, Theorems 1/3 per operator; §5.2 for the choice)."""
import json

from punctuated.safety.model import build_query
from punctuated.safety.plan_cost import Statistics, plan_cost
from punctuated.safety.plans import choose_plan, safe_plans
from punctuated.safety.spark import format_report, report_from_join_graph


def _graph(schemes, tree):
    attrs = {"x": ["k"], "y": ["k", "v"], "z": ["v"]}
    return report_from_join_graph({"streams": [
        {"name": s, "attributes": a, "schemes": schemes.get(s, []), "declared": True} for s, a in attrs.items()],
        "predicates": ["x.k = y.k", "y.v = z.v"], "tree": tree}, stream_joins=2)


def test_a_multi_way_group_reports_the_chosen_plan_and_a_verdict_per_state():
    r = _graph({"x": [["k"]], "y": [["k"], ["v"]], "z": [["v"]]}, ["x", "y", "z"])
    (chosen,) = r.chosen_plans
    assert chosen.plan == ("x", "y", "z") and chosen.kind == "mjoin" and chosen.safe and chosen.cost == 6000.0
    assert [(s.to_dict()["state"], s.purgeable, s.theorem) for s in chosen.states] == [
        ("x", True, "Theorem 1"), ("y", True, "Theorem 1"), ("z", True, "Theorem 1")]
    d = json.loads(json.dumps(r.to_dict()))
    assert d["chosen_plans"] == [{"plan": "(x ⋈ y ⋈ z)", "kind": "mjoin", "cost": 6000.0, "safe": True, "states": [
        {"state": s, "intermediate": False, "operator": "(x ⋈ y ⋈ z)", "purgeable": True, "theorem": "Theorem 1"}
        for s in "xyz"]}]
    # the fields of before are all still there
    assert {"safe", "unpurgeable", "theorem", "plan", "query_safe", "suggestions"} <= set(d)
    assert "spark.punctuated.join.plan=auto runs (x ⋈ y ⋈ z)" in r.explain()
    assert "state z in (x ⋈ y ⋈ z): purgeable" in format_report(r)


def test_binary_trees_and_queries_without_join_state_choose_nothing():
    assert _graph({"x": [["k"]], "y": [["k"], ["v"]], "z": [["v"]]}, [["x", "y"], "z"]).chosen_plans == []
    assert _graph({"x": [["k"]], "y": [["k"], ["v"]], "z": [["v"]]}, None).to_dict()["chosen_plans"] == []


def test_an_unsafe_group_runs_the_mjoin_and_names_the_state_never_purged():
    r = _graph({"x": [["k"]], "y": [["k"]], "z": [["v"]]}, ["x", "y", "z"])
    (chosen,) = r.chosen_plans
    assert not chosen.safe and chosen.plan == ("x", "y", "z")
    assert [s.purgeable for s in chosen.states] == [True, True, False]
    assert "no plan is safe, the single MJoin runs" in r.explain()


def test_an_intermediate_state_is_judged_in_its_parent_operator():
    q = build_query({"a": ["k"], "b": ["k", "v"], "c": ["v"]}, ["a.k = b.k", "b.v = c.v"],
                    {"a": [["k"]], "b": [["k"], ["v"]], "c": [["v"]]})
    chosen = choose_plan(q, {"rate": {"a": 1, "b": 1, "c": 10000}, "fanout": {"b": {"v": 50}}})
    assert chosen.plan == (("a", "b"), "c") and chosen.kind == "tree"
    (node,) = [s for s in chosen.states if s.intermediate]
    assert node.to_dict() == {"state": "(a ⋈ b)", "intermediate": True, "operator": "((a ⋈ b) ⋈ c)",
                              "purgeable": True, "theorem": "Theorem 1"}


def test_ranking_follows_the_cost_and_the_ties():
    """Equal costs: fewer intermediate states first, then the text (children by first input)."""
    q = build_query({"A": ["x"], "B": ["x"], "C": ["x"]}, ["A.x = B.x", "B.x = C.x"], {s: [["x"]] for s in "ABC"})
    plans = safe_plans(q, limit=10).plans
    assert [str(p) for p in plans] == ["(A ⋈ B ⋈ C) cost=6000", "((A ⋈ B) ⋈ C) cost=7010",
                                       "((A ⋈ C) ⋈ B) cost=7010", "(A ⋈ (B ⋈ C)) cost=7010"]
    assert [p.intermediate_states for p in plans] == [0, 1, 1, 1]
    st = Statistics.default([{0}] * 3)
    assert [p.cost for p in plans] == [plan_cost((0, 1, 2), st), plan_cost(((0, 1), 2), st),
                                       plan_cost(((0, 2), 1), st), plan_cost((0, (1, 2)), st)]
