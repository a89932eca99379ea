"""Tasks' time per stage kind, from Spark's event log, for one streaming query of a run.

Wall-clock throughput on a 2-core machine moves with the JIT's and the garbage collector's
threads, which compete with the tasks for the cores; the tasks' own CPU and run time, summed
per kind of stage, move less and say where an engine's time goes (``benchmarks/nexmark.py
--task-metrics``). A child enables the event log (uncompressed, into its temporary directory:
``conf(path)``), runs its query, stops its session — which flushes the log — and reads it with
``summarize(path, query_id)``: the task-end events of the jobs the query ran (Spark tags each
with the local property ``sql.streaming.queryId``), in milliseconds, per stage kind:

* ``scan``: a stage reading a source (its RDDs include a ``DataSourceRDD``);
* ``stateful``: a stage with a state store (``StateStoreRDD``, ``ReadStateStoreRDD``, a
  stream-stream join's ``StateStoreAwareZipPartitionsRDD``, or one of the extension's own,
  the multi-way join's ``StateStoreAwareZipRDD`` among them);
* ``other``: the rest (e.g. a sink's stage reading a shuffle).

    >>> kind_of(["DataSourceRDD", "MapPartitionsRDD"]), kind_of(["StateStoreRDD"]), kind_of(["ShuffledRowRDD"])
    ('scan', 'stateful', 'other')
    >>> kind_of(["MapPartitionsRDD", "StateStoreAwareZipPartitionsRDD", "ShuffledRowRDD"])
    'stateful'
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

QUERY_ID = "sql.streaming.queryId"
FIELDS = {"cpu_ms": "Executor CPU Time", "run_ms": "Executor Run Time",
          "deserialize_ms": "Executor Deserialize Time", "gc_ms": "JVM GC Time"}


def conf(path: Path) -> dict[str, str]:
    """The session settings that write an uncompressed event log under ``path``."""
    path.mkdir(parents=True, exist_ok=True)
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(path),
            "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"}


def kind_of(rdd_names) -> str:
    """A stage's kind by the classes of its RDDs (see the module doc)."""
    names = " ".join(rdd_names)
    if "DataSourceRDD" in names:
        return "scan"
    # a join's stores are opened by the RDD that zips its inputs' partitions
    if any(n in names for n in ("StateStoreRDD", "DamagedStateRDD", "StateStoreAwareZip")):
        return "stateful"
    return "other"


def events(path: Path):
    """The events of every log file under ``path``, in order."""
    for f in sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(("appstatus", "."))):
        with open(f) as lines:
            for line in lines:
                if line.strip():
                    yield json.loads(line)


def summarize(path: Path, query_id: str) -> dict:
    """``{kind: {"tasks": n, "cpu_ms": ..., "run_ms": ..., "deserialize_ms": ..., "gc_ms": ...}}``
    over the tasks of the jobs of streaming query ``query_id``, plus ``"all"`` (every kind)."""
    stage_kind, query_stages = {}, set()
    totals = defaultdict(lambda: dict.fromkeys(["tasks", *FIELDS], 0))
    for e in events(path):
        kind = e.get("Event")
        if kind == "SparkListenerJobStart":
            if (e.get("Properties") or {}).get(QUERY_ID) == query_id:
                query_stages.update(e.get("Stage IDs", []))
        elif kind == "SparkListenerStageSubmitted":
            info = e["Stage Info"]
            stage_kind[info["Stage ID"]] = kind_of(r["Name"] for r in info["RDD Info"])
        elif kind == "SparkListenerTaskEnd" and e["Stage ID"] in query_stages:
            metrics = e.get("Task Metrics") or {}
            for k in (stage_kind.get(e["Stage ID"], "other"), "all"):
                t = totals[k]
                t["tasks"] += 1
                for name, field in FIELDS.items():
                    t[name] += metrics.get(field, 0)
    for t in totals.values():
        t["cpu_ms"] //= 1_000_000  # Spark reports CPU time in ns, the others in ms
    return {k: dict(v) for k, v in totals.items()}
