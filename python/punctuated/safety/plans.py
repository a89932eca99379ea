"""Choosing a safe plan (Li et al., VLDB 2006, §5.2).

Only safe plans are generated: by Lemmas 1/2 every sub-plan of a safe plan is a
safe plan of the sub-query on its streams, so a dynamic program over the
subsets whose (generalized) punctuation graph is strongly connected builds the
plans bottom-up, System-R style; an operator whose inputs are such subsets is
kept only if it is purgeable (Corollaries 1/2, with every scheme of the inputs
propagated since their sub-plans are safe).

Cost (lower is better), summed over the operators of a plan:

* one per join state that stores intermediate results (an input that is
  itself an operator): memory for join results;
* one per (input, scheme) pair the operator can use to purge: punctuations
  to receive and hold (§5.2, Plan Parameter I).

The single MJoin stores no intermediate result, so it usually wins; bushy and
binary plans follow.  Bound: the number of candidate operators is
``sum_k C(n, k) * (Bell(k) - 1)`` (``2**(k-1) - 1`` for binary trees); the
search gives up after ``max_checks`` purgeability checks or when the query has
more than ``max_streams`` streams, and then returns what it found plus the
single MJoin, which is safe whenever the query is (Theorem 2/4), with
``complete=False``.

>>> from punctuated.safety.model import build_query
>>> q = build_query({"A": ["x"], "B": ["x"], "C": ["x"]}, ["A.x = B.x", "B.x = C.x"],
...                 {s: [["x"]] for s in "ABC"})
>>> [str(p) for p in safe_plans(q, limit=2).plans]
['(A ⋈ B ⋈ C) cost=3', '((A ⋈ B) ⋈ C) cost=5']
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb

from .graph import Structure
from .model import Query
from .tree import Plan, canonical, plan_to_str
from .verdict import operator_structure


@dataclass(frozen=True)
class RankedPlan:
    plan: Plan
    cost: int
    intermediate_states: int
    punctuation_uses: int

    def __str__(self) -> str:
        return f"{plan_to_str(self.plan)} cost={self.cost}"


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
               max_checks: int = 50_000, binary_only: bool = False) -> PlanSearch:
    """The ``limit`` cheapest safe plans (ties broken by fewer operators, then
    by name); ``keep`` best sub-plans are kept per subset."""
    names = list(q.streams)
    n = len(names)
    bound = enumeration_bound(n, binary_only)
    mjoin = tuple(names) if n > 1 else names[0]
    if n > max_streams:
        s = Structure.of_query(q)
        ok = len(s.purgeable()) == n
        plans = [RankedPlan(mjoin, len(s.usable), 0, len(s.usable))] if ok else []
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
            local = sum(1 for b in blocks if b & (b - 1)) + len(s.usable)
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
        plans.append(RankedPlan(mjoin, len(s.usable), 0, len(s.usable)))
    return PlanSearch(plans[:limit], complete, checks, bound, note)


def _ops(p: Plan) -> int:
    return 0 if isinstance(p, str) else 1 + sum(_ops(c) for c in p)


def _key(e):
    return (e[0], _ops(e[3]), plan_to_str(canonical(e[3])))


def _dedupe(entries):
    seen, out = set(), []
    for e in entries:
        k = canonical(e[3])
        if k not in seen:
            seen.add(k)
            out.append(e)
    return out
