"""Smoke run of the plan-migration benchmark (``benchmarks/migration.py``): tiny sizes, one
repetition, the engines ``none`` and ``jisc`` (and ``parallel_track`` where the build has it), the old
plan a right-deep tree, every engine on the local file system without forked commands.
Asserts its output files and that every engine's results equal the batch answer (row count and
checksum), the switch happened for ``jisc`` and a strategy the build refuses is reported, not
run. No timing is asserted. The figures' arithmetic is checked without Spark."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks import migration, migration_report

ROOT = Path(__file__).resolve().parent.parent


def test_rows_per_batch_and_stage_length():
    args = SimpleNamespace(events=1000, batches=10, switch_batch=5, skew=3)
    # a, b, c: 3 x 10 batches; d: 5 + 3 x 5 batches -> 50 units of R
    assert migration.rows_per_batch(args) == 20
    per_batch = [{"batch": 4, "incomplete": 0}, {"batch": 5, "incomplete": 3}, {"batch": 6, "incomplete": 1},
                 {"batch": 7, "incomplete": 0}]
    assert migration_report.stage_length(per_batch, 5) == 3
    assert migration_report.stage_length(per_batch[:3], 5) is None
    assert migration_report.steady_batches(SimpleNamespace(batches=24, switch_batch=12)) == [20, 21, 22, 23]


def test_figures_of_a_run():
    args = SimpleNamespace(batches=8, switch_batch=4)
    run = {"per_batch": [{"batch": b, "input_rows": 100, "batch_ms": 200 if b == 4 else 100, "state_rows": 10,
                          "migrations": int(b == 4), "incomplete": int(b == 4), "keys_completed": 0}
                         for b in range(8)]}
    f = migration_report.figures(run, args, stage=2)
    assert f["first_after_switch_over_steady"] == 2.0
    assert f["stage_rows_per_second"] == 200 / 0.3
    assert f["own_stage_batches"] == 2 and f["migrations"] == 1
    assert f["total_batch_ms"] == 800  # batch 0 (the warm-up) left out
    assert f["pt_stage_rows_per_second"] is None


def test_parallel_track_own_stage_ends_when_the_old_plan_is_dropped():
    args = SimpleNamespace(batches=8, switch_batch=4)
    run = {"per_batch": [{"batch": b, "input_rows": 100, "batch_ms": 100, "state_rows": 10, "migrations": int(b == 4),
                          "incomplete": 0, "keys_completed": 0, "parallel_plans": 2 if 4 <= b <= 6 else 0}
                         for b in range(8)]}
    assert migration_report.own_stage_key(run) == "parallel_plans"
    f = migration_report.figures(run, args, stage=1, pt_stage=3)
    assert f["own_stage_batches"] == 4  # the old plan still runs after batches 4, 5 and 6
    assert f["pt_stage_rows_per_second"] == 300 / 0.3 and f["stage_rows_per_second"] == 100 / 0.1


@pytest.mark.spark
def test_smoke_run_results_agree_across_strategies(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.migration", "--out", str(out), "--events", "400", "--batches", "4",
         "--switch-batch", "2", "--key-life", "2", "--reps", "1", "--strategies", "jisc,parallel_track",
         "--engines", "none", "--driver-memory", "1g", "--forkless-fs", "--old-plan", "(a ⋈ (b ⋈ (c ⋈ d)))"],
        cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]
    for suffix in (".json", ".md"):
        assert (out / f"migration{suffix}").is_file()
    report = json.loads((out / "migration.json").read_text())["report"]
    assert report["results_identical"], report["results_match"]
    engines = report["engines"]
    assert {"none", "jisc"} <= set(engines) and "fixed" not in engines
    assert all(not e["errors"] for e in engines.values()), engines
    # the switch: one migration under jisc, none without
    assert engines["jisc"]["migrations"]["median"] == 1 and engines["none"]["migrations"]["median"] == 0
    # a strategy the build refuses is reported as not available, one it accepts is run
    assert ("parallel_track" in engines) != ("parallel_track" in report["not_available"])
    md = (out / "migration.md").read_text()
    assert "Results identical" in md and "jisc" in md
    # the options reached the children: the old plan a tree, every engine on the forkless file system
    assert "Old plan `(a ⋈ (b ⋈ (c ⋈ d)))`" in md and "without forked commands" in md
    assert report["engines"]["jisc"]["final_plan"] != report["engines"]["none"]["final_plan"]
