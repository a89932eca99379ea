"""What Catalyst's rules cost on one micro-batch's plan, ours against Spark's, in a warm JVM.

Spark analyzes and optimizes every micro-batch's plan anew (``IncrementalExecution``), so a
larger logical plan costs every batch. This benchmark isolates that cost from everything else
a micro-batch does: each engine (a NEXMark query's ``watermark`` or ``punctuated`` plan, as in
``benchmarks/nexmark.py``) runs in a fresh process over a few micro-batches (no batches without
data, so the last plan read data), then the analyzer and the optimizer are run again and again
on that last micro-batch's plan — ``--warmup-plans`` times untimed, then ``--rounds`` rounds of
``--plans`` runs timed — the engines interleaved, ``--reps`` times (``benchmarks/harness.py``).

Per engine it records the analyzer's and the optimizer's ms per plan (the median over the
rounds of each round's mean, less one Py4J round trip: every run is one call from Python),
the plan's size (operators of the analyzed plan, expression nodes in them) and Spark's
per-rule metering (``RuleExecutor``) over the timed runs; per rule the ms per plan. The
report ranks the rules by what they cost ours beyond Spark's. A cold streaming run pays
several times these figures (its rules run in code the JIT has not compiled yet: see the
NEXMark runner's ``rules_ms_per_batch``); this is the part that stays once the JVM is warm.
Run::

    .venv/bin/python -m benchmarks.planning_cost --query q7 --reps 3 --out /tmp/planning
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a script: benchmarks/planning_cost.py
    sys.path.insert(0, str(ROOT))
from benchmarks import harness, nexmark  # noqa: E402

ENGINES = ("watermark", "punctuated")
RULE_LINE = re.compile(r"^\s*(\S+)\s+\d+\s*/\s*(\d+)\s+\d+\s*/\s*(\d+)\s*$")


def parse_rules(dump: str) -> dict:
    """Total ns and runs per rule from ``RuleExecutor.dumpTimeSpent()`` (its short class name).

    >>> parse_rules('''Rule   Effective Time / Total Time   Effective Runs / Total Runs
    ... org.apache.spark.sql.catalyst.optimizer.ColumnPruning   10 / 3000000   1 / 3
    ... punctuated.spark.rules.PassPunctuationsThroughFilters   0 / 500   0 / 3''')
    {'ColumnPruning': {'ns': 3000000, 'runs': 3}, 'PassPunctuationsThroughFilters': {'ns': 500, 'runs': 3}}
    """
    rules = {}
    for line in dump.splitlines():
        m = RULE_LINE.match(line)
        if m:
            name = m.group(1).rsplit(".", 1)[-1]
            rules[name] = {"ns": int(m.group(2)), "runs": int(m.group(3))}
    return rules


def per_plan_ms(rules: dict, plans: int) -> dict:
    """Each rule's ms per plan, rounded to 0.001, rules that took no time left out.

    >>> per_plan_ms({"A": {"ns": 3_000_000, "runs": 9}, "B": {"ns": 0, "runs": 9}}, 3)
    {'A': 1.0}
    """
    return {k: round(v["ns"] / 1e6 / plans, 3) for k, v in rules.items() if v["ns"] > 0}


def rule_excess(mine: dict, reference: dict, top: int) -> list:
    """The ``top`` rules by ms per plan of ``mine`` beyond ``reference`` (both ``per_plan_ms``).

    >>> rule_excess({"A": 1.0, "B": 0.5, "Ours": 0.2}, {"A": 0.4, "B": 0.5}, 2)
    [('A', 1.0, 0.4), ('Ours', 0.2, 0.0)]
    """
    names = sorted(set(mine) | set(reference), key=lambda k: -(mine.get(k, 0) - reference.get(k, 0)))
    return [(k, mine.get(k, 0.0), reference.get(k, 0.0)) for k in names[:top]]


def median_rules(results: list) -> dict:
    """Per rule the median of its ms per plan over the repetitions (0 where a run lacks it).

    >>> median_rules([{"rules": {"A": 1.0}}, {"rules": {"A": 3.0, "B": 1.0}}, {"rules": {"A": 2.0}}])
    {'A': 2.0, 'B': 0.0}
    """
    names = sorted({k for r in results for k in r.get("rules", {})})
    return {k: statistics.median(r.get("rules", {}).get(k, 0.0) for r in results) for k in names}


def timed_rounds(call, rounds: int, plans: int, roundtrip_ms: float) -> float:
    """The median over ``rounds`` of the mean ms of ``plans`` calls, less one round trip."""
    means = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(plans):
            call()
        means.append((time.perf_counter() - start) * 1000 / plans)
    return round(max(statistics.median(means) - roundtrip_ms, 0.0), 3)


def plan_size(plan) -> dict:
    """Operators of a (JVM) logical plan and the expression nodes in them (walked through Py4J,
    once per process)."""
    ops, exprs = 0, 0
    stack = [plan]
    while stack:
        node = stack.pop()
        ops += 1
        exprs += sum(_tree_size(e) for e in _items(node.expressions()))
        stack += _items(node.children())
    return {"operators": ops, "expression_nodes": exprs}


def _tree_size(expr) -> int:
    """Nodes of one (JVM) expression tree."""
    count, stack = 0, [expr]
    while stack:
        e = stack.pop()
        count += 1
        stack += _items(e.children())
    return count


def _items(seq) -> list:
    """A JVM Scala ``Seq`` as a Python list."""
    out, it = [], seq.iterator()
    while it.hasNext():
        out.append(it.next())
    return out


def child(args) -> int:
    """One engine in this process: its query over the events, then the timed rule runs."""
    from punctuated.cli import local_session

    tmp = Path(tempfile.mkdtemp(prefix="punctuated-planning-"))
    spark = local_session(str(tmp), app=f"punctuated-planning-{args.child}", driver_memory=args.driver_memory,
                          extra_conf=harness.forkless_conf(args))
    try:
        spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
        # the last micro-batch read data (no batch that only moves the watermark)
        spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
        for t in nexmark.QUERIES[args.query][0]:
            nexmark.read_stream(spark, t, args, args.child).createOrReplaceTempView(t)
        sql = nexmark.query_sql(args.query, args.child, args.events_per_second, args.events)
        query = (spark.sql(sql).writeStream.format("noop").outputMode("append")
                 .option("checkpointLocation", str(tmp / "checkpoint")).trigger(availableNow=True).start())
        query.awaitTermination()
        execution = query._jsq.streamingQuery().lastExecution()
        logical, analyzed = execution.logical(), execution.analyzed()
        state = spark._jsparkSession.sessionState()
        analyzer, optimizer = state.analyzer(), state.optimizer()
        jvm = spark.sparkContext._jvm
        nano = jvm.java.lang.System.nanoTime
        for _ in range(args.warmup_plans):
            analyzer.execute(logical)
            optimizer.execute(analyzed)
        roundtrip = timed_rounds(nano, args.rounds, args.plans, 0.0)
        metering = jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor
        metering.resetMetrics()
        analyze_ms = timed_rounds(lambda: analyzer.execute(logical), args.rounds, args.plans, roundtrip)
        optimize_ms = timed_rounds(lambda: optimizer.execute(analyzed), args.rounds, args.plans, roundtrip)
        rules = per_plan_ms(parse_rules(metering.dumpTimeSpent()), args.rounds * args.plans)
        result = {"analyze_ms": analyze_ms, "optimize_ms": optimize_ms, "roundtrip_ms": roundtrip,
                  "rules": rules, **plan_size(analyzed)}
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    harness.emit(result)
    return 0


def report(runs: dict, args, command: str) -> tuple[dict, str]:
    """The summary (JSON) and its Markdown."""
    figures = ("analyze_ms", "optimize_ms", "operators", "expression_nodes", "roundtrip_ms")
    engines = list(runs)
    summary = {"query": args.query, "reps": args.reps, "plans": args.plans, "rounds": args.rounds,
               "warmup_plans": args.warmup_plans, "events": args.events, "command": command,
               "load": harness.load_summary(runs),
               "engines": {e: {f: harness.figure_spread({e: runs[e]}, f)[e] for f in figures} for e in engines},
               "rules": {e: median_rules(runs[e]) for e in engines}}
    reference, ours = ENGINES
    if reference in runs and ours in runs:
        summary["ratios"] = {f: harness.ratio_spread(runs, f, ours, reference) for f in ("analyze_ms", "optimize_ms")}
        summary["excess"] = rule_excess(summary["rules"][ours], summary["rules"][reference], args.top)
    lines = [f"# Catalyst's rules on one micro-batch plan of NEXMark {args.query}, warm JVM",
             "", f"Command: `{command}`", "",
             f"{args.reps} repetition(s), each engine in a fresh process, engines interleaved; per process "
             f"{args.warmup_plans} untimed runs of the analyzer and of the optimizer on the last micro-batch's "
             f"plan ({args.events:,} events, {args.events_per_batch:,} a batch), then {args.rounds} rounds of "
             f"{args.plans} timed runs (median of the rounds' means, less one Py4J round trip). Figures: "
             "medians over the repetitions with their spread (min–max). Load (1-minute average): "
             f"{harness.fmt_spread(summary['load'], 2)}.", "",
             "| engine | analyzer ms/plan | optimizer ms/plan | operators | expression nodes |",
             "|---|---:|---:|---:|---:|"]
    for e in engines:
        s = summary["engines"][e]
        lines.append(f"| {e} | {harness.fmt_spread(s['analyze_ms'])} | {harness.fmt_spread(s['optimize_ms'])} | "
                     f"{harness.fmt_spread(s['operators'], 0)} | {harness.fmt_spread(s['expression_nodes'], 0)} |")
    if "ratios" in summary:
        lines += ["", f"Ratios {ours} / {reference} (per repetition; median and min–max): analyzer "
                  f"**{harness.fmt_spread(summary['ratios']['analyze_ms'])}**, optimizer "
                  f"**{harness.fmt_spread(summary['ratios']['optimize_ms'])}**.", "",
                  f"Rules by what they cost {ours} beyond {reference} (analyzer and optimizer runs together, "
                  "Spark's `RuleExecutor` metering, ms per plan, medians):", "",
                  f"| rule | {ours} | {reference} |", "|---|---:|---:|"]
        lines += [f"| `{name}` | {mine} | {ref} |" for name, mine, ref in summary["excess"]]
    return summary, "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--query", default="q7", choices=sorted(nexmark.TIME_QUERIES))
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--events-per-batch", type=int, default=100_000)
    ap.add_argument("--events-per-second", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--base-time", type=int, default=0)
    ap.add_argument("--warmup-plans", type=int, default=300)
    ap.add_argument("--plans", type=int, default=50, help="timed runs per round")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--top", type=int, default=15, help="rules in the report's table")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--out", type=Path, default=harness.DEFAULT_OUT)
    ap.add_argument("--name", default=None, help="file name (default planning_cost_<query>)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    harness.add_forkless_option(ap)
    args = ap.parse_args(argv)
    args.time_punctuations_only = True
    if args.child:
        return child(args)
    engines = [e for e in args.engines.split(",") if e]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        ap.error(f"unknown engine(s) {unknown}: choose from {', '.join(ENGINES)}")
    common = ["--query", args.query, "--events", str(args.events), "--events-per-batch", str(args.events_per_batch),
              "--events-per-second", str(args.events_per_second), "--partitions", str(args.partitions),
              "--seed", str(args.seed), "--base-time", str(args.base_time), "--warmup-plans", str(args.warmup_plans),
              "--plans", str(args.plans), "--rounds", str(args.rounds), "--driver-memory", args.driver_memory,
              *harness.forkless_flag(args)]
    me = [sys.executable, "-m", "benchmarks.planning_cost"]
    runs = harness.run({e: me + ["--child", e] + common for e in engines}, args.reps,
                       on_done=lambda e, k, r: print(f"[{k}] {e}: analyze {r.get('analyze_ms')} ms, "
                                                     f"optimize {r.get('optimize_ms')} ms", file=sys.stderr))
    command = "python -m benchmarks.planning_cost " + " ".join(a for a in (argv if argv is not None else sys.argv[1:]))
    summary, md = report(runs, args, command)
    name = args.name or f"planning_cost_{args.query}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps({"summary": summary, "runs": runs}, indent=1) + "\n")
    (args.out / f"{name}.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
