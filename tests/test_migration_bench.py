"""Smoke run of the plan-migration benchmark (``benchmarks/migration.py``): tiny sizes, one
repetition, the engines ``none`` and ``jisc`` (and ``parallel_track`` where the build has it), the old
plan a right-deep tree, every engine on the local file system without forked commands; the
fanout workload with ``jisc`` alone (``none`` is the first run's).
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


def _rows(root, t):
    return [json.loads(line) for f in sorted((root / t).iterdir()) for line in f.read_text().splitlines()]


def test_fanout_workload_flips_the_rows_per_key_of_a_and_b(tmp_path):
    """``--workload fanout``: from the flip a sends ``skew`` rows per new k1 and punctuates k1,
    b sends ``skew`` times as many rows (each a new k2), c and d keep their rates; every value
    opened is punctuated once by each input having it, ``key_life`` batches later."""
    args = SimpleNamespace(events=3000, batches=6, switch_batch=4, flip_batch=3, skew=4, key_life=2, zipf=1.2,
                           seed=7, workload="fanout")
    r = migration.rows_per_batch(args)
    assert r == 3000 // (2 * 6 + 2 * (3 + 4 * 3))
    counts = migration.generate(args, tmp_path)
    assert counts == {"a": r * (3 + 4 * 3), "b": r * (3 + 4 * 3), "c": 6 * r, "d": 6 * r}
    a, b = _rows(tmp_path, "a"), _rows(tmp_path, "b")
    per_k1 = {}
    for row in a:
        if not row["a_punct"]:
            per_k1[row["a_k1"]] = per_k1.get(row["a_k1"], 0) + 1
    assert sorted(set(per_k1.values())) == [1, 4] and sum(v == 1 for v in per_k1.values()) == 3 * r
    k2 = [row["b_k2"] for row in b if not row["b_punct"]]
    assert len(k2) == len(set(k2))                       # b stays unique on k2
    # a and b close the k1 values of the first batches (the last key_life - 1 batches' stay open)
    for t, col in (("a", "a_k1"), ("b", "b_k1")):
        closed = sorted(row[col] for row in _rows(tmp_path, t) if row[f"{t}_punct"])
        assert closed == list(range((6 - 1) * r))
    closed_k2 = sorted(row["c_k2"] for row in _rows(tmp_path, "c") if row["c_punct"])
    assert closed_k2 == sorted(k2)[:len(closed_k2)] and len(closed_k2) == 3 * r + 4 * r * 2
    # the rate workload is as before: a unique on k1, never punctuating
    rate = SimpleNamespace(**{**vars(args), "workload": "rate"})
    migration.generate(rate, tmp_path / "rate")
    assert not any(row["a_punct"] for row in _rows(tmp_path / "rate", "a"))


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
def test_smoke_run_results_agree_across_strategies(tmp_path, child_env):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.migration", "--out", str(out), "--events", "400", "--batches", "4",
         "--switch-batch", "2", "--key-life", "2", "--reps", "1", "--strategies", "jisc,parallel_track",
         "--engines", "none", "--driver-memory", "1g", "--forkless-fs", "--old-plan", "(a ⋈ (b ⋈ (c ⋈ d)))"],
        cwd=ROOT, capture_output=True, text=True, timeout=1800, env=child_env)
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


@pytest.mark.spark
def test_smoke_run_of_the_fanout_workload(tmp_path, child_env):
    """The selectivity flip end to end: a punctuating k1, the default plans of the workload
    (old ``((a ⋈ b) ⋈ c ⋈ d)``, new right-deep), the switch's results equal to the batch answer.
    (``jisc`` alone, ``--engines ''``: the engine without migration is the previous test's.)"""
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.migration", "--workload", "fanout", "--out", str(out), "--events", "800",
         "--batches", "4", "--switch-batch", "2", "--flip-batch", "1", "--key-life", "2", "--skew", "3",
         "--reps", "1", "--strategies", "jisc", "--engines", "", "--driver-memory", "1g", "--forkless-fs"],
        cwd=ROOT, capture_output=True, text=True, timeout=1800, env=child_env)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads((out / "migration.json").read_text())["report"]
    assert set(report["results_match"]) == {"jisc"}
    assert report["results_identical"], report["results_match"]
    assert report["engines"]["jisc"]["migrations"]["median"] == 1
    md = (out / "migration.md").read_text()
    assert "workload fanout" in md
    assert "Old plan `((a ⋈ b) ⋈ c ⋈ d)`, new plan `(a ⋈ (b ⋈ (c ⋈ d)))`" in md
