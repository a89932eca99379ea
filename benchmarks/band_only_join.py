"""A join on time alone (no key in common) against Spark's own plan for it: throughput, state, results.

``SELECT ... FROM impressions i JOIN clicks c ON c.ts BETWEEN i.ts AND i.ts + band`` has no
equality predicate, and Spark refuses a stream-stream join without one. Punctuated runs it on
time buckets (docs/joins.md, "Band-only joins"): one input keyed by its time's bucket, the
other copied into the buckets its band covers, rows forgotten once the other input's range
punctuations ``ts<=c`` pass their band. A Spark user writes the same thing by hand: a bucket
key on both inputs (``explode`` of the buckets on one side), watermarks on both time columns
and the band, so that Spark's time-interval join evicts by the watermark. Engines, each in a
fresh process, interleaved, ``--repeats`` times (``benchmarks/harness.py``):

- ``native``: Spark's own join of the hand-bucketed query, ``withWatermark(ts, "0 seconds")``
  on both inputs (punctuation rows filtered out: Spark does not read them);
- ``punctuated``: the query as written, both inputs declaring ``ts<=`` (marker ``p``).

Workload: ``--rows`` rows (half per input) in ``--batches`` micro-batches, one parquet file per
input per batch; batch ``b``'s rows have times uniform in ``[b*S, (b+1)*S)`` seconds (``S`` =
``--seconds-per-batch``), and each file ends with the punctuation "no more rows at or before
``(b+1)*S`` less a microsecond" — the same knowledge a 0-second watermark has. Figures: rows per
second of the query's wall time, result rows (counted per micro-batch by ``foreachBatch``,
checked against the batch join of the same files, itself bucketed: a batch join on a band
alone is a nested loop), state rows and ``memoryUsedBytes`` after
the last micro-batch. Run::

    .venv/bin/python -m benchmarks.band_only_join --rows 400000 --batches 20 --out /tmp/bo
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import harness  # noqa: E402
from benchmarks.harness import spread  # noqa: E402

COLUMNS = "id BIGINT, ts TIMESTAMP, p BOOLEAN"
ENGINES = ("native", "punctuated")
FIGURES = ("seconds", "batches", "input_rows", "result_rows", "state_rows", "state_memory_bytes",
           "rows_per_second")
EPOCH = 1_767_225_600  # 2026-01-01 00:00:00 UTC, in seconds


def generate(spark, root: Path, rows: int, batches: int, seconds: int, band: int, seed: int) -> int:
    """One parquet file per input per micro-batch, the batch's punctuation last; returns the
    exact join's row count (the batch join of the data rows)."""
    from pyspark.sql import functions as F

    per_batch = rows // 2 // batches
    for b in range(batches):
        for i, name in enumerate(("impressions", "clicks")):
            lo = b * per_batch
            start = EPOCH + b * seconds
            data = spark.range(lo, lo + per_batch, numPartitions=1).select(
                F.col("id"),
                F.timestamp_micros(F.lit(start * 1_000_000).cast("long") + F.floor(
                    F.rand(seed * 1000 + b * 2 + i) * (seconds * 1_000_000)).cast("long")).alias("ts"),
                F.lit(False).alias("p"))
            punct = spark.createDataFrame([(None, None, True)], COLUMNS).select(
                F.col("id"), F.timestamp_micros(F.lit((start + seconds) * 1_000_000 - 1).cast("long")).alias("ts"), F.col("p"))
            data.union(punct).coalesce(1).write.parquet(str(root / name / f"b{b:05d}"))
    for name in ("impressions", "clicks"):
        for b in range(batches):
            src = next((root / name / f"b{b:05d}").glob("*.parquet"))
            src.rename(root / name / f"{b:05d}.parquet")
            shutil.rmtree(root / name / f"b{b:05d}")
    i, c = (spark.read.parquet(str(root / n)).where("NOT p") for n in ("impressions", "clicks"))
    exact = bucketed_join(i, c, band).count()
    if rows <= 20_000:  # small enough for the nested loop: the buckets checked against it
        loop = i.join(c, c["ts"].between(i["ts"], i["ts"] + F.expr(f"INTERVAL {band} SECONDS"))).count()
        if loop != exact:
            raise SystemExit(f"the bucketed batch join gives {exact} rows, the nested loop {loop}")
    return exact


def bucketed_join(i, c, band: int):
    """``i ⋈ c ON c.ts BETWEEN i.ts AND i.ts + band`` with a hand-written bucket key (width
    ``band + 1`` seconds; each impression in the buckets its band covers), as a Spark user writes
    it: an equi-join, never a nested loop. The same for the batch answer and for Spark's engine."""
    from pyspark.sql import functions as F

    width = band + 1
    cb = c.withColumn("bucket", F.floor(F.unix_seconds(c["ts"]) / width))
    ib = i.withColumn("bucket", F.explode(F.sequence(F.floor(F.unix_seconds(i["ts"]) / width),
                                                     F.floor((F.unix_seconds(i["ts"]) + band) / width))))
    joined = ib.join(cb, (ib["bucket"] == cb["bucket"]) &
                     cb["ts"].between(ib["ts"], ib["ts"] + F.expr(f"INTERVAL {band} SECONDS")))
    return joined.select(ib["id"].alias("iid"), cb["id"].alias("cid"))


def measure(spark, root: Path, checkpoint: Path, engine: str, band: int) -> dict:
    """Runs the join over every file (``availableNow``); wall time, results, the state it holds."""
    import punctuated
    from pyspark.sql import functions as F

    def stream(name):
        df = spark.readStream.schema(COLUMNS).option("maxFilesPerTrigger", 1).parquet(str(root / name))
        if engine == "native":
            return df.where("NOT p").withWatermark("ts", "0 seconds")
        return punctuated.with_schemes(df, schemes=["ts<="], marker="p", name=name)

    i, c = stream("impressions"), stream("clicks")
    within = c["ts"].between(i["ts"], i["ts"] + F.expr(f"INTERVAL {band} SECONDS"))
    if engine == "native":
        joined = bucketed_join(i, c, band)
    else:
        joined = i.join(c, within).select(i["id"].alias("iid"), c["id"].alias("cid"))
    counts: list[int] = []
    query = (joined.writeStream.foreachBatch(lambda df, _: counts.append(df.count()))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    started = time.time()
    query.awaitTermination()
    seconds = time.time() - started
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0 and p["stateOperators"]]
    ops = [p["stateOperators"] for p in progress]
    return {"seconds": round(seconds, 3), "batches": len(progress),
            "input_rows": sum(p["numInputRows"] for p in progress),
            "result_rows": sum(counts),
            "state_rows": sum(o["numRowsTotal"] for o in ops[-1]) if ops else 0,
            "state_memory_bytes": sum(o["memoryUsedBytes"] for o in ops[-1]) if ops else 0}


def child(args) -> int:
    from punctuated.cli import local_session

    tmp = Path(tempfile.mkdtemp(prefix="punctuated-band-only-"))
    extra = harness.forkless_conf(args)
    spark = local_session(str(tmp), app=f"punctuated-band-only-{args.child}", driver_memory=args.driver_memory,
                          extra_conf=extra)
    spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    try:
        if args.child == "generate":
            harness.emit({"exact_rows": generate(spark, Path(args.data), args.rows, args.batches,
                                                 args.seconds_per_batch, args.band, args.seed)})
        else:
            harness.emit(measure(spark, Path(args.data), tmp / "ckpt", args.child, args.band))
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=400_000, help="input rows in total (both inputs)")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--seconds-per-batch", type=int, default=3600, help="event time each micro-batch covers")
    ap.add_argument("--band", type=int, default=2, help="band width in seconds: c.ts in [i.ts, i.ts + band]")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    harness.add_forkless_option(ap)
    harness.add_generated_run_options(ap, "band_only_join")
    ap.add_argument("--driver-memory", default="3g")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)

    common = ["--rows", str(args.rows), "--batches", str(args.batches), "--seconds-per-batch",
              str(args.seconds_per_batch), "--band", str(args.band), "--partitions", str(args.partitions),
              "--seed", str(args.seed), "--driver-memory", args.driver_memory] + \
        harness.forkless_flag(args)
    started = time.time()
    generated, runs = harness.generate_and_run("benchmarks.band_only_join", ENGINES, common, args.repeats,
                                               "punctuated-band-only-data-")
    exact = generated["exact_rows"]
    if any(r is None for rs in runs.values() for r in rs):
        raise SystemExit("an engine failed (its output above)")
    runs = {e: [{**r, "rows_per_second": r["input_rows"] / r["seconds"]} for r in rs] for e, rs in runs.items()}
    figures = {e: {k: spread([r[k] for r in rs]) for k in FIGURES} for e, rs in runs.items()}
    wrong = {e: f["result_rows"] for e, f in figures.items() if f["result_rows"]["min"] != exact
             or f["result_rows"]["max"] != exact}
    if wrong:
        raise SystemExit(f"results differ from the batch join's {exact} rows: {wrong}")
    ratios = {"throughput": harness.ratio_spread(runs, "rows_per_second", "punctuated", "native"),
              "state_rows": harness.ratio_spread(runs, "state_rows", "punctuated", "native"),
              "state_memory": harness.ratio_spread(runs, "state_memory_bytes", "punctuated", "native")}
    report = {"command": "python -m benchmarks.band_only_join " + " ".join(argv), "config": vars(args),
              "minutes": round((time.time() - started) / 60, 1), "load_average_1min": harness.load_summary(runs),
              "cpus": os.cpu_count(), "exact_rows": exact, "results": figures, "punctuated_over_native": ratios}
    harness.write_report(args.out, args.name, report, markdown(report, args))
    return 0


def markdown(report: dict, args) -> str:
    f, r = report["results"], report["punctuated_over_native"]

    def cell(s, digits=0):
        return f"{s['median']:,.{digits}f} ({s['min']:,.{digits}f}–{s['max']:,.{digits}f})"

    fs = harness.forkless_note(args)
    lines = ["# A join on time alone against Spark's own plan for it", "",
             f"Command: `{report['command']}`", "",
             f"{args.rows:,} input rows (half per input) in {args.batches} micro-batches of {args.seconds_per_batch} s "
             f"of event time, band {args.band} s, {args.partitions} partitions{fs}. Both engines' results equal the "
             f"batch join's **{report['exact_rows']:,} rows**. {args.repeats} repetitions, each engine in a fresh "
             f"process, interleaved; medians (min–max). {report['minutes']} minutes; 1-minute load "
             f"{harness.fmt_spread(report['load_average_1min'], 2)} on {report['cpus']} cores.", "",
             "| engine | rows/s | state rows (end) | state memory bytes (end) | result rows |",
             "|---|---:|---:|---:|---:|"]
    for e in ENGINES:
        lines.append(f"| {e} | {cell(f[e]['rows_per_second'])} | {cell(f[e]['state_rows'])} | "
                     f"{cell(f[e]['state_memory_bytes'])} | {cell(f[e]['result_rows'])} |")
    lines += ["", "Punctuated over Spark's own plan (paired per repetition; median, min–max): throughput "
              f"**{harness.fmt_spread(r['throughput'])}**, state memory {harness.fmt_spread(r['state_memory'])} "
              f"(state rows at the end: {f['punctuated']['state_rows']['median']:,.0f} against "
              f"{f['native']['state_rows']['median']:,.0f})."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
