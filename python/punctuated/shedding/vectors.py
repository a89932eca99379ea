"""Builds ``testdata/shedding_estimator_vectors.json``: the shared test vectors of the
shedding estimator and of PROB/LIFE replays, run by the Python tests and the JVM join's
tests alike. Regenerate with ``python -m punctuated.shedding.vectors testdata/shedding_estimator_vectors.json``.
"""

from __future__ import annotations

import json
import random
import sys

from punctuated.shedding.online import FrequencyEstimator, replay
from punctuated.shedding.trace import Trace
from punctuated.shedding.workloads import FIGURE3

DOC = (
    "Shared vectors of the load-shedding frequency estimator and of PROB/LIFE victim choice "
    "(Das, Gehrke, Riedewald 2005, sec. 4.2; docs/shedding.md). "
    "'estimator': each case has H, K and batches (lists of int join values of one stream); "
    "'after' is the estimator's map after each batch as [value, count] pairs sorted by value. "
    "Update once per batch: add the batch's per-value counts; add the batch size to the "
    "arrivals since the last halving and, if that reaches H, halve every count (floor), drop "
    "zeros, reset the counter; then, if more than K values are kept, keep the K largest "
    "counts (ties: the smaller value). "
    "'replay': a trace of arrivals [time, stream 'R'|'S', value] through a sliding-window "
    "equi-join of 'window' time steps holding at most 'memory' tuples ('fixed': R holds "
    "ceil(memory/2), S floor(memory/2); 'variable': one pool). Per time step t (one batch): "
    "arrivals join the other stream's held tuples and each other ('output' counts result "
    "tuples at t >= warmup); held tuples with time + window - 1 <= t are forgotten; arrivals "
    "with time + window - 1 > t are stored, and while a pool is over its bound the victim is the "
    "lowest-priority tuple of that pool, the arriving ones included (ties: the earlier "
    "arrival, i.e. the smaller trace position, goes). Priority of a tuple of X with value v: "
    "prob = count_Y(v) / max(total_Y, 1), Y the other stream, from Y's estimator as of the "
    "start of the batch (total = sum of the map's counts); life = prob * (window - (t - time)). "
    "Both estimators are updated after the step with that step's arrivals. 'shed' = tuples "
    "dropped by the bound (not by expiry); 'held' = the held tuples after each step as "
    "sorted [stream, time, value]."
)


def _estimator_cases() -> list[dict]:
    specs = [
        ("accumulate", 100_000, 10_000, [[1, 2, 2], [3], [], [2, 2, 5]]),
        ("halving", 4, 10, [[1, 1, 2], [3, 3], [1], [1, 1, 1, 1, 1], [4]]),
        ("truncation ties keep smaller values", 1000, 2, [[5, 4, 3], [3, 4], [9, 9, 9]]),
        ("halving then truncation", 3, 2, [[7, 7, 7, 1, 2], [2, 2, 8, 8], [0, -1, -1]]),
        ("halving drops zeros", 2, 5, [[1, 2], [1, 1], [3, 3, 3, 3]]),
    ]
    out = []
    for name, h, k, batches in specs:
        e = FrequencyEstimator(h, k)
        after = []
        for b in batches:
            e.update(b)
            after.append([[v, n] for v, n in sorted(e.counts.items())])
        out.append({"name": name, "H": h, "K": k, "batches": batches, "after": after})
    return out


def _replay_cases() -> list[dict]:
    traces = [("figure 3", [list(a) for a in ((a.time, a.stream, a.value) for a in FIGURE3.trace())], 3, 2)]
    rng = random.Random(17)
    for i in range(6):
        rows = []
        for t in range(8):
            for _ in range(rng.randint(0, 3)):
                rows.append([t, rng.choice("RS"), rng.randint(1, 3)])
        traces.append((f"random batches {i}", rows, rng.randint(2, 4), rng.randint(1, 4)))
    out = []
    for name, rows, window, memory in traces:
        for policy in ("prob", "life"):
            for allocation in ("fixed", "variable"):
                for h, k in ((100_000, 10_000), (3, 2)):
                    res = replay(Trace([tuple(r) for r in rows]), window, memory, policy, allocation,
                                 warmup=1, h=h, k=k, record=True)
                    out.append({
                        "name": f"{name}, {policy}, {allocation}, H={h}, K={k}",
                        "arrivals": rows, "window": window, "memory": memory,
                        "allocation": allocation, "policy": policy, "H": h, "K": k, "warmup": 1,
                        "output": res.output, "shed": res.shed,
                        "held": [[list(x) for x in step] for step in res.held_after_step],
                    })
    return out


def build() -> dict:
    """The vectors document (deterministic)."""
    return {"doc": DOC, "estimator": _estimator_cases(), "replay": _replay_cases()}


def main(argv: list[str] | None = None) -> None:
    path = (argv or sys.argv[1:] or ["testdata/shedding_estimator_vectors.json"])[0]
    doc = build()
    with open(path, "w", encoding="utf-8") as f:  # one case per line, readable diffs
        f.write("{\"doc\": " + json.dumps(doc["doc"]) + ",\n")
        for part in ("estimator", "replay"):
            f.write(f' "{part}": [\n')
            f.write(",\n".join("  " + json.dumps(c) for c in doc[part]))
            f.write("\n ]" + ("," if part == "estimator" else "") + "\n")
        f.write("}\n")


if __name__ == "__main__":
    main()
