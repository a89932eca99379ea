"""Auction join benchmark: Spark's own stream-stream join against Punctuated's, same input, same run.

Workload (auction-shaped, Li et al. 2006, §1, and Tucker et al. 2003, Example 2): every micro-batch opens
``--auctions-per-batch`` auctions (unique ids); each auction is open for ``--auction-life``
batches and then closes, which the bids stream says with a punctuation ("no more bids for
auction a"); bids fall on open auctions with a Zipf-like skew (the newest auctions are hot).

Both engines read the same parquet files, one file per input per micro-batch:

* ``native``: Spark's plan (no declarations; punctuation rows filtered out before the join):
  it cannot drop state, which grows with every event;
* ``punctuated``: the same join over the declared streams (auctions ``unique id``, bids
  ``schemes auction``): state stays at the open auctions.

The input is generated once (a first child process); then each engine runs ``--reps`` times,
each run in a fresh process with the same JVM options, the engines interleaved
(``benchmarks/harness.py``). Per batch it records input rows, state rows and batch time; it
checks both engines produce the same join result in every repetition (count and an
order-independent checksum); it writes a CSV per batch (every repetition), a JSON summary
with medians, spreads and the per-repetition ratios, and a Markdown table, into ``--out``
(default a directory under the system's temporary directory; the recorded results only
with ``--out benchmarks/results``). Run::

    .venv/bin/python benchmarks/auction_join.py --bids 2000000 --batches 40 --reps 3 --out benchmarks/results
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a script: benchmarks/auction_join.py
    sys.path.insert(0, str(ROOT))
from benchmarks import harness  # noqa: E402

DEFAULT_OUT = harness.DEFAULT_OUT


def generate(spark, root: Path, batches: int, auctions_per_batch: int, life: int, bids_per_batch: int):
    """One parquet file per batch for each input; returns the live working set per batch."""
    from pyspark.sql import functions as F

    live = []
    for b in range(batches):
        lo = max(0, (b - life + 1) * auctions_per_batch)
        hi = (b + 1) * auctions_per_batch
        auctions = spark.range(b * auctions_per_batch, hi).select(
            F.col("id"), (F.col("id") % 997).alias("seller"), F.lit(False).alias("is_punct"))
        bids = spark.range(bids_per_batch).select(
            (F.lit(hi - 1) - F.floor(F.lit(hi - lo) * F.pow(F.rand(seed=b), F.lit(3.0)))).cast("long").alias("auction"),
            (F.col("id") % 10007).alias("bidder"),
            (F.rand(seed=10_000 + b) * 100).alias("price"),
            F.lit(False).alias("is_punct"))
        closing = b - life + 1
        if closing >= 0:
            closes = spark.range(closing * auctions_per_batch, (closing + 1) * auctions_per_batch).select(
                F.col("id").alias("auction"), F.lit(None).cast("long").alias("bidder"),
                F.lit(None).cast("double").alias("price"), F.lit(True).alias("is_punct"))
            bids = bids.unionByName(closes)
        auctions.coalesce(1).write.parquet(str(root / "auctions" / f"b{b:05d}"))
        bids.coalesce(1).write.parquet(str(root / "bids" / f"b{b:05d}"))
        # live working set after batch b: open auctions and the bids on them so far
        open_auctions = hi - max(0, (b - life + 2) * auctions_per_batch) if b + 1 >= life else hi
        live.append(open_auctions + min(b + 1, life - 1) * bids_per_batch)
    # flatten: one file per batch directly under each input directory, in batch order
    for name in ("auctions", "bids"):
        for b in range(batches):
            src = next((root / name / f"b{b:05d}").glob("*.parquet"))
            src.rename(root / name / f"{b:05d}.parquet")
            shutil.rmtree(root / name / f"b{b:05d}")
    return live


def run(spark, root: Path, engine: str, checkpoint: Path):
    """Runs one engine over all files; returns per-batch rows and the result checksum."""
    import punctuated
    from pyspark.sql import functions as F

    def stream(name, schema):
        return (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
                .parquet(str(root / name)))

    auctions = stream("auctions", "id BIGINT, seller BIGINT, is_punct BOOLEAN")
    bids = stream("bids", "auction BIGINT, bidder BIGINT, price DOUBLE, is_punct BOOLEAN")
    if engine == "punctuated":
        auctions = punctuated.with_schemes(auctions, unique=["id"], marker="is_punct", name="auctions")
        bids = punctuated.with_schemes(bids, schemes=["auction"], marker="is_punct", name="bids")
    else:
        bids = bids.where(~F.col("is_punct"))
    joined = auctions.join(bids, auctions["id"] == bids["auction"]).select(
        auctions["id"], auctions["seller"], bids["bidder"], bids["price"])

    totals = {"rows": 0, "checksum": 0}

    def sink(df, batch_id):
        row = df.agg(F.count(F.lit(1)).alias("n"),
                     F.sum(F.xxhash64("id", "bidder", "price") % 1_000_000_007).alias("h")).collect()[0]
        totals["rows"] += row["n"]
        totals["checksum"] = (totals["checksum"] + (row["h"] or 0)) % 1_000_000_007

    query = (joined.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    started = time.time()
    query.awaitTermination()
    elapsed = time.time() - started
    per_batch = []
    for p in query.recentProgress:
        if p["numInputRows"] == 0 and not p["stateOperators"]:
            continue
        state = sum(op["numRowsTotal"] for op in p["stateOperators"])
        per_batch.append({
            "engine": engine, "batch": p["batchId"], "input_rows": p["numInputRows"],
            "state_rows": state, "batch_ms": p["durationMs"].get("triggerExecution", 0)})
    return per_batch, totals, elapsed


def child(args) -> int:
    """A child process: ``--child generate`` writes the input files into ``--data`` (and
    reports the live working set per batch); ``--child <engine>`` runs one engine over them.
    Each prints one ``RESULT <json>`` line (``harness.emit``)."""
    from punctuated.cli import local_session

    tmp = Path(tempfile.mkdtemp(prefix="punctuated-bench-"))
    spark = local_session(str(tmp), app=f"punctuated-benchmark-{args.child}", driver_memory=args.driver_memory,
                          extra_conf=harness.forkless_conf(args))
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    if args.state_store == "rocksdb":
        spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                       "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    try:
        if args.child == "generate":
            result = {"live": generate(spark, Path(args.data), args.batches, args.auctions_per_batch,
                                       args.auction_life, args.bids // args.batches)}
        else:
            per_batch, totals, elapsed = run(spark, Path(args.data), args.child, tmp / "ckpt")
            result = {"per_batch": per_batch, "totals": totals, "seconds": elapsed,
                      "events_per_second": events_of(args) / elapsed}
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    harness.emit(result)
    return 0


def events_of(args) -> int:
    """The data events both engines read (bids and auctions; punctuation rows not counted)."""
    return args.batches * (args.bids // args.batches + args.auctions_per_batch)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bids", type=int, default=2_000_000, help="data bids in total")
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--auctions-per-batch", type=int, default=2_000)
    ap.add_argument("--auction-life", type=int, default=4, help="batches an auction stays open")
    ap.add_argument("--state-store", choices=["hdfs", "rocksdb"], default="hdfs")
    ap.add_argument("--name", default="auction_join")
    ap.add_argument("--reps", type=int, default=3,
                    help="repetitions of each engine, each in a fresh process, engines interleaved")
    ap.add_argument("--out", default=str(DEFAULT_OUT),
                    help=f"directory for the CSV, JSON and Markdown (default {DEFAULT_OUT}; the recorded "
                         "results are written only when given --out benchmarks/results)")
    ap.add_argument("--driver-memory", default="12g",
                    help="Spark's own join keeps every row in memory (HDFS-backed store): give it room")
    harness.add_forkless_option(ap)
    ap.add_argument("--child", help=argparse.SUPPRESS)  # internal: generate | native | punctuated
    ap.add_argument("--data", help=argparse.SUPPRESS)   # internal: the children's input directory
    argv = list(sys.argv[1:] if argv is None else argv)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    if args.reps < 1:
        ap.error(f"--reps must be at least 1, not {args.reps}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/auction_join.py " + " ".join(argv)
    tmp = Path(tempfile.mkdtemp(prefix="punctuated-bench-data-"))
    # every child: the same command line (so the same JVM options), but for its --child
    common = [sys.executable, str(Path(__file__).resolve()), "--bids", str(args.bids),
              "--batches", str(args.batches), "--auctions-per-batch", str(args.auctions_per_batch),
              "--auction-life", str(args.auction_life), "--state-store", args.state_store,
              "--driver-memory", args.driver_memory, "--data", str(tmp / "data")
              ] + harness.forkless_flag(args)
    engines = ("native", "punctuated")
    try:
        print("[auction join] generating input", file=sys.stderr)
        live = harness.spawn(common + ["--child", "generate"])["live"]

        def done(engine, rep, r):
            print(f"[auction join] {engine} rep {rep + 1}/{args.reps}: {r['events_per_second']:,.0f} events/s "
                  f"(load {r['load_1min_before']}→{r['load_1min_after']})", file=sys.stderr)

        runs = harness.run({e: common + ["--child", e] for e in engines}, args.reps, on_done=done)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    rows = []
    for engine in engines:
        for x in runs[engine]:
            for r in x["per_batch"]:
                rows.append(dict(r, rep=x["rep"], live_working_set=live[r["batch"]] if r["batch"] < len(live) else None))
    with open(out / f"{args.name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["engine", "rep", "batch", "input_rows", "state_rows", "batch_ms",
                                          "live_working_set"])
        w.writeheader()
        w.writerows(rows)

    events = events_of(args)

    def summary(engine):
        reps = runs[engine]
        eps = harness.spread([r["events_per_second"] for r in reps])
        per_batch = reps[0]["per_batch"]  # state rows do not depend on the repetition
        max_ratio = max((r["state_rows"] / live[r["batch"]]) for r in per_batch if r["batch"] < len(live))
        results = {(r["totals"]["rows"], r["totals"]["checksum"]) for r in reps}
        return {
            "engine": engine, "events": events, "reps": len(reps),
            "seconds": harness.spread([round(r["seconds"], 2) for r in reps]),
            "events_per_second": {k: round(v) for k, v in eps.items()},
            "max_state_rows": max(r["state_rows"] for r in per_batch),
            "final_state_rows": per_batch[-1]["state_rows"], "max_state_over_live_working_set": round(max_ratio, 3),
            "result_rows": reps[0]["totals"]["rows"], "result_checksum": reps[0]["totals"]["checksum"],
            "same_result_every_rep": len(results) == 1}

    native, ours = summary("native"), summary("punctuated")
    same = (native["same_result_every_rep"] and ours["same_result_every_rep"]
            and (native["result_rows"], native["result_checksum"]) == (ours["result_rows"], ours["result_checksum"]))
    load = harness.load_summary(runs)
    report = {
        "command": command, "config": {k: v for k, v in vars(args).items() if k not in ("child", "data")},
        "engines": [native, ours], "results_identical": same, "load_1min": load,
        "schedule": [f"{e}#{k + 1}" for e, k in harness.schedule(engines, args.reps)],
        "ratios": {
            # median and spread of the per-repetition ratios (rep k of one over rep k of the other)
            "throughput_punctuated_over_native": harness.ratio_spread(runs, "events_per_second", "punctuated", "native"),
            "final_state_punctuated_over_native": round(ours["final_state_rows"] / max(1, native["final_state_rows"]), 4),
        }}
    (out / f"{args.name}.json").write_text(json.dumps(report, indent=2) + "\n")
    md = [f"# Auction join: Spark's own join vs Punctuated ({args.state_store} state store)", "",
          f"Command: `{command}`", "",
          f"{args.reps} repetition(s), each engine in a fresh process with the same JVM options, engines "
          f"interleaved ({' '.join(report['schedule'])}); medians with the spread (min–max) over the "
          f"repetitions. Machine load (1-minute average, before and after each run): "
          f"{harness.fmt_spread(load, 2)} on {os.cpu_count()} cores"
          f"{harness.forkless_note(args)}.",
          "",
          "| engine | events | seconds | events/s | max state rows | final state rows | max state / live working set | result rows |",
          "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for s in (native, ours):
        md.append(f"| {s['engine']} | {s['events']} | {harness.fmt_spread(s['seconds'], 2)} | "
                  f"{harness.fmt_spread(s['events_per_second'], thousands=True)} | "
                  f"{s['max_state_rows']} | {s['final_state_rows']} | {s['max_state_over_live_working_set']} | {s['result_rows']} |")
    md += ["", f"Results identical (count and checksum, every repetition): **{same}**", "",
           f"Throughput ratio (punctuated / native, per repetition; median and min–max): "
           f"**{harness.fmt_spread(report['ratios']['throughput_punctuated_over_native'])}**",
           f"Final state ratio (punctuated / native): **{report['ratios']['final_state_punctuated_over_native']}**", "",
           f"Per-batch figures of every repetition: `{args.name}.csv`."]
    (out / f"{args.name}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
