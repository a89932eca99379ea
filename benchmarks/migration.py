"""Plan-migration benchmark: a four-input chain whose best plan changes mid-run, one switch.

The query (Aly et al., JISC, EDBT 2014, §6: a pipelined join whose statistics drift)::

    a(k1) ⋈ b(k1, k2) ⋈ c(k2, k3) ⋈ d(k3)      a unique k1; b unique k2, closes k1;
                                               c unique k3, closes k2; d closes k3

Synthetic and seeded: every micro-batch opens ``R`` new values of each key (a row of a per
k1, of b per k2 naming an open k1, of c per k3 naming an open k2, Zipf-skewed towards the
newest), d sends rows on open k3 values (Zipf), and a value closes ``--key-life`` batches after
it opened (the inputs having it punctuate it), so state stays at the open keys. What flips
from ``--flip-batch`` on (default: ``--switch-batch``) is the ``--workload``:

* ``rate`` (default): d sends ``--skew`` times as many rows, which makes keeping the
  ``a ⋈ b ⋈ c`` combinations pay off. Each d row meets exactly one result; every
  intermediate result is at most as large as an input (a, b and c are unique on a key), so
  the plans differ by small factors.
* ``fanout`` (a selectivity flip): a and b send ``--skew`` times as many rows — ``--skew``
  rows of a per new k1 (a is no longer unique on k1: it punctuates k1 instead) and ``--skew``
  times as many rows of b (each a new k2), while c and d keep their rates, so most of b's new
  k2 values never meet c. The ``a ⋈ b`` combinations (about ``skew²`` per row of b's old
  rate) become many and useless: the plan keeping them, ``((a ⋈ b) ⋈ c ⋈ d)``, is the old
  plan here, the right-deep ``(a ⋈ (b ⋈ (c ⋈ d)))`` (whose intermediate results stay at d's
  rate) the new one.

A flip before the switch (as ``auto`` would see it: after the fact) separates the switch's own
cost from the heavier batches the flip brings.

Engines (each in a fresh process, interleaved, ``--reps`` times: ``benchmarks/harness.py``):

* ``none``: the old plan (``mjoin``) the whole run, no migration;
* ``jisc``, ``moving_state``, ``parallel_track`` (``--strategies``): the old plan, then
  ``punctuated.migrate(query, new_plan)`` called in the sink of the batch before the switch,
  so the switch batch is the first to run the new plan
  (``spark.punctuated.migration.strategy``); a strategy the build refuses is recorded as
  "not available" (not run);
* ``fixed``: the new plan (``--new-plan``) the whole run;
* ``auto``: ``spark.punctuated.join.plan=auto`` with ``replanEvery`` = ``--replan-every``.

Per batch: input rows, batch time (``triggerExecution``), state rows and the migration
metrics. Figures: first batch after the switch / steady-state batch time (median of the last
batches); throughput during the migration stage (the switch batch until ``jisc``'s
``numIncompleteStates`` is back to 0) as ratios to ``parallel_track`` and to ``none``; ``auto`` /
best fixed plan over the whole run; results (row count + checksum) of every run against the
batch answer. Run::

    nice -n 10 .venv/bin/python -m benchmarks.migration --out benchmarks/results
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import harness  # noqa: E402

STRATEGIES = ("jisc", "moving_state", "parallel_track")
OTHERS = ("none", "fixed", "auto")  # no migration (old plan), the new plan fixed, auto re-planning
OLD_PLAN = "mjoin"
NEW_PLAN = "((a ⋈ b) ⋈ c ⋈ d)"   # the plan auto picks once d is fast
WORKLOADS = ("rate", "fanout")
# the fanout workload's plans when not given: the old one keeps a ⋈ b, the new one does not
FANOUT_PLANS = ("((a ⋈ b) ⋈ c ⋈ d)", "(a ⋈ (b ⋈ (c ⋈ d)))")
CHECKSUM_MOD = 1_000_000_007
SCHEMAS = {  # the four inputs' JSON columns (each prefixed by its name: no ambiguous join columns)
    "a": "a_k1 BIGINT, a_p BIGINT, a_punct BOOLEAN",
    "b": "b_k1 BIGINT, b_k2 BIGINT, b_p BIGINT, b_punct BOOLEAN",
    "c": "c_k2 BIGINT, c_k3 BIGINT, c_p BIGINT, c_punct BOOLEAN",
    "d": "d_k3 BIGINT, d_p BIGINT, d_punct BOOLEAN",
}
OUTPUT = ["a_k1", "a_p", "b_k2", "b_p", "c_k3", "c_p", "d_p"]


def flip_batch(args) -> int:
    """The batch d's rate flips at: ``--flip-batch``, else the switch batch."""
    return args.switch_batch if getattr(args, "flip_batch", None) is None else args.flip_batch


def fanout(args) -> bool:
    """Is the workload the selectivity flip (``--workload fanout``)?"""
    return getattr(args, "workload", "rate") == "fanout"


def rows_per_batch(args) -> int:
    """R, the new values of each key per batch, so that the data rows total ``--events``:
    ``rate``: a, b, c bring R rows a batch, d R before the flip and ``skew`` x R from it on;
    ``fanout``: c and d R rows a batch, a and b R before the flip and ``skew`` x R from it on."""
    flip = flip_batch(args)
    flipped = flip + args.skew * (args.batches - flip)
    units = 2 * args.batches + 2 * flipped if fanout(args) else 3 * args.batches + flipped
    return max(1, args.events // units)


def zipf_picker(rng: random.Random, s: float, cache: dict):
    """``pick(values)``: one of ``values`` (oldest first), the newest most likely: rank r
    (0 = newest) with weight 1 / (r + 1) ** s."""
    def pick(values, k):
        n = len(values)
        if n not in cache:
            cache[n] = list(itertools.accumulate(1.0 / (r + 1) ** s for r in range(n)))
        ranks = rng.choices(range(n), cum_weights=cache[n], k=k)
        return [values[n - 1 - r] for r in ranks]
    return pick


def generate(args, root: Path) -> dict:
    """One JSON file per input per batch under ``root/<input>/``, modification times in batch
    order (the file source's order); returns the data rows per input."""
    rng = random.Random(args.seed)
    pick = zipf_picker(rng, args.zipf, {})
    r, life = rows_per_batch(args), args.key_life
    counts = {t: 0 for t in SCHEMAS}
    t0 = time.time() - 10 * args.batches
    for t in SCHEMAS:
        (root / t).mkdir(parents=True, exist_ok=True)
    opened = {key: [] for key in ("k1", "k2", "k3")}        # per key, the values each batch opened
    next_value = {key: 0 for key in opened}
    for i in range(args.batches):
        flipped = i >= flip_batch(args)
        per_k1 = args.skew if flipped and fanout(args) else 1          # a's rows per new k1
        counts_new = {"k1": r, "k2": r * per_k1, "k3": r}              # (fanout: b's rows too)
        for key, m in counts_new.items():                    # the batch's new values of each key
            opened[key].append(range(next_value[key], next_value[key] + m))
            next_value[key] += m
        new = {key: opened[key][i] for key in opened}
        open_values = {key: [v for span in opened[key][max(0, i - life + 1):] for v in span] for key in opened}
        d_rows = args.skew * r if flipped and not fanout(args) else r
        rows = {
            "a": [{"a_k1": k, "a_p": rng.randrange(1000), "a_punct": False} for k in new["k1"] for _ in range(per_k1)],
            "b": [{"b_k1": k1, "b_k2": k, "b_p": rng.randrange(1000), "b_punct": False}
                  for k, k1 in zip(new["k2"], pick(open_values["k1"], len(new["k2"])))],
            "c": [{"c_k2": k2, "c_k3": k, "c_p": rng.randrange(1000), "c_punct": False}
                  for k, k2 in zip(new["k3"], pick(open_values["k2"], r))],
            "d": [{"d_k3": k3, "d_p": rng.randrange(1000), "d_punct": False}
                  for k3 in pick(open_values["k3"], d_rows)],
        }
        for t in SCHEMAS:
            counts[t] += len(rows[t])
        closing = {key: opened[key][i - life + 1] if i - life + 1 >= 0 else range(0) for key in opened}
        if fanout(args):                                     # a is not unique on k1: it punctuates it
            rows["a"] += [{"a_k1": k, "a_punct": True} for k in closing["k1"]]
        rows["b"] += [{"b_k1": k, "b_punct": True} for k in closing["k1"]]
        rows["c"] += [{"c_k2": k, "c_punct": True} for k in closing["k2"]]
        rows["d"] += [{"d_k3": k, "d_punct": True} for k in closing["k3"]]
        for t, rs in rows.items():
            path = root / t / f"{i:05d}.json"
            path.write_text("".join(json.dumps(x) + "\n" for x in rs))
            os.utime(path, (t0 + 10 * i, t0 + 10 * i))
    return counts


def streams(spark, root: Path, workload: str = "rate"):
    """The four declared streams, one file per input per micro-batch (``fanout``: a punctuates
    k1 instead of being unique on it)."""
    import punctuated

    def read(t):
        return spark.readStream.schema(SCHEMAS[t]).option("maxFilesPerTrigger", 1).json(str(root / t))
    a = (punctuated.with_schemes(read("a"), schemes=["a_k1"], marker="a_punct", name="a") if workload == "fanout"
         else punctuated.with_schemes(read("a"), unique=["a_k1"], marker="a_punct", name="a"))
    b = punctuated.with_schemes(read("b"), schemes=["b_k1"], unique=["b_k2"], marker="b_punct", name="b")
    c = punctuated.with_schemes(read("c"), schemes=["c_k2"], unique=["c_k3"], marker="c_punct", name="c")
    d = punctuated.with_schemes(read("d"), schemes=["d_k3"], marker="d_punct", name="d")
    return a, b, c, d


def join(a, b, c, d):
    return (a.join(b, a["a_k1"] == b["b_k1"]).join(c, b["b_k2"] == c["c_k2"])
            .join(d, c["c_k3"] == d["d_k3"]).select(*OUTPUT))


def checksum(df):
    """(rows, order-independent checksum) of a DataFrame of the output columns."""
    from pyspark.sql import functions as F

    h = F.pmod(F.xxhash64(*[F.col(c) for c in OUTPUT]), F.lit(CHECKSUM_MOD))
    row = df.agg(F.count(F.lit(1)).alias("n"), F.sum(h).alias("h")).collect()[0]
    return row["n"], (row["h"] or 0) % CHECKSUM_MOD


def session(tmp: Path, args):
    from punctuated.cli import local_session

    spark = local_session(str(tmp), app="punctuated-migration", driver_memory=args.driver_memory,
                          extra_conf=harness.forkless_conf(args))
    spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    spark.conf.set("spark.punctuated.safety.mode", "warn")
    return spark


def prepare(spark, args, root: Path) -> dict:
    """The input files, the batch answer over them, and which strategies the build accepts."""
    counts = generate(args, root)
    frames = [spark.read.schema(SCHEMAS[t]).json(str(root / t)).where(f"NOT {t}_punct") for t in SCHEMAS]
    rows, check = checksum(join(*frames))
    available = {}
    for s in STRATEGIES:
        try:
            available[s] = bool(spark._jvm.punctuated.join.multi.MultiJoinMigration.Strategies().contains(s))
        except Exception:  # (the list is not reachable: let the run tell)
            available[s] = True
    return {"data_rows": counts, "expected_rows": rows, "expected_checksum": check, "available": available,
            "rows_per_batch": rows_per_batch(args)}


def run_engine(spark, args, engine: str, root: Path, checkpoint: Path) -> dict:
    """One engine over every file (Trigger.AvailableNow); per-batch figures and the result."""
    import punctuated

    conf = {"spark.punctuated.join.plan": args.old_plan}
    if engine == "fixed":
        conf["spark.punctuated.join.plan"] = args.new_plan
    elif engine == "auto":
        conf.update({"spark.punctuated.join.plan": "auto", "spark.punctuated.join.replanEvery": str(args.replan_every)})
    elif engine in STRATEGIES:
        conf["spark.punctuated.migration.strategy"] = engine
    for k, v in conf.items():
        spark.conf.set(k, v)
    totals, holder, migrated = {"rows": 0, "checksum": 0}, {}, []

    def sink(df, batch_id):
        n, h = checksum(df)
        totals["rows"] += n
        totals["checksum"] = (totals["checksum"] + h) % CHECKSUM_MOD
        if engine in STRATEGIES and batch_id == args.switch_batch - 1:
            while "q" not in holder:
                time.sleep(0.05)
            migrated.append(punctuated.migrate(holder["q"], args.new_plan))

    query = (join(*streams(spark, root, args.workload)).writeStream.foreachBatch(sink)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    holder["q"] = query
    started = time.time()
    try:
        query.awaitTermination()
    except Exception as e:
        return {"error": (str(e).strip().splitlines() or [type(e).__name__])[0]}
    seconds = time.time() - started
    per_batch = []
    for p in query.recentProgress:
        ops = [op for op in p["stateOperators"] if op["operatorName"].startswith("punctuated")]
        if p["numInputRows"] == 0 and not ops:
            continue
        m = ops[0].get("customMetrics", {}) if ops else {}
        per_batch.append({
            "batch": p["batchId"], "input_rows": p["numInputRows"],
            "batch_ms": p["durationMs"].get("triggerExecution", 0),
            "state_rows": sum(op["numRowsTotal"] for op in ops),
            "migrations": m.get("numMigrations", 0), "incomplete": m.get("numIncompleteStates", 0),
            "keys_completed": m.get("numKeysCompleted", 0), "parallel_plans": m.get("numParallelPlans", 0),
            # where a batch's time goes: planning, the batch itself (tasks), the operator's own
            # update and commit times (summed over its tasks)
            "planning_ms": p["durationMs"].get("queryPlanning", 0), "add_batch_ms": p["durationMs"].get("addBatch", 0),
            "updates_ms": sum(op.get("allUpdatesTimeMs", 0) for op in ops),
            "commit_ms": sum(op.get("commitTimeMs", 0) for op in ops)})
    plans = punctuated.join_plan(query)
    return {"per_batch": per_batch, "totals": totals, "seconds": seconds, "requests": migrated,
            "final_plan": plans, "error": None}


def child(args) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="punctuated-migration-"))
    spark = session(tmp, args)
    try:
        if args.child == "prepare":
            result = prepare(spark, args, Path(args.data))
        else:
            result = run_engine(spark, args, args.child, Path(args.data), tmp / "ckpt")
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    harness.emit(result)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(harness.DEFAULT_OUT),
                    help="directory for the results (the recorded ones only with --out benchmarks/results)")
    ap.add_argument("--events", type=int, default=30_000, help="data rows of all four inputs in total")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--strategies", default=",".join(STRATEGIES),
                    help="migration strategies to run (comma-separated)")
    ap.add_argument("--engines", default=",".join(OTHERS),
                    help=f"the engines besides the strategies (comma-separated, among {', '.join(OTHERS)})")
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--switch-batch", type=int, default=4, help="the batch the plan switches at")
    ap.add_argument("--flip-batch", type=int, default=None,
                    help="the batch d's rate flips at (default: --switch-batch; at most --switch-batch)")
    ap.add_argument("--workload", choices=WORKLOADS, default="rate",
                    help="what flips: d's rate (rate), or a's and b's rows per key, a selectivity flip (fanout)")
    ap.add_argument("--skew", type=int, default=8,
                    help="from the flip on: d's rows per batch (rate), a's rows per k1 and b's rows (fanout), times R")
    ap.add_argument("--key-life", type=int, default=3, help="batches a key value stays open")
    ap.add_argument("--zipf", type=float, default=1.2, help="Zipf exponent of the key choices (newest hot)")
    ap.add_argument("--old-plan", default=None,
                    help="the plan running before the switch (default the MJoin; a tree, e.g. '(((a ⋈ b) ⋈ c) ⋈ d)', "
                         "gives the old plan intermediate state, the setting where Parallel Track pays; "
                         f"fanout: {FANOUT_PLANS[0]})")
    ap.add_argument("--new-plan", default=None,
                    help=f"the plan migrated to (and the fixed engine's; default {NEW_PLAN}, fanout: {FANOUT_PLANS[1]})")
    ap.add_argument("--replan-every", type=int, default=2, help="auto's spark.punctuated.join.replanEvery")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--driver-memory", default="3g")
    harness.add_forkless_option(ap)
    ap.add_argument("--name", default="migration", help="file name stem of the results")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    default_plans = FANOUT_PLANS if args.workload == "fanout" else (OLD_PLAN, NEW_PLAN)
    args.old_plan = args.old_plan or default_plans[0]
    args.new_plan = args.new_plan or default_plans[1]
    if not 0 < args.switch_batch < args.batches:
        ap.error(f"--switch-batch must be between 1 and --batches - 1 ({args.batches - 1}), not {args.switch_batch}")
    if args.flip_batch is not None and not 0 < args.flip_batch <= args.switch_batch:
        ap.error(f"--flip-batch must be between 1 and --switch-batch ({args.switch_batch}), not {args.flip_batch}")
    if args.child:
        return child(args)
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        ap.error(f"--strategies: {unknown} not among {', '.join(STRATEGIES)}")
    others = [e.strip() for e in args.engines.split(",") if e.strip()]
    if any(e not in OTHERS for e in others):
        ap.error(f"--engines: choose among {', '.join(OTHERS)}")
    command = "python -m benchmarks.migration " + " ".join(argv if argv is not None else sys.argv[1:])
    common = ["--workload", args.workload,
              "--events", str(args.events), "--batches", str(args.batches), "--switch-batch", str(args.switch_batch),
              "--flip-batch", str(flip_batch(args)),
              "--skew", str(args.skew), "--key-life", str(args.key_life), "--zipf", str(args.zipf),
              "--old-plan", args.old_plan, "--new-plan", args.new_plan, "--replan-every", str(args.replan_every),
              "--partitions", str(args.partitions), "--seed", str(args.seed), "--driver-memory", args.driver_memory
              ] + harness.forkless_flag(args)
    data = Path(tempfile.mkdtemp(prefix="punctuated-migration-data-"))
    child_cmd = [sys.executable, "-m", "benchmarks.migration"]
    started, uptime = time.time(), [os.getloadavg()]
    try:
        print(f"[migration] generating {args.events:,} rows and the batch answer", file=sys.stderr)
        prep = harness.spawn(child_cmd + ["--child", "prepare", "--data", str(data)] + common)
        engines = ([e for e in others if e == "none"] + [s for s in strategies if prep["available"].get(s)]
                   + [e for e in others if e != "none"])

        def done(engine, rep, r):
            print(f"[{rep}] {engine}: {r.get('error') or round(r['seconds'], 1)} s, load "
                  f"{r['load_1min_before']}", file=sys.stderr)
        runs = harness.run({e: child_cmd + ["--child", e, "--data", str(data)] + common for e in engines},
                           args.reps, on_done=done)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    uptime.append(os.getloadavg())
    from benchmarks import migration_report

    report = migration_report.summarize(runs, prep, args, strategies, command,
                                        minutes=round((time.time() - started) / 60, 1), loads=uptime)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps({"report": report, "runs": runs}, indent=1) + "\n")
    md = migration_report.markdown(report, args)
    (out / f"{args.name}.md").write_text(md)
    plotted = migration_report.plot(runs, args, out / f"{args.name}.png")
    print(md)
    if not plotted:
        print("matplotlib is not available: no plot", file=sys.stderr)
    return 0 if report["results_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
