"""EXACT and the online policies PROB, LIFE, RAND replayed over a trace (Das et al. 2005, §4.2).

Model (§2.3, fast CPU): at each time step ``t`` (one batch) the arrivals of both streams
join the tuples of the other stream held in memory and each other; held tuples whose
window ends (arrived at ``i`` with ``i + w - 1 <= t``) are then forgotten; then each
arriving tuple is stored and, while memory is over its bound, a victim is shed: the
tuple of lowest priority among the held ones *and the arriving one*, ties shed the
earlier arrival. Memory ``M`` counts the tuples held across both windows:

* ``allocation="fixed"`` -- R holds at most ``ceil(M/2)``, S at most ``floor(M/2)``
  (the paper's ``M/2 + M/2``); an R tuple only displaces an R tuple;
* ``allocation="variable"`` -- one pool of ``M`` for both (§5.2.3, PROBV/RANDV).

Priorities, from :class:`FrequencyEstimator` (the estimator the JVM join uses too):

* PROB: a held tuple of R with value ``v`` has priority
  ``p_S(v) = count_S(v) / max(total_S, 1)``, S's estimate *as of the start of the batch*
  (``total`` = sum of the map's counts). Compared exactly (cross-multiplied integers,
  no floating point); with fixed allocation only the counts matter.
* LIFE: PROB x remaining lifetime ``w - age``, ``age = t - arrival time`` (§4.2.2).
* RAND: the victim is drawn uniformly among the held tuples of the pool (ordered by
  arrival) and the arriving one, from ``random.Random(seed)``.

The output (MAX-subset, §2.2) is the number of result tuples produced at times
``>= warmup``. Everything is deterministic.

Example (Figure 3's streams, w = 3, M = 2)::

    >>> from punctuated.shedding.workloads import FIGURE3
    >>> exact_output(FIGURE3.trace(), 3)
    7
    >>> replay(FIGURE3.trace(), 3, 2, "prob").output <= 5   # OPT is 5
    True
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from punctuated.shedding.trace import STREAMS, Arrival, Trace, other

POLICIES = ("prob", "life", "rand")
ALLOCATIONS = ("fixed", "variable")


class FrequencyEstimator:
    """Per-value arrival counts of one stream over recent history, in bounded memory.

    Updated once per batch with the batch's arrivals (:meth:`update`):

    1. add the batch's exact per-value counts;
    2. add the batch's size to the arrivals counted since the last halving; if that
       reaches ``H``, halve every count (integer floor), drop zeros, reset the counter;
    3. if more than ``K`` values are kept, keep the ``K`` largest counts (ties: the
       smaller value is kept).

    So a value's count is an exponentially decayed frequency with half-life ``H``
    arrivals, and at most ``K`` values (plus one batch) are held.

    >>> e = FrequencyEstimator(h=4, k=2)
    >>> e.update([1, 1, 2]); e.counts
    {1: 2, 2: 1}
    >>> e.update([3, 3]); e.counts   # 5 arrivals >= 4: halve -> {1: 1, 3: 1}; K = 2 keeps both
    {1: 1, 3: 1}
    """

    def __init__(self, h: int = 100_000, k: int = 10_000):
        if h < 1 or k < 1:
            raise ValueError(f"estimator H and K must be >= 1, got H={h}, K={k}")
        self.h, self.k = h, k
        self.counts: dict[int, int] = {}
        self.since_halving = 0
        self.total = 0

    def update(self, values: list[int]) -> None:
        """Fold one batch of arrivals (join values) into the counts."""
        for v, n in Counter(values).items():
            self.counts[v] = self.counts.get(v, 0) + n
        self.since_halving += len(values)
        if self.since_halving >= self.h:
            self.counts = {v: n // 2 for v, n in self.counts.items() if n // 2 > 0}
            self.since_halving = 0
        if len(self.counts) > self.k:
            kept = sorted(self.counts.items(), key=lambda vn: (-vn[1], vn[0]))[: self.k]
            self.counts = dict(kept)
        self.counts = dict(sorted(self.counts.items()))
        self.total = sum(self.counts.values())

    def count(self, value: int) -> int:
        return self.counts.get(value, 0)


def exact_output(trace: Trace, window: int, warmup: int = 0) -> int:
    """EXACT: the sliding-window join's output size with unbounded memory: pairs of an
    R and an S tuple with equal values arriving less than ``window`` steps apart, counted
    when the later one arrives at a time ``>= warmup``."""
    live = {x: Counter() for x in STREAMS}  # value -> count of tuples in the window
    steps = trace.steps()
    out = 0
    for t, batch in enumerate(steps):
        if t - window >= 0:
            for a in steps[t - window]:
                live[a.stream][a.value] -= 1
        n = 0
        for a in batch:
            n += live[other(a.stream)][a.value]
        n += _same_time_pairs(batch)
        if t >= warmup:
            out += n
        for a in batch:
            live[a.stream][a.value] += 1
    return out


def _same_time_pairs(batch: list[Arrival]) -> int:
    r = Counter(a.value for a in batch if a.stream == "R")
    s = Counter(a.value for a in batch if a.stream == "S")
    return sum(n * s[v] for v, n in r.items())


@dataclass
class ReplayResult:
    """Output of :func:`replay`: ``output`` result tuples (at times >= warmup), ``shed``
    tuples dropped before their window ended, and, if recorded, the held tuples after
    each step as sorted ``(stream, time, value)`` lists."""

    output: int
    shed: int
    held_after_step: list[list[tuple[str, int, int]]] = field(default_factory=list)


def capacities(memory: int, allocation: str) -> dict[str, int]:
    """Pool sizes: ``{"R": ceil(M/2), "S": floor(M/2)}`` (fixed) or ``{"RS": M}``."""
    if memory < 0:
        raise ValueError(f"memory must be >= 0, got {memory}")
    if allocation == "fixed":
        return {"R": memory - memory // 2, "S": memory // 2}
    if allocation == "variable":
        return {"RS": memory}
    raise ValueError(f"allocation must be one of {ALLOCATIONS}, got {allocation!r}")


def replay(
    trace: Trace,
    window: int,
    memory: int,
    policy: str,
    allocation: str = "fixed",
    warmup: int = 0,
    seed: int = 0,
    h: int = 100_000,
    k: int = 10_000,
    record: bool = False,
    whole_trace: bool = False,
) -> ReplayResult:
    """Replay ``trace`` through a join of window ``window`` holding at most ``memory``
    tuples, shedding with ``policy`` (``"prob"``, ``"life"``, ``"rand"``); see the module
    documentation for the exact rules. ``h``/``k`` configure :class:`FrequencyEstimator`;
    ``whole_trace=True`` instead fixes every count to the whole trace's (the paper's
    experiments, §5.2: "set according to the actual distribution over the whole input")."""
    if policy not in POLICIES:
        raise ValueError(f"shedding policy must be one of {POLICIES}, got {policy!r}")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    caps = capacities(memory, allocation)
    pool_of = (lambda x: x) if allocation == "fixed" else (lambda x: "RS")
    est = {x: FrequencyEstimator(h, k) for x in STREAMS}
    if whole_trace:
        for x in STREAMS:
            est[x].counts = dict(Counter(trace.values(x)))
            est[x].total = sum(est[x].counts.values())
    held: dict[str, list[Arrival]] = {p: [] for p in caps}
    held_values = {x: Counter() for x in STREAMS}
    rng = random.Random(seed)
    out = shed = 0
    history: list[list[tuple[str, int, int]]] = []
    for t, batch in enumerate(trace.steps()):
        # 1. join the arrivals with the other stream's held tuples and with each other
        n = sum(held_values[other(a.stream)][a.value] for a in batch) + _same_time_pairs(batch)
        if t >= warmup:
            out += n
        # 2. forget tuples whose window ends
        for p in held:
            keep = [a for a in held[p] if a.time + window - 1 > t]
            for a in held[p]:
                if a.time + window - 1 <= t:
                    held_values[a.stream][a.value] -= 1
            held[p] = keep
        # 3. store the arrivals, shedding the lowest priority while over the bound
        for p, cap in caps.items():
            arriving = [a for a in batch if pool_of(a.stream) == p and a.time + window - 1 > t]
            cands = held[p] + arriving
            if len(cands) <= cap:
                held[p] = cands
            elif policy == "rand":
                cur = held[p]
                for a in arriving:
                    cur.append(a)
                    if len(cur) > cap:
                        cur.pop(rng.randrange(len(cur)))
                        shed += 1
                held[p] = cur
            else:
                key = _priority_key(policy, est, window, t)
                ranked = sorted(cands, key=key, reverse=True)
                held[p] = sorted(ranked[:cap], key=lambda a: a.seq)
                shed += len(cands) - cap
        held_values = {x: Counter() for x in STREAMS}
        for p in held:
            for a in held[p]:
                held_values[a.stream][a.value] += 1
        # 4. the estimators see the batch (used from the next batch on)
        for x in STREAMS if not whole_trace else ():
            est[x].update([a.value for a in batch if a.stream == x])
        if record:
            history.append(sorted((a.stream, a.time, a.value) for p in held for a in held[p]))
    return ReplayResult(out, shed, history)


def _priority_key(policy: str, est: dict[str, FrequencyEstimator], window: int, t: int):
    """Sort key, larger = kept: (priority as an exact integer, seq). A tuple of X with value
    v has priority count_Y(v)/max(total_Y, 1) (Y the other stream); multiplied by
    max(total_R, 1) * max(total_S, 1) it is the integer count_Y(v) * max(total_X, 1),
    which orders R and S tuples exactly."""

    def key(a: Arrival) -> tuple[int, int]:
        y = other(a.stream)
        p = est[y].count(a.value) * max(est[a.stream].total, 1)
        if policy == "life":
            p *= window - (t - a.time)
        return (p, a.seq)

    return key
