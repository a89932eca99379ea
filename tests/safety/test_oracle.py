"""Theorems 1-5 against the brute-force oracle (Defs 1-5 on concrete tuples).

Random queries of at most 5 streams, cyclic predicates, one- and
multi-attribute schemes.  The oracle enumerates every plan (Def 5) and checks
each join state on data with the chained purge; it never uses the theorems.
"""
import itertools
import random

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from punctuated.safety import analyze_plan, analyze_safety, safe_plans
from punctuated.safety.bruteforce import Oracle, all_plans, random_query, set_partitions
from punctuated.safety.graph import is_strongly_connected, transformed_punctuation_graph
from punctuated.safety.tree import canonical

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _query(rng: random.Random, n: int, dense: bool):
    per = (1, 2, 2, 3, 3) if dense else (0, 1, 1, 2, 2, 3)
    return random_query(rng, n, per_stream=per, p_multi=rng.choice([0.0, 0.3, 0.6]))


queries = st.builds(_query, st.randoms(use_true_random=False), st.integers(2, 5), st.booleans())


@settings(max_examples=300, **SETTINGS)
@given(queries)
def test_query_verdict_agrees_with_oracle(q):
    streams, preds, schemes = q
    r = analyze_safety(streams, preds, schemes)
    o = Oracle(streams, preds, schemes)
    event(f"{r.theorem}, {'safe' if r.safe else 'unsafe'}")
    assert r.safe == o.query_safe()                    # Theorems 2 and 4 vs Def 5 over all plans
    assert r.unpurgeable == o.unpurgeable()             # Theorems 1 and 3 on the single MJoin
    assert r.safe == (r.unpurgeable == [])
    assert (transformed_punctuation_graph(r.query).number_of_nodes() == 1) == r.safe  # Theorem 5
    assert is_strongly_connected(r.query) == r.safe


@settings(max_examples=300, **SETTINGS)
@given(queries, st.integers(0, 10_000))
def test_plan_verdicts_agree_with_oracle(q, k):
    streams, preds, schemes = q
    plans = all_plans(list(streams))
    plan = plans[k % len(plans)]
    got = analyze_plan(streams, preds, schemes, plan)
    want = Oracle(streams, preds, schemes).plan_verdicts(plan)
    assert [(o.operator, o.purgeable) for o in got.operators] == want


@settings(max_examples=60, **SETTINGS)
@given(st.randoms(use_true_random=False), st.integers(2, 4), st.booleans())
def test_safe_plans_are_exactly_the_safe_plans(rng, n, binary):
    streams, preds, schemes = _query(rng, n, True)
    o = Oracle(streams, preds, schemes)
    want = {canonical(p) for p in o.safe_plan_set() if not binary or _binary(p)}
    found = safe_plans(streams, preds, schemes, limit=10_000, keep=10_000, binary_only=binary)
    assert found.complete
    assert {canonical(p.plan) for p in found.plans} == want
    costs = [p.cost for p in found.plans]
    assert costs == sorted(costs)


def _binary(p) -> bool:
    return isinstance(p, str) or (len(p) == 2 and all(_binary(c) for c in p))


@settings(max_examples=80, **SETTINGS)
@given(st.randoms(use_true_random=False), st.integers(2, 4))
def test_suggestions_are_smallest_fixes(rng, n):
    streams, preds, schemes = _query(rng, n, False)
    r = analyze_safety(streams, preds, schemes)
    if r.safe:
        assert r.suggestions == []
        return
    for s in r.suggestions:
        fixed = {k: list(v) for k, v in schemes.items()}
        for st_, attrs in s.as_schemes().items():
            fixed.setdefault(st_, []).extend(attrs)
        assert Oracle(streams, preds, fixed).unpurgeable() == []
    if r.suggestions and r.suggestions_minimal:
        k = len(r.suggestions[0].schemes)
        assert {len(s.schemes) for s in r.suggestions} == {k}
        cands = [(s, a) for s in streams for a in r.query.join_attributes(s)]
        for combo in itertools.combinations(cands, k - 1):
            fixed = {x: list(v) for x, v in schemes.items()}
            for s, a in combo:
                fixed.setdefault(s, []).append([a])
            assert not analyze_safety(streams, preds, fixed).safe


def test_plan_counts():
    # series-reduced trees with labeled leaves (binary joins and MJoins): 1, 1, 4, 26, 236
    assert [len(all_plans([f"S{i}" for i in range(n)])) for n in range(1, 6)] == [1, 1, 4, 26, 236]
    assert sum(1 for _ in set_partitions(list(range(5)))) == 52  # Bell(5)
