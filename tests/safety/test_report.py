"""SafetyReport: graph, explain, drawing, notebook reprs."""
import networkx as nx

from punctuated.safety.plan_cost import Statistics, plan_cost
from punctuated.safety import analyze_safety, normalize_plan, plan_to_str, safe_plans
import pytest

FIG3 = {"S1": ["A", "B"], "S2": ["B", "C"], "S3": ["C", "A"]}
CYCLE = ["S1.B = S2.B", "S2.C = S3.C", "S3.A = S1.A"]
FIG8 = {"S1": [["B"]], "S2": [["B"]], "S3": [["A", "C"]]}


def test_graph_is_networkx_with_edge_kinds():
    r = analyze_safety(FIG3, CYCLE, FIG8)
    g = r.graph
    assert isinstance(g, nx.DiGraph)
    kinds = {d["kind"] for _, _, d in g.edges(data=True)}
    assert kinds == {"plain", "member", "generalized"}
    assert g.nodes["S3"]["purgeable"] is False and g.nodes["S1"]["purgeable"] is True
    assert g.graph["theorem_family"] == "GPG"


def test_explain_names_theorem_and_unreachable():
    text = analyze_safety(FIG3, CYCLE, FIG8).explain()
    assert "Theorem 4" in text and "NOT SAFE" in text
    assert "S3 reaches only S3" in text
    assert "Fewest extra schemes that make it safe: S1(A) | S2(C)" in text


def test_explain_cross_product():
    r = analyze_safety({"S1": ["a"], "S2": ["b"]}, [], {"S1": ["a"]})
    assert "No join predicate on S1, S2" in r.explain() and r.suggestions == []


def test_draw_png_and_svg(tmp_path):
    r = analyze_safety(FIG3, CYCLE, FIG8)
    r.draw(tmp_path / "g.png")
    r.draw(str(tmp_path / "g.svg"))
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (tmp_path / "g.svg").read_bytes()[:500]
    assert r._repr_png_()[:4] == b"\x89PNG" and "<svg" in r._repr_svg_()
    with pytest.raises(ValueError, match="png or .svg"):
        r.draw(tmp_path / "g.pdf")


def test_repr_and_to_dict():
    r = analyze_safety(FIG3, CYCLE, FIG8)
    assert repr(r) == "SafetyReport(safe=False, unpurgeable=['S3'], theorem='Theorem 4')"
    assert r.to_dict() == {"safe": False, "unpurgeable": ["S3"], "theorem": "Theorem 4"}


def test_plan_representation():
    assert plan_to_str(normalize_plan([["S1", "S2"], "S3"], FIG3)) == "((S1 ⋈ S2) ⋈ S3)"
    for bad, msg in [(("S1", "S2"), "does not read stream"), (("S1", ("S2",), "S3"), "at least two"),
                     (("S1", "S9", "S3"), "unknown stream 'S9'"), (("S1", 3, "S2"), "neither")]:
        with pytest.raises(ValueError, match=msg):
            normalize_plan(bad, FIG3)


def test_safe_plans_bound_and_truncation():
    streams = {f"S{i}": ["x"] for i in range(6)}
    preds = [f"S{i}.x = S{i + 1}.x" for i in range(5)]
    sch = {s: [["x"]] for s in streams}
    full = safe_plans(streams, preds, sch, limit=3)
    # six inputs on one key: two 3-way MJoins below one binary join build 4 partial results
    # per arriving row where the single MJoin builds 5 (plan_cost: 24020 against 30000)
    best = (("S0", "S1", "S2"), ("S3", "S4", "S5"))
    assert full.complete and full.plans[0].plan == best and full.bound == 1 * 202 + 6 * 51 + 15 * 14 + 20 * 4 + 15
    assert full.plans[0].cost == 24020.0
    assert plan_cost(tuple(range(6)), Statistics.default([{0}] * 6)) == 30000.0
    cut = safe_plans(streams, preds, sch, max_checks=5)
    assert not cut.complete and "stopped" in cut.note
    assert tuple(streams) in [p.plan for p in cut.plans]
    big = safe_plans(streams, preds, sch, max_streams=4)
    assert not big.complete and [p.plan for p in big.plans] == [tuple(streams)]


def test_suggestions_on_a_large_query_use_the_greedy_repair():
    n = 200
    streams = {f"S{i}": ["x", "y"] for i in range(n)}
    preds = [f"S{i}.y = S{i + 1}.x" for i in range(n - 1)]
    schemes = {f"S{i}": [["x"]] for i in range(1, n)}  # edges S_i -> S_{i+1} only
    r = analyze_safety(streams, preds, schemes)
    assert not r.safe and len(r.unpurgeable) == n - 1  # S0 reaches everything
    assert len(r.explain(limit=3).splitlines()) < 20
    (s,) = r.suggestions
    assert not r.suggestions_minimal
    fixed = {k: list(v) for k, v in schemes.items()}
    for st, attrs in s.as_schemes().items():
        fixed.setdefault(st, []).extend(attrs)
    assert analyze_safety(streams, preds, fixed).safe
