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

Per batch it records input rows, state rows and batch time; it checks both engines produce
the same join result (count and an order-independent checksum); it writes a CSV per batch,
a JSON summary with the ratios, and a Markdown table. Run::

    .venv/bin/python benchmarks/auction_join.py --bids 2000000 --batches 40
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bids", type=int, default=2_000_000, help="data bids in total")
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--auctions-per-batch", type=int, default=2_000)
    ap.add_argument("--auction-life", type=int, default=4, help="batches an auction stays open")
    ap.add_argument("--state-store", choices=["hdfs", "rocksdb"], default="hdfs")
    ap.add_argument("--name", default="auction_join")
    ap.add_argument("--driver-memory", default="12g",
                    help="Spark's own join keeps every row in memory (HDFS-backed store): give it room")
    args = ap.parse_args(argv)

    from tqdm import tqdm
    from punctuated.cli import local_session

    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="punctuated-bench-"))
    spark = local_session(str(tmp), app="punctuated-benchmark", driver_memory=args.driver_memory)
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    if args.state_store == "rocksdb":
        spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                       "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    try:
        bids_per_batch = args.bids // args.batches
        with tqdm(total=3, desc="auction join benchmark", file=sys.stderr) as bar:
            bar.set_postfix_str("generating input")
            live = generate(spark, tmp / "data", args.batches, args.auctions_per_batch,
                            args.auction_life, bids_per_batch)
            bar.update()
            results = {}
            for engine in ("native", "punctuated"):
                bar.set_postfix_str(f"running {engine}")
                results[engine] = run(spark, tmp / "data", engine, tmp / f"ckpt-{engine}")
                bar.update()
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    rows = []
    for engine, (per_batch, _, _) in results.items():
        for r in per_batch:
            r["live_working_set"] = live[r["batch"]] if r["batch"] < len(live) else None
            rows.append(r)
    with open(RESULTS / f"{args.name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)

    # the same data events for both engines (bids and auctions; punctuation rows not counted)
    events = args.batches * (bids_per_batch + args.auctions_per_batch)

    def summary(engine):
        per_batch, totals, elapsed = results[engine]
        max_ratio = max((r["state_rows"] / live[r["batch"]]) for r in per_batch if r["batch"] < len(live))
        return {
            "engine": engine, "events": events, "seconds": round(elapsed, 2),
            "events_per_second": round(events / elapsed), "max_state_rows": max(r["state_rows"] for r in per_batch),
            "final_state_rows": per_batch[-1]["state_rows"], "max_state_over_live_working_set": round(max_ratio, 3),
            "result_rows": totals["rows"], "result_checksum": totals["checksum"]}

    native, ours = summary("native"), summary("punctuated")
    same = (native["result_rows"], native["result_checksum"]) == (ours["result_rows"], ours["result_checksum"])
    report = {
        "command": "python benchmarks/auction_join.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "config": vars(args), "engines": [native, ours], "results_identical": same,
        "ratios": {
            "throughput_punctuated_over_native": round(ours["events_per_second"] / native["events_per_second"], 3),
            "final_state_punctuated_over_native": round(ours["final_state_rows"] / max(1, native["final_state_rows"]), 4),
        }}
    (RESULTS / f"{args.name}.json").write_text(json.dumps(report, indent=2) + "\n")
    md = [f"# Auction join: Spark's own join vs Punctuated ({args.state_store} state store)", "",
          f"Command: `{report['command']}`", "",
          "| engine | events | seconds | events/s | max state rows | final state rows | max state / live working set | result rows |",
          "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for s in (native, ours):
        md.append(f"| {s['engine']} | {s['events']} | {s['seconds']} | {s['events_per_second']} | "
                  f"{s['max_state_rows']} | {s['final_state_rows']} | {s['max_state_over_live_working_set']} | {s['result_rows']} |")
    md += ["", f"Results identical (count and checksum): **{same}**", "",
           f"Throughput ratio (punctuated / native): **{report['ratios']['throughput_punctuated_over_native']}**",
           f"Final state ratio (punctuated / native): **{report['ratios']['final_state_punctuated_over_native']}**", "",
           f"Per-batch figures: `{args.name}.csv`."]
    (RESULTS / f"{args.name}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
