"""State memory benchmark: bytes per stored row of Spark's own stream-stream join and Punctuated's.

The same input rows go into (a) Spark's own inner stream-stream join (streams without
punctuation declarations) and (b) Punctuated's join (the streams declared, no punctuation
row arriving), over a few micro-batches. Nothing is ever purged, so both hold every data
row; the last progress gives per engine ``numRowsTotal`` and ``memoryUsedBytes`` (the state
stores' own estimate: the HDFS-backed provider's size of its in-memory maps, RocksDB's
memory use) and their quotient, bytes per stored row, side by side with the ratio
punctuated / native. For Punctuated it also records ``numPunctuationsHeld`` and
``numRangeIndexEntries``; with RocksDB also its SST file and memtable sizes.

Row shapes (each input; ``k`` the join key, unique per row; the right input's keys overlap
half of the left's, so half the rows find a partner):

* ``narrow``: ``k INT, g INT, v INT`` (three ints);
* ``wide``: ``k INT, name STRING, city STRING, note STRING`` (strings of 8 to 40 characters).

Scenarios:

* ``none``: both inputs declare the scheme ``k``; no punctuation arrives, nothing is held;
* ``held``: the join key is ``(g, k)``; the right input declares the range scheme ``g, k<=``
  and its first micro-batch carries a punctuation for each of ``--held`` values of ``g``
  closing nothing stored (``k <= -1``): every partition holds a copy of each (counted in
  ``numPunctuationsHeld``), and the left input's stored keys are indexed for that scheme
  (``numRangeIndexEntries``). Spark's own join reads the same files without the punctuation
  rows.

Every (configuration, engine, repetition) runs in a fresh Python and JVM process; the
engines alternate, configurations are repeated ``--repeats`` times, and the summary has
per figure the median and the spread (min to max). Run::

    .venv/bin/python benchmarks/state_memory.py --rows 100000,1000000 --shapes narrow,wide --repeats 3
"""

from __future__ import annotations

import argparse
import json
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

RESULTS = Path(__file__).resolve().parent / "results"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
COLUMNS = {
    "narrow": "k INT, g INT, v INT, is_punct BOOLEAN",
    "wide": "k INT, g INT, name STRING, city STRING, note STRING, is_punct BOOLEAN",
}
NOTES = "## Where the bytes go"
DATA = {"narrow": ["k", "g", "v"], "wide": ["k", "g", "name", "city", "note"]}


def session(tmp: Path, state_store: str, driver_memory: str):
    from punctuated.cli import local_session

    spark = local_session(str(tmp), app="punctuated-state-memory", driver_memory=driver_memory)
    if state_store == "rocksdb":
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
    return spark


def generate(spark, root: Path, shape: str, rows: int, batches: int, held: int) -> None:
    """One parquet file per input per micro-batch under ``root/left`` and ``root/right``."""
    from pyspark.sql import functions as F

    per_side = rows // 2
    per_batch = per_side // batches

    def side(lo: int, hi: int, offset: int):
        k = (F.col("id") + F.lit(offset)).cast("int")
        cols = [k.alias("k"), (k % 1000).cast("int").alias("g")]
        if shape == "narrow":
            cols.append((F.col("id") * 7 % 1_000_003).cast("int").alias("v"))
        else:
            cols += [F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
                     F.element_at(F.array(*[F.lit(c) for c in ("Lisbon", "Amsterdam", "Reykjavik", "Ouagadougou")]),
                                  (F.col("id") % 4 + 1).cast("int")).alias("city"),
                     F.concat(F.lit("a note of some length about row "), F.col("id").cast("string")).alias("note")]
        cols.append(F.lit(False).alias("is_punct"))
        return spark.range(lo, hi).select(*cols)

    for b in range(batches):
        lo, hi = b * per_batch, (b + 1) * per_batch
        left = side(lo, hi, 0)
        right = side(lo, hi, per_side // 2)
        if b == 0 and held:
            nulls = [F.lit(None).cast(t.split()[1]).alias(t.split()[0])
                     for t in COLUMNS[shape].split(", ")[2:-1]]
            puncts = spark.range(held).select(F.lit(-1).cast("int").alias("k"), F.col("id").cast("int").alias("g"),
                                              *nulls, F.lit(True).alias("is_punct"))
            right = right.unionByName(puncts)
        for name, df in (("left", left), ("right", right)):
            df.coalesce(1).write.parquet(str(root / name / f"b{b:05d}"))
    for name in ("left", "right"):
        for b in range(batches):
            src = next((root / name / f"b{b:05d}").glob("*.parquet"))
            src.rename(root / name / f"{b:05d}.parquet")
            shutil.rmtree(root / name / f"b{b:05d}")


def measure(spark, root: Path, shape: str, engine: str, scenario: str, checkpoint: Path) -> dict:
    """Runs one engine over all files; returns the state figures of its last progress."""
    import punctuated
    from pyspark.sql import functions as F

    def stream(name):
        return spark.readStream.schema(COLUMNS[shape]).option("maxFilesPerTrigger", 1).parquet(str(root / name))

    left, right = stream("left"), stream("right")
    if engine == "punctuated":
        left = punctuated.with_schemes(left, schemes=["k"] if scenario == "none" else ["g, k"],
                                       marker="is_punct", name="l")
        right = punctuated.with_schemes(right, schemes=["k"] if scenario == "none" else ["g, k<="],
                                        marker="is_punct", name="r")
    else:
        right = right.where(~F.col("is_punct"))
    cond = left["k"] == right["k"]
    if scenario == "held":
        cond = cond & (left["g"] == right["g"])
    data = DATA[shape]
    joined = left.join(right, cond).select(*[left[c].alias("l_" + c) for c in data],
                                           *[right[c].alias("r_" + c) for c in data])
    query = (joined.writeStream.format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    started = time.time()
    query.awaitTermination()
    seconds = time.time() - started
    progress = [p for p in query.recentProgress if p["stateOperators"]]
    last = progress[-1]["stateOperators"][0]
    custom = last.get("customMetrics", {})
    out = {"num_rows_total": last["numRowsTotal"], "memory_used_bytes": last["memoryUsedBytes"],
           "batches": len(progress), "seconds": round(seconds, 2)}
    for name in ("numPunctuationsHeld", "numRangeIndexEntries"):
        if name in custom:
            out[name] = custom[name]
    for name, value in custom.items():
        if name.startswith("rocksdb") and ("Size" in name or "Memory" in name or "Bytes" in name):
            out[name] = value
    out["bytes_per_row"] = round(out["memory_used_bytes"] / max(1, out["num_rows_total"]), 1)
    return out


def child(args) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="punctuated-statemem-"))
    spark = session(tmp, args.state_store, args.driver_memory)
    try:
        if args.child == "generate":
            generate(spark, Path(args.data), args.shape, args.rows, args.batches, args.held_values)
            print(json.dumps({"ok": True}))
        else:
            result = measure(spark, Path(args.data), args.shape, args.child, args.scenario, tmp / "ckpt")
            print("RESULT " + json.dumps(result))
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def spawn(extra: list[str]) -> dict | None:
    return harness.spawn([sys.executable, str(Path(__file__).resolve())] + extra)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="100000,1000000", help="stored rows in total (both inputs), comma-separated")
    ap.add_argument("--shapes", default="narrow,wide")
    ap.add_argument("--scenarios", default="none,held")
    ap.add_argument("--held-rows", type=int, default=100000, help="rows of the held scenario (narrow only)")
    ap.add_argument("--held-values", type=int, default=10, help="values of g punctuated in the held scenario")
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--state-store", choices=["hdfs", "rocksdb"], default="hdfs")
    ap.add_argument("--name", default=None)
    ap.add_argument("--out", default=str(harness.DEFAULT_OUT),
                    help=f"directory for the JSON and Markdown (default {harness.DEFAULT_OUT}; the recorded "
                         "results are written only when given --out benchmarks/results)")
    ap.add_argument("--driver-memory", default="4g")
    # internal: one step in a fresh process
    ap.add_argument("--child", choices=["generate", "native", "punctuated"], help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--shape", help=argparse.SUPPRESS)
    ap.add_argument("--scenario", default="none", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        args.rows = int(args.rows)
        return child(args)

    name = args.name or ("state_memory" if args.state_store == "hdfs" else f"state_memory_{args.state_store}")
    configs = []
    for scenario in args.scenarios.split(","):
        if scenario == "none":
            configs += [(scenario, s, int(r)) for s in args.shapes.split(",") for r in args.rows.split(",")]
        else:
            configs.append((scenario, "narrow", args.held_rows))
    common = ["--batches", str(args.batches), "--state-store", args.state_store, "--driver-memory", args.driver_memory]
    root = Path(tempfile.mkdtemp(prefix="punctuated-statemem-data-"))
    load = []
    started = time.time()
    runs = {c: {"native": [], "punctuated": []} for c in configs}
    try:
        for scenario, shape, rows in configs:
            held = args.held_values if scenario == "held" else 0
            spawn(["--child", "generate", "--data", str(root / f"{scenario}-{shape}-{rows}"), "--shape", shape,
                   "--rows", str(rows), "--held-values", str(held)] + common)
        for rep in range(args.repeats):
            for scenario, shape, rows in configs:
                for engine in (("native", "punctuated") if rep % 2 == 0 else ("punctuated", "native")):
                    load.append(os.getloadavg()[0])
                    r = spawn(["--child", engine, "--data", str(root / f"{scenario}-{shape}-{rows}"), "--shape", shape,
                               "--rows", str(rows), "--scenario", scenario] + common)
                    runs[(scenario, shape, rows)][engine].append(r)
                    print(f"[{rep}] {scenario} {shape} {rows} {engine}: {r}", file=sys.stderr)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    summary = []
    for (scenario, shape, rows), by_engine in runs.items():
        entry = {"scenario": scenario, "shape": shape, "rows": rows}
        for engine, results in by_engine.items():
            figures = {}
            for key in results[0]:
                values = [r[key] for r in results if isinstance(r.get(key), (int, float))]
                if values:
                    figures[key] = spread(values)
            entry[engine] = figures
        entry["bytes_per_row_ratio"] = round(entry["punctuated"]["bytes_per_row"]["median"]
                                             / entry["native"]["bytes_per_row"]["median"], 3)
        summary.append(entry)
    report = {
        "command": "python benchmarks/state_memory.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "config": vars(args), "minutes": round((time.time() - started) / 60, 1),
        "load_average_1min": spread(load), "cpus": os.cpu_count(), "results": summary}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    md = [f"# State memory per stored row: Spark's own join vs Punctuated ({args.state_store} state store)", "",
          f"Command: `{report['command']}`", "",
          f"{args.repeats} repetitions, each engine in a fresh process, engines alternating; medians, "
          f"with min–max in brackets. {report['minutes']} minutes; 1-minute load average "
          f"{spread(load)['median']:.1f} (min {min(load):.1f}, max {max(load):.1f}) on {os.cpu_count()} cores.", "",
          "| scenario | shape | rows | native rows | native bytes | native bytes/row | punctuated rows | "
          "punctuated bytes | punctuated bytes/row | ratio | punctuations held | range index entries |",
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def fig(f, key):
        if key not in f:
            return "–"
        s = f[key]
        med = f"{s['median']:,.1f}" if isinstance(s["median"], float) and not s["median"].is_integer() else f"{int(s['median']):,}"
        return med if s["min"] == s["max"] else f"{med} [{s['min']:,}–{s['max']:,}]"

    for e in summary:
        n, p = e["native"], e["punctuated"]
        md.append(f"| {e['scenario']} | {e['shape']} | {e['rows']:,} | {fig(n, 'num_rows_total')} | "
                  f"{fig(n, 'memory_used_bytes')} | {fig(n, 'bytes_per_row')} | {fig(p, 'num_rows_total')} | "
                  f"{fig(p, 'memory_used_bytes')} | {fig(p, 'bytes_per_row')} | **{e['bytes_per_row_ratio']}** | "
                  f"{fig(p, 'numPunctuationsHeld')} | {fig(p, 'numRangeIndexEntries')} |")
    rocks = sorted({k for e in summary for eng in ("native", "punctuated") for k in e[eng] if k.startswith("rocksdb")})
    if rocks:
        md += ["", "RocksDB's own metrics (medians):", "",
               "| scenario | shape | rows | engine | " + " | ".join(rocks) + " |",
               "|---|---|---:|---|" + "---:|" * len(rocks)]
        for e in summary:
            for eng in ("native", "punctuated"):
                md.append(f"| {e['scenario']} | {e['shape']} | {e['rows']:,} | {eng} | "
                          + " | ".join(fig(e[eng], k) for k in rocks) + " |")
    # the analysis below the figures (written by hand from them) is kept when the figures are re-run
    previous = out / f"{name}.md"
    notes = previous.read_text().partition(NOTES)[2] if previous.exists() else ""
    if notes:
        md += ["", NOTES + notes.rstrip("\n")]
    (out / f"{name}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
