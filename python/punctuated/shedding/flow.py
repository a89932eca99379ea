"""OPT-offline: the most output any shedding schedule can produce, as min-cost flow (§4.1).

Das, Gehrke and Riedewald (2005, §4.1.1) model memory slots as units of flow: a unit
on arc "tuple x in memory at time j -> at time j+1" is a held tuple, costing -1 when
the other stream's arrival at j+1 joins it; a slot moves to a newly arriving tuple
on a "replacement" arc. Min-cost flow with integral capacities has an integral optimum
(their Theorem 4), i.e. a schedule. This module builds an equivalent, smaller network
(same cuts, same optimum; the brute force in the tests checks it):

* a *pool* chain ``P(0) -> P(1) -> ... -> P(N-1)`` per memory pool (R and S with
  ``fixed`` allocation, ``ceil(M/2)`` and ``floor(M/2)`` units; one pool of ``M`` with
  ``variable``, which is the paper's "cross-arcs"); flow on ``P(t) -> P(t+1)`` is a free
  slot after time ``t``; the pool's supply enters at ``P(0)`` and leaves at ``P(N-1)``;
* per tuple ``x`` arriving at ``i``, nodes only at ``i`` and at the times ``j`` in its
  window ``i < j <= i + w - 1`` when the other stream sends its value (and ``j >= warmup``):
  ``P(i) -> x@i`` stores it (so the network is acyclic), ``x@e_k -> x@e_(k+1)`` holds it to its next partner
  (cost ``-`` the partners arriving then), ``x@e -> P(e)`` frees its slot after time
  ``e`` (replacement by a tuple arriving at ``e``, or later). Keeping a tuple past its
  last partner, or dropping it between partners, never helps, so the other time
  nodes of the paper's chain are left out; tuples without partners get no nodes.

The same-time pairs (the paper's top path) are always produced and added as a constant.
Every arc crossing the cut between times ``t`` and ``t+1`` is a held tuple or a free slot
of one pool, so at most the pool's size is held after every step.

Example (Figure 3)::

    >>> from punctuated.shedding.workloads import FIGURE3
    >>> opt_offline(FIGURE3.trace(), 3, 2).output
    5
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import networkx as nx

from punctuated.shedding.online import _same_time_pairs, capacities
from punctuated.shedding.trace import Trace, other


@dataclass
class OptResult:
    """``output``: the optimal number of result tuples (at times >= warmup);
    ``last_held``: for each stored tuple (by trace position ``seq``), the last time it
    is held (it joins the arrivals up to then and is dropped after); tuples not in it
    are never stored."""

    output: int
    last_held: dict[int, int]

    def held_after(self, trace: Trace, t: int) -> list[int]:
        """Trace positions of the tuples held after time ``t`` in this schedule."""
        return sorted(s for s, last in self.last_held.items() if trace.arrivals[s].time <= t < last)


def _partners(trace: Trace, window: int, warmup: int) -> dict[int, list[tuple[int, int]]]:
    """For each tuple: the later times in its window when the other stream sends its
    value (counted times only), with the number of such arrivals."""
    by_time_value: dict[tuple[str, int, int], int] = defaultdict(int)
    for a in trace:
        by_time_value[(a.stream, a.time, a.value)] += 1
    n = trace.num_steps
    out = {}
    for a in trace:
        y = other(a.stream)
        ev = []
        for j in range(max(a.time + 1, warmup), min(a.time + window - 1, n - 1) + 1):
            c = by_time_value.get((y, j, a.value), 0)
            if c:
                ev.append((j, c))
        if ev:
            out[a.seq] = ev
    return out


def build_network(trace: Trace, window: int, memory: int, allocation: str = "fixed", warmup: int = 0,
                  pool: str | None = None) -> nx.DiGraph:
    """The flow network above (node demands, arc ``capacity`` and integral ``weight``);
    with ``pool`` (``"R"`` or ``"S"``, fixed allocation) only that pool's part."""
    caps = capacities(memory, allocation)
    if pool is not None:
        caps = {pool: caps[pool]}
    pool_of = (lambda x: x) if allocation == "fixed" else (lambda x: "RS")
    n = trace.num_steps
    g = nx.DiGraph()
    for p, cap in caps.items():
        for t in range(n):
            g.add_node(("P", p, t), demand=0)
        for t in range(n - 1):
            g.add_edge(("P", p, t), ("P", p, t + 1), capacity=cap, weight=0)
        if n > 1 and cap:
            g.nodes[("P", p, 0)]["demand"] = -cap
            g.nodes[("P", p, n - 1)]["demand"] = cap
    for seq, ev in _partners(trace, window, warmup).items():
        a = trace.arrivals[seq]
        p = pool_of(a.stream)
        if p not in caps:
            continue
        prev = ("x", seq, a.time)
        g.add_edge(("P", p, a.time), prev, capacity=1, weight=0)
        for j, c in ev:
            node = ("x", seq, j)
            g.add_edge(prev, node, capacity=1, weight=-c)
            g.add_edge(node, ("P", p, j), capacity=1, weight=0)
            prev = node
    return g


def opt_offline(trace: Trace, window: int, memory: int, allocation: str = "fixed", warmup: int = 0) -> OptResult:
    """OPT-offline (fixed or variable allocation): solved with ``networkx.network_simplex``."""
    same = sum(_same_time_pairs(b) for t, b in enumerate(trace.steps()) if t >= warmup)
    if trace.num_steps <= 1 or memory == 0:
        return OptResult(same, {})
    # With fixed allocation the pools never compete (an R tuple's output depends only on
    # S's arrivals), so each is solved alone: two smaller networks, the same optimum.
    pools = list(capacities(memory, allocation)) if allocation == "fixed" else [None]
    total, last = 0, {}
    for p in pools:
        cost, flow = nx.network_simplex(build_network(trace, window, memory, allocation, warmup, p))
        total += cost
        for u, targets in flow.items():
            if u[0] != "x":
                continue
            for v, f in targets.items():
                if f and v[0] == "x":
                    last[u[1]] = max(last.get(u[1], u[2]), v[2])
    return OptResult(same - total, last)


def schedule_output(trace: Trace, window: int, last_held: dict[int, int], warmup: int = 0) -> int:
    """Output of a schedule (``last_held`` as in :class:`OptResult`), counted directly."""
    steps = trace.steps()
    out = sum(_same_time_pairs(b) for t, b in enumerate(steps) if t >= warmup)
    for seq, last in last_held.items():
        a = trace.arrivals[seq]
        for j in range(max(a.time + 1, warmup), min(last, a.time + window - 1) + 1):
            out += sum(1 for b in steps[j] if b.stream == other(a.stream) and b.value == a.value)
    return out


def brute_force(trace: Trace, window: int, memory: int, allocation: str = "fixed", warmup: int = 0) -> int:
    """The optimum by enumerating every schedule (each tuple's last held time, its arrival
    time meaning "not stored") under the memory bound after every step. Tiny traces only."""
    caps = capacities(memory, allocation)
    pool_of = (lambda x: x) if allocation == "fixed" else (lambda x: "RS")
    n = trace.num_steps
    tuples = list(trace)
    best = 0
    occ = {p: [0] * n for p in caps}
    chosen: dict[int, int] = {}

    def rec2(i: int) -> None:
        nonlocal best
        if i == len(tuples):
            best = max(best, schedule_output(trace, window, chosen, warmup))
            return
        a = tuples[i]
        o = occ[pool_of(a.stream)]
        cap = caps[pool_of(a.stream)]
        rec2(i + 1)
        t = a.time
        top = min(a.time + window - 1, n - 1)
        while t < top and o[t] < cap:
            o[t] += 1  # now held after time t, so its last held time is t + 1
            chosen[a.seq] = t + 1
            rec2(i + 1)
            t += 1
        for u in range(a.time, t):
            o[u] -= 1
        chosen.pop(a.seq, None)

    rec2(0)
    return best
