"""The NEXMark benchmark's plot and Markdown report (``benchmarks/nexmark.py`` runs, this draws).

The plot shows our line on top: reference lines (the live working set, the ``floor``
engine) are drawn thinner, dashed and underneath. Per-batch throughput is computed as the
headline figure is — events over wall time — per batch: the batch's new events over its wall
time (``triggerExecution``); batches with no input rows (the last, empty one that only runs
the state's clean-up) are left out of the throughput curve instead of drawn as a drop to 0::

    batch_throughput([{"events": 100, "input_rows": 90, "batch_ms": 50},
                      {"events": 100, "input_rows": 0, "batch_ms": 20}])   # [(100, 2000.0)]
"""

from __future__ import annotations

from pathlib import Path

from benchmarks import harness

OURS = "punctuated"


def batch_throughput(rows) -> list[tuple[int, float]]:
    """(events so far, events/s) per batch of one engine's rows, in order: the batch's new
    events over its wall time; batches without input rows are left out (see module doc)."""
    prev, points = 0, []
    for r in rows:
        new, prev = r["events"] - prev, r["events"]
        if r["input_rows"] == 0:
            continue
        points.append((r["events"], new / max(r["batch_ms"], 1) * 1000))
    return points


def line_style(engine: str) -> dict:
    """Matplotlib keywords per line: ours thick and on top, references thin, dashed, below.
    ``line_style("punctuated")["zorder"]`` is 3; ``line_style("floor")["zorder"]`` is 1."""
    from benchmarks.nexmark import ENGINES, OPTIONAL_ENGINES, REFERENCE_ENGINES

    colors = {e: f"C{i}" for i, e in enumerate(ENGINES + OPTIONAL_ENGINES + REFERENCE_ENGINES)}
    if engine == OURS:
        return {"color": colors[engine], "linewidth": 2.4, "zorder": 3, "marker": ".", "label": engine}
    if engine in REFERENCE_ENGINES or engine not in colors:
        return {"color": colors.get(engine, "0.4"), "linewidth": 0.9, "linestyle": "--", "zorder": 1,
                "label": engine}
    return {"color": colors[engine], "linewidth": 1.5, "zorder": 2, "marker": ".", "markersize": 4,
            "label": engine}


def plot(path: Path, rows, query: str, events: int) -> None:
    """State rows (log) and per-batch throughput over the events, one line per engine (its
    representative repetition), the live working set as a thin reference line underneath."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from benchmarks.nexmark import REFERENCE_ENGINES

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 7.4), sharex=True)
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    live = [r for r in rows if r["engine"] == engines[-1] and r.get("live_working_set") is not None]
    if live:
        ax1.plot([r["events"] / 1e6 for r in live], [max(1, r["live_working_set"]) for r in live],
                 color="k", linestyle="--", linewidth=0.9, zorder=1, label="live working set")
    for engine in sorted(engines, key=lambda e: e == OURS):  # ours drawn last
        rs = [r for r in rows if r["engine"] == engine]
        style = line_style(engine)
        if engine not in REFERENCE_ENGINES:  # (a reference engine holds no state)
            ax1.plot([r["events"] / 1e6 for r in rs], [max(1, r["state_rows"]) for r in rs], **style)
        points = batch_throughput(rs)
        ax2.plot([e / 1e6 for e, _ in points], [t for _, t in points], **style)
    ax1.set_yscale("log")
    ax1.set_ylabel("state rows (log)")
    ax1.set_title(f"NEXMark {query}: {events:,} events (each engine's median-throughput run)")
    ax1.legend()
    ax2.set_ylabel("events/s per batch")
    ax2.set_xlabel("events (millions)")
    ax2.legend()
    fig.text(0.01, 0.005, "Throughput per batch: the batch's new events / its wall time (as the headline "
                          "figure: events / wall time); batches with no input rows not drawn.", fontsize=7)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def task_metrics_lines(summaries) -> list[str]:
    """The table of the tasks' time per stage kind (``--task-metrics``), or nothing.

    >>> task_metrics_lines([{"engine": "e", "task_metrics": None}])
    []
    >>> task_metrics_lines([{"engine": "e", "task_metrics": {"scan": {"cpu_ms": 5, "run_ms": 7, "tasks": 2}}}])[-1]
    '| e | scan | 2 | 5 | 7 | 0 | 0 |'
    """
    timed = [x for x in summaries if x.get("task_metrics")]
    if not timed:
        return []
    lines = ["", "The timed query's tasks per stage kind (Spark's event log, `--task-metrics`; sums over the run, "
                 "medians over the repetitions; scan: the stages reading the sources, stateful: those with "
                 "state stores):", "",
             "| engine | stages | tasks | CPU ms | run ms | deserialize ms | GC ms |", "|---|---|---:|---:|---:|---:|---:|"]
    for x in timed:
        for kind in ("scan", "stateful", "other", "all"):
            m = x["task_metrics"].get(kind)
            if m:
                lines.append(f"| {x['engine']} | {kind} | {m.get('tasks', 0):g} | {m.get('cpu_ms', 0):g} | "
                             f"{m.get('run_ms', 0):g} | {m.get('deserialize_ms', 0):g} | {m.get('gc_ms', 0):g} |")
    return lines


def driver_lines(summaries) -> list[str]:
    """The table of the JVM's compilation and Catalyst's rules over the timed run, or nothing.

    >>> driver_lines([{"engine": "e", "driver": {"jit_s": 21.5, "rules_ms_per_batch": 24.1}}])[-1]
    '| e | 21.5 | 24.1 |'
    """
    timed = [x for x in summaries if x.get("driver")]
    if not timed:
        return []
    return ["", "The timed run's JVM (`local[N]`: driver and tasks in one JVM; medians over the repetitions): "
                "the JIT compilers' time, summed over their threads (the JVM's `CompilationMXBean`), and "
                "Catalyst's analyzer and optimizer rules per micro-batch (Spark's `RuleExecutor` metering, "
                "every plan of the run):", "",
            "| engine | JIT compilation s | Catalyst rules ms per batch |", "|---|---:|---:|"] + [
        f"| {x['engine']} | {x['driver']['jit_s']:g} | {x['driver']['rules_ms_per_batch']:g} |" for x in timed]


def first_and_rest_lines(summaries) -> list[str]:
    """The table of the first micro-batch against the later ones (summed), or nothing.

    >>> first_and_rest_lines([{"engine": "e", "first_and_rest": {"first_ms": 900, "first_planning_ms": 300,
    ...                                                          "rest_ms": 2200, "rest_planning_ms": 220}}])[-1]
    '| e | 900 | 300 | 2,200 | 220 |'
    """
    timed = [x for x in summaries if x.get("first_and_rest")]
    if not timed:
        return []
    return ["", "The first micro-batch (a cold JVM's first plan, generated code and checkpoint files) and "
                "the later ones summed (medians over the repetitions), ms:", "",
            "| engine | first micro-batch | its planning | later micro-batches | their planning |",
            "|---|---:|---:|---:|---:|"] + [
        "| {e} | {first_ms:,g} | {first_planning_ms:,g} | {rest_ms:,g} | {rest_planning_ms:,g} |".format(
            e=x["engine"], **x["first_and_rest"]) for x in timed]


def markdown(summaries, ratios, report, args, command, name, expected, expected_all, cores) -> str:
    """The run's Markdown: medians with their spread (min–max over the repetitions), the ratios
    as medians and spreads of the per-repetition ratios, and the machine's load."""
    from benchmarks.nexmark import ALT, FLINK_PER_CORE, SAME_INPUT

    by = {s["engine"]: s for s in summaries}
    load = report["load_1min"]
    lines = [f"# NEXMark {args.query}: {args.events:,} events, {', '.join(by)}", "",
             f"Command: `{command}`", "",
             f"{args.reps} repetition(s), each engine in a fresh process with the same JVM options, "
             f"engines interleaved ({' '.join(report['schedule'])}); figures are medians with the spread "
             f"(min–max) over the repetitions. Machine load (1-minute average, before and after each "
             f"run): {harness.fmt_spread(load, 2)} on {cores} cores."
             + (f" Warm JVM: each process first ran its engine's query over the first "
                f"{args.warmup_events:,} events, untimed (`--warmup-events`)."
                if getattr(args, "warmup_events", 0) else "")
             + (" The punctuated engines' bid stream punctuates `dateTime<=` only, not each expired "
                "auction (`--time-punctuations-only`, the source's `auctionPunctuations=false`)."
                if getattr(args, "time_punctuations_only", False) else "")
             + (" Every engine's session set " + ", ".join(f"`{c}`" for c in args.spark_conf)
                + " (`--spark-conf`)." if getattr(args, "spark_conf", None) else ""), "",
             f"Batch answer: {expected[0]:,} rows"
             + (f" (of auctions closed before the stream ends, the reference here; over all "
                f"auctions {expected_all[0]:,}: the other {expected_all[0] - expected[0]:,} are still "
                f"open at the end, no final winner yet)" if expected_all != expected else "")
             + f". local[{args.partitions}], "
             f"{args.events_per_batch:,} events per micro-batch, {args.events_per_second:,} events/s event time.",
             "",
             *([f"`{ALT}` is the punctuated engine run from another copy of the package (`--alt-path`): "
                f"`{by[ALT].get('package')}`; `punctuated` ran from `{by.get('punctuated', {}).get('package')}`.", ""]
               if ALT in by else []),
             "| engine | events/s (median, min–max) | events/s per core | max state rows | final state rows | "
             "max state / live working set | final punctuations held | result rows | results match batch |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for s in summaries:
        if s.get("error"):
            lines.append(f"| {s['engine']} | – | – | – | – | – | – | – | not run: {s['error']} |")
            continue
        match = ("– (reference: no join)" if s["results_match"] is None
                 else "yes (every repetition)" if s["results_match"]
                 else f"**no** ({s['missing_rows']:,} rows missing)")
        lines.append(
            f"| {s['engine']} | {harness.fmt_spread(s['events_per_second_spread'], thousands=True)} | "
            f"{s['events_per_second_per_core']:,} | "
            f"{s['max_state_rows']:,} | {s['final_state_rows']:,} | {s['max_state_over_live_working_set']} | "
            f"{s['final_punctuations_held']:,} | {s['result_rows']:,} | {match} |")
    timed = [x for x in summaries if x.get("mean_batch_ms") is not None]
    if timed:
        lines += ["", "Where a micro-batch's time goes (means per batch, medians over the repetitions; "
                      f"commits summed over the {args.partitions} tasks of each stateful operator, which "
                      "run in parallel):", "",
                  "| engine | batch ms | Spark's planning ms | state-store commits ms |",
                  "|---|---:|---:|---:|"]
        lines += [f"| {x['engine']} | {x['mean_batch_ms']} | {x['mean_planning_ms']} | "
                  f"{x['mean_state_commit_ms']} |" for x in timed]
    lines += first_and_rest_lines(summaries)
    lines += task_metrics_lines(summaries)
    lines += driver_lines(summaries)
    lines += ["", "Ratios (repetition k of one engine over repetition k of the other; median and min–max):", ""]
    for pair, r in ratios.items():
        a, b = pair.split("/")
        if r["throughput"] is None:
            continue
        line = f"- throughput {a} / {b}: **{harness.fmt_spread(r['throughput'])}**"
        if a == "floor":
            line += " — the most any join plan could gain over Spark's own here (floor: the same inputs and filters, no join)"
        elif b == SAME_INPUT:
            line += " — our operators against Spark's plan over the same rows (both read the punctuated stream)"
        elif a == SAME_INPUT:
            line += " — what reading the punctuated stream (generating its punctuations, filtering them out) costs Spark's own plan"
        elif by.get(b, {}).get("final_state_rows"):
            line += f"; final state {a} / {b}: **{round(by[a]['final_state_rows'] / by[b]['final_state_rows'], 5)}**"
        lines.append(line)
    flink = FLINK_PER_CORE.get(args.query)
    if flink:
        lines += ["", f"Context, not a like-for-like comparison: Flink 1.13 on 8 cores reported "
                      f"{flink:,} events/s per core for {args.query} (nexmark/nexmark); the table's "
                      f"per-core figure divides by the {cores} cores of this machine."]
    lines += ["", f"Per-batch figures of every repetition: `{name}.csv`; plot (each engine's "
                  f"median-throughput repetition): `{name}.png`; every run with its load: `{name}.runs.json`.", ""]
    return "\n".join(lines)
