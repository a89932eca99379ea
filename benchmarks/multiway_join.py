"""Multi-way join benchmark: NEXMark bids ⋈ auctions ⋈ persons over two keys, three plans.

The query (a chain over two different keys, the one a tree of binary joins cannot purge)::

    SELECT ... FROM bid B JOIN auction A ON B.auction = A.id JOIN person P ON A.seller = P.id

over the same deterministic events of the ``nexmark`` source (``docs/nexmark.md``), with

* ``native``: Spark's own tree of stream-stream joins (streams without punctuations);
* ``written``: our tree of binary punctuated joins as the SQL spells it
  (``spark.punctuated.join.plan=written``; bids close auctions, ids are unique, the auction
  stream closes each seller by a constant once no auction can name it,
  ``sellerPunctuations=point``). The upper join's left input (bid ⋈ auction) passes on no
  punctuation on ``seller``, so its people are never purged: strict mode refuses it (Li et
  al. 2006, Theorem 1 per join), it runs with ``spark.punctuated.safety.mode=warn``;
* ``auto``: the same streams with the default plan, one multi-way join over both keys (safe
  by Li et al. 2006, Theorem 2: every input reaches every other in the punctuation graph).

Each (engine, repetition) runs in a fresh process (``benchmarks/harness.py``), the engines
in rotating order, ``--repeats`` times; the summary has medians and min–max, the ratios are
per repetition (engines of one repetition ran back to back). Before the engines, one process
writes each table's events to parquet and computes the **batch answer** and the **live
working set** after each micro-batch: the rows a join must keep after ``E`` events —
the people a future auction may name (the last 1000) and the sellers of open auctions; the
open auctions (created, not yet closed by the bid stream) and those whose seller is not
created yet; the bids on the latter. Every engine's results are compared with the batch
answer (row count and order-independent checksum).

For ``auto`` it also reports the hypercube's **replication factor**: rows routed / rows read,
as its exchanges count them (``numRoutedRows`` / ``numInputRows``), and the shares its plan
log recorded (the planner weighs them by the first micro-batch's rows,
``spark.punctuated.join.shareWeights=first_batch``), against the optimum over integer shares
for the whole run's input sizes; and, computed from the input sizes, the factor of the shares
every input weighted alike would give (``shareWeights=equal``) and of the optimum for other
partition counts (a data row goes to every cell agreeing on its classes — with a unique key,
on the key's, for the punctuation it implies —, a punctuation to every cell agreeing on its
bound classes).

Writes ``results/multiway_join_<events>.{json,csv,md}``. Run::

    .venv/bin/python -m benchmarks.multiway_join --events 2000000 --repeats 3
"""

from __future__ import annotations

import argparse
import bisect
import csv
import glob
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import nexmark  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks.harness import spawn, spread  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
QUERY = """
SELECT B.auction, B.bidder, B.price, B.dateTime AS bidTime, A.seller, A.category,
       P.name, P.city, P.state
FROM bid AS B
  INNER JOIN auction AS A ON B.auction = A.id
  INNER JOIN person AS P ON A.seller = P.id
"""
ENGINES = ("native", "written", "auto", "auto_equal")
ENGINE_CONF = {
    "native": {},
    "written": {"spark.punctuated.join.plan": "written", "spark.punctuated.safety.mode": "warn"},
    "auto": {"spark.punctuated.join.plan": "auto"},
    # the multi-way join with its hypercube's shares weighing every input alike (not by the
    # first batch's rows): not in the default run, ``--engines auto,auto_equal`` compares them
    "auto_equal": {"spark.punctuated.join.plan": "auto", "spark.punctuated.join.shareWeights": "equal"},
}
TABLES = ("bid", "auction", "person")           # the inputs, in the order the SQL writes them
# attribute classes (0: auction id, 1: person id) of each input, and the classes each
# input's punctuations bind (bids: auction; auctions: seller, point; people: none, unique id)
INPUT_CLASSES = {"bid": (0,), "auction": (0, 1), "person": (1,)}
PUNCT_CLASSES = {"bid": (0,), "auction": (1,), "person": ()}
# the classes a data row is routed by: its own classes, but a row of an input with a unique
# key also carries the punctuation its key implies, to every cell agreeing on the key's
# classes (``MultiJoinExchangeExec``): an auction (unique id) goes to every cell of its id
ROUTED_CLASSES = {"bid": (0,), "auction": (0,), "person": (1,)}
FIRST_ID, EPOCH, ACTIVE_PEOPLE = nexmark.FIRST_ID, nexmark.EVENTS_PER_EPOCH, nexmark.NUM_ACTIVE_PEOPLE


def streams(spark, args, engine: str) -> None:
    """The three streams as temporary views, with punctuations unless ``native``."""
    kind = "native" if engine == "native" else "punctuated"
    for t in TABLES:
        extra = {"sellerPunctuations": "point"} if (t == "auction" and kind == "punctuated") else None
        nexmark.read_stream(spark, t, args, kind, extra).createOrReplaceTempView(t)


def session(tmp: Path, args, conf: dict):
    from punctuated.cli import local_session

    spark = local_session(str(tmp), app="punctuated-multiway", driver_memory=args.driver_memory)
    spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    for k, v in conf.items():
        spark.conf.set(k, v)
    return spark


def first_event_after(ms: int, eps: int) -> int:
    """The first event whose time (baseTime 0) is after ``ms`` (``EventClock.firstEventAfter``)."""
    a = ms + 1
    return 0 if a <= 0 else (a // 1000) * eps + -(-(a % 1000) * eps // 1000)


def prepare(spark, args, data: Path) -> dict:
    """Events to parquet; the batch answer, input sizes and live working set per batch end."""
    from pyspark.sql import functions as F

    frames = nexmark.materialize(spark, TABLES, args, data)
    for t, df in frames.items():
        df.createOrReplaceTempView(t)
    rows, check = nexmark.checksum(spark.sql(QUERY))
    eps = args.events_per_second
    auctions = [(r["id"], r["seller"], r["expires"]) for r in frames["auction"].select(
        "id", "seller", F.floor(F.unix_micros("expires") / 1000).cast("long").alias("expires")).collect()]

    def created(auction_id):  # the event creating an auction
        b = auction_id - FIRST_ID
        return (b // 3) * EPOCH + 1 + b % 3

    def person_event(person_id):
        return (person_id - FIRST_ID) * EPOCH

    rows_by_created = sorted((created(a), first_event_after(x, eps), a, s) for a, s, x in auctions)
    starts = [r[0] for r in rows_by_created]
    closes = sorted(r[1] for r in rows_by_created)
    longest = max((c - s for s, c, _, _ in rows_by_created), default=0)
    # auctions created before their seller, and the bids on them (time ms)
    early = {a: (s, c, person_event(s)) for c, _, a, s in rows_by_created if person_event(s) > c}
    bids_by_auction = {}
    if early:
        for r in frames["bid"].where(F.col("auction").isin(list(early))).select(
                "auction", F.floor(F.unix_micros("dateTime") / 1000).cast("long").alias("t")).collect():
            bids_by_auction.setdefault(r["auction"], []).append(r["t"])

    def ts(n):
        return (n // eps) * 1000 + (n % eps) * 1000 // eps

    def live(e: int) -> int:
        last = (e - 1) // EPOCH + FIRST_ID                    # newest person created before e
        people = min(ACTIVE_PEOPLE, last - FIRST_ID + 1)       # not yet closed by a seller punctuation
        lo = bisect.bisect_left(starts, e - longest - 1)
        hi = bisect.bisect_left(starts, e)
        open_auctions = bisect.bisect_left(starts, e) - bisect.bisect_left(closes, e)
        old_sellers = {s for c, x, a, s in rows_by_created[lo:hi] if x >= e and s <= last - ACTIVE_PEOPLE}
        waiting = [a for a, (s, c, pe) in early.items() if c < e and pe >= e]
        waiting_closed = sum(1 for a in waiting if first_event_after_of[a] < e)
        bids = sum(1 for a in waiting for t in bids_by_auction.get(a, ()) if t <= ts(e - 1))
        return people + len(old_sellers) + open_auctions + waiting_closed + bids

    first_event_after_of = {a: x for _, x, a, _ in rows_by_created}
    ends = list(range(args.events_per_batch, args.events, args.events_per_batch)) + [args.events]
    counts = {t: frames[t].count() for t in TABLES}
    last_ms = ts(args.events - 1)
    puncts = {"bid": sum(1 for _, _, x in auctions if x < last_ms),
              "auction": max(0, counts["person"] - ACTIVE_PEOPLE), "person": 0}
    return {"expected_rows": rows, "expected_checksum": check, "data_rows": counts,
            "punctuation_rows": puncts, "live": {str(e): live(e) for e in ends}}


def plan_shares(checkpoint: Path):
    """The shares of the newest plan record in the checkpoint (list, class order), or None."""
    records = sorted(glob.glob(str(checkpoint / "state" / "*" / "_punctuated" / "plan" / "*")),
                     key=lambda p: int(Path(p).name) if Path(p).name.isdigit() else -1)
    if not records:
        return None
    record = json.loads(Path(records[-1]).read_text())
    shares = record.get("shares")
    if isinstance(shares, dict):
        shares = [v for _, v in sorted(shares.items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else kv[0])]
    return {"shares": shares, "record": record}


def count_routing(spark, routing: dict) -> None:
    """Adds the batch's rows read and sent to cells by each hypercube exchange
    (``MultiJoinExchange``: SQL metrics ``numInputRows``, ``numRoutedRows``) to ``routing``,
    per exchange in plan order: ``{"<i>": [read, routed]}``. Called in the batch's sink, once
    its results are computed (the metrics are final then)."""
    try:
        active = spark.streams.active
        if not active:
            return
        plan = active[0]._jsq.streamingQuery().lastExecution().executedPlan()
        found, stack = [], [plan]
        while stack:
            node = stack.pop()
            if "MultiJoinExchange" in node.nodeName():
                m = node.metrics()
                found.append((m.apply("numInputRows").value(), m.apply("numRoutedRows").value()))
            children = node.children()
            stack.extend(children.apply(i) for i in reversed(range(children.size())))
        for i, (read, sent) in enumerate(found):
            r = routing.setdefault(str(i), [0, 0])
            r[0] += read
            r[1] += sent
    except Exception as e:  # (a figure, not the run: never fail the engine for it)
        routing["error"] = str(e).splitlines()[0] if str(e) else type(e).__name__


def run_child(args, engine: str, data: Path) -> dict:
    from tqdm import tqdm

    tmp = Path(tempfile.mkdtemp(prefix="punctuated-multiway-"))
    spark = session(tmp, args, {**ENGINE_CONF[engine], **dict(c.split("=", 1) for c in args.conf)})
    routing = {}
    try:
        streams(spark, args, engine)
        with tqdm(total=args.events, desc=f"{engine}", unit="ev", unit_scale=True, file=sys.stderr,
                  mininterval=5.0) as bar:
            per_batch, totals, elapsed, error, progress = nexmark.run_query(
                spark, lambda: spark.sql(QUERY), engine, "append", tmp / "ckpt", args.events, bar,
                after_batch=lambda _: count_routing(spark, routing))
        out = {"per_batch": per_batch, "totals": totals, "seconds": elapsed, "error": error}
        # the operators run and any routing metric they report
        out["operators"] = sorted({op["operatorName"] for p in progress for op in p["stateOperators"]})
        routed = {}
        for p in progress:
            for op in p["stateOperators"]:
                for k, v in op.get("customMetrics", {}).items():
                    if "outed" in k or "eplicat" in k:
                        routed[k] = routed.get(k, 0) + v
        out["routing_metrics"] = routed
        out["routing"] = routing
        out["plan"] = plan_shares(tmp / "ckpt")
        return out
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def routed(shares, sizes: dict, puncts: dict) -> float:
    """Rows routed per row read, for shares (one per class) and rows read per input."""
    def copies(classes):
        return math.prod(s for c, s in enumerate(shares) if c not in classes)
    sent = sum(sizes[t] * copies(ROUTED_CLASSES[t]) + puncts[t] * copies(PUNCT_CLASSES[t]) for t in TABLES)
    return sent / max(1, sum(sizes.values()) + sum(puncts.values()))


def share_choices(k: int):
    """Shares (one per class) using every one of the k cells (Afrati and Ullman 2010)."""
    return [s for s in itertools.product(range(1, k + 1), repeat=2) if s[0] * s[1] == k]


def equal_weight_shares(k: int):
    """``shareWeights=equal``: minimise sum_i prod_{c not in classes(i)} s_c (every input the
    same size); ties: larger product, then larger shares of earlier classes."""
    def cost(s):
        return sum(math.prod(x for c, x in enumerate(s) if c not in INPUT_CLASSES[t]) for t in TABLES)
    return min(share_choices(k), key=lambda s: (cost(s), -s[0] * s[1], [-x for x in s]))


def optimum_shares(k: int, sizes: dict, puncts: dict):
    return min(share_choices(k), key=lambda s: routed(s, sizes, puncts))


def measured_replication(engine_runs: list, sizes: dict, puncts: dict) -> dict:
    """What a multi-way engine's first run shows of its hypercube: the plan log's shares, the
    replication they give for the whole run's input sizes, its exchanges' rows read and sent."""
    if not engine_runs:
        return {}
    first, out = engine_runs[0], {}
    plan = first["plan"]
    out["plan_record"] = plan
    if plan and isinstance(plan.get("shares"), list) and len(plan["shares"]) == 2:
        out["measured_shares"] = plan["shares"]
        out["replication_from_plan_shares"] = round(routed(plan["shares"], sizes, puncts), 4)
    out["routing_metrics"] = first["routing_metrics"]
    out["exchanges_read_routed"] = first["routing"]
    counted = {k: v for k, v in first["routing"].items() if k != "error"}
    if counted:
        read, sent = sum(v[0] for v in counted.values()), sum(v[1] for v in counted.values())
        out["measured_replication"] = round(sent / max(1, read), 4)
    return out


def child_main(args) -> int:
    data = Path(args.data)
    if args.child == "prepare":
        tmp = Path(tempfile.mkdtemp(prefix="punctuated-multiway-prep-"))
        spark = session(tmp, args, {})
        try:
            result = prepare(spark, args, data)
        finally:
            spark.stop()
            shutil.rmtree(tmp, ignore_errors=True)
    else:
        result = run_child(args, args.child, data)
    print("RESULT " + json.dumps(result))
    return 0


def summarize(engine: str, runs: list, prep: dict, args) -> dict:
    live = {int(k): v for k, v in prep["live"].items()}
    s = {"engine": engine, "events": args.events, "repeats": len(runs)}
    errors = [r["error"] for r in runs if r["error"]]
    if errors:
        s["error"] = errors[0]
        return s
    eps = [args.events / r["seconds"] for r in runs]
    ratios = [b["state_rows"] / live[b["events"]] for r in runs for b in r["per_batch"] if live.get(b["events"])]
    last = runs[0]["per_batch"]
    s.update({
        "events_per_second": {k: round(v) for k, v in spread(eps).items()},
        "seconds": spread([round(r["seconds"], 1) for r in runs]),
        "results_match": all((r["totals"]["rows"], r["totals"]["checksum"])
                             == (prep["expected_rows"], prep["expected_checksum"]) for r in runs),
        "result_rows": runs[0]["totals"]["rows"],
        "max_state_rows": max(b["state_rows"] for b in last),
        "final_state_rows": last[-1]["state_rows"],
        "final_live_working_set": live[last[-1]["events"]],
        "max_state_over_live_working_set": round(max(ratios), 3) if ratios else None,
        "final_state_over_live_working_set": round(last[-1]["state_rows"] / live[last[-1]["events"]], 3),
        "max_punctuations_held": max(b["punctuations_held"] for b in last),
        "final_punctuations_held": last[-1]["punctuations_held"],
        "mean_batch_ms": nexmark.mean(last, "batch_ms"),
        "mean_planning_ms": nexmark.mean(last, "planning_ms"),
        "mean_state_commit_ms": nexmark.mean(last, "state_commit_ms"),
        "operators": runs[0]["operators"],
    })
    return s


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=2_000_000, help="events of the global sequence")
    ap.add_argument("--engines", default="native,written,auto")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(harness.DEFAULT_OUT),
                    help="directory for the results (the recorded ones only with --out benchmarks/results)")
    ap.add_argument("--name", help="file name stem (default multiway_join_<events>)")
    ap.add_argument("--events-per-batch", type=int, default=100_000)
    ap.add_argument("--events-per-second", type=int, default=10_000, help="event-time rate")
    ap.add_argument("--partitions", type=int, default=2, help="source and shuffle partitions")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting for every engine's session (repeatable; recorded in the command)")
    ap.add_argument("--child", choices=("prepare",) + ENGINES, help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.query = "multiway"  # (read by nexmark.read_stream)
    if args.child:
        return child_main(args)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if any(e not in ENGINES for e in engines):
        ap.error(f"engines: choose from {', '.join(ENGINES)}")
    argv_list = argv if argv is not None else sys.argv[1:]
    command = "python -m benchmarks.multiway_join " + " ".join(argv_list)
    common = ["--events", str(args.events), "--events-per-batch", str(args.events_per_batch),
              "--events-per-second", str(args.events_per_second), "--partitions", str(args.partitions),
              "--seed", str(args.seed), "--driver-memory", args.driver_memory]
    common += [x for c in args.conf for x in ("--conf", c)]
    child = [sys.executable, "-m", "benchmarks.multiway_join"]
    data = Path(tempfile.mkdtemp(prefix="punctuated-multiway-data-"))
    uptime = [subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()]
    load, started = [], time.time()
    runs = {e: [] for e in engines}
    try:
        print(f"[multiway] batch answer over {args.events:,} events", file=sys.stderr)
        prep = spawn(child + ["--child", "prepare", "--data", str(data)] + common)
        for rep in range(args.repeats):
            order = engines[rep % len(engines):] + engines[:rep % len(engines)]
            for engine in order:
                load.append(os.getloadavg()[0])
                r = spawn(child + ["--child", engine, "--data", str(data)] + common)
                r["repetition"] = rep
                runs[engine].append(r)
                print(f"[{rep}] {engine}: {r['error'] or round(args.events / r['seconds'])} "
                      f"{'' if r['error'] else 'events/s'}", file=sys.stderr)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    uptime.append(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())

    summaries = [summarize(e, runs[e], prep, args) for e in engines]
    # throughput ratios per repetition (engines of one repetition ran back to back)
    ratios = {}
    for a, b in (("auto", "native"), ("auto", "written"), ("written", "native"), ("auto", "auto_equal")):
        if a in runs and b in runs and not any(r["error"] for r in runs[a] + runs[b]):
            ratios[f"{a}/{b}"] = spread([round(rb["seconds"] / ra["seconds"], 3)
                                         for ra, rb in zip(runs[a], runs[b])])
    sizes, puncts = prep["data_rows"], prep["punctuation_rows"]
    replication = {"input_rows": sizes, "punctuation_rows": puncts, "by_partitions": []}
    for k in sorted({args.partitions, 1, 2, 4, 7, 8}):
        chosen, best = equal_weight_shares(k), optimum_shares(k, sizes, puncts)
        replication["by_partitions"].append({
            "partitions": k, "design_shares": chosen, "design_replication": round(routed(chosen, sizes, puncts), 4),
            "optimum_shares": best, "optimum_replication": round(routed(best, sizes, puncts), 4)})
    for engine in ("auto", "auto_equal"):
        measured = measured_replication([r for r in runs.get(engine, []) if not r["error"]], sizes, puncts)
        if engine == "auto":
            replication.update(measured)
        elif measured:
            replication[engine] = measured
    report = {"command": command, "minutes": round((time.time() - started) / 60, 1),
              "uptime_before_after": uptime, "load_average_1min": spread(load) if load else None,
              "cpus": os.cpu_count(), "expected_rows": prep["expected_rows"],
              "summaries": summaries, "throughput_ratios": ratios, "replication": replication}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = args.name or f"multiway_join_{args.events}"
    (out / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    live = prep["live"]
    with open(out / f"{name}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["engine", "repetition", "batch", "events", "input_rows", "state_rows", "punctuations_held",
                    "batch_ms", "planning_ms", "state_commit_ms", "live_working_set"])
        for e in engines:
            for r in runs[e]:
                for b in r["per_batch"]:
                    w.writerow([e, r["repetition"], b["batch"], b["events"], b["input_rows"], b["state_rows"],
                                b["punctuations_held"], b["batch_ms"], b["planning_ms"], b["state_commit_ms"],
                                live.get(str(b["events"]))])
    md = markdown(report, args, name)
    (out / f"{name}.md").write_text(md)
    print(md)
    return 0


def markdown(report, args, name) -> str:
    load = report["load_average_1min"]
    lines = [f"# Multi-way join: NEXMark bids ⋈ auctions ⋈ persons, {args.events:,} events", "",
             f"Command: `{report['command']}`", "",
             f"Batch answer: {report['expected_rows']:,} rows. {args.repeats} repetitions, each engine in a "
             f"fresh process, engines in rotating order; medians with min–max. local[{args.partitions}] on "
             f"{report['cpus']} cores, {args.events_per_batch:,} events per micro-batch, {report['minutes']} "
             f"minutes. Machine shared with other builds and tests: 1-minute load average "
             + (f"{load['median']:.1f} (min {load['min']:.1f}, max {load['max']:.1f})" if load else "–")
             + f"; `uptime` before: `{report['uptime_before_after'][0]}`, after: "
               f"`{report['uptime_before_after'][1]}`.", "",
             "| engine | events/s | max state rows | final state rows | final live working set | "
             "max state / live | final punctuations held | batch ms | planning ms | commits ms | "
             "results match batch |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for s in report["summaries"]:
        if s.get("error"):
            lines.append(f"| {s['engine']} | – | – | – | – | – | – | – | – | – | not run: {s['error']} |")
            continue
        e = s["events_per_second"]
        lines.append(
            f"| {s['engine']} | {e['median']:,} [{e['min']:,}–{e['max']:,}] | {s['max_state_rows']:,} | "
            f"{s['final_state_rows']:,} | {s['final_live_working_set']:,} | "
            f"{s['max_state_over_live_working_set']} | {s['final_punctuations_held']:,} | {s['mean_batch_ms']} | "
            f"{s['mean_planning_ms']} | {s['mean_state_commit_ms']} | {'yes' if s['results_match'] else '**no**'} |")
    lines += ["", "Throughput ratios (per repetition, engines of one repetition back to back):", ""]
    for k, v in report["throughput_ratios"].items():
        lines.append(f"- {k}: **{v['median']}** [{v['min']}–{v['max']}]")
    rep = report["replication"]
    lines += ["", "Hypercube replication (rows routed / rows read; data rows to every cell agreeing on the "
                  "input's classes, punctuations on their bound classes), for the observed input sizes "
                  f"{rep['input_rows']} and punctuation rows {rep['punctuation_rows']}:", "",
              "| partitions | shares, every input weighted alike | replication | optimum shares | optimum replication |",
              "|---:|---|---:|---|---:|"]
    for r in rep["by_partitions"]:
        lines.append(f"| {r['partitions']} | {tuple(r['design_shares'])} | {r['design_replication']} | "
                     f"{tuple(r['optimum_shares'])} | {r['optimum_replication']} |")
    if "measured_replication" in rep:
        lines += ["", f"Measured in the `auto` run (its hypercube exchanges' `numRoutedRows` / `numInputRows`, "
                      f"per input in plan order {rep['exchanges_read_routed']}): replication "
                      f"**{rep['measured_replication']}** at {args.partitions} partitions."]
    if "replication_from_plan_shares" in rep:
        lines += ["", f"The `auto` run's plan record: shares {rep['measured_shares']}, replication "
                      f"{rep['replication_from_plan_shares']}; routing metrics {rep.get('routing_metrics') or 'none reported'}."]
    elif "auto" in [s["engine"] for s in report["summaries"]]:
        lines += ["", "No plan record with shares was found in the `auto` run's checkpoint."]
    eq = rep.get("auto_equal")
    if eq and "measured_replication" in eq:
        lines += ["", f"`auto_equal` (`spark.punctuated.join.shareWeights=equal`): plan record shares "
                      f"{eq.get('measured_shares')}, measured replication **{eq['measured_replication']}** "
                      f"(per input in plan order {eq['exchanges_read_routed']})."]
    lines += ["", f"Per-batch figures: `{name}.csv`.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
