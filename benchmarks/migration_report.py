"""The figures, Markdown and plot of ``benchmarks/migration.py`` (the plan-migration benchmark).

Per run (one engine, one repetition) the per-batch records ``{"batch", "input_rows",
"batch_ms", "state_rows", "migrations", "incomplete", "keys_completed", "parallel_plans"}``;
from them:

* ``first_after_switch_over_steady``: the switch batch's time over the run's steady-state
  batch time (the median of its last ``max(3, (batches - switch) // 3)`` batches);
* the **migration stage**: from the switch batch until ``jisc``'s ``numIncompleteStates`` is
  back to 0 (the median stage length over the ``jisc`` runs; every engine is measured over the
  same batches), its throughput = input rows / batch seconds, as paired per-repetition ratios
  to ``parallel_track`` and to ``none``;
* ``auto`` over the best fixed plan (``none`` = the old plan, ``fixed`` = the new one, the one
  with the lower median) over the whole run (sum of batch times from batch 1: batch 0 is the
  JVM's warm-up), paired per repetition.

``summarize(runs, prep, args, ...)`` returns the report; ``markdown(report, args)`` its text;
``plot(runs, args, path)`` draws batch time around the switch per engine (False without
matplotlib). E.g. ``stage_length([{"batch": 12, "incomplete": 2}, {"batch": 13, "incomplete": 0}], 12)`` is 2.
"""

from __future__ import annotations

import statistics

from benchmarks import harness

#: The strategies whose switch batch is compared with the fixed plan's same batch.
STRATEGIES_MEASURED = ("jisc", "moving_state", "parallel_track")

TARGETS = {"jisc_over_parallel_track_throughput": 3.0, "jisc_first_over_steady": 1.2, "auto_over_best_fixed": 1.1}


def by_batch(run) -> dict:
    return {b["batch"]: b for b in run.get("per_batch", [])}


def steady_batches(args) -> list[int]:
    n = max(3, (args.batches - args.switch_batch) // 3)
    return list(range(args.batches - n, args.batches))


def stage_length(per_batch, switch: int, key: str = "incomplete") -> int | None:
    """Batches from ``switch`` until ``key`` (``numIncompleteStates``; ``parallel_plans``: the
    cells where Parallel Track still runs the old plan) is 0 after a batch (1: done at the
    switch batch); None if it never is."""
    for b in sorted(per_batch, key=lambda x: x["batch"]):
        if b["batch"] >= switch and b.get(key, 0) == 0:
            return b["batch"] - switch + 1
    return None


def own_stage_key(run) -> str:
    """What ends a run's own migration stage: the old plan dropped under Parallel Track, every
    state complete otherwise."""
    return "parallel_plans" if any(b.get("parallel_plans", 0) for b in run.get("per_batch", [])) else "incomplete"


def window_rate(bb, start: int, length: int):
    """Input rows per batch second over batches ``start .. start + length - 1`` (None: no time)."""
    window = [bb[i] for i in range(start, start + length) if i in bb]
    ms = sum(b["batch_ms"] for b in window)
    return sum(b["input_rows"] for b in window) / (ms / 1000.0) if window and ms else None


def figures(run, args, stage: int, pt_stage: int | None = None) -> dict:
    """The per-run figures (None where the run lacks the batches); ``pt_stage``: the length of
    Parallel Track's own stage, over which every engine is measured too."""
    if not run or run.get("error"):
        return {}
    bb = by_batch(run)
    steady = [bb[i]["batch_ms"] for i in steady_batches(args) if i in bb]
    first = bb.get(args.switch_batch)
    # the whole run without batch 0 (the JVM's warm-up: its time varies most and says least)
    whole = [b for b in run["per_batch"] if b["batch"] > 0]
    total_ms = sum(b["batch_ms"] for b in whole)
    out = {
        "steady_ms": statistics.median(steady) if steady else None,
        "first_after_switch_ms": first["batch_ms"] if first else None,
        "stage_rows_per_second": window_rate(bb, args.switch_batch, stage),
        "pt_stage_rows_per_second": window_rate(bb, args.switch_batch, pt_stage) if pt_stage else None,
        "total_batch_ms": total_ms,
        "whole_run_rows_per_second": sum(b["input_rows"] for b in whole) / (total_ms / 1000.0) if total_ms else None,
        "own_stage_batches": stage_length(run["per_batch"], args.switch_batch, own_stage_key(run)),
        "migrations": sum(b["migrations"] for b in run["per_batch"]),
        "max_state_rows": max((b["state_rows"] for b in run["per_batch"]), default=0),
    }
    if out["steady_ms"] and out["first_after_switch_ms"] is not None:
        out["first_after_switch_over_steady"] = out["first_after_switch_ms"] / out["steady_ms"]
    return out


def summarize(runs, prep, args, strategies, command, minutes, loads) -> dict:
    jisc_stages = [stage_length(r["per_batch"], args.switch_batch) for r in runs.get("jisc", []) if r and not r.get("error")]
    jisc_stages = [s for s in jisc_stages if s]
    stage = max(1, min(int(statistics.median(jisc_stages)) if jisc_stages else 1, args.batches - args.switch_batch))
    pt_stages = [stage_length(r["per_batch"], args.switch_batch, "parallel_plans")
                 for r in runs.get("parallel_track", []) if r and not r.get("error")]
    pt_stages = [s for s in pt_stages if s]
    pt_stage = (max(1, min(int(statistics.median(pt_stages)), args.batches - args.switch_batch))
                if pt_stages else None)
    for engine, rs in runs.items():
        for r in rs:
            r.update(figures(r, args, stage, pt_stage))
    expected = (prep["expected_rows"], prep["expected_checksum"])
    matches = {e: [bool(r and not r.get("error") and (r["totals"]["rows"], r["totals"]["checksum"]) == expected)
                   for r in rs] for e, rs in runs.items()}
    keys = ("first_after_switch_over_steady", "steady_ms", "first_after_switch_ms", "stage_rows_per_second",
            "whole_run_rows_per_second", "total_batch_ms", "own_stage_batches", "migrations", "max_state_rows")
    engines = {e: {k: harness.figure_spread({e: rs}, k)[e] for k in keys} for e, rs in runs.items()}
    for e, rs in runs.items():
        engines[e]["errors"] = sorted({r["error"] for r in rs if r and r.get("error")})
        engines[e]["final_plan"] = next((r.get("final_plan") for r in rs if r and not r.get("error")), None)
    ratios = {}
    for e in runs:
        for ref in ("parallel_track", "none"):
            if e != ref and ref in runs:
                ratios[f"stage_throughput {e}/{ref}"] = harness.ratio_spread(runs, "stage_rows_per_second", e, ref)
    if pt_stage and "jisc" in runs and "parallel_track" in runs:
        ratios["pt_stage_throughput jisc/parallel_track"] = harness.ratio_spread(
            runs, "pt_stage_rows_per_second", "jisc", "parallel_track")
    fixed = [e for e in ("none", "fixed") if engines.get(e, {}).get("total_batch_ms")]
    best = min(fixed, key=lambda e: engines[e]["total_batch_ms"]["median"]) if fixed else None
    if best and "auto" in runs:
        ratios[f"whole_run_time auto/{best}"] = harness.ratio_spread(runs, "total_batch_ms", "auto", best)
    # the switch batch against the same batch of the new plan run from the start (no migration)
    for e in STRATEGIES_MEASURED:
        if e in runs and "fixed" in runs:
            ratios[f"switch_batch_time {e}/fixed"] = harness.ratio_spread(runs, "first_after_switch_ms", e, "fixed")
    not_available = [s for s in strategies if not prep["available"].get(s)]
    return {"command": command, "minutes": minutes, "cpus": __import__("os").cpu_count(),
            "load_average_before_after": [list(map(lambda x: round(x, 2), l)) for l in loads],
            "load_1min": harness.load_summary(runs), "rows_per_batch": prep["rows_per_batch"],
            "data_rows": prep["data_rows"], "expected_rows": prep["expected_rows"],
            "expected_checksum": prep["expected_checksum"], "not_available": not_available,
            "migration_stage_batches": stage, "parallel_track_stage_batches": pt_stage, "best_fixed": best, "engines": engines, "ratios": ratios,
            "results_match": matches, "results_identical": all(all(m) for m in matches.values())}


def _f(s, digits=2, thousands=False):
    return harness.fmt_spread(s, digits, thousands)


def flip_text(args) -> str:
    """What flips, as the title says it."""
    if getattr(args, "workload", "rate") == "fanout":
        return f"a's rows per k1 and b's rows x{args.skew} (workload fanout)"
    return f"d's rate x{args.skew}"


def markdown(report, args) -> str:
    load = report["load_1min"]
    lines = [
        f"# Plan migration: a(k1) ⋈ b(k1, k2) ⋈ c(k2, k3) ⋈ d(k3), {flip_text(args)} from batch "
        f"{getattr(args, 'flip_batch', None) or args.switch_batch}", "",
        f"Command: `nice -n 10 {report['command']}`", "",
        f"{args.batches} micro-batches, {report['rows_per_batch']:,} new values per key and batch, "
        f"key life {args.key_life} batches, Zipf {args.zipf}, data rows {report['data_rows']}; batch answer "
        f"{report['expected_rows']:,} rows. Old plan `{getattr(args, 'old_plan', 'mjoin')}`, new plan `{args.new_plan}`; the switch "
        f"(`punctuated.migrate` in the sink of batch {args.switch_batch - 1}) runs the new plan from batch "
        f"{args.switch_batch}. {args.reps} repetitions, each engine in a fresh process, interleaved; medians "
        f"with min–max. local[{args.partitions}] on {report['cpus']} cores, {report['minutes']} minutes; "
        f"1-minute load average over the children {_f(load, 1)}"
        f"{harness.forkless_note(args)}.",
        "",
        "| engine | first batch after switch / steady | first batch ms | steady batch ms | "
        f"migration-stage rows/s ({report['migration_stage_batches']} batches) | whole-run rows/s | "
        "own stage (batches) | migrations | max state rows | results = batch answer |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for e, s in report["engines"].items():
        if s["errors"]:
            lines.append(f"| {e} | – | – | – | – | – | – | – | – | not run: {s['errors'][0]} |")
            continue
        lines.append(
            f"| {e} | {_f(s['first_after_switch_over_steady'])} | {_f(s['first_after_switch_ms'], 0)} | "
            f"{_f(s['steady_ms'], 0)} | {_f(s['stage_rows_per_second'], 0, True)} | "
            f"{_f(s['whole_run_rows_per_second'], 0, True)} | {_f(s['own_stage_batches'], 0)} | "
            f"{_f(s['migrations'], 0)} | {_f(s['max_state_rows'], 0, True)} | "
            f"{'yes' if all(report['results_match'][e]) else '**no**'} |")
    for s in report["not_available"]:
        lines.append(f"| {s} | – | – | – | – | – | – | – | – | not available in this build "
                     f"(`spark.punctuated.migration.strategy={s}` refused) |")
    lines += ["", "Ratios (paired per repetition; median [min–max]):", ""]
    for k, v in report["ratios"].items():
        lines.append(f"- {k}: " + (f"**{v['median']}** [{v['min']}–{v['max']}]" if v else "–"))
    lines += ["", "Targets (medians):", ""]
    for line in targets(report):
        lines.append(f"- {line}")
    lines += ["", f"Results identical across every engine and repetition (row count + checksum against the batch "
                  f"answer): **{'yes' if report['results_identical'] else 'no'}**. `auto`'s final plan: "
                  f"`{report['engines'].get('auto', {}).get('final_plan')}`.", ""]
    return "\n".join(lines)


def targets(report) -> list[str]:
    """One line per target of the issue: the measured median, and met / not met / not measured."""
    def median(s):
        return s["median"] if s else None

    def verdict(value, ok):
        return "not measured" if value is None else ("met" if ok(value) else "**not met**")
    eng, ratios = report["engines"], report["ratios"]
    pt = median(ratios.get("stage_throughput jisc/parallel_track"))
    first = median(eng.get("jisc", {}).get("first_after_switch_over_steady"))
    moving = median(eng.get("moving_state", {}).get("first_after_switch_over_steady"))
    auto = next((median(v) for k, v in ratios.items() if k.startswith("whole_run_time auto/")), None)
    pt_own = median(ratios.get("pt_stage_throughput jisc/parallel_track"))
    own = ([f"the same over Parallel Track's own stage (until its old plan is dropped, "
            f"{report['parallel_track_stage_batches']} batches): {pt_own} — "
            + verdict(pt_own, lambda v: v >= TARGETS["jisc_over_parallel_track_throughput"])]
           if pt_own is not None else [])
    return [
        f"JISC ≥ 3x Parallel Track's throughput during the migration stage: {pt if pt is not None else '–'} — "
        + (verdict(pt, lambda v: v >= TARGETS["jisc_over_parallel_track_throughput"]) if pt is not None
           else "not measured (`parallel_track` not available in this build)")
        + f" (JISC's stage: {report['migration_stage_batches']} batches)",
        *own,
        f"JISC's first batch after the switch ≤ 1.2x the steady-state batch time: "
        f"{round(first, 2) if first is not None else '–'} — {verdict(first, lambda v: v <= TARGETS['jisc_first_over_steady'])}"
        f" (Moving State's: {round(moving, 2) if moving is not None else '–'})",
        f"`auto` within 1.1x of the best fixed plan over the whole run ({report['best_fixed']}): "
        f"{auto if auto is not None else '–'} — {verdict(auto, lambda v: v <= TARGETS['auto_over_best_fixed'])}",
    ]


def plot(runs, args, path) -> bool:
    """Batch time (median over repetitions) per batch and engine, the switch marked."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for engine, rs in runs.items():
        good = [by_batch(r) for r in rs if r and not r.get("error")]
        if not good:
            continue
        xs = sorted(set.intersection(*[set(g) for g in good]))
        ys = [statistics.median(g[x]["batch_ms"] for g in good) for x in xs]
        ax.plot(xs, ys, marker="o", markersize=3, label=engine, linewidth=2.5 if engine == "jisc" else 1.2)
    ax.axvline(args.switch_batch - 0.5, color="grey", linestyle="--", linewidth=1)
    ax.text(args.switch_batch - 0.4, ax.get_ylim()[1] * 0.95, "switch", color="grey", fontsize=8, va="top")
    ax.set_xlabel("micro-batch")
    ax.set_ylabel("batch time (ms, median over repetitions)")
    ax.set_title(f"Plan migration at batch {args.switch_batch}: batch time per strategy")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
