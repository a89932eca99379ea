"""Brute-force oracle for small queries: Li et al. 2006, Defs. 1-5 (§2.2-2.4) on concrete tuples.

Shares no code with the graph-based analysis (its own parsing, equality
closure and plan enumeration) and never consults Theorems 1-5:

* every plan is enumerated (:func:`all_plans`: all trees of binary joins and
  MJoins, 4 for 3 streams, 26 for 4, 236 for 5);
* for each operator and input, a concrete stored state is built (a *base*
  tuple per input such that all base tuples join, which is the worst case,
  plus random extra tuples), and for every stored tuple ``t``:

  1. the chained purge strategy (§3.2.1, generalized in §4.2) is run on the
     data: repeatedly pick an input whose scheme's attributes are all equal to
     attributes of inputs already handled, instantiate the scheme with the
     values of the tuples joinable with ``t`` so far, extend the joinable set;
  2. if it handles every input, the punctuations it produced are checked by
     enumerating every possible future result with ``t`` (Li et al. 2006, Def. 4: any non-empty
     set ``N`` of inputs contributing a new tuple, the others a stored one; new
     values are fresh, the best an adversary can do), which must all be
     excluded by a punctuation;
  3. otherwise a future result is exhibited that escapes even the set of *all*
     instantiations of all schemes over the values seen, so no finite set of
     punctuations can purge ``t`` (Li et al. 2006, Def. 4).  If either check fails the oracle
     raises :class:`OracleError` (the chained purge would be unsound or
     incomplete).

A state is purgeable iff all its tuples are; punctuations of an input pass to
the operator's output iff that input's state is purgeable (see
:mod:`punctuated.safety.verdict`).  A query is safe iff some plan has only
purgeable operators (Li et al. 2006, Defs. 3 and 5).

>>> q = Oracle({"A": ["x"], "B": ["x"]}, ["A.x = B.x"], {"B": [["x"]]})
>>> q.plan_verdicts(("A", "B")), q.query_safe(), q.unpurgeable()
([(('A', 'B'), (True, False))], False, ['B'])
"""
from __future__ import annotations

import itertools
import random
from typing import Iterator

Attr = tuple[str, str]


class OracleError(AssertionError):
    """The chained purge disagrees with the exhaustive check of Li et al. 2006, Def. 4 (purgeability)."""


def set_partitions(items: list) -> Iterator[list[list]]:
    """All partitions of ``items`` into non-empty blocks."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for p in set_partitions(rest):
        yield [[first]] + p
        for k in range(len(p)):
            yield p[:k] + [[first] + p[k]] + p[k + 1:]


def all_plans(streams: list[str]) -> list:
    """Every plan over ``streams``: leaves are names, operators tuples of >= 2."""
    if len(streams) == 1:
        return [streams[0]]
    out = []
    for p in set_partitions(list(streams)):
        if len(p) < 2:
            continue
        for kids in itertools.product(*(all_plans(b) for b in p)):
            out.append(tuple(kids))
    return out


class Oracle:
    """A small query, checked by brute force (see module docstring)."""

    def __init__(self, streams: dict, predicates: list[str], schemes: dict | None, extra: int = 1):
        self.streams = {s: list(a) for s, a in streams.items()}
        self.extra = extra
        parent = {(s, a): (s, a) for s in streams for a in streams[s]}

        def find(x):
            while parent[x] != x:
                x = parent[x]
            return x

        for p in predicates:
            left, right = (side.strip().split(".") for side in p.split("="))
            parent[find(tuple(left))] = find(tuple(right))
        self.cls = {x: find(x) for x in parent}
        self.schemes = {s: [tuple((s, a.replace("<=", "").replace(">=", "").strip()) for a in ([sc] if isinstance(sc, str) else sc))
                            for sc in (schemes or {}).get(s, [])] for s in streams}
        self._memo: dict = {}

    # --- concrete data ---------------------------------------------------
    def _state(self, attrs: list[Attr], rng: random.Random) -> list[dict]:
        base = {x: ("base", self.cls[x]) for x in attrs}
        out = [base]
        for _ in range(self.extra):
            pick = {c: rng.choice(["base", "alt"]) for c in {self.cls[x] for x in attrs}}
            out.append({x: (pick[self.cls[x]], self.cls[x]) for x in attrs})
        return out

    def _joins(self, u: dict, combo: dict) -> bool:
        for v in combo.values():
            for x, a in u.items():
                for y, b in v.items():
                    if self.cls[x] == self.cls[y] and a != b:
                        return False
        return True

    # --- Li et al. 2006, Def. 4, for one input of one operator ---------------
    def state_purgeable(self, inputs: list[tuple[frozenset, tuple]], i: int) -> bool:
        """``inputs``: per input, (streams, schemes as tuples of attributes)."""
        key = (tuple(inputs), i)
        if key not in self._memo:
            rng = random.Random(repr(key))
            attrs = [[(s, a) for s in sorted(st) for a in self.streams[s]] for st, _ in inputs]
            stored = [self._state(a, rng) for a in attrs]
            self._memo[key] = all(self._tuple_purgeable(inputs, i, t, stored) for t in stored[i])
        return self._memo[key]

    def _chained_purge(self, inputs, i, t, stored):
        handled = {i}
        combos = [{i: t}]
        punct: dict[int, set] = {j: set() for j in range(len(inputs))}
        while len(handled) < len(inputs):
            for j in range(len(inputs)):
                if j in handled:
                    continue
                for sc in inputs[j][1]:
                    src = {}
                    for x in sc:
                        src[x] = next(((p, y) for p in sorted(handled) for y in t_attrs(stored[p][0])
                                       if self.cls[y] == self.cls[x]), None)
                    if None in src.values():
                        continue
                    for c in combos:
                        punct[j].add((sc, tuple(c[p][y] for p, y in (src[x] for x in sc))))
                    combos = [c | {j: u} for c in combos for u in stored[j] if self._joins(u, c)]
                    handled.add(j)
                    break
                if j in handled:
                    break
            else:
                return None
        return punct

    def _future_result(self, inputs, i, t, stored, matched) -> dict | None:
        others = [j for j in range(len(inputs)) if j != i]
        for r in range(1, len(others) + 1):
            for new in itertools.combinations(others, r):
                old = [j for j in others if j not in new]
                for pick in itertools.product(*(stored[j] for j in old)):
                    combo = {i: t}
                    ok = True
                    for j, u in zip(old, pick):
                        if not self._joins(u, combo):
                            ok = False
                            break
                        combo[j] = u
                    if not ok:
                        continue
                    forced = {self.cls[x]: v for u in combo.values() for x, v in u.items()}
                    fresh = {j: {x: forced.get(self.cls[x], ("fresh", self.cls[x]))
                                 for x in t_attrs(stored[j][0])} for j in new}
                    if not any(matched(j, u) for j, u in fresh.items()):
                        return {"new": fresh, "stored": combo}
        return None

    def _tuple_purgeable(self, inputs, i, t, stored) -> bool:
        punct = self._chained_purge(inputs, i, t, stored)
        if punct is not None:
            def by_chain(j, u):
                return any((sc, tuple(u[x] for x in sc)) in punct[j] for sc in inputs[j][1])
            w = self._future_result(inputs, i, t, stored, by_chain)
            if w is not None:
                raise OracleError(f"chained purge punctuations {punct} miss future result {w}")
            return True
        seen = {v for st in stored for u in st for v in u.values()}

        def by_all(j, u):  # every instantiation over the values seen
            return any(all(u[x] in seen for x in sc) for sc in inputs[j][1])
        if self._future_result(inputs, i, t, stored, by_all) is None:
            raise OracleError(f"chained purge stuck for input {i} of {inputs} but some punctuations suffice")
        return False

    # --- plans and queries -----------------------------------------------
    def plan_verdicts(self, plan) -> list[tuple[tuple, tuple[bool, ...]]]:
        """Post-order list of (operator, per-input purgeability)."""
        out = []

        def visit(p):
            if isinstance(p, str):
                return frozenset([p]), tuple(self.schemes[p])
            kids = [visit(c) for c in p]
            inputs = [(st, tuple(sorted(set(sc)))) for st, sc in kids]
            ok = tuple(self.state_purgeable(inputs, k) for k in range(len(inputs)))
            out.append((p, ok))
            carried = tuple(x for k, (_, sc) in enumerate(inputs) if ok[k] for x in sc)
            return frozenset().union(*(st for st, _ in kids)), carried

        visit(plan)
        return out

    def plan_safe(self, plan) -> bool:
        """Li et al. 2006, Defs. 2 and 4: every operator of the plan is purgeable (stops at the first that is not)."""
        return self._safe_sub(plan)[2]

    def _safe_sub(self, p):
        key = ("sub", p)
        if key not in self._memo:
            if isinstance(p, str):
                self._memo[key] = (frozenset([p]), tuple(self.schemes[p]), True)
            else:
                kids = []
                for c in p:
                    kids.append(self._safe_sub(c))
                    if not kids[-1][2]:
                        self._memo[key] = (None, None, False)
                        return self._memo[key]
                inputs = [(st, tuple(sorted(set(sc)))) for st, sc, _ in kids]
                ok = all(self.state_purgeable(inputs, k) for k in range(len(inputs)))
                carried = tuple(x for _, sc in inputs for x in sc)
                self._memo[key] = (frozenset().union(*(st for st, _, _ in kids)), carried, ok)
        return self._memo[key]

    def safe_plan_set(self) -> list:
        return [p for p in all_plans(list(self.streams)) if self.plan_safe(p)]

    def query_safe(self) -> bool:
        """Li et al. 2006, Def. 5: some plan has only purgeable operators."""
        return any(self.plan_safe(p) for p in all_plans(list(self.streams)))

    def unpurgeable(self) -> list[str]:
        """Streams whose state is not purgeable in the single MJoin."""
        names = list(self.streams)
        if len(names) == 1:
            return []
        (_, ok), = self.plan_verdicts(tuple(names))
        return sorted(s for s, good in zip(names, ok) if not good)


def t_attrs(u: dict) -> list[Attr]:
    return list(u)


def random_query(rng: random.Random, n: int, max_attrs: int = 3, p_multi: float = 0.3,
                 p_connect: float = 0.95, per_stream: tuple = (0, 1, 1, 2, 2, 3)
                 ) -> tuple[dict, list[str], dict]:
    """A random small query ``(streams, predicates, schemes)`` for property tests:
    a random spanning tree of predicates (each kept with ``p_connect``), extra
    predicates that may close cycles, and ``rng.choice(per_stream)`` schemes per stream, multi-attribute
    with probability ``p_multi``.  Predicates implying an equality inside one
    stream are skipped."""
    streams = {f"S{i + 1}": list("abcd"[:rng.randint(1, max_attrs)]) for i in range(n)}
    names = list(streams)
    parent: dict = {}

    def find(x):
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    def members(r):
        return [x for s in names for x in ((s, a) for a in streams[s]) if find(x) == r]

    preds: list[str] = []

    def add(i: int, j: int) -> None:
        for _ in range(4):
            x = (names[i], rng.choice(streams[names[i]]))
            y = (names[j], rng.choice(streams[names[j]]))
            rx, ry = find(x), find(y)
            if rx == ry:
                return
            ss = [m[0] for m in members(rx) + members(ry)]
            if len(ss) == len(set(ss)):
                parent[rx] = ry
                preds.append(f"{x[0]}.{x[1]} = {y[0]}.{y[1]}")
                return

    for i in range(1, n):
        if rng.random() < p_connect:
            add(i, rng.randrange(i))
    for _ in range(rng.randint(0, n)):
        i, j = rng.sample(range(n), 2)
        add(i, j)
    schemes: dict = {}
    joined = {x for p in preds for x in (tuple(v.strip().split(".")) for v in p.split("="))}
    for s in names:
        for _ in range(rng.choice(per_stream)):
            m = len(streams[s])
            k = 1 if m == 1 or rng.random() >= p_multi else rng.randint(2, m)
            pool = [a for a in streams[s] if (s, a) in joined]
            if k == 1 and pool and rng.random() < 0.8:
                schemes.setdefault(s, []).append([rng.choice(pool)])
            else:
                schemes.setdefault(s, []).append(sorted(rng.sample(streams[s], k)))
    return streams, preds, schemes


# --- shared test vectors (testdata/safety_vectors.json) ---------------------
_FIG3 = {"S1": ["A", "B"], "S2": ["B", "C"], "S3": ["C", "A"]}
_CYCLE = ["S1.B = S2.B", "S2.C = S3.C", "S3.A = S1.A"]
HANDCRAFTED = [
    ("auction-example1-safe", "§1 Example 1: item unique on itemid, bids punctuated on itemid (auction closed)",
     {"item": ["sellerid", "itemid", "name", "initialprice"], "bid": ["bidderid", "itemid", "increase"]},
     ["item.itemid = bid.itemid"], {"item": [["itemid"]], "bid": [["itemid"]]}, "Theorem 2", None),
    ("auction-example1-bidderid-only", "§1: with punctuations on bidderid only, item can never be purged",
     {"item": ["sellerid", "itemid", "name", "initialprice"], "bid": ["bidderid", "itemid", "increase"]},
     ["item.itemid = bid.itemid"], {"item": [["itemid"]], "bid": [["bidderid"]]}, "Theorem 2",
     [[["bid", ["itemid"]]]]),
    ("auction-no-schemes", "§1: without application knowledge both join states grow forever",
     {"item": ["sellerid", "itemid", "name", "initialprice"], "bid": ["bidderid", "itemid", "increase"]},
     ["item.itemid = bid.itemid"], {}, "Theorem 2", [[["bid", ["itemid"]], ["item", ["itemid"]]]]),
    ("auction-user-contract", "user contract: auctions unique on id, bids punctuated on auction and (bidder, day<=)",
     {"auctions": ["id", "seller", "category"], "bids": ["auction", "bidder", "price", "day"]},
     ["auctions.id = bids.auction"], {"auctions": [["id"]], "bids": [["auction"], ["bidder", "day<="]]},
     "Theorem 2", None),
    ("paper-example2-fig3", "§3.2 Example 2: S1 purged by S2 on B, then S3 on C (chained purge)",
     _FIG3, ["S1.B = S2.B", "S2.C = S3.C"], {"S2": [["B"]], "S3": [["C"]]}, "Theorem 2", None),
    ("paper-3.2.1-cyclic-alternative", "§3.2.1: with S1.A = S3.A, S1 is purged by S3 on A then S2 on C",
     _FIG3, _CYCLE, {"S3": [["A"]], "S2": [["C"]]}, "Theorem 2", None),
    ("paper-example3-fig5", "§4.1 Example 3 / Fig 5: strongly connected, safe as one MJoin, no binary tree safe (Fig 7)",
     _FIG3, _CYCLE, {"S1": [["B"]], "S2": [["C"]], "S3": [["A"]]}, "Theorem 2", None),
    ("paper-example4-fig8", "§4.2 Fig 8/9: generalized edge G{S1,S2} -> S3 makes S1, S2 purgeable; "
     "S3 has no outgoing edge (the paper's claim (i) that S3 is purgeable contradicts Theorems 1, 3 and 5)",
     _FIG3, _CYCLE, {"S1": [["B"]], "S2": [["B"]], "S3": [["A", "C"]]}, "Theorem 4",
     [[["S1", ["A"]]], [["S2", ["C"]]]]),
    ("paper-3.1-conjunctive", "§3.1: conjunctive predicates, one punctuable join attribute suffices",
     {"S1": ["a", "b"], "S2": ["a", "b"]}, ["S1.a = S2.a", "S1.b = S2.b"], {"S1": [["a"]], "S2": [["b"]]},
     "Theorem 2", None),
    ("def11-single-stream-generalized-edge", "generalized edge {S1} -> S2 (Li et al. 2006, Def. 8: both attributes joined with S1)",
     {"S1": ["a", "b"], "S2": ["a", "b"]}, ["S1.a = S2.a", "S1.b = S2.b"], {"S1": [["a"]], "S2": [["a", "b"]]},
     "Theorem 4", None),
    ("implied-equality", "S1.a = S2.a = S3.a implies S1.a = S3.a: S3(a) then S2(b) purge S1",
     {"S1": ["a"], "S2": ["a", "b"], "S3": ["a", "b"]}, ["S1.a = S2.a", "S2.a = S3.a", "S2.b = S3.b"],
     {"S3": [["a"]], "S2": [["b"]]}, "Theorem 2", None),
    ("cross-product", "no join predicate: never purgeable", {"S1": ["a"], "S2": ["b"]}, [],
     {"S1": [["a"]], "S2": [["b"]]}, "Theorem 2", []),
    ("non-join-scheme", "a scheme on a non-join attribute is useless", {"S1": ["a", "x"], "S2": ["a"]},
     ["S1.a = S2.a"], {"S1": [["a", "x"]], "S2": [["a"]]}, "Theorem 2", [[["S1", ["a"]]]]),
]


def _case(name, desc, streams, preds, schemes, rng, n_plans=4) -> dict:
    o = Oracle(streams, preds, schemes)
    plans = all_plans(list(streams))
    if len(plans) > n_plans:
        plans = [tuple(streams)] + rng.sample(plans[1:], n_plans - 1)

    def js(p):
        return p if isinstance(p, str) else [js(c) for c in p]
    return {"name": name, "description": desc, "streams": streams, "predicates": preds, "schemes": schemes,
            "expected": {"safe": o.query_safe(), "unpurgeable": o.unpurgeable()},
            "plans": [{"plan": js(p), "safe": o.plan_safe(p),
                       "operators": [{"operator": js(op), "purgeable": list(ok)}
                                     for op, ok in o.plan_verdicts(p)]} for p in plans if not isinstance(p, str)]}


def binary_plans(streams: list[str]) -> list:
    """Every tree of binary joins over ``streams`` (child order ignored).

    >>> len(binary_plans(["A", "B", "C"])), len(binary_plans(["A", "B", "C", "D"]))
    (3, 15)
    """
    return [p for p in all_plans(streams) if _binary(p)]


def _binary(p) -> bool:
    return isinstance(p, str) or (len(p) == 2 and all(_binary(c) for c in p))


def spark_plans(case: dict, limit: int = 6) -> list[dict]:
    """Binary plans Spark can run (a join predicate between the two inputs of every
    join) with each operator's purgeability under the propagation of our Spark
    join (``plan_verdicts(..., "spark")``): what ``spark.punctuated.safety.mode``
    enforces with ``spark.punctuated.join.plan=written``, checked from Scala by
    ``SafetyVectorsSuite``."""
    from .model import build_query
    from .tree import leaves, operators
    from .verdict import plan_verdicts

    q = build_query(case["streams"], case["predicates"], case["schemes"])
    names = list(case["streams"])
    if len(names) < 3:
        return []

    def runnable(p) -> bool:
        return all(any((pr.left[0] in leaves(a) and pr.right[0] in leaves(b)) or
                       (pr.left[0] in leaves(b) and pr.right[0] in leaves(a)) for pr in q.predicates)
                   for a, b in operators(p))
    plans = [p for p in binary_plans(names) if runnable(p)]
    plans = random.Random(case["name"]).sample(plans, min(limit, len(plans)))

    def js(p):
        return p if isinstance(p, str) else [js(c) for c in p]
    return [{"plan": js(p), "purgeable": [list(o.purgeable) for o in plan_verdicts(q, p, "spark").operators]}
            for p in plans]


# `attr>=` ranges: punctuable like any pattern for the paper's verdict; a join passes a key
# punctuation on only when both its inputs close the same scheme, direction included
_CHAIN_K = {"A": ["k", "x"], "B": ["k", "y"], "C": ["k", "z"]}
_DL = {"A": ["d", "l", "x"], "B": ["d", "l", "y"], "C": ["d", "l", "z"]}
_DL_PREDS = ["A.d = B.d", "A.l = B.l", "B.d = C.d", "B.l = C.l"]
_STAR = {"A": ["d", "l"], "B": ["d", "y"], "C": ["l", "z"]}
AFTER_RANDOM = [
    ("at-least-and-constant-do-not-propagate", "A closes k>=, B closes k: a join of A and B passes "
     "neither on (different schemes), so C's rows wait under Spark's tree; safe as one MJoin",
     _CHAIN_K, ["A.k = B.k", "B.k = C.k"], {"A": [["k>="]], "B": [["k"]], "C": [["k"]]}, "Theorem 2", None),
    ("at-least-on-both-propagates", "A and B both close k>=: their join passes k>= on and purges C",
     _CHAIN_K, ["A.k = B.k", "B.k = C.k"], {"A": [["k>="]], "B": [["k>="]], "C": [["k"]]}, "Theorem 2", None),
] + [
    # schemes of two ranges (`d<=, l<=`): each range binds its attribute's class (§4.2), so a
    # punctuation of one covers a partner only through a scheme binding every class it needs
    ("two-range-cycle", "A, B, C join on (d, l), each closing 'd<=, l<=': safe as one MJoin",
     _DL, _DL_PREDS, {s: [["d<=", "l<="]] for s in _DL}, "Theorem 4", None),
    ("two-range-one-undeclared", "C declares nothing: A's and B's rows wait for C's",
     _DL, _DL_PREDS, {"A": [["d<=", "l<="]], "B": [["d<=", "l<="]]}, "Theorem 4", None),
    ("two-range-with-constant", "'k, d<=, l<=' on every stream of a join on (k, d, l)",
     {s: ["k", "d", "l"] for s in "ABC"}, [f"{a}.{c} = {b}.{c}" for a, b in ("AB", "BC") for c in "kdl"],
     {s: [["k", "d<=", "l<="]] for s in "ABC"}, "Theorem 4", None),
    ("two-range-star", "A(d, l) closing 'd<=, l<=' bounds neither B's d nor C's l alone: B and C wait",
     _STAR, ["A.d = B.d", "A.l = C.l"], {"A": [["d<=", "l<="]], "B": [["d<="]], "C": [["l<="]]}, "Theorem 4", None),
    ("two-range-star-split", "the same star with A closing 'd<=' and 'l<=' apart: safe",
     _STAR, ["A.d = B.d", "A.l = C.l"], {"A": [["d<="], ["l<="]], "B": [["d<="]], "C": [["l<="]]}, "Theorem 2", None),
]


def build_vectors(random_cases: int = 40) -> dict:
    """The content of ``testdata/safety_vectors.json``; every expectation comes
    from this oracle (theorem names and suggestions of hand-made cases are set
    by hand)."""
    rng = random.Random(2006)
    cases = []
    for name, desc, st, pr, sc, theorem, sugg in HANDCRAFTED:
        c = _case(name, desc, st, pr, sc, rng, n_plans=6)
        c["expected"]["theorem"] = theorem
        if sugg is not None:
            c["expected"]["suggestions"] = sugg
        cases.append(c)
    for k in range(random_cases):
        n = 2 + k % 4
        st, pr, sc = random_query(rng, n, per_stream=(1, 2, 2, 3, 3), p_multi=0.4)
        cases.append(_case(f"random-{k:02d}", f"random query, {n} streams (seed 2006)", st, pr, sc, rng))
    # after the random cases, so that adding one leaves theirs as they were
    for name, desc, st, pr, sc, theorem, sugg in AFTER_RANDOM:
        c = _case(name, desc, st, pr, sc, rng, n_plans=6)
        c["expected"]["theorem"] = theorem
        cases.append(c)
    for c in cases:
        sp = spark_plans(c)
        if sp:
            c["spark_plans"] = sp
    return {"about": "Safety of continuous join queries (Li et al., VLDB 2006). Each case: a query "
                     "(streams -> attributes, predicates 'S.a = T.b', schemes stream -> list of attribute lists, "
                     "'attr<=' and 'attr>=' = range patterns) and expected: safe (Theorems 2/4), unpurgeable (sorted streams "
                     "that cannot reach all others), optionally theorem and suggestions (minimal sets of "
                     "[stream, [attributes]] to add, any order). plans: plan trees as nested lists (a list of "
                     ">= 2 children is a join: binary or MJoin), safe, and per operator (post-order) the "
                     "purgeability of each input in child order (Theorems 1/3; an intermediate input carries "
                     "the schemes of its purgeable inputs). spark_plans: binary plans Spark can run and per operator "
                     "(post-order) each input's purgeability when an intermediate input carries what our Spark join "
                     "passes on (key schemes both its inputs have): the start-time check's verdict under "
                     "spark.punctuated.join.plan=written. Under auto or mjoin the inner joins of a case of three "
                     "or more streams run as one multi-way join, judged as the query as one MJoin: its "
                     "unpurgeable inputs are expected.unpurgeable. "
                     "Generated by python -m punctuated.safety.bruteforce.",
            "version": 1, "cases": cases}


if __name__ == "__main__":  # python -m punctuated.safety.bruteforce testdata/safety_vectors.json
    import json
    import sys
    with open(sys.argv[1], "w") as f:
        json.dump(build_vectors(), f, indent=1, ensure_ascii=False)
        f.write("\n")
