"""Choosing a safe plan (Li et al., VLDB 2006, §5.2).

Only safe plans are generated: by Lemmas 1/2 every sub-plan of a safe plan is a
safe plan of the sub-query on its streams, so a dynamic program over the
subsets whose (generalized) punctuation graph is strongly connected builds the
plans bottom-up, System-R style; an operator whose inputs are such subsets is
kept only if it is purgeable (Corollaries 1/2, with every scheme of the inputs
propagated since their sub-plans are safe).

Cost (lower is better): the estimate of :mod:`punctuated.safety.plan_cost` under
``statistics`` (default: every input 1000 rows per batch and in state, key-like joins),
the same definition the JVM's ``auto`` plan choice uses: the partial results the
arriving rows build while probing, plus writes and memory of intermediate states.
Ties: fewer intermediate states, then the plan's text (children ordered by their
first input). ``intermediate_states`` and ``punctuation_uses`` (the (input, scheme)
pairs the operators can purge with, §5.2, Plan Parameter I) are reported alongside.

With key-like joins the single MJoin stores no intermediate result and wins up to four
inputs; from five on, a bushy tree can build fewer partial results (the MJoin's rows
probe every other input in turn, a tree's reuse the joins below).  Bound: the number of candidate operators is
``sum_k C(n, k) * (Bell(k) - 1)`` (``2**(k-1) - 1`` for binary trees); the
search gives up after ``max_checks`` purgeability checks or when the query has
more than ``max_streams`` streams, and then returns what it found plus the
single MJoin, which is safe whenever the query is (Theorem 2/4), with
``complete=False``.

>>> from punctuated.safety.model import build_query
>>> q = build_query({"A": ["x"], "B": ["x"], "C": ["x"]}, ["A.x = B.x", "B.x = C.x"],
...                 {s: [["x"]] for s in "ABC"})
>>> [str(p) for p in safe_plans(q, limit=2).plans]
['(A ⋈ B ⋈ C) cost=6000', '((A ⋈ B) ⋈ C) cost=7010']

Skewed statistics make a tree win: C's many rows probe the stored ``A ⋈ B`` combinations
once instead of A and then B (500163 against 510053 for the MJoin).

>>> [str(p) for p in safe_plans(q, limit=1, statistics={
...     "rate": {"A": 1, "B": 1, "C": 10000}, "fanout": {"B": {"x": 50}}}).plans]
['((A ⋈ B) ⋈ C) cost=500163']
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb
from typing import Mapping

from .graph import Structure
from .model import Query
from .plan_cost import CostModel, Statistics, plan_cost, statistics_of
from .tree import Plan, canonical, plan_to_str
from .verdict import operator_structure


@dataclass(frozen=True)
class RankedPlan:
    """A safe plan with its cost (:func:`punctuated.safety.plan_cost.plan_cost`), its number
    of intermediate states and of (input, scheme) pairs its operators purge with."""

    plan: Plan
    cost: float
    intermediate_states: int
    punctuation_uses: int

    def __str__(self) -> str:
        return f"{plan_to_str(self.plan)} cost={self.cost:.10g}"


@dataclass(frozen=True)
class PlanSearch:
    plans: list[RankedPlan]
    complete: bool
    checks: int
    bound: int
    note: str = ""


def _bell(k: int) -> int:
    row = [1]
    for _ in range(k):
        nxt = [row[-1]]
        for x in row:
            nxt.append(nxt[-1] + x)
        row = nxt
    return row[0]


def enumeration_bound(n: int, binary_only: bool = False) -> int:
    """Candidate operators without pruning: ``sum_k C(n,k) (Bell(k) - 1)``.

    >>> enumeration_bound(3), enumeration_bound(3, binary_only=True)
    (7, 6)
    """
    per = (lambda k: 2 ** (k - 1) - 1) if binary_only else (lambda k: _bell(k) - 1)
    return sum(comb(n, k) * per(k) for k in range(2, n + 1))


def safe_plans(q: Query, limit: int = 5, keep: int = 3, max_streams: int = 10,
               max_checks: int = 50_000, binary_only: bool = False,
               statistics: Statistics | Mapping | None = None) -> PlanSearch:
    """The ``limit`` cheapest safe plans (ties broken by fewer operators, then
    by text); ``keep`` best sub-plans are kept per subset. ``statistics``: a
    :class:`~punctuated.safety.plan_cost.Statistics` over the streams in order, or a
    mapping by names (:func:`~punctuated.safety.plan_cost.statistics_of`); default: the
    defaults."""
    names = list(q.streams)
    n = len(names)
    stats = statistics if isinstance(statistics, Statistics) else statistics_of(q, statistics)
    model = CostModel(stats)
    bound = enumeration_bound(n, binary_only)
    mjoin = tuple(names) if n > 1 else names[0]

    def mjoin_cost() -> float:
        return plan_cost(tuple(range(n)), stats, model) if n > 1 else 0.0

    if n > max_streams:
        s = Structure.of_query(q)
        ok = len(s.purgeable()) == n
        plans = [RankedPlan(mjoin, mjoin_cost(), 0, len(s.usable))] if ok else []
        return PlanSearch(plans, False, 0, bound, f"more than {max_streams} streams: only the single MJoin")
    full = (1 << n) - 1
    bits = {m: [names[i] for i in range(n) if m >> i & 1] for m in range(1, full + 1)}
    schemes = {s: q.schemes_of(s) for s in names}
    safe: dict[int, bool] = {}
    for m in range(1, full + 1):
        st = bits[m]
        sub = Structure(st, [q.touches[x] for x in st],
                        [[(q.scheme_classes(p), p) for p in schemes[x]] for x in st])
        safe[m] = len(sub.purgeable()) == len(st)
    best: dict[int, list[tuple[int, int, int, Plan]]] = {1 << i: [(0, 0, 0, names[i])] for i in range(n)}
    checks = 0
    complete = True

    def parts(mask: int):
        low = mask & -mask
        rest = mask ^ low
        sub = rest
        while True:
            b = sub | low
            if safe[b] and b in best:
                if b == mask:
                    yield [b]
                else:
                    for p in parts(mask ^ b):
                        yield [b] + p
            if sub == 0:
                break
            sub = (sub - 1) & rest

    for m in sorted(range(1, full + 1), key=lambda x: bin(x).count("1")):
        if m in best or not safe[m] or not complete:
            continue
        found = []
        for blocks in parts(m):
            if len(blocks) < 2 or (binary_only and len(blocks) != 2):
                continue
            checks += 1
            if checks > max_checks:
                complete = False
                break
            inputs = [frozenset(bits[b]) for b in blocks]
            s = operator_structure(q, inputs, [[p for x in bits[b] for p in schemes[x]] for b in blocks],
                                   [str(b) for b in blocks])
            if len(s.purgeable()) != len(blocks):
                continue
            local = model.node_cost([frozenset(i for i in range(n) if b >> i & 1) for b in blocks], m == full)
            for combo in itertools.product(*(best[b] for b in blocks)):
                found.append((local + sum(c[0] for c in combo),
                              sum(1 for b in blocks if b & (b - 1)) + sum(c[1] for c in combo),
                              len(s.usable) + sum(c[2] for c in combo),
                              tuple(c[3] for c in combo)))
        if found:
            found.sort(key=_key)
            best[m] = _dedupe(found)[:keep if m != full else max(keep, limit)]
    plans = [RankedPlan(p, c, i, u) for c, i, u, p in best.get(full, [])]
    note = "" if complete else f"stopped after {max_checks} checks"
    if not complete and safe[full] and all(canonical(p.plan) != canonical(mjoin) for p in plans):
        s = Structure.of_query(q)
        plans.append(RankedPlan(mjoin, mjoin_cost(), 0, len(s.usable)))
    return PlanSearch(plans[:limit], complete, checks, bound, note)


def _ops(p: Plan) -> int:
    return 0 if isinstance(p, str) else 1 + sum(_ops(c) for c in p)


def _key(e):
    # plans are built with children ordered by their first input: their text is the JVM's
    return (e[0], _ops(e[3]), plan_to_str(e[3]))


def _dedupe(entries):
    seen, out = set(), []
    for e in entries:
        k = canonical(e[3])
        if k not in seen:
            seen.add(k)
            out.append(e)
    return out


@dataclass(frozen=True)
class StateVerdict:
    """One state of a plan: a stream's rows or an intermediate node's combinations, kept by
    ``operator``; purgeable iff it reaches every other input of that operator (Li et al. 2006,
    Theorem 1, or Theorem 3 when a scheme has several attributes)."""

    state: Plan
    operator: Plan
    purgeable: bool
    theorem: str

    @property
    def intermediate(self) -> bool:
        return not isinstance(self.state, str)

    def to_dict(self) -> dict:
        return {"state": plan_to_str(self.state), "intermediate": self.intermediate,
                "operator": plan_to_str(self.operator), "purgeable": self.purgeable, "theorem": self.theorem}


@dataclass(frozen=True)
class ChosenPlan:
    """The plan ``spark.punctuated.join.plan=auto`` runs for a group of streams (the cheapest
    safe plan, :func:`safe_plans`; the single MJoin when none is safe), its cost under
    ``statistics`` and a verdict per state."""

    plan: Plan
    cost: float
    safe: bool
    states: tuple[StateVerdict, ...]

    @property
    def kind(self) -> str:
        """``mjoin`` (one operator, no intermediate state) or ``tree``."""
        return "mjoin" if all(isinstance(c, str) for c in self.plan) else "tree"

    def to_dict(self) -> dict:
        return {"plan": plan_to_str(self.plan), "kind": self.kind, "cost": self.cost, "safe": self.safe,
                "states": [s.to_dict() for s in self.states]}

    def explain(self, limit: int | None = 20) -> list[str]:
        """Lines: the plan, then one per state (at most ``limit``)."""
        lines = [f"spark.punctuated.join.plan=auto runs {plan_to_str(self.plan)} ({self.kind}, cost "
                 f"{self.cost:.10g} per batch under the default statistics; Li et al. (VLDB 2006), §5.2"
                 + ("" if self.safe else "; no plan is safe, the single MJoin runs") + "):"]
        shown = self.states if limit is None else self.states[:limit]
        for s in shown:
            what = "intermediate state" if s.intermediate else "state"
            lines.append(f"  {what} {plan_to_str(s.state)} in {plan_to_str(s.operator)}: "
                         + ("purgeable" if s.purgeable else "never purged")
                         + f" (Li et al. (VLDB 2006), {s.theorem})")
        if len(shown) < len(self.states):
            lines.append(f"  ... and {len(self.states) - len(shown)} more states")
        return lines


def choose_plan(q: Query, statistics: Statistics | Mapping | None = None) -> ChosenPlan:
    """The plan ``auto`` runs for the streams of ``q`` as one group, with a verdict per state.

    >>> from punctuated.safety.model import build_query
    >>> q = build_query({"a": ["k"], "b": ["k", "v"], "c": ["v"]}, ["a.k = b.k", "b.v = c.v"],
    ...                 {"a": [["k"]], "b": [["k"], ["v"]], "c": [["v"]]})
    >>> c = choose_plan(q, {"rate": {"a": 1, "b": 1, "c": 10000}, "fanout": {"b": {"v": 50}}})
    >>> c.to_dict()["plan"], [(plan_to_str(s.state), s.purgeable, s.theorem) for s in c.states]
    ('((a ⋈ b) ⋈ c)', [('a', True, 'Theorem 1'), ('b', True, 'Theorem 1'), ('(a ⋈ b)', True, 'Theorem 1'), ('c', True, 'Theorem 1')])
    """
    from .verdict import plan_verdicts

    names = list(q.streams)
    stats = statistics if isinstance(statistics, Statistics) else statistics_of(q, statistics)
    found = safe_plans(q, limit=1, statistics=stats)
    plan = found.plans[0].plan if found.plans else tuple(names)
    cost = found.plans[0].cost if found.plans else plan_cost(tuple(range(len(names))), stats)
    report = plan_verdicts(q, plan)
    states = tuple(StateVerdict(i, o.operator, ok, o.theorem)
                   for o in report.operators for i, ok in zip(o.inputs, o.purgeable))
    return ChosenPlan(plan, cost, bool(found.plans), states)
