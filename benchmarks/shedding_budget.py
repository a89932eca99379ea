"""A skewed join under a state budget against Spark's own join: state, memory, throughput, results kept.

The user's view of load shedding (Das, Gehrke and Riedewald 2005; docs/joins.md "Load
shedding"): a stream-stream join on a key that never closes — no punctuation arrives, no
watermark bounds it — so Spark's own join keeps every row it has seen. With
``spark.punctuated.shedding.maxStateRows = M`` the punctuated join holds at most ``M`` rows per
partition after every micro-batch and sheds the rest by ``spark.punctuated.shedding.policy``;
its results are a subset of the exact join. How much of the result a budget keeps depends on
which rows it keeps: ``prob`` keeps the rows whose key the other input sends most often.

Workload: two inputs of ``--rows / 2`` rows each, one parquet file per input per micro-batch,
keys skewed by a power law (``k = floor(D * u^2)``, ``u`` uniform: ``P(k)`` falls as
``k^(-1/2)``, the hottest keys a few hundred times as frequent as the median one; ``D`` =
``--domain``), independently drawn per input. Engines, each in a fresh process, interleaved,
``--repeats`` times (``benchmarks/harness.py``):

- ``native``: Spark's own join of the same files, nothing declared (exact, unbounded state);
- ``prob``, ``rand`` (and ``life`` if asked): both inputs declare the scheme ``k`` (marker
  ``p``, never true: no punctuation ever arrives) and the budget ``--budget`` per partition.

Figures: throughput (input rows per second of the query's wall time), state rows and the state
stores' ``memoryUsedBytes`` after the last micro-batch (and the most rows after any), rows shed,
result rows (counted per micro-batch by ``foreachBatch``), and the share of the exact result
each engine keeps (the exact count: the batch join of the same files). Run::

    .venv/bin/python -m benchmarks.shedding_budget --rows 400000 --batches 20 --budget 20000 --out /tmp/sb
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

COLUMNS = "id BIGINT, k INT, v INT, p BOOLEAN"
POLICIES = ("prob", "life", "rand")
#: what a child measures (``measure``) and the parent derives, summarised per engine
FIGURES = ("seconds", "batches", "input_rows", "result_rows", "state_rows", "max_state_rows",
           "state_memory_bytes", "rows_shed", "rows_per_second")


def generate(spark, root: Path, rows: int, batches: int, domain: int, seed: int) -> int:
    """One parquet file per input per micro-batch; returns the exact join's row count."""
    from pyspark.sql import functions as F

    per_batch = rows // 2 // batches
    for b in range(batches):
        for i, name in enumerate(("left", "right")):
            lo = b * per_batch
            u = F.rand(seed * 1000 + b * 2 + i)
            df = spark.range(lo, lo + per_batch, numPartitions=1).select(
                F.col("id"), F.floor(F.lit(domain) * u * u).cast("int").alias("k"),
                (F.col("id") * 7 % 10007).cast("int").alias("v"), F.lit(False).alias("p"))
            df.write.parquet(str(root / name / f"b{b:05d}"))
    for name in ("left", "right"):
        for b in range(batches):
            src = next((root / name / f"b{b:05d}").glob("*.parquet"))
            src.rename(root / name / f"{b:05d}.parquet")
            shutil.rmtree(root / name / f"b{b:05d}")
    left, right = (spark.read.parquet(str(root / n)) for n in ("left", "right"))
    return left.join(right, "k").count()


def measure(spark, root: Path, checkpoint: Path, engine: str, budget: int) -> dict:
    """Runs the join over every file (``availableNow``); wall time, results, the state it holds."""
    import punctuated

    if engine != "native":
        spark.conf.set("spark.punctuated.shedding.maxStateRows", str(budget))
        spark.conf.set("spark.punctuated.shedding.policy", engine)

    def stream(name):
        df = spark.readStream.schema(COLUMNS).option("maxFilesPerTrigger", 1).parquet(str(root / name))
        return df if engine == "native" else punctuated.with_schemes(df, schemes=["k"], marker="p", name=name)

    left, right = stream("left"), stream("right")
    joined = left.join(right, left["k"] == right["k"]).select(left["id"].alias("lid"), right["id"].alias("rid"))
    counts: list[int] = []
    query = (joined.writeStream.foreachBatch(lambda df, _: counts.append(df.count()))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    started = time.time()
    query.awaitTermination()
    seconds = time.time() - started
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0 and p["stateOperators"]]
    ops = [p["stateOperators"] for p in progress]
    custom = [o.get("customMetrics", {}) for p in ops for o in p]
    return {"seconds": round(seconds, 3), "batches": len(progress),
            "input_rows": sum(p["numInputRows"] for p in progress),
            "result_rows": sum(counts),
            "state_rows": sum(o["numRowsTotal"] for o in ops[-1]) if ops else 0,
            "max_state_rows": max((sum(o["numRowsTotal"] for o in p) for p in ops), default=0),
            # every state store of the join (ours: rows, estimates and metadata alike)
            "state_memory_bytes": sum(o["memoryUsedBytes"] for o in ops[-1]) if ops else 0,
            "rows_shed": sum(c.get("numRowsShed", 0) for c in custom)}


def child(args) -> int:
    from punctuated.cli import local_session

    tmp = Path(tempfile.mkdtemp(prefix="punctuated-shedding-budget-"))
    spark = local_session(str(tmp), app=f"punctuated-shedding-budget-{args.child}",
                          driver_memory=args.driver_memory)
    spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    try:
        if args.child == "generate":
            exact = generate(spark, Path(args.data), args.rows, args.batches, args.domain, args.seed)
            harness.emit({"exact_rows": exact})
        else:
            harness.emit(measure(spark, Path(args.data), tmp / "ckpt", args.child, args.budget))
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def kept_share(result_rows: float, exact_rows: int) -> float:
    """The share of the exact result an engine produced: ``kept_share(50, 200) == 0.25``."""
    return round(result_rows / exact_rows, 3) if exact_rows else 1.0


def check(figures: dict, runs: dict, exact: int, budget: int, partitions: int) -> None:
    """Spark's own join is exact; a budget engine keeps at most the exact result and at most
    ``budget`` rows per partition after every batch (the state rows of all partitions); and in
    every run each input row is either held at the end or counted as shed (no key ever closes
    here, so nothing is purged): ``rows_shed + state_rows == input_rows``."""
    if figures["native"]["result_rows"]["median"] != exact:
        raise SystemExit(f"Spark's own join gave {figures['native']['result_rows']} rows, the batch join {exact}")
    for e, f in figures.items():
        if e == "native":
            continue
        if f["result_rows"]["max"] > exact:
            raise SystemExit(f"{e}: more rows than the exact join: {f['result_rows']} > {exact}")
        if f["max_state_rows"]["max"] > budget * partitions:
            raise SystemExit(f"{e}: {f['max_state_rows']} state rows over the budget {budget} x {partitions}")
        for r in runs[e]:
            if r["rows_shed"] + r["state_rows"] != r["input_rows"]:
                raise SystemExit(f"{e}: {r['rows_shed']:,} rows shed + {r['state_rows']:,} held != "
                                 f"{r['input_rows']:,} input rows (a row neither held nor counted as shed)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=400_000, help="input rows in total (both inputs)")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--domain", type=int, default=1_000_000, help="key domain D")
    ap.add_argument("--budget", type=int, default=20_000, help="maxStateRows per partition")
    ap.add_argument("--policies", default="prob,rand", help=f"comma-separated, of {', '.join(POLICIES)}")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    harness.add_generated_run_options(ap, "shedding_budget")
    ap.add_argument("--driver-memory", default="3g")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if not policies or any(p not in POLICIES for p in policies):
        ap.error(f"--policies: choose from {', '.join(POLICIES)}")
    engines = ["native", *policies]

    common = ["--rows", str(args.rows), "--batches", str(args.batches), "--domain", str(args.domain),
              "--budget", str(args.budget), "--partitions", str(args.partitions), "--seed", str(args.seed),
              "--driver-memory", args.driver_memory]
    started = time.time()
    generated, runs = harness.generate_and_run("benchmarks.shedding_budget", engines, common, args.repeats,
                                               "punctuated-shedding-budget-data-")
    exact = generated["exact_rows"]
    failed = [e for e, rs in runs.items() if any(r is None for r in rs)]
    if failed:
        raise SystemExit(f"engines {failed} failed (their output above)")
    throughput = {e: [{**r, "rows_per_second": r["input_rows"] / r["seconds"]} for r in rs]
                  for e, rs in runs.items()}
    figures = {e: {k: spread([r[k] for r in rs]) for k in FIGURES} for e, rs in throughput.items()}
    check(figures, runs, exact, args.budget, args.partitions)
    ratios = {e: {"throughput": harness.ratio_spread(throughput, "rows_per_second", e, "native"),
                  "state_memory": harness.ratio_spread(throughput, "state_memory_bytes", e, "native"),
                  "kept": kept_share(figures[e]["result_rows"]["median"], exact)}
              for e in engines if e != "native"}
    report = {"command": "python -m benchmarks.shedding_budget " + " ".join(argv), "config": vars(args),
              "minutes": round((time.time() - started) / 60, 1), "load_average_1min": harness.load_summary(runs),
              "cpus": os.cpu_count(), "exact_rows": exact, "results": figures, "ratios_over_native": ratios}
    harness.write_report(args.out, args.name, report, markdown(report, engines, args))
    return 0


def markdown(report: dict, engines: list[str], args) -> str:
    f, r = report["results"], report["ratios_over_native"]

    def cell(s, digits=0):
        return f"{s['median']:,.{digits}f} ({s['min']:,.{digits}f}–{s['max']:,.{digits}f})"

    lines = ["# A skewed join under a state budget against Spark's own join", "",
             f"Command: `{report['command']}`", "",
             f"{args.rows:,} input rows (half per input) in {args.batches} micro-batches, keys "
             f"`floor({args.domain:,} * u^2)` per input, no punctuation arriving; {args.partitions} partitions; "
             f"budget {args.budget:,} rows per partition for the shedding engines. Exact result (the batch join): "
             f"**{report['exact_rows']:,} rows**. {args.repeats} repetitions, each engine in a fresh process, "
             f"interleaved; medians (min–max). {report['minutes']} minutes; 1-minute load "
             f"{harness.fmt_spread(report['load_average_1min'], 2)} on {report['cpus']} cores.", "",
             "| engine | rows/s | state rows (end) | max state rows | state memory bytes (end) | rows shed | "
             "result rows | share of exact |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for e in engines:
        kept = 1.0 if e == "native" else r[e]["kept"]
        lines.append(f"| {e} | {cell(f[e]['rows_per_second'])} | {cell(f[e]['state_rows'])} | "
                     f"{cell(f[e]['max_state_rows'])} | {cell(f[e]['state_memory_bytes'])} | "
                     f"{cell(f[e]['rows_shed'])} | {cell(f[e]['result_rows'])} | {kept} |")
    lines += ["", "Ratios over Spark's own join (paired per repetition; median, min–max):", ""]
    for e in engines[1:]:
        lines.append(f"- {e}: throughput **{harness.fmt_spread(r[e]['throughput'])}**, state memory "
                     f"**{harness.fmt_spread(r[e]['state_memory'])}**, results kept **{r[e]['kept']}** of the exact join")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
