"""The benchmark harness's own logic (``benchmarks/harness.py``, ``benchmarks/nexmark_report.py``):
interleaving, pairing of repetitions, ratio medians and spreads, the load record, the
per-batch throughput the plots draw. Pure Python, no Spark, no timings asserted."""

from __future__ import annotations

import pytest

from benchmarks import harness, nexmark_report


def test_schedule_alternates_which_engine_goes_first():
    assert harness.schedule(["a", "b"], 3) == [("a", 0), ("b", 0), ("b", 1), ("a", 1), ("a", 2), ("b", 2)]
    order = harness.schedule(["a", "b", "c"], 2)
    assert order == [("a", 0), ("b", 0), ("c", 0), ("c", 1), ("b", 1), ("a", 1)]
    # every (engine, repetition) exactly once
    assert sorted(harness.schedule(["x", "y"], 4)) == sorted((e, k) for e in "xy" for k in range(4))
    assert harness.schedule(["a"], 2) == [("a", 0), ("a", 1)]
    with pytest.raises(ValueError, match="--reps"):
        harness.schedule(["a", "b"], 0)


def test_run_launches_in_schedule_order_and_records_load():
    launched, loads = [], iter([(1.0, 2.0, 3.0), (1.5, 2.5, 3.0), (0.5, 1.0, 1.0), (0.75, 1.0, 1.0),
                                (2.0, 2.0, 2.0), (4.0, 2.0, 2.0), (3.0, 3.0, 3.0), (3.5, 3.0, 3.0)])

    def launch(command):
        launched.append(command[-1])
        return {"events_per_second": 100.0 * len(launched)}

    done = []
    runs = harness.run({"a": ["child", "a"], "b": ["child", "b"]}, 2, load=lambda: next(loads),
                       launch=launch, on_done=lambda e, k, r: done.append((e, k)))
    assert launched == ["a", "b", "b", "a"]
    assert done == [("a", 0), ("b", 0), ("b", 1), ("a", 1)]
    # results in repetition order, whatever order they ran in
    assert [r["rep"] for r in runs["a"]] == [0, 1] and [r["order"] for r in runs["a"]] == [0, 3]
    assert [r["events_per_second"] for r in runs["a"]] == [100.0, 400.0]
    assert [r["events_per_second"] for r in runs["b"]] == [200.0, 300.0]
    # the load before and after each child
    assert runs["a"][0]["load_1min_before"] == 1.0 and runs["a"][0]["load_1min_after"] == 1.5
    assert runs["a"][0]["load_5min_before"] == 2.0
    assert runs["b"][1]["load_1min_before"] == 2.0 and runs["b"][1]["load_1min_after"] == 4.0
    assert harness.load_summary(runs) == {"median": 1.75, "min": 0.5, "max": 4.0}


def test_run_keeps_a_child_without_result():
    runs = harness.run({"a": ["x"]}, 1, load=lambda: (0.0, 0.0, 0.0), launch=lambda c: None)
    assert runs["a"][0]["rep"] == 0 and "events_per_second" not in runs["a"][0]
    assert harness.figure_spread(runs, "events_per_second") == {"a": None}


def test_load_record_rounds_the_one_minute_average():
    assert harness.load_record((1.234, 2.0, 3.0), (1.5, 9.0, 9.0)) == {
        "load_1min_before": 1.23, "load_1min_after": 1.5, "load_5min_before": 2.0}


def test_ratios_pair_repetition_k_with_repetition_k():
    runs = {"a": [{"x": 2.0}, {"x": 4.0}, {"x": 1.0}], "b": [{"x": 3.0}, {"x": 2.0}, {"x": 4.0}]}
    assert harness.paired_ratios(runs, "x", "b", "a") == [1.5, 0.5, 4.0]
    # median of the per-repetition ratios, not the ratio of the medians (3 / 2 = 1.5)
    assert harness.ratio_spread(runs, "x", "b", "a") == {"median": 1.5, "min": 0.5, "max": 4.0}
    runs["b"][0]["x"] = 2.0
    assert harness.ratio_spread(runs, "x", "b", "a") == {"median": 1.0, "min": 0.5, "max": 4.0}
    assert harness.ratio_spread(runs, "x", "a", "b")["max"] == 2.0


def test_ratios_leave_out_pairs_missing_a_figure():
    runs = {"a": [{"x": 2.0}, {"x": 0}, {"x": None}, {"x": 5.0}],
            "b": [{"x": 3.0}, {"x": 1.0}, {"x": 1.0}, {}]}
    assert harness.paired_ratios(runs, "x", "b", "a") == [1.5]   # 0 and None references, missing figure
    assert harness.ratio_spread({"a": [{}], "b": [{"x": 1}]}, "x", "b", "a") is None
    assert harness.ratio_spread(runs, "x", "b", "nobody") is None


def test_spreads_per_engine():
    assert harness.spread([1.0, 3.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0}
    assert harness.spread([4, 1]) == {"median": 2.5, "min": 1, "max": 4}
    runs = {"a": [{"x": 1}, {"x": 3}, {"x": None}], "b": [{"y": 1}]}
    assert harness.figure_spread(runs, "x") == {"a": {"median": 2.0, "min": 1, "max": 3}, "b": None}
    assert harness.fmt_spread({"median": 1.2, "min": 1.1, "max": 1.4}) == "1.2 (1.1–1.4)"
    assert harness.fmt_spread({"median": 12061.5, "min": 11096, "max": 13025}, thousands=True) == \
        "12,062 (11,096–13,025)"
    assert harness.fmt_spread(None) == "–"


def test_emit_prints_the_line_spawn_reads(capsys):
    harness.emit({"seconds": 1.5, "rows": [1, 2]})
    line = capsys.readouterr().out
    assert line == 'RESULT {"seconds": 1.5, "rows": [1, 2]}\n'


def test_batch_throughput_leaves_out_empty_batches():
    rows = [{"events": 100, "input_rows": 90, "batch_ms": 50},
            {"events": 300, "input_rows": 180, "batch_ms": 100},
            {"events": 300, "input_rows": 0, "batch_ms": 20}]   # the last, empty batch
    assert nexmark_report.batch_throughput(rows) == [(100, 2000.0), (300, 2000.0)]
    # a batch of 0 ms counts as 1 ms (no division by zero)
    assert nexmark_report.batch_throughput([{"events": 5, "input_rows": 5, "batch_ms": 0}]) == [(5, 5000.0)]


def test_our_line_is_drawn_on_top_and_references_under():
    ours, spark, floor = (nexmark_report.line_style(e) for e in ("punctuated", "native", "floor"))
    assert ours["zorder"] > spark["zorder"] > floor["zorder"]
    assert ours["linewidth"] > spark["linewidth"] > floor["linewidth"]
    assert floor.get("linestyle") == "--"


def _rep(rep, eps, rows=10, checksum=7, error=None):
    batches = [{"engine": "e", "batch": 0, "events": 50, "input_rows": 50, "state_rows": 4, "punctuations_held": 1,
                "batch_ms": 100, "planning_ms": 10, "state_commit_ms": 5 * (rep + 1)},
               {"engine": "e", "batch": 1, "events": 100, "input_rows": 50, "state_rows": 6, "punctuations_held": 2,
                "batch_ms": 100, "planning_ms": 10, "state_commit_ms": 5 * (rep + 1)}]
    return {"rep": rep, "per_batch": [dict(b) for b in batches], "totals": {"rows": rows, "checksum": checksum},
            "seconds": 100 / eps if eps else 0.0, "events_per_second": eps, "error": error,
            "load_1min_before": 1.0, "load_1min_after": 2.0 + rep}


def test_nexmark_engine_summary_medians_over_repetitions():
    from argparse import Namespace

    from benchmarks.nexmark import engine_summary

    args = Namespace(query="q3", events=100)
    reference = {"expected": [10, 7], "expected_all": [10, 7], "live": {"50": 4, "100": 5}}
    s, rows = engine_summary("punctuated", [_rep(0, 30.0), _rep(1, 10.0), _rep(2, 20.0)], args, "cmd", reference, 2)
    assert s["events_per_second"] == 20 and s["events_per_second_spread"] == {"median": 20, "min": 10, "max": 30}
    assert s["events_per_second_per_core"] == 10 and s["reps"] == 3
    assert s["results_match"] is True and s["missing_rows"] == 0
    assert s["max_state_over_live_working_set"] == 1.2 and s["final_state_rows"] == 6
    assert s["mean_state_commit_ms"] == 10.0   # median over the repetitions of each one's mean
    assert s["load_1min"] == {"median": 1.5, "min": 1.0, "max": 4.0}   # 1, 2, 1, 3, 1, 4
    assert [r["live_working_set"] for r in rows] == [4, 5]   # the median repetition's batches

    # one repetition with another answer: the engine does not match
    s, _ = engine_summary("punctuated", [_rep(0, 30.0), _rep(1, 10.0, checksum=8)], args, "cmd", reference, 2)
    assert s["results_match"] is False
    # refused in a repetition: recorded as not run, with the message, no figures
    s, rows = engine_summary("native", [_rep(0, None, error="refused"), _rep(1, None, error="refused")],
                             args, "cmd", reference, 2)
    assert s["error"] == "refused" and s["events_per_second"] is None and rows == []


def _figures(seconds: dict, memory: dict, state_rows=None, output_rows=None) -> dict:
    """Summaries in the shape undeclared_overhead builds (a spread per figure)."""
    def s(v):
        return {"median": v, "min": v, "max": v}
    return {e: {"seconds": s(t), "trigger_seconds": s(t), "planning_seconds": s(1.0),
                "state_memory_bytes": s(memory[e]), "state_rows": s((state_rows or {}).get(e, 10)),
                "batches": s(3), "output_rows": s((output_rows or {}).get(e, 5))}
            for e, t in seconds.items()}


def test_undeclared_overhead_ratios_are_speed_and_memory_against_without():
    from benchmarks import undeclared_overhead as uo

    f = _figures({"without": 10.0, "with": 8.0, "declared": 12.5},
                 {"without": 200.0, "with": 200.0, "declared": 110.0})
    ratios = uo.speed_ratios(f)
    assert ratios["with"]["seconds"] == 1.25            # faster: above 1
    assert ratios["declared"]["seconds"] == 0.8         # slower: below 1
    assert "without" not in ratios
    assert uo.memory_ratio(f) == 0.55
    uo.check_same_work(f)


def test_undeclared_overhead_refuses_engines_that_did_different_work():
    from benchmarks import undeclared_overhead as uo

    seconds = {"without": 1.0, "with": 1.0, "declared": 1.0}
    memory = {"without": 1.0, "with": 1.0, "declared": 1.0}
    with pytest.raises(SystemExit, match="state_rows"):
        uo.check_same_work(_figures(seconds, memory, state_rows={"declared": 9}))
    with pytest.raises(SystemExit, match="output_rows"):
        uo.check_same_work(_figures(seconds, memory, output_rows={"with": 4}))
    # ours counts its row updates its own way: only with and without must agree
    uo.check_same_work(_figures(seconds, memory, output_rows={"declared": 4}))


def test_generate_and_run_generates_once_runs_every_engine_on_that_data_and_removes_it():
    from pathlib import Path

    seen = []

    def launch(command):
        seen.append(command)
        data = Path(command[command.index("--data") + 1])
        assert data.is_dir()
        return {"exact_rows": 5} if command[command.index("--child") + 1] == "generate" else {"x": len(seen)}

    generated, runs = harness.generate_and_run("benchmarks.some", ["a", "b"], ["--rows", "10"], 2, "t-",
                                               launch=launch)
    assert generated == {"exact_rows": 5}
    assert [c[c.index("--child") + 1] for c in seen] == ["generate", "a", "b", "b", "a"]
    assert all(c[1:3] == ["-m", "benchmarks.some"] and c[-2:] == ["--rows", "10"] for c in seen)
    data = {c[c.index("--data") + 1] for c in seen}
    assert len(data) == 1 and not Path(data.pop()).exists()
    assert [r["rep"] for r in runs["a"]] == [0, 1]


def test_forkless_option_is_one_helper_for_every_benchmark():
    """``--forkless-fs`` is declared, passed to children and described by the harness alone."""
    import doctest
    from pathlib import Path

    assert doctest.testmod(harness).failed == 0
    for name in ("auction_join", "band_only_join", "migration", "nexmark", "open_groups", "shedding"):
        text = (Path(harness.ROOT) / "benchmarks" / f"{name}.py").read_text()
        assert "harness.add_forkless_option(ap)" in text and "forkless_local_fs" not in text, name
