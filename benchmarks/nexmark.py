"""NEXMark benchmark: one query, the same generated events, each engine in its own process.

Engines (over the `nexmark` source's deterministic events; each (engine, repetition) in a
fresh process with the same JVM options, the engines interleaved, ``--reps`` times: see
``benchmarks/harness.py``):

* ``native``: Spark's own plan (no declarations, no watermarks): ``sql/nexmark/<q>.sql``.
* ``watermark``: Spark's plan with the best watermark + time-range rewrite Spark allows
  (``sql/nexmark/<q>_watermark.sql``, dateTime watermarks with no delay, the constant bounds
  the generator implies); its results are compared with the batch answer like any other.
* ``punctuated``: our plan: the same SQL as ``native`` over streams that carry and declare
  punctuations (bids close auctions; for q3 the auction stream's ``seller<=`` punctuations;
  for the windowed q5 and q7 and the band join q8 the streams' ``dateTime<=`` punctuations,
  option ``timePunctuations``: windows close and bands purge with no watermark).
  Aggregations after the join (q9, q4_inner) run in append mode without a watermark, each
  auction's row emitted once its id is closed; Spark's own plan runs them in update mode.
  q4's outer AVG per category is closed by no punctuation: it has no final rows in append
  mode, and Spark refuses it (the engine is recorded as not run, with Spark's message).
* ``watermark_same_input`` (optional, the queries with a watermark SQL): Spark's watermark plan
  (``<q>_watermark.sql``) over the punctuated engine's input — the same source options, the
  streams not declared (``declare=false``, so our rules leave them alone) and their punctuation
  rows filtered out where they are read (``NOT is_punct``), then the same watermark. Its results
  are compared like the others'. ``watermark_same_input / watermark`` is what reading a
  punctuated stream costs Spark's own plan (the generator's punctuations, the filter), so
  ``punctuated / watermark_same_input`` is what our operators cost over Spark's on the same rows:
  ``punctuated / watermark`` is the product of the two.
* ``watermark_again`` (optional, the queries with a watermark SQL): exactly the ``watermark``
  engine under another name, a calibration. ``watermark_again / watermark`` is what the
  procedure reports for two identical engines on this machine (an A/A comparison): the
  resolution of every other ratio of the same series.
* ``punctuated_alt`` (optional, with ``--alt-path DIR``): the ``punctuated`` engine run from
  another installed copy of the package, and so another jar (e.g. ``pip install --no-deps
  --target DIR <a checkout's wheel>``): ``DIR`` goes first on that engine's children's Python
  path. Interleaved with ``punctuated``, ``punctuated / punctuated_alt`` compares two versions
  of the extension pair by pair (``benchmarks.pooled_pairs``) where series an hour apart
  cannot (the machine's speed drifts more than the few per cent a change makes).
* ``floor`` (optional, q3 and q20): a reference, not an answer — the same streams through the
  same filters with no join (``sql/nexmark/<q>_floor.sql``): what every engine pays before it
  joins anything, so ``floor / native`` bounds what any join plan can gain over Spark's own.

Per micro-batch it records input rows, state rows (``numRowsTotal`` of the stateful
operators; held punctuations separately), batch time (and of it Spark's planning time and the
state stores' commit time, summed over tasks) and the live working set the
generator implies; it checks each engine's results (row count and an order-independent
checksum) against a batch computation of the same query over the same events (for q9 and
q4_inner: over the auctions closed before the stream ends, the only final rows). It writes
``<name>.json`` (one object per engine), ``<name>.csv`` (per batch), ``<name>.png`` (state
rows and throughput over the events) and ``<name>.md`` (medians with their spread, and the
median and spread of each per-repetition ratio), and ``<name>.runs.json`` (every run, with
the machine's load before and after it). The batch answer is computed once per run, in a
first child. Run::

    .venv/bin/python -m benchmarks.nexmark --query q20 --events 2000000 --reps 3 --out /tmp/nexmark
"""

from __future__ import annotations

import argparse
import ast
import bisect
import csv
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a script: benchmarks/nexmark.py
    sys.path.insert(0, str(ROOT))
from benchmarks import harness, nexmark_report, task_metrics  # noqa: E402

SQL = ROOT / "sql" / "nexmark"
RESULTS = Path(__file__).resolve().parent / "results"

ENGINES = ("native", "watermark", "punctuated")
# Run only when asked for (--engines), results compared: see the module doc.
SAME_INPUT = "watermark_same_input"
AGAIN = "watermark_again"
ALT = "punctuated_alt"
OPTIONAL_ENGINES = (SAME_INPUT, AGAIN, ALT)
# Reference engines: run only when asked for (--engines), results not compared.
REFERENCE_ENGINES = ("floor",)
QUERIES = {
    # query: tables it reads, whether it aggregates after the join
    "q3": (("auction", "person"), False),
    "q4": (("auction", "bid"), True),
    "q4_inner": (("auction", "bid"), True),
    "q9": (("auction", "bid"), True),
    "q20": (("auction", "bid"), False),
    "q5": (("bid",), True),
    "q7": (("bid",), True),
    "q8": (("person", "auction"), False),
}
# Queries on event time: the punctuated engine's streams also punctuate ``dateTime<=``
# (``timePunctuations``). In the windowed ones a window's row is final once the stream has
# passed its end.
TIME_QUERIES = ("q5", "q7", "q8")
WINDOWED = ("q5", "q7")
# Queries whose rows are per auction, final once the auction has closed: an append-mode
# engine can emit only the auctions closed (expired, so punctuated) before the stream ends,
# and its reference answer is the batch answer over those auctions (the batch answer over
# all auctions is recorded too).
PER_CLOSED_AUCTION = ("q4_inner", "q9")
# Published Flink 1.13 figures (nexmark/nexmark README, 8 cores): events/s per core.
FLINK_PER_CORE = {"q3": 152_000, "q4": 34_000, "q20": 19_000}
CHECKSUM_MOD = 1_000_000_007

# Generator constants (docs/nexmark.md; NexmarkConfig / EventSequence).
EVENTS_PER_EPOCH, NUM_ACTIVE_PEOPLE, PERSON_ID_LEAD, IN_FLIGHT_AUCTIONS = 50, 1000, 10, 100
FIRST_ID = 1000


def bounds(eps: int, events: int) -> dict:
    """The constant time bounds the generator implies, in ms, for the watermark rewrites."""
    in_flight_events = IN_FLIGHT_AUCTIONS * EVENTS_PER_EPOCH // 3
    ms = lambda n: -(-n * 1000 // eps)  # ceil: time of n events
    return {
        # longest auction: 1 + nextLong(2 * horizon), horizon <= time of in-flight events + 1 ms
        "max_auction_ms": 2 * (ms(in_flight_events) + 1),
        # a seller is one of the last 1000 people (created up to 1000 epochs earlier) ...
        "person_lag_ms": ms(NUM_ACTIVE_PEOPLE * EVENTS_PER_EPOCH) + 1,
        # ... or one of the next 10 not created yet
        "person_lead_ms": ms((PERSON_ID_LEAD + 1) * EVENTS_PER_EPOCH) + 1,
        "run_ms": ms(events) + 1000,
    }


def query_sql(query: str, engine: str, eps: int, events: int) -> str:
    sql_of = {"watermark": "watermark", SAME_INPUT: "watermark", AGAIN: "watermark", "floor": "floor"}
    name = f"{query}_{sql_of[engine]}.sql" if engine in sql_of else f"{query}.sql"
    if not (SQL / name).exists():
        raise ValueError(f"engine {engine} has no query for {query} (sql/nexmark/{name})")
    text = (SQL / name).read_text()
    body = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("--"))
    return body.format(**bounds(eps, events))


def base_time(args) -> int:
    """Event time of the first event (ms since the epoch): ``--base-time``, or 0 for the other
    benchmarks that read streams through this module with their own arguments."""
    return getattr(args, "base_time", 0)


def read_stream(spark, table: str, args, engine: str, extra: dict | None = None):
    """One ``nexmark`` stream with the run's options (``args``: events, batching, rate,
    partitions, seed); ``engine`` ``punctuated`` adds the punctuations, ``extra`` more options;
    ``watermark_same_input`` reads the punctuated engine's rows undeclared, its punctuation rows
    filtered out, under the watermark engine's watermark."""
    reader = spark.readStream.format("nexmark").option("table", table)
    options = {"totalEvents": args.events, "eventsPerBatch": args.events_per_batch,
               "eventsPerSecond": args.events_per_second, "numPartitions": args.partitions,
               "seed": args.seed, "baseTime": base_time(args)}
    if engine in ("punctuated", ALT, SAME_INPUT):
        options["punctuations"] = "true"
        if table == "auction" and args.query == "q3":
            options["sellerPunctuations"] = "true"
        if args.query in TIME_QUERIES:
            options["timePunctuations"] = "true"
        if getattr(args, "time_punctuations_only", False) and table == "bid":
            options["auctionPunctuations"] = "false"
    if engine == SAME_INPUT:
        options["declare"] = "false"
    options.update(extra or {})
    for k, v in options.items():
        reader = reader.option(k, str(v))
    df = reader.load()
    if engine == SAME_INPUT:
        df = df.where("NOT is_punct").drop("is_punct")
    if engine in ("watermark", SAME_INPUT, AGAIN):
        df = df.withWatermark("dateTime", "0 seconds")
    return df


def checksum(df):
    """(rows, order-independent checksum) of a DataFrame."""
    from pyspark.sql import functions as F

    h = F.pmod(F.xxhash64(*[F.col(f"`{c}`") for c in df.columns]), F.lit(CHECKSUM_MOD))
    row = df.agg(F.count(F.lit(1)).alias("n"), F.sum(h).alias("h")).collect()[0]
    return row["n"], (row["h"] or 0) % CHECKSUM_MOD


def materialize(spark, tables, args, tmp: Path) -> dict:
    """The events of each table, written once to parquet (the batch computation's input)."""
    frames = {}
    for t in tables:
        path = tmp / "events" / t
        q = (read_stream(spark, t, args, "native").writeStream.format("parquet")
             .option("path", str(path)).option("checkpointLocation", str(tmp / "ckpt-events" / t))
             .trigger(availableNow=True).start())
        q.awaitTermination()
        frames[t] = spark.read.parquet(str(path))
    return frames


def last_event_ms(args) -> int:
    """Event time (ms since the epoch) of the stream's last event."""
    return base_time(args) + (args.events - 1) * 1000 // args.events_per_second


def batch_answer(spark, frames, args):
    """(rows, checksum) of the batch query over all events, and over the closed auctions only.

    For the queries of PER_CLOSED_AUCTION the second is the reference of every engine: the
    bid stream closes auction ``a`` at the first event after ``a.expires``, so the auctions
    closed by the end are those expiring before the last event's time.
    """
    from pyspark.sql import functions as F

    sql = query_sql(args.query, "native", args.events_per_second, args.events)
    for t, df in frames.items():
        df.createOrReplaceTempView(t)
    everything = checksum(spark.sql(sql))
    if args.query in WINDOWED:
        # the windows the watermark (the last event's time) has passed at the end
        return everything, windows_ended_by(spark, sql, last_event_ms(args))
    if args.query not in PER_CLOSED_AUCTION:
        return everything, everything
    frames["auction"].where(F.col("expires") < F.timestamp_millis(F.lit(last_event_ms(args)))) \
        .createOrReplaceTempView("auction")
    closed = checksum(spark.sql(sql))
    frames["auction"].createOrReplaceTempView("auction")
    return everything, closed


def windows_ended_by(spark, sql: str, ms: int):
    """(rows, checksum) of a windowed query's rows whose window ends at or before ``ms``."""
    from pyspark.sql import functions as F

    return checksum(spark.sql(sql).where(F.col("ends") <= F.timestamp_millis(F.lit(ms))))


def engine_reference(reference: dict, engine: str) -> tuple:
    """An engine's expected (rows, checksum): for the windowed queries the punctuated engine's
    last ``dateTime<=`` punctuation (one microsecond before the time of the event after the
    last) also closes a window ending after the last event's time but at or before that
    (``punctuated_alt`` is the punctuated engine)."""
    engine = "punctuated" if engine == ALT else engine
    return tuple(reference.get("expected_by_engine", {}).get(engine, reference["expected"]))


def live_working_set(spark, frames, args):
    """Per event count E: the rows the generator implies a join must keep after E events."""
    from pyspark.sql import functions as F

    eps = args.events_per_second

    def ts_ms(n):  # event time of event n
        return base_time(args) + (n // eps) * 1000 + (n % eps) * 1000 // eps

    def auction_event(auction_id):
        b = auction_id - FIRST_ID
        return (b // 3) * EVENTS_PER_EPOCH + 1 + b % 3

    if args.query == "q20" or args.query in PER_CLOSED_AUCTION:
        # open auctions (created, not past their expiry: bids may still come) — of category
        # 10 for q20; of every category for the aggregating queries, where each holds a row
        # in the join and, once it has a bid, its group in the aggregation
        auctions = frames["auction"].where("category = 10") if args.query == "q20" else frames["auction"]
        rows = auctions.select("id", F.floor(F.unix_micros("expires") / 1000).cast("long").alias("expires")).collect()
        created = sorted(auction_event(r["id"]) for r in rows)
        expiries = sorted(r["expires"] for r in rows)

        def live(e):
            return bisect.bisect_left(created, e) - bisect.bisect_left(expiries, ts_ms(e - 1))
        return live
    if args.query == "q3":
        people = sorted(r["id"] for r in frames["person"].where("state IN ('OR', 'ID', 'CA')")
                        .select("id").collect())
        waiting = [(auction_event(r["id"]), r["seller"])
                   for r in frames["auction"].where("category = 10").select("id", "seller").collect()]

        def live(e):
            last = (e - 1) // EVENTS_PER_EPOCH + FIRST_ID  # newest person created before e
            oldest = last + 1 - NUM_ACTIVE_PEOPLE          # oldest a future auction may name
            persons = bisect.bisect_right(people, last) - bisect.bisect_left(people, oldest)
            # category-10 auctions already here whose seller is not created yet
            early = sum(1 for (n, s) in waiting if n < e and s > last)
            return persons + early
        return live
    return lambda e: None


def offset_events(offset) -> int:
    """Events of a `nexmark` offset as progress reports show it: a number (old checkpoints)
    or ``{"events": n, "options": {...}}`` — as JSON, or (pyspark 4.1's ``SourceProgress``) as
    the repr of the dict it parsed.

    >>> offset_events('{"events": 7, "options": {}}'), offset_events("{'events': 7, 'options': {}}"), offset_events("7")
    (7, 7, 7)
    """
    if isinstance(offset, dict):
        return int(offset["events"])
    if isinstance(offset, str) and offset.lstrip().startswith("{"):
        try:
            return int(json.loads(offset)["events"])
        except json.JSONDecodeError:
            return int(ast.literal_eval(offset)["events"])
    return int(offset)


def run_engine(spark, engine: str, args, tmp: Path, bar=None):
    """Runs one engine over all events (``args``: the runner's options, ``parser()``); returns
    (per-batch rows, result, seconds, error, progress reports). ``bar``: a progress bar updated
    with the events done (None: none)."""
    tables, _ = QUERIES[args.query]
    for t in tables:
        read_stream(spark, t, args, engine).createOrReplaceTempView(t)
    # (a floor query has no stateful operator: append mode)
    # Spark's own engine has no final rows for an aggregation without watermark: update mode
    mode = "update" if (engine == "native" and QUERIES[args.query][1]) else "append"
    build = lambda: spark.sql(query_sql(args.query, engine, args.events_per_second, args.events))
    return run_query(spark, build, engine, mode, tmp / f"ckpt-{engine}", args.events, bar)


def run_query(spark, build, engine: str, mode: str, checkpoint: Path, events: int, bar=None, after_batch=None):
    """Runs the streaming DataFrame ``build()`` to the end of its ``events`` (Trigger.AvailableNow,
    results checksummed per batch, then ``after_batch(batch_id)`` if given; ``bar``, if given, is
    updated with the events done); returns (per-batch
    rows, result, seconds, error, progress reports). ``error`` is Spark's first message line
    when it refuses or fails the query."""
    totals = {"rows": 0, "checksum": 0}
    bar = bar or _NoBar()

    def sink(df, batch_id):
        n, h = checksum(df)
        totals["rows"] += n
        totals["checksum"] = (totals["checksum"] + h) % CHECKSUM_MOD
        if after_batch is not None:
            after_batch(batch_id)

    try:
        df = build()
        query = (df.writeStream.foreachBatch(sink).outputMode(mode)
                 .option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
    except Exception as e:  # Spark refuses the plan (e.g. aggregations after a join)
        return [], None, 0.0, (str(e).strip().splitlines() or [type(e).__name__])[0], []
    started = time.time()
    done = 0
    try:
        while query.isActive:
            query.awaitTermination(0.5)
            p = query.lastProgress
            if p and p["sources"]:
                reached = max(offset_events(s["endOffset"]) for s in p["sources"] if s.get("endOffset"))
                bar.update(max(0, reached - done))
                done = max(done, reached)
        query.awaitTermination()
    except Exception as e:
        print(f"{engine} failed: {e}", file=sys.stderr)   # the whole message; the report keeps its first line
        return [], None, time.time() - started, (str(e).strip().splitlines() or [type(e).__name__])[0], []
    elapsed = time.time() - started
    bar.update(max(0, events - done))
    per_batch = []
    for p in query.recentProgress:
        if p["numInputRows"] == 0 and not p["stateOperators"]:
            continue
        ops = p["stateOperators"]
        per_batch.append({
            "engine": engine, "batch": p["batchId"],
            "events": max((offset_events(s["endOffset"]) for s in p["sources"] if s.get("endOffset")), default=0),
            "input_rows": p["numInputRows"],
            "state_rows": sum(op["numRowsTotal"] for op in ops),
            "punctuations_held": sum(op.get("customMetrics", {}).get("numPunctuationsHeld", 0) for op in ops),
            "batch_ms": p["durationMs"].get("triggerExecution", 0),
            # where a batch's time goes: Spark's planning, and the state stores' commits
            # (summed over the operators' tasks, which run two at a time here)
            "planning_ms": p["durationMs"].get("queryPlanning", 0),
            "state_commit_ms": sum(op.get("commitTimeMs", 0) for op in ops)})
    if len(query.recentProgress) >= int(spark.conf.get("spark.sql.streaming.numRecentProgressUpdates")):
        print(f"warning: {engine}: only the last progress reports are kept", file=sys.stderr)
    return per_batch, totals, elapsed, None, list(query.recentProgress)


def warm_up(spark, args, tmp: Path) -> None:
    """``--warmup-events N``: the child's engine runs the same query over the first N events
    once, untimed, with a checkpoint of its own, before the timed run, so that the timed run
    meets a JVM whose JIT has compiled the engine's code (at 2 M events on 2 cores the JIT's
    compiler threads take about half of a cold run's CPU). Each engine warms up the same way,
    in its own fresh process; the timed run starts from nothing but the JVM (new query, new
    checkpoint, the same events from the first)."""
    warm = argparse.Namespace(**{**vars(args), "events": args.warmup_events})
    run_engine(spark, args.child, warm, tmp / "warmup")


def driver_counters(spark, reset: bool = False) -> dict:
    """The JVM's counters of the work that is not the query's own rows (``local[N]``: one JVM
    for the driver and the tasks): the JIT compilers' accumulated time (the JVM's
    ``CompilationMXBean``, ms) and Catalyst's rule executors' time (analyzer and optimizer
    rules of every plan, Spark's ``RuleExecutor`` metering, ns), the latter reset first when
    ``reset``."""
    jvm = spark.sparkContext._jvm
    rules = jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor
    if reset:
        rules.resetMetrics()
    m = rules.getCurrentMetrics()
    return {"jit_ms": jvm.java.lang.management.ManagementFactory.getCompilationMXBean().getTotalCompilationTime(),
            "rules_ns": m.time()}


def driver_delta(before: dict, after: dict) -> dict:
    """What the timed run added to ``driver_counters``: JIT ms and rule ms.

    >>> driver_delta({"jit_ms": 100, "rules_ns": 0}, {"jit_ms": 1600, "rules_ns": 25_500_000})
    {'jit_ms': 1500, 'rules_ms': 25.5}
    """
    return {"jit_ms": after["jit_ms"] - before["jit_ms"],
            "rules_ms": round((after["rules_ns"] - before["rules_ns"]) / 1e6, 1)}


def driver_median(reps: list, batches: int) -> dict | None:
    """Medians over the repetitions of the JIT's seconds and of the rules' ms per micro-batch
    (None if a repetition has no ``driver`` counters).

    >>> driver_median([{"driver": {"jit_ms": 1000, "rules_ms": 40.0}},
    ...                {"driver": {"jit_ms": 3000, "rules_ms": 60.0}}], 20)
    {'jit_s': 2.0, 'rules_ms_per_batch': 2.5}
    """
    if not reps or any(r.get("driver") is None for r in reps):
        return None
    return {"jit_s": round(statistics.median(r["driver"]["jit_ms"] for r in reps) / 1000, 2),
            "rules_ms_per_batch": round(statistics.median(r["driver"]["rules_ms"] for r in reps) / max(batches, 1), 1)}


def task_metrics_median(per_rep: list):
    """Each figure of ``task_metrics.summarize`` as its median over the repetitions (None
    without ``--task-metrics``).

    >>> task_metrics_median([{"all": {"cpu_ms": 10}}, {"all": {"cpu_ms": 30}}, {"all": {"cpu_ms": 20}}])
    {'all': {'cpu_ms': 20}}
    """
    if not per_rep or any(m is None for m in per_rep):
        return None
    kinds = sorted({k for m in per_rep for k in m})
    return {k: {f: statistics.median(m.get(k, {}).get(f, 0) for m in per_rep)
                for f in sorted({f for m in per_rep for f in m.get(k, {})})} for k in kinds}


def first_and_rest(reps: list) -> dict:
    """Medians over the repetitions of the first micro-batch's time and Spark's planning in it,
    and of the same summed over the later micro-batches (where a cold JVM's one-off costs fall:
    its first plan and generated code, the checkpoint's first files).

    >>> first_and_rest([{"per_batch": [{"batch_ms": 900, "planning_ms": 300}, {"batch_ms": 100, "planning_ms": 10},
    ...                                {"batch_ms": 120, "planning_ms": 12}]}])
    {'first_ms': 900, 'first_planning_ms': 300, 'rest_ms': 220, 'rest_planning_ms': 22}
    """
    def med(f):
        return statistics.median(f(r["per_batch"]) for r in reps if r["per_batch"])
    return {"first_ms": med(lambda b: b[0]["batch_ms"]), "first_planning_ms": med(lambda b: b[0]["planning_ms"] or 0),
            "rest_ms": med(lambda b: sum(x["batch_ms"] for x in b[1:])),
            "rest_planning_ms": med(lambda b: sum(x["planning_ms"] or 0 for x in b[1:]))}


def mean(rows, key: str):
    """Mean of ``key`` over per-batch rows (None without rows), rounded to 0.1."""
    return round(sum(r[key] for r in rows) / len(rows), 1) if rows else None


def spark_settings(values) -> dict[str, str]:
    """The ``--spark-conf KEY=VALUE`` settings as a dict (the value may hold ``=``).

    >>> spark_settings(["spark.shuffle.sort.bypassMergeThreshold=0", "spark.a=b=c"])
    {'spark.shuffle.sort.bypassMergeThreshold': '0', 'spark.a': 'b=c'}
    >>> spark_settings(["spark.a"])
    Traceback (most recent call last):
    ValueError: --spark-conf takes KEY=VALUE, not 'spark.a'
    """
    out = {}
    for v in values or []:
        key, eq, value = v.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"--spark-conf takes KEY=VALUE, not {v!r}")
        out[key.strip()] = value
    return out


def child(args) -> int:
    """A child process: ``--child reference`` computes the batch answer (and the live working
    set at every batch boundary) once per run; ``--child <engine>`` runs one engine. Each
    prints one ``RESULT <json>`` line (``harness.emit``)."""
    from punctuated.cli import local_session

    tmp = Path(tempfile.mkdtemp(prefix="punctuated-nexmark-"))
    query_id = None
    log = tmp / "event-log"
    extra = dict(harness.forkless_conf(args) or {}, **(task_metrics.conf(log) if args.task_metrics else {}),
                 **spark_settings(args.spark_conf))
    spark = local_session(str(tmp), app=f"punctuated-nexmark-{args.child}", driver_memory=args.driver_memory,
                          extra_conf=extra)
    spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    try:
        if args.child == "reference":
            frames = materialize(spark, QUERIES[args.query][0], args, tmp)
            expected_all, expected = batch_answer(spark, frames, args)
            live = live_working_set(spark, frames, args)
            points = list(range(args.events_per_batch, args.events, args.events_per_batch)) + [args.events]
            result = {"expected": list(expected), "expected_all": list(expected_all),
                      "expected_by_engine": {} if args.query not in WINDOWED else {
                          "punctuated": list(windows_ended_by(spark, query_sql(
                              args.query, "native", args.events_per_second, args.events),
                              base_time(args) + args.events * 1000 // args.events_per_second))},
                      "live": {str(e): live(e) for e in points}}
        else:
            if args.warmup_events:
                warm_up(spark, args, tmp)
            before = driver_counters(spark, reset=True)
            per_batch, totals, elapsed, error, progress = run_engine(spark, args.child, args, tmp)
            import punctuated
            # --spark-conf as the running session has it (read back from its SparkConf)
            conf = spark.sparkContext.getConf()
            result = {"spark_conf": {k: conf.get(k, None) for k in spark_settings(args.spark_conf)},
                      "per_batch": per_batch, "totals": totals, "seconds": elapsed, "error": error,
                      "events_per_second": args.events / elapsed if error is None and elapsed else None,
                      "driver": driver_delta(before, driver_counters(spark)),
                      # where the package (and its jar) came from: punctuated_alt's is --alt-path's
                      "package": str(Path(punctuated.__file__).resolve().parent)}
            query_id = progress[0]["id"] if progress else None
    finally:
        spark.stop()  # (flushes the event log)
        if args.task_metrics and args.child != "reference" and query_id:
            result["task_metrics"] = task_metrics.summarize(log, query_id)
        shutil.rmtree(tmp, ignore_errors=True)
    harness.emit(result)
    return 0


class _NoBar:
    """A progress bar that shows nothing (a child's output is read by its parent)."""

    def update(self, n=1):
        pass


def engine_summary(engine: str, reps: list, args, command: str, reference: dict, cores: int) -> tuple[dict, list]:
    """One engine's summary over its repetitions (medians, spreads) and the per-batch rows of
    its representative repetition (the one of median throughput; state rows do not depend on
    the repetition). An engine refused or failed in any repetition is recorded as not run."""
    expected, expected_all = engine_reference(reference, engine), tuple(reference["expected_all"])
    s = {"engine": engine, "query": args.query, "events": args.events, "command": command, "reps": len(reps)}
    failed = [r for r in reps if r.get("error") is not None]
    if failed:
        s.update({"events_per_second": None, "max_state_rows": None, "final_state_rows": None,
                  "results_match": None, "error": failed[0]["error"]})
        return s, []
    eps = harness.spread([r["events_per_second"] for r in reps])
    rep = min(reps, key=lambda r: (abs(r["events_per_second"] - eps["median"]), r["rep"]))
    per_batch = rep["per_batch"]
    for r in per_batch:
        r["live_working_set"] = reference["live"].get(str(r["events"]))
    ratios = [r["state_rows"] / r["live_working_set"] for r in per_batch if r["live_working_set"]]
    matches = [(r["totals"]["rows"], r["totals"]["checksum"]) == expected for r in reps]
    rows = rep["totals"]["rows"]
    med = lambda key: round(statistics.median(mean(r["per_batch"], key) or 0 for r in reps), 1)
    s.update({
        "events_per_second": round(eps["median"]),
        "events_per_second_spread": {k: round(v) for k, v in eps.items()},
        "max_state_rows": max((r["state_rows"] for r in per_batch), default=0),
        "final_state_rows": per_batch[-1]["state_rows"] if per_batch else 0,
        # a reference engine computes something else: nothing to compare; else every rep matches
        "results_match": None if engine in REFERENCE_ENGINES else all(matches),
        "seconds": round(statistics.median(r["seconds"] for r in reps), 2),
        "batches": len(per_batch),
        "events_per_second_per_core": round(eps["median"] / cores),
        "max_punctuations_held": max((r["punctuations_held"] for r in per_batch), default=0),
        "final_punctuations_held": per_batch[-1]["punctuations_held"] if per_batch else 0,
        "max_state_over_live_working_set": round(max(ratios), 3) if ratios else None,
        # per micro-batch, on average (median over the repetitions): its time, Spark's
        # planning, the stores' commits
        "mean_batch_ms": med("batch_ms"), "mean_planning_ms": med("planning_ms"),
        "mean_state_commit_ms": med("state_commit_ms"),
        # the first micro-batch apart from the others (summed), medians over the repetitions
        "first_and_rest": first_and_rest(reps),
        # --task-metrics: the tasks' time per stage kind (medians over the repetitions)
        "task_metrics": task_metrics_median([r.get("task_metrics") for r in reps]),
        # the JVM's JIT compilers over the timed run, and Catalyst's rules per micro-batch
        "driver": driver_median(reps, len(per_batch)),
        "result_rows": rows, "expected_rows": expected[0], "expected_rows_all_auctions": expected_all[0],
        # an engine's rows are the batch rows or fewer (a time bound only removes results)
        "missing_rows": None if engine in REFERENCE_ENGINES else expected[0] - rows,
        "load_1min": harness.spread([r[k] for r in reps for k in ("load_1min_before", "load_1min_after")]),
        "package": reps[0].get("package"),
        "spark_conf": reps[0].get("spark_conf") or {},
    })
    return s, per_batch


def parser() -> argparse.ArgumentParser:
    """The runner's command line; ``parser().parse_args([...])`` also gives the ``args`` of
    ``run_engine`` (e.g. ``["--query", "q4", "--events", "1000"]``: the defaults for the rest)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--query", choices=sorted(QUERIES), required=True)
    ap.add_argument("--events", type=int, default=2_000_000, help="events of the global sequence")
    ap.add_argument("--engines", default=",".join(ENGINES),
                    help=f"comma-separated, of {', '.join(ENGINES + OPTIONAL_ENGINES + REFERENCE_ENGINES)} "
                         "(floor: the inputs without the join, a reference; watermark_same_input: "
                         "Spark's watermark plan over the punctuated engine's rows)")
    ap.add_argument("--reps", type=int, default=3,
                    help="repetitions of each engine, each in a fresh process, engines interleaved")
    ap.add_argument("--out", default=str(harness.DEFAULT_OUT),
                    help=f"directory for the JSON, CSV, PNG, Markdown (default {harness.DEFAULT_OUT}; the "
                         "recorded results are written only when given --out benchmarks/results)")
    ap.add_argument("--name", help="file name stem (default nexmark_<query>_<events>)")
    ap.add_argument("--events-per-batch", type=int, default=100_000)
    ap.add_argument("--events-per-second", type=int, default=10_000, help="event-time rate")
    ap.add_argument("--partitions", type=int, default=2, help="source and shuffle partitions")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--base-time", type=int, default=0,
                    help="event time of the first event, ms since the epoch (the source's baseTime; "
                         "0: the epoch, where a watermark plan counts rows at time 0 as late)")
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--warmup-events", type=int, default=0,
                    help="each engine's child first runs the same query over this many events, untimed "
                         "(a warm JVM: see warm_up); default 0, a cold JVM")
    ap.add_argument("--task-metrics", action="store_true",
                    help="record the timed query's tasks' CPU and run time per stage kind (scan, stateful, "
                         "other), from Spark's event log (benchmarks/task_metrics.py)")
    ap.add_argument("--time-punctuations-only", action="store_true",
                    help=f"{', '.join(WINDOWED)}: the bid stream of the punctuated and same-input engines "
                         "punctuates dateTime<= only (the source's auctionPunctuations=false), the "
                         "punctuations that close the windows; default: also each expired auction")
    ap.add_argument("--alt-path",
                    help=f"for the engine {ALT}: a directory holding another installed copy of the punctuated "
                         "package (another jar), put first on that engine's Python path")
    harness.add_forkless_option(ap)
    ap.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting for every engine's session, set before its JVM starts (repeatable; "
                         "e.g. spark.shuffle.sort.bypassMergeThreshold=0)")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # internal: reference | <engine>
    return ap


def main(argv=None) -> int:
    ap = parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = [e for e in engines if e not in ENGINES + OPTIONAL_ENGINES + REFERENCE_ENGINES]
    if unknown:
        ap.error(f"unknown engines {unknown}; choose from {', '.join(ENGINES + OPTIONAL_ENGINES + REFERENCE_ENGINES)}")
    if args.reps < 1:
        ap.error(f"--reps must be at least 1, not {args.reps}")
    if (ALT in engines) != bool(args.alt_path) or (args.alt_path and not (Path(args.alt_path) / "punctuated").is_dir()):
        ap.error(f"the engine {ALT} and --alt-path go together, --alt-path a directory holding a punctuated package")
    try:
        spark_settings(args.spark_conf)
    except ValueError as e:
        ap.error(str(e))
    if args.time_punctuations_only and args.query not in WINDOWED:
        ap.error(f"--time-punctuations-only is for the windowed queries ({', '.join(WINDOWED)}), not {args.query}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = args.name or f"nexmark_{args.query}_{args.events}"
    command = "python -m benchmarks.nexmark " + " ".join(argv)

    # every child: the same command line (so the same JVM options), but for its --child
    common = [sys.executable, "-m", "benchmarks.nexmark", "--query", args.query, "--events", str(args.events),
              "--events-per-batch", str(args.events_per_batch), "--events-per-second", str(args.events_per_second),
              "--partitions", str(args.partitions), "--seed", str(args.seed), "--driver-memory", args.driver_memory,
              "--base-time", str(args.base_time), "--warmup-events", str(args.warmup_events)] + harness.forkless_flag(args) + (
                  ["--task-metrics"] if args.task_metrics else []) + (
                  ["--time-punctuations-only"] if args.time_punctuations_only else []) + [
                  a for c in args.spark_conf for a in ("--spark-conf", c)]
    print(f"[nexmark {args.query}] batch answer over {args.events:,} events", file=sys.stderr)
    reference = harness.spawn(common + ["--child", "reference"])

    def done(engine, rep, r):
        eps = f"{r['events_per_second']:,.0f} events/s" if r.get("events_per_second") else f"not run: {r.get('error')}"
        print(f"[nexmark {args.query}] {engine} rep {rep + 1}/{args.reps}: {eps} "
              f"(load {r['load_1min_before']}→{r['load_1min_after']})", file=sys.stderr)

    def command_of(engine):
        if engine != ALT:
            return common + ["--child", engine]
        path = os.pathsep.join(p for p in (str(Path(args.alt_path).resolve()), os.environ.get("PYTHONPATH")) if p)
        return ["env", f"PYTHONPATH={path}"] + common + ["--child", engine]

    runs = harness.run({e: command_of(e) for e in engines}, args.reps, on_done=done)

    cores = os.cpu_count() or 1
    summaries, per_batch_rows = [], []
    for engine in engines:
        s, rows = engine_summary(engine, runs[engine], args, command, reference, cores)
        summaries.append(s)
        per_batch_rows += rows
    ratios = {f"{a}/{b}": {"throughput": harness.ratio_spread(runs, "events_per_second", a, b)}
              for a in engines for b in engines
              if (a, b) in (("punctuated", "native"), ("punctuated", "watermark"), ("watermark", "native"),
                            ("floor", "native"), ("punctuated", SAME_INPUT), (SAME_INPUT, "watermark"),
                            (AGAIN, "watermark"), ("punctuated", AGAIN), ("punctuated", ALT), (ALT, "watermark"))}
    all_rows = [dict(r, rep=x["rep"]) for e in engines for x in runs[e] for r in (x.get("per_batch") or [])]
    for r in all_rows:
        r["live_working_set"] = reference["live"].get(str(r["events"]))
    report = {"summaries": summaries, "ratios": ratios, "load_1min": harness.load_summary(runs),
              "schedule": [f"{e}#{k + 1}" for e, k in harness.schedule(engines, args.reps)]}
    (out / f"{name}.json").write_text(json.dumps(summaries, indent=2) + "\n")
    (out / f"{name}.runs.json").write_text(json.dumps(report, indent=2) + "\n")
    fields = ["engine", "rep", "batch", "events", "input_rows", "state_rows", "punctuations_held",
              "batch_ms", "planning_ms", "state_commit_ms", "live_working_set"]
    with open(out / f"{name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(all_rows)
    if per_batch_rows:
        nexmark_report.plot(out / f"{name}.png", per_batch_rows, args.query, args.events)
    md = nexmark_report.markdown(summaries, ratios, report, args, command, name,
                                 tuple(reference["expected"]), tuple(reference["expected_all"]), cores)
    (out / f"{name}.md").write_text(md)
    print(md)
    return 0

if __name__ == "__main__":
    sys.exit(main())
