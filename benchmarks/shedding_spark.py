"""Runs the paper's sliding-window join as the punctuated join inside Spark, with shedding.

One trace (:class:`punctuated.shedding.trace.Trace`, R and S arrivals with a time step and
an int join value) becomes JSON files, one per input per micro-batch of ``B`` steps. Every
row carries its trace position ``id``, join value ``k`` and arrival ``step``; each file ends
with the range punctuation ``step <= c``, ``c`` the batch's last step (declared scheme
``step<=``). The query is the time-band join

    r.k = s.k AND s.step BETWEEN r.step - (w - 1) AND r.step + (w - 1)

so a stored row arrived at ``i`` is purged by the other input's ``step <= c`` once
``c >= i + w - 1``: exactly when its window of ``w`` steps (Das, Gehrke and Riedewald 2005,
§2.1: in the window at ``i .. i + w - 1``) ends. With ``spark.sql.shuffle.partitions = 1``
and ``spark.punctuated.shedding.maxStateRows = M`` the operator holds at most ``M`` rows of
both inputs after every batch: the paper's memory ``M`` with one pool (variable allocation).

Used by ``benchmarks/shedding.py`` and ``tests/test_shedding_bench.py``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

SCHEMA = "id LONG, k INT, step INT, p BOOLEAN"


def write_trace(trace, root: Path, steps_per_batch: int) -> int:
    """Writes ``root/R/<b>.json`` and ``root/S/<b>.json`` per micro-batch; returns the batch count."""
    steps = trace.steps()
    batches = 0
    base = int(time.time()) - len(steps) - 10  # modification times in batch order: the file
    # source orders files by it, and a batch read early would make its predecessors' rows late
    for name in ("R", "S"):
        (root / name).mkdir(parents=True, exist_ok=True)
    for b, first in enumerate(range(0, len(steps), steps_per_batch)):
        last = min(first + steps_per_batch, len(steps)) - 1
        rows = {"R": [], "S": []}
        for st in steps[first:last + 1]:
            for a in st:
                rows[a.stream].append({"id": a.seq, "k": a.value, "step": a.time, "p": False})
        for name in ("R", "S"):
            rows[name].append({"id": None, "k": None, "step": last, "p": True})
            path = root / name / f"{b:06d}.json"
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(json.dumps(r) for r in rows[name]) + "\n")
            os.utime(path, (base + b, base + b))
        batches += 1
    return batches


def run_join(spark, root: Path, window: int, memory: int | None, policy: str, checkpoint: Path,
             name: str = "shedding_out") -> dict:
    """Runs the band join over the files under ``root`` to their end (``Trigger.AvailableNow``,
    one file per input per micro-batch) with budget ``memory`` (``None``: no shedding) and
    ``policy`` (the session's settings are restored afterwards). Returns the result pairs
    ``(r id, s id, r step, s step)``, the most state rows after any batch, the rows shed and
    the wall time."""
    conf = {"spark.sql.shuffle.partitions": "1", "spark.punctuated.shedding.policy": policy,
            "spark.sql.streaming.numRecentProgressUpdates": "1000000",
            "spark.punctuated.shedding.maxStateRows": None if memory is None else str(memory)}
    saved = {k: spark.conf.get(k, None) for k in conf}
    try:
        _set(spark, conf)
        return _run(spark, root, window, checkpoint, name)
    finally:
        _set(spark, saved)   # the session's settings as they were


def _set(spark, conf: dict) -> None:
    for k, v in conf.items():
        if v is None:
            spark.conf.unset(k)
        else:
            spark.conf.set(k, v)


def _run(spark, root: Path, window: int, checkpoint: Path, name: str) -> dict:
    import punctuated

    def read(side):
        df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(root / side))
        return punctuated.with_schemes(df, schemes=["step<="], marker="p", name=side.lower())

    r, s = read("R"), read("S")
    cond = (r["k"] == s["k"]) & s["step"].between(r["step"] - (window - 1), r["step"] + (window - 1))
    out = r.join(s, cond).select(r["id"].alias("rid"), s["id"].alias("sid"), r["step"].alias("rs"),
                                 s["step"].alias("ss"))
    started = time.time()
    q = (out.writeStream.format("memory").queryName(name).outputMode("append")
         .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    q.awaitTermination()
    seconds = time.time() - started
    progress = [p for p in q.recentProgress if p.get("stateOperators")]
    max_rows = max((p["stateOperators"][0]["numRowsTotal"] for p in progress), default=0)
    shed = sum(p["stateOperators"][0].get("customMetrics", {}).get("numRowsShed", 0) for p in progress)
    pairs = [tuple(x) for x in spark.table(name).collect()]
    spark.catalog.dropTempView(name)
    return {"pairs": pairs, "max_state_rows": max_rows, "shed": shed, "batches": len(progress),
            "seconds": round(seconds, 1)}
