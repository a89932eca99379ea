"""Windows per sensor: many open groups, a range punctuation advancing every micro-batch.

``SELECT sensor, window.start, count(*), max(temp) FROM readings GROUP BY sensor, window(ts, W)``
keeps one open window per sensor. Every micro-batch moves time on, so a range bound advances in
every one; a window closes only when time passes its end, every ``W / T`` micro-batches. Both
engines then pass over their stored groups once per micro-batch: Spark's watermark plan to evict
what its watermark passed (``StateStoreSaveExec`` in append mode), ours to close what the range
punctuation ``ts<=c`` covers (docs/aggregation.md, "Limits": no index by range value). This
measures that pass where it is largest: ``--sensors`` groups open, none closing in most
micro-batches. Engines, each in a fresh process, interleaved, ``--repeats`` times
(``benchmarks/harness.py``):

- ``watermark``: Spark's own aggregation, ``withWatermark(ts, "0 seconds")`` (punctuation rows
  filtered out: Spark does not read them), append mode;
- ``punctuated``: the stream declaring ``ts<=`` (marker ``p``), append mode, no watermark.

Workload: micro-batch ``b`` is one parquet file of ``--sensors`` readings (one per sensor) with
times uniform in ``[b*T, (b+1)*T)`` (``T`` = ``--seconds-per-batch``), then the punctuation "no
more readings at or before ``(b+1)*T`` less a microsecond" — what a 0-second watermark knows
after the batch; a last file holds one reading after every window's end, so that Spark's
watermark passes the last windows too (its own window stays open in both). Figures: rows per second of the query's wall time, the median micro-batch's
ms after the first, the most state rows, and the results (rows, summed counts and a checksum of
every final row, against the batch aggregation of the same files). Run::

    .venv/bin/python -m benchmarks.open_groups --sensors 100000 --batches 20 --forkless-fs --out /tmp/og
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import harness  # noqa: E402
from benchmarks.harness import spread  # noqa: E402

COLUMNS = "sensor BIGINT, ts TIMESTAMP, temp DOUBLE, p BOOLEAN"
ENGINES = ("watermark", "punctuated")
FIGURES = ("seconds", "batches", "input_rows", "rows_per_second", "later_batch_ms", "max_state_rows",
           "result_rows", "result_count", "result_checksum")
EPOCH = 1_767_225_600  # 2026-01-01 00:00:00 UTC, in seconds


def windows(df, window_seconds: int):
    """The query over ``df`` (data rows only reach the groups): per sensor and tumbling window
    its readings and the highest temperature."""
    from pyspark.sql import functions as F

    return (df.groupBy(F.col("sensor"), F.window(F.col("ts"), f"{window_seconds} seconds"))
            .agg(F.count("*").alias("n"), F.max("temp").alias("top"))
            .select("sensor", F.col("window.start").alias("start"), "n", "top"))


def digest(df) -> dict:
    """Rows, summed counts and an order-free checksum of result rows (``windows``' columns).

    The checksum sums a hash of each whole row, so two answers agree only if every row does."""
    from pyspark.sql import functions as F

    row = df.agg(F.count("*").alias("rows"), F.sum("n").alias("count"),
                 F.sum(F.abs(F.xxhash64("sensor", "start", "n", "top")) % 1_000_000_007).alias("checksum")).first()
    return {"rows": row["rows"], "count": row["count"] or 0, "checksum": row["checksum"] or 0}


def generate(spark, root: Path, sensors: int, batches: int, seconds: int, window_seconds: int, seed: int) -> dict:
    """One parquet file per micro-batch, its punctuation last; returns the batch answer's digest."""
    from pyspark.sql import functions as F

    for b in range(batches):
        start = EPOCH + b * seconds
        data = spark.range(0, sensors, numPartitions=1).select(
            F.col("id").alias("sensor"),
            F.timestamp_micros(F.lit(start * 1_000_000).cast("long") + F.floor(
                F.rand(seed * 1000 + b) * (seconds * 1_000_000)).cast("long")).alias("ts"),
            F.round(F.rand(seed * 1000 + b + 500) * 40, 1).alias("temp"),
            F.lit(False).alias("p"))
        punct = spark.createDataFrame([(None, None, None, True)], COLUMNS).select(
            F.col("sensor"), F.timestamp_micros(F.lit((start + seconds) * 1_000_000 - 1).cast("long")).alias("ts"),
            F.col("temp"), F.col("p"))
        data.union(punct).coalesce(1).write.parquet(str(root / f"b{b:05d}"))
    # a last file with one reading of sensor -1 after every window's end: Spark's watermark then
    # passes the last windows' end too (its own readings stay below it); that reading's window
    # stays open in both engines, so the answer leaves it out
    later = EPOCH + batches * seconds + window_seconds // 2
    spark.createDataFrame([(-1, None, 0.0, False)], COLUMNS).select(
        "sensor", F.timestamp_micros(F.lit(later * 1_000_000).cast("long")).alias("ts"), "temp", "p"
    ).coalesce(1).write.parquet(str(root / f"b{batches:05d}"))
    for b in range(batches + 1):
        src = next((root / f"b{b:05d}").glob("*.parquet"))
        src.rename(root / f"{b:05d}.parquet")
        shutil.rmtree(root / f"b{b:05d}")
    return digest(windows(spark.read.parquet(str(root)).where("NOT p AND sensor >= 0"), window_seconds))


def measure(spark, root: Path, checkpoint: Path, engine: str, window_seconds: int) -> dict:
    """Runs the query over every file (``availableNow``); wall time, results, state, batch times."""
    import punctuated

    df = spark.readStream.schema(COLUMNS).option("maxFilesPerTrigger", 1).parquet(str(root))
    if engine == "watermark":
        df = df.where("NOT p").withWatermark("ts", "0 seconds")
    else:
        df = punctuated.with_schemes(df, schemes=["ts<="], marker="p", name="readings")
    parts: list[dict] = []
    query = (windows(df, window_seconds).writeStream.outputMode("append")
             .foreachBatch(lambda batch, _: parts.append(digest(batch)))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    started = time.time()
    query.awaitTermination()
    seconds = time.time() - started
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0 or p["stateOperators"]]
    later = [p["durationMs"].get("triggerExecution", 0) for p in progress[1:] if p["numInputRows"] > 0]
    return {"seconds": round(seconds, 3), "batches": len(progress),
            "input_rows": sum(p["numInputRows"] for p in progress),
            "later_batch_ms": statistics.median(later) if later else 0,
            "max_state_rows": max((sum(o["numRowsTotal"] for o in p["stateOperators"]) for p in progress), default=0),
            "result_rows": sum(d["rows"] for d in parts), "result_count": sum(d["count"] for d in parts),
            "result_checksum": sum(d["checksum"] for d in parts)}


def child(args) -> int:
    from punctuated.cli import local_session

    tmp = Path(tempfile.mkdtemp(prefix="punctuated-open-groups-"))
    spark = local_session(str(tmp), app=f"punctuated-open-groups-{args.child}", driver_memory=args.driver_memory,
                          extra_conf=harness.forkless_conf(args))
    spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    try:
        if args.child == "generate":
            harness.emit(generate(spark, Path(args.data), args.sensors, args.batches, args.seconds_per_batch,
                                  args.window_seconds, args.seed))
        else:
            harness.emit(measure(spark, Path(args.data), tmp / "ckpt", args.child, args.window_seconds))
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sensors", type=int, default=100_000, help="sensors: readings per micro-batch, open windows")
    ap.add_argument("--batches", type=int, default=20, help="micro-batches (a multiple of the window's)")
    ap.add_argument("--seconds-per-batch", type=int, default=60, help="event time each micro-batch covers")
    ap.add_argument("--window-seconds", type=int, default=600, help="the tumbling window's length")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    harness.add_forkless_option(ap)
    harness.add_generated_run_options(ap, "open_groups")
    ap.add_argument("--driver-memory", default="4g")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    if (args.batches * args.seconds_per_batch) % args.window_seconds:
        ap.error("--batches × --seconds-per-batch must be a multiple of --window-seconds: the last "
                 "punctuation then closes every window, and the batch answer is every group")

    common = ["--sensors", str(args.sensors), "--batches", str(args.batches), "--seconds-per-batch",
              str(args.seconds_per_batch), "--window-seconds", str(args.window_seconds), "--partitions",
              str(args.partitions), "--seed", str(args.seed), "--driver-memory", args.driver_memory] + \
        harness.forkless_flag(args)
    started = time.time()
    expected, runs = harness.generate_and_run("benchmarks.open_groups", ENGINES, common, args.repeats,
                                              "punctuated-open-groups-data-")
    if any(r is None for rs in runs.values() for r in rs):
        raise SystemExit("an engine failed (its output above)")
    runs = {e: [{**r, "rows_per_second": r["input_rows"] / r["seconds"]} for r in rs] for e, rs in runs.items()}
    wrong = {(e, r["rep"]): {k: r[f"result_{k}"] for k in ("rows", "count", "checksum")}
             for e, rs in runs.items() for r in rs
             if (r["result_rows"], r["result_count"], r["result_checksum"]) !=
             (expected["rows"], expected["count"], expected["checksum"])}
    if wrong:
        raise SystemExit(f"results differ from the batch aggregation's {expected}: {wrong}")
    figures = {e: {k: spread([r[k] for r in rs]) for k in FIGURES} for e, rs in runs.items()}
    ratios = {"throughput": harness.ratio_spread(runs, "rows_per_second", "punctuated", "watermark"),
              "later_batch_ms": harness.ratio_spread(runs, "later_batch_ms", "punctuated", "watermark"),
              "max_state_rows": harness.ratio_spread(runs, "max_state_rows", "punctuated", "watermark")}
    report = {"command": "python -m benchmarks.open_groups " + " ".join(argv), "config": vars(args),
              "minutes": round((time.time() - started) / 60, 1), "load_average_1min": harness.load_summary(runs),
              "cpus": os.cpu_count(), "expected": expected, "results": figures, "punctuated_over_watermark": ratios,
              "runs": runs}
    harness.write_report(args.out, args.name, report, markdown(report, args))
    return 0


def markdown(report: dict, args) -> str:
    f, r = report["results"], report["punctuated_over_watermark"]

    def cell(s, digits=0):
        return f"{s['median']:,.{digits}f} ({s['min']:,.{digits}f}–{s['max']:,.{digits}f})"

    per_window = args.window_seconds // args.seconds_per_batch
    lines = ["# Windows per sensor: many open groups, a range advancing every micro-batch", "",
             f"Command: `{report['command']}`", "",
             f"{args.sensors:,} sensors, one reading each per micro-batch, {args.batches} micro-batches of "
             f"{args.seconds_per_batch} s of event time, windows of {args.window_seconds} s (each closes after "
             f"{per_window} micro-batches), {args.partitions} partitions{harness.forkless_note(args)}. Both engines' "
             f"results equal the batch aggregation's ({report['expected']['rows']:,} windows, every row's checksum). "
             f"{args.repeats} repetitions, each engine in a fresh process, interleaved; medians (min–max). "
             f"{report['minutes']} minutes; 1-minute load {harness.fmt_spread(report['load_average_1min'], 2)} "
             f"on {report['cpus']} cores.", "",
             "| engine | rows/s | micro-batch ms after the first | most state rows | micro-batches |",
             "|---|---:|---:|---:|---:|"]
    for e in ENGINES:
        lines.append(f"| {e} | {cell(f[e]['rows_per_second'])} | {cell(f[e]['later_batch_ms'])} | "
                     f"{cell(f[e]['max_state_rows'])} | {cell(f[e]['batches'])} |")
    lines += ["", "Punctuated over Spark's watermark plan (paired per repetition; median, min–max): throughput "
              f"**{harness.fmt_spread(r['throughput'])}**, micro-batch ms after the first "
              f"{harness.fmt_spread(r['later_batch_ms'])}, most state rows {harness.fmt_spread(r['max_state_rows'])}."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
