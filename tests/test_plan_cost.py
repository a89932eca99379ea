"""The cost of a multi-way join plan (punctuated.safety.plan_cost), the JVM's PlanCost in Python."""
import pytest

from punctuated.safety.model import build_query
from punctuated.safety.plan_cost import CostModel, Statistics, ordered, plan_cost, probe_orders, statistics_of

CHAIN = [{0}, {0, 1}, {1}]  # a(k) ⋈ b(k, v) ⋈ c(v)


def test_worked_example():
    st = Statistics.default(CHAIN)
    assert plan_cost((0, 1, 2), st) == 6000.0  # 3 inputs x 1000 rows x (1 + 1) partials
    # (a ⋈ b): 2000 probes + 2000 writes + 0.01 x 1000 rows; root: 2000 + 1000 probes
    assert plan_cost(((0, 1), 2), st) == 7010.0 == plan_cost((2, (1, 0)), st)


def test_skew_makes_the_tree_cheaper():
    st = Statistics((1.0, 1.0, 10000.0), (1000.0,) * 3, ({0: 1.0}, {0: 1.0, 1: 50.0}, {1: 1.0}))
    assert plan_cost(((0, 1), 2), st) == 14.0 + 500002.0
    assert plan_cost((0, 1, 2), st) == 1000004.0


def test_probe_orders_are_greedy_and_connected():
    st = Statistics((1000.0,) * 3, (1000.0,) * 3, ({0: 5.0}, {0: 1.0, 1: 1.0}, {1: 0.5}))
    m = CostModel(st)
    sets = [frozenset([0]), frozenset([1]), frozenset([2])]
    assert [d for d, _ in m.probe_order(sets, 1)] == [2, 0]  # c's fan-out 0.5 before a's 5
    assert [d for d, _ in m.probe_order(sets, 0)] == [1, 2]  # c shares nothing with a: after b
    assert probe_orders((0, 1, 2), st) == [[1, 2], [2, 0], [1, 0]]
    assert probe_orders(((0, 1), 2), Statistics.default(CHAIN)) == [[1], [0], [0, 1]]
    assert ordered(((2, 1), 0)) == (0, (1, 2))


def test_statistics_by_names_and_their_json():
    q = build_query({"a": ["k"], "b": ["k", "v"], "c": ["v"]}, ["a.k = b.k", "b.v = c.v"], {})
    st = statistics_of(q, {"rate": {"c": 7}, "stored": {"a": 3}, "fanout": {"b": {"v": 2}}})
    assert st.rate == (1000.0, 1000.0, 7.0) and st.stored == (3.0, 1000.0, 1000.0)
    assert st.fan(1, q.cls[("b", "v")]) == 2.0 and st.fan(1, q.cls[("b", "k")]) == 1.0
    assert Statistics.from_dict(st.to_dict()) == st
    with pytest.raises(ValueError, match="not a join attribute of a"):
        statistics_of(build_query({"a": ["k", "w"], "b": ["k"]}, ["a.k = b.k"], {}), {"fanout": {"a": {"w": 2}}})
