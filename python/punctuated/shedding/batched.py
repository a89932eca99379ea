"""The join operator's shedding model replayed offline: steps grouped into micro-batches.

:func:`punctuated.shedding.online.replay` is the paper's model (Das, Gehrke and Riedewald
2005, §2.3 and §4.2): one decision per time step. The binary punctuated join of this
project sheds at the *end of each micro-batch* (``docs/joins.md``, "Load shedding"), after
the batch's punctuations purged what they close, with one budget for both inputs. When the
paper's sliding window runs as a time-band join (``r.k = s.k AND s.step BETWEEN r.step -
(w-1) AND r.step + (w-1)``, each input punctuating ``step <= c`` with ``c`` the last step of
the batch), a micro-batch of ``B`` steps does, in this order:

1. joins its arrivals with the held tuples of the other stream and with each other, every
   pair of equal values at most ``w - 1`` steps apart (the band);
2. forgets the held tuples, and the arrivals, whose window ended by the batch's last step
   ``c`` (arrived at ``i`` with ``i + w - 1 <= c``: the other input's ``step <= c``);
3. while more than ``M`` tuples (both streams, one pool: the paper's *variable* allocation,
   §5.2.3) are held, sheds the lowest priority among all of them, the batch's own included;
   priorities use the estimators as of the start of the batch; ties shed tuples stored in
   earlier batches first, then the earlier arrival;
4. folds the batch's arrivals into the estimators.

With ``B = 1`` this is :func:`~punctuated.shedding.online.replay` with
``allocation="variable"`` (the tests check it). With ``B > 1`` a tuple may be held for up to
``B - 1`` steps past the budget inside a batch (the operator's documented behaviour), and
pairs within a batch are always produced: the batched output can exceed the per-step one.

``policy``: ``"prob"`` and ``"rand"`` as in ``online``; ``"life"`` is PROB x remaining
lifetime ``w - age`` (the paper's LIFE, §4.2.2), as the operator's ``life`` ranks a band
join's rows: time left in the band, ``t + (w - 1) - c + 1`` with ``c`` the batch's last step.

Example (Figure 3's streams, w = 3, M = 2, one step per batch)::

    >>> from punctuated.shedding.workloads import FIGURE3
    >>> from punctuated.shedding.online import replay
    >>> t = FIGURE3.trace()
    >>> batched_replay(t, 3, 2, "prob", steps_per_batch=1).output == replay(t, 3, 2, "prob", "variable").output
    True
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from punctuated.shedding.online import POLICIES, FrequencyEstimator
from punctuated.shedding.trace import STREAMS, Arrival, Trace, other


@dataclass
class BatchedResult:
    """``output``: result pairs counted (later arrival at a time ``>= warmup``); ``shed``:
    tuples dropped before their window ended; ``pairs``: the result pairs as ``(r seq, s
    seq)`` when recorded; ``max_held``: most tuples held after any batch."""

    output: int
    shed: int
    max_held: int
    pairs: list[tuple[int, int]]


def batched_replay(trace: Trace, window: int, memory: int, policy: str, steps_per_batch: int = 1,
                   warmup: int = 0, seed: int = 0, h: int = 100_000, k: int = 10_000,
                   record_pairs: bool = False) -> BatchedResult:
    """Replay ``trace`` as the operator runs it in micro-batches of ``steps_per_batch`` steps
    (see the module documentation); ``h``/``k`` configure the estimators as the settings
    ``spark.punctuated.shedding.historyRows``/``historyValues`` do."""
    if policy not in POLICIES:
        raise ValueError(f"shedding policy must be one of {POLICIES}, got {policy!r}")
    if window < 1 or steps_per_batch < 1 or memory < 0:
        raise ValueError(f"need window >= 1, steps_per_batch >= 1, memory >= 0; got {window}, "
                         f"{steps_per_batch}, {memory}")
    est = {x: FrequencyEstimator(h, k) for x in STREAMS}
    rng = random.Random(seed)
    held: list[Arrival] = []          # both streams, one pool
    stored_batch: dict[int, int] = {}  # seq -> batch it was stored in
    by_value = {x: {} for x in STREAMS}  # stream -> value -> held tuples
    out = shed = max_held = 0
    pairs: list[tuple[int, int]] = []
    steps = trace.steps()
    for b, first in enumerate(range(0, len(steps), steps_per_batch)):
        batch = [a for st in steps[first:first + steps_per_batch] for a in st]
        last = min(first + steps_per_batch, len(steps)) - 1
        # 1. join: arrivals x held of the other stream, arrivals x each other (within the band)
        found = []
        for a in batch:
            for o in by_value[other(a.stream)].get(a.value, ()):
                if abs(a.time - o.time) <= window - 1:
                    found.append((a, o))
        news = {x: [a for a in batch if a.stream == x] for x in STREAMS}
        for r in news["R"]:
            for s in news["S"]:
                if r.value == s.value and abs(r.time - s.time) <= window - 1:
                    found.append((r, s))
        for a, o in found:
            r, s = (a, o) if a.stream == "R" else (o, a)
            if max(r.time, s.time) >= warmup:
                out += 1
                if record_pairs:
                    pairs.append((r.seq, s.seq))
        # 2. forget what the batch's punctuations close; 3. store and shed
        cands = [a for a in held + batch if a.time + window - 1 > last]
        for a in batch:
            stored_batch[a.seq] = b
        if len(cands) > memory:
            over = len(cands) - memory
            if policy == "rand":
                for _ in range(over):
                    cands.pop(rng.randrange(len(cands)))
            else:
                def key(a: Arrival):
                    y = other(a.stream)
                    p = est[y].count(a.value) * max(est[a.stream].total, 1)
                    if policy == "life":
                        p *= window - (last - a.time)
                    return (p, stored_batch[a.seq] == b, a.seq)   # lowest first is shed
                cands = sorted(sorted(cands, key=key)[over:], key=lambda a: a.seq)
            shed += over
        held = cands
        max_held = max(max_held, len(held))
        by_value = {x: {} for x in STREAMS}
        for a in held:
            by_value[a.stream].setdefault(a.value, []).append(a)
        # 4. the estimators see the batch
        for x in STREAMS:
            est[x].update([a.value for a in news[x]])
    return BatchedResult(out, shed, max_held, pairs)


def exact_pairs(trace: Trace, window: int, warmup: int = 0) -> set[tuple[int, int]]:
    """Every result pair ``(r seq, s seq)`` of the exact sliding-window join (equal values,
    at most ``w - 1`` steps apart) whose later arrival is at a time ``>= warmup``."""
    by = {x: {} for x in STREAMS}
    for a in trace:
        by[a.stream].setdefault(a.value, []).append(a)
    out = set()
    for r in trace:
        if r.stream != "R":
            continue
        for s in by["S"].get(r.value, ()):
            if abs(r.time - s.time) <= window - 1 and max(r.time, s.time) >= warmup:
                out.add((r.seq, s.seq))
    return out

