"""Worked examples of Li et al. (VLDB 2006) and the §1 auction."""
import networkx as nx
import pytest

from punctuated.safety import analyze_plan, analyze_safety, safe_plans
from punctuated.safety.graph import (generalized_punctuation_graph, is_strongly_connected,
                                     punctuation_graph, reachable_set, transformed_punctuation_graph)
from punctuated.safety.model import build_query

ITEM = {"item": ["sellerid", "itemid", "name", "initialprice"], "bid": ["bidderid", "itemid", "increase"]}
JOIN = ["item.itemid = bid.itemid"]
FIG3 = {"S1": ["A", "B"], "S2": ["B", "C"], "S3": ["C", "A"]}
CYCLE = ["S1.B = S2.B", "S2.C = S3.C", "S3.A = S1.A"]
FIG5 = {"S1": [["B"]], "S2": [["C"]], "S3": [["A"]]}
FIG8 = {"S1": [["B"]], "S2": [["B"]], "S3": [["A", "C"]]}


def test_example1_auction_safe_with_unique_itemid_and_closing_punctuations():
    r = analyze_safety(ITEM, JOIN, {"item": [["itemid"]], "bid": [["itemid"]]})
    assert r.safe and r.unpurgeable == [] and r.theorem == "Theorem 2"
    assert set(r.graph.edges) == {("item", "bid"), ("bid", "item")}
    assert "bid punctuates bid(itemid) with bid.itemid = item.itemid from t" in r.explain()


def test_example1_bidderid_punctuations_never_purge_item():
    # §1: "if there are only punctuations on bidderid from bid stream, then the item
    # stream in the above query can never be purged"
    r = analyze_safety(ITEM, JOIN, {"item": [["itemid"]], "bid": [["bidderid"]]})
    assert not r.safe and r.unpurgeable == ["item"] and r.purgeable == ["bid"]
    assert [str(s) for s in r.suggestions] == ["bid(itemid)"]
    assert r.suggestions[0].as_schemes() == {"bid": [["itemid"]]}
    assert "bid(bidderid)" in r.explain()  # named as a scheme not on a join attribute


def test_example1_without_knowledge_both_states_grow():
    r = analyze_safety(ITEM, JOIN, {})
    assert r.unpurgeable == ["bid", "item"]
    assert [str(s) for s in r.suggestions] == ["bid(itemid) + item(itemid)"]


def test_example2_chained_purge_of_s1():
    # §3.2: P_t[S2] = {(b1, *)}, then P_t[S3] = {(c1, *), ..., (cn, *)}
    r = analyze_safety(FIG3, ["S1.B = S2.B", "S2.C = S3.C"], {"S2": [["B"]], "S3": [["C"]]})
    assert r.purgeable == ["S1"] and r.unpurgeable == ["S2", "S3"]
    text = r.explain()
    assert "1. S2 punctuates S2(B) with S2.B = S1.B from t" in text
    assert "2. S3 punctuates S3(C) with S3.C = S2.C from the S2 tuples joinable with t (step 1)" in text


def test_321_cyclic_join_graph_alternative_purge():
    # §3.2.1: with S1.A = S3.A, S1 can be purged by S3 on A and then S2 on C
    r = analyze_safety(FIG3, CYCLE, {"S3": [["A"]], "S2": [["C"]]})
    assert "S1" in r.purgeable
    assert "1. S3 punctuates S3(A)" in r.explain() and "2. S2 punctuates S2(C)" in r.explain()


def test_example3_figure5_punctuation_graph():
    q = build_query(FIG3, CYCLE, FIG5)
    pg = punctuation_graph(q)
    # "since there exists a punctuation scheme (-, +) from S1, a directed edge is created from S2 to S1"
    assert set(pg.edges) == {("S2", "S1"), ("S3", "S2"), ("S1", "S3")}
    assert nx.is_strongly_connected(pg) and is_strongly_connected(q)
    r = analyze_safety(FIG3, CYCLE, FIG5)
    assert r.safe and r.theorem == "Theorem 2"  # Corollary 1: the 3-way join is purgeable


def test_figure7_no_binary_tree_is_safe_but_the_mjoin_is():
    assert analyze_plan(FIG3, CYCLE, FIG5, ("S1", "S2", "S3")).safe
    for plan in [(("S1", "S2"), "S3"), (("S2", "S3"), "S1"), (("S1", "S3"), "S2")]:
        assert not analyze_plan(FIG3, CYCLE, FIG5, plan).safe, plan
    # Fig 7: "there is no punctuation from S2 to purge the tuples from S1 for the lower binary join"
    lower = analyze_plan(FIG3, CYCLE, FIG5, (("S1", "S2"), "S3")).operators[0]
    assert lower.inputs == ("S1", "S2") and lower.purgeable == (False, True)
    found = safe_plans(FIG3, CYCLE, FIG5, limit=10)
    assert [p.plan for p in found.plans] == [("S1", "S2", "S3")] and found.complete


def test_example4_generalized_punctuation_graph_figure9():
    q = build_query(FIG3, CYCLE, FIG8)
    pg = punctuation_graph(q)
    assert set(pg.edges) == {("S1", "S2"), ("S2", "S1")}  # Fig 8(b): not strongly connected
    gpg = generalized_punctuation_graph(q)
    g = [v for v, d in gpg.nodes(data=True) if d["kind"] == "generalized"]
    assert len(g) == 1 and gpg.nodes[g[0]]["covers"] == ("S1", "S2")  # G_{1,2}
    assert gpg.edges[g[0], "S3"]["kind"] == "generalized"
    assert {gpg.edges[s, g[0]]["kind"] for s in ("S1", "S2")} == {"member"}
    # (ii) S1 is purgeable: (b1, *) from S2, then (a1, c_i) from S3
    assert reachable_set(q, "S1") == {"S1", "S2", "S3"} == reachable_set(q, "S2")
    r = analyze_safety(FIG3, CYCLE, FIG8)
    assert r.theorem == "Theorem 4" and r.purgeable == ["S1", "S2"]
    assert "S3 punctuates S3(A, C) with S3.A = S1.A from t; S3.C = S2.C from the S2 tuples" in r.explain()
    # S3 has no outgoing edge at all, so its state is not purgeable (Theorem 3), and the
    # TPG of Fig 10 keeps two nodes (Theorem 5): the paper's remark (i) does not hold.
    assert r.unpurgeable == ["S3"] and not r.safe
    assert set(r.transformed_graph.nodes) == {"V{S1,S2}", "S3"}
    assert sorted(str(s) for s in r.suggestions) == ["S1(A)", "S2(C)"]


def test_section31_conjunctive_predicates():
    S = {"S1": ["a", "b"], "S2": ["a", "b"]}
    P = ["S1.a = S2.a", "S1.b = S2.b"]
    assert analyze_safety(S, P, {"S2": [["b"]]}).purgeable == ["S1"]
    assert analyze_safety(S, P, {"S2": [["a", "b"]]}).purgeable == ["S1"]  # generalized edge {S1} -> S2
    r = analyze_safety(S, P, {"S1": [["a"]], "S2": [["a", "b"]]})
    assert r.safe and r.theorem == "Theorem 4"
    assert list(r.transformed_graph.nodes) == ["V{S1,S2}"]  # Def 11 read with single-node sources


def test_section51_punctuation_purgeability():
    # Fig 3: (*, b1) of S1 purges (b1, *) of S2 and vice versa
    r = analyze_safety({"S1": ["A", "B"], "S2": ["B", "C"]}, ["S1.B = S2.B"], {"S1": [["B"]], "S2": [["B"]]})
    assert r.punctuation_purgeable == {"S1(B)": True, "S2(B)": True}
    # Fig 5: a punctuation can only be purged by punctuations on its non-* attributes
    r = analyze_safety(FIG3, CYCLE, FIG5)
    assert r.safe and not any(r.punctuation_purgeable.values())


def test_theorem5_on_figure_graphs():
    for sch in (FIG5, FIG8, {"S1": [["B"], ["A"]], "S2": [["B"]], "S3": [["A", "C"]]}):
        q = build_query(FIG3, CYCLE, sch)
        assert (transformed_punctuation_graph(q).number_of_nodes() == 1) == is_strongly_connected(q)


@pytest.mark.parametrize("n", [1])
def test_single_stream_is_trivially_safe(n):
    r = analyze_safety({"S": ["a"]}, [], {})
    assert r.safe and r.unpurgeable == [] and r.suggestions == []
