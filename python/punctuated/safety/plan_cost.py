"""The cost of a multi-way join plan under statistics (Li et al. 2006, §5.2).

The same definition as the JVM's ``punctuated.join.multi.PlanCost`` (the shared vectors
``testdata/plan_choice_vectors.json`` hold both to it). Inputs are numbered ``0 .. n-1``
(the query's streams in order); a plan is a tree whose inner nodes join their children
(:mod:`punctuated.safety.tree`, with input numbers or names as leaves).

Statistics, per input ``i``: ``rate`` r_i (data rows arriving per micro-batch), ``stored``
S_i (rows in state); per input ``j`` and attribute class ``c`` of ``j``: ``fanout``
f_j(c) (average stored rows of ``j`` per probed value of ``c``). Defaults: r = S = 1000,
f = 1 (key-like joins).

Cost per micro-batch (lower is better), after the MJoin of Viglas et al. 2003 (an
arriving row probes the other inputs' states in turn) and the plan parameters of
Li et al. 2006, §5.2:

* a node set ``X`` of inputs (a leaf or the inputs an inner node covers) has
  ``delta(X) = sum_i r_i * F(i, X - {i})`` new rows per batch, ``size(X) = min_i S_i *
  F(i, X - {i})`` stored rows, and ``fanout(X, c) = min_j f_j(c) * F(j, X - {j})``
  over its inputs ``j`` having class ``c``, where ``F(i, R)`` multiplies the fan-outs
  along the greedy connected order from ``i`` through ``R`` (below);
* at each inner node N, the delta of each child C probes N's other children in the
  greedy connected order: next the child with the smallest fan-out on a class bound so
  far (ties: the child with the smaller first input); the work is
  ``delta(C) * (p1 + p1*p2 + ...)``, the partial results built;
* at a non-root N, one write per new combination (``delta(N)``) and memory:
  ``W * size(N)`` with ``W = 0.01`` per row per batch. A stored row costs far less per
  batch than a row built (it is written once and only read when probed), so a hundred
  batches of keeping a row weigh as much as building it once; leaf states are the same
  in every plan and are not counted.

Ties: fewer intermediate states, then the plan's text (children ordered by their
first input). A worked example, the chain ``a(k) ⋈ b(k, v) ⋈ c(v)`` (classes 0 = k,
1 = v) with default statistics: the MJoin costs 3 inputs x 1000 rows x (1 + 1) partials
= 6000; ``((a ⋈ b) ⋈ c)`` costs 2000 (a and b probe each other) + 2000 writes + 10
(memory of 1000 rows) at ``(a ⋈ b)`` and 2000 + 1000 at the root: 7010.

>>> st = Statistics.default([{0}, {0, 1}, {1}])
>>> plan_cost((0, 1, 2), st), plan_cost(((0, 1), 2), st)
(6000.0, 7010.0)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

#: Memory weight: the cost of keeping one intermediate row for one micro-batch.
MEMORY_WEIGHT = 0.01
#: Default rate and stored rows per input, and fan-out per class.
DEFAULT_RATE = 1000.0
DEFAULT_STORED = 1000.0
DEFAULT_FANOUT = 1.0


@dataclass(frozen=True)
class Statistics:
    """Statistics of a multi-way join's inputs (by number), the same JSON as the JVM's
    ``MultiJoinStatistics``; ``fanout[j]`` names every class of input ``j``.

    >>> Statistics.default([{0}, {0}]).to_dict()
    {'rate': [1000.0, 1000.0], 'stored': [1000.0, 1000.0], 'fanout': [{'0': 1.0}, {'0': 1.0}]}
    """

    rate: tuple[float, ...]
    stored: tuple[float, ...]
    fanout: tuple[Mapping[int, float], ...]

    @staticmethod
    def default(classes: Sequence[Iterable[int]]) -> "Statistics":
        """r = S = 1000 and f = 1 for inputs with the given classes."""
        n = len(classes)
        return Statistics((DEFAULT_RATE,) * n, (DEFAULT_STORED,) * n,
                          tuple({c: DEFAULT_FANOUT for c in sorted(cs)} for cs in classes))

    def classes(self, i: int) -> frozenset[int]:
        return frozenset(self.fanout[i])

    def fan(self, j: int, c: int) -> float:
        return self.fanout[j].get(c, DEFAULT_FANOUT)

    def to_dict(self) -> dict:
        return {"rate": [float(x) for x in self.rate], "stored": [float(x) for x in self.stored],
                "fanout": [{str(c): float(f) for c, f in sorted(m.items())} for m in self.fanout]}

    @staticmethod
    def from_dict(d: Mapping) -> "Statistics":
        return Statistics(tuple(float(x) for x in d["rate"]), tuple(float(x) for x in d["stored"]),
                          tuple({int(c): float(f) for c, f in m.items()} for m in d["fanout"]))


def statistics_of(q, spec: Mapping | None = None) -> Statistics:
    """Statistics of query ``q`` (its join classes, streams in order) from ``spec`` by
    names: ``{"rate": {stream: r}, "stored": {stream: S}, "fanout": {stream: {attr: f}}}``;
    what ``spec`` leaves out takes the defaults.

    >>> from punctuated.safety.model import build_query
    >>> q = build_query({"a": ["k"], "b": ["k"]}, ["a.k = b.k"], {})
    >>> statistics_of(q, {"rate": {"a": 5}, "fanout": {"b": {"k": 3}}}).to_dict()["fanout"]
    [{'0': 1.0}, {'0': 3.0}]
    """
    names = list(q.streams)
    classes = [sorted(q.touches[s]) for s in names]
    st = Statistics.default(classes)
    if not spec:
        return st
    rate = tuple(float(spec.get("rate", {}).get(s, r)) for s, r in zip(names, st.rate))
    stored = tuple(float(spec.get("stored", {}).get(s, x)) for s, x in zip(names, st.stored))
    fan = []
    for i, s in enumerate(names):
        m = dict(st.fanout[i])
        for a, f in spec.get("fanout", {}).get(s, {}).items():
            c = q.cls[(s, a)]
            if c not in m:
                raise ValueError(f"fanout of {s}.{a}: it is not a join attribute of {s}")
            m[c] = float(f)
        fan.append(m)
    return Statistics(rate, stored, tuple(fan))


class CostModel:
    """The cost functions over node sets (frozensets of input numbers), memoized."""

    def __init__(self, stats: Statistics):
        self.stats = stats
        self.n = len(stats.rate)
        self.cls = [stats.classes(i) for i in range(self.n)]
        self._memo: dict = {}

    def classes_of(self, xs: Iterable[int]) -> frozenset[int]:
        return frozenset().union(*(self.cls[i] for i in xs))

    def chain(self, i: int, rest: Iterable[int]) -> float:
        """F(i, R): the product of leaf fan-outs along the greedy connected order."""
        key = ("F", i, frozenset(rest))
        if key not in self._memo:
            bound, left, p = set(self.cls[i]), sorted(rest), 1.0
            while left:
                best = None
                for j in left:
                    common = self.cls[j] & bound
                    if common:
                        g = min(self.stats.fan(j, c) for c in common)
                        if best is None or g < best[0]:
                            best = (g, j)
                g, j = best if best is not None else (self.stats.stored[left[0]], left[0])  # a cross product
                p = p * g
                bound |= self.cls[j]
                left.remove(j)
            self._memo[key] = p
        return self._memo[key]

    def delta(self, xs: frozenset[int]) -> float:
        s = 0.0
        for i in sorted(xs):
            s = s + self.stats.rate[i] * self.chain(i, xs - {i})
        return s

    def size(self, xs: frozenset[int]) -> float:
        return min(self.stats.stored[i] * self.chain(i, xs - {i}) for i in sorted(xs))

    def fanout(self, xs: frozenset[int], c: int) -> float:
        return min(self.stats.fan(j, c) * self.chain(j, xs - {j}) for j in sorted(xs) if c in self.cls[j])

    def probe_order(self, children: Sequence[frozenset[int]], k: int) -> list[tuple[int, float]]:
        """The order (child index, fan-out) in which the delta of ``children[k]`` probes
        the others: greedy, connected, ties to the earlier child."""
        bound, left, out = set(self.classes_of(children[k])), [x for x in range(len(children)) if x != k], []
        while left:
            best = None
            for d in left:
                common = self.classes_of(children[d]) & bound
                if common:
                    g = min(self.fanout(children[d], c) for c in common)
                    if best is None or g < best[0]:
                        best = (g, d)
            g, d = best if best is not None else (self.size(children[left[0]]), left[0])
            out.append((d, g))
            bound |= self.classes_of(children[d])
            left.remove(d)
        return out

    def node_cost(self, children: Sequence[frozenset[int]], root: bool) -> float:
        """The cost of one inner node whose children cover ``children`` (in plan order)."""
        work = 0.0
        for k, ch in enumerate(children):
            acc, p = 0.0, 1.0
            for _, g in self.probe_order(children, k):
                p = p * g
                acc = acc + p
            work = work + self.delta(ch) * acc
        if root:
            return work
        xs = frozenset().union(*children)
        return work + self.delta(xs) + MEMORY_WEIGHT * self.size(xs)


def _inputs(p) -> frozenset[int]:
    return frozenset([p]) if isinstance(p, int) else frozenset().union(*(_inputs(c) for c in p))


def ordered(plan):
    """The plan with children ordered by their first input (the JVM's ``canonical``).

    >>> ordered((2, (1, 0)))
    ((0, 1), 2)
    """
    if isinstance(plan, int):
        return plan
    return tuple(sorted((ordered(c) for c in plan), key=lambda c: min(_inputs(c))))


def plan_cost(plan, stats: Statistics, model: CostModel | None = None) -> float:
    """The cost of a plan over input numbers (children in any order: it is ordered first)."""
    model = model or CostModel(stats)
    plan = ordered(plan)

    def go(p, root: bool) -> float:
        if isinstance(p, int):
            return 0.0
        s = 0.0
        for c in p:
            s = s + go(c, False)
        return model.node_cost([_inputs(c) for c in p], root) + s

    return go(plan, True)


def probe_orders(plan, stats: Statistics, model: CostModel | None = None) -> list[list[int]]:
    """For each input, the inputs its rows' partial results meet at its parent node, in
    probe order (each sibling's inputs, increasing): the JVM's ``PlanCost.probeOrders``.

    >>> probe_orders((0, 1, 2), Statistics.default([{0}, {0, 1}, {1}]))
    [[1, 2], [0, 2], [1, 0]]
    """
    model = model or CostModel(stats)
    out: dict[int, list[int]] = {}

    def visit(p) -> None:
        sets = [_inputs(c) for c in p]
        for k, c in enumerate(p):
            if isinstance(c, int):
                out[c] = [i for d, _ in model.probe_order(sets, k) for i in sorted(sets[d])]
            else:
                visit(c)

    visit(ordered(plan))
    return [out.get(i, []) for i in range(model.n)]
