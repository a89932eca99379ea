"""The shedding benchmark end to end at a tiny size: the punctuated band join with a budget in
Spark against OPT-offline on the same trace (Das, Gehrke and Riedewald 2005, §4.1, §5.2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import shedding

    return shedding


def test_operator_against_opt_on_the_same_trace(spark, tmp_path, bench):
    # One step per micro-batch: the operator runs the paper's model, so OPT bounds it.
    # 5 join values instead of the paper's 50, so that a 4-step window finds partners.
    exp = bench.experiment(spark, tmp_path, window=4, skew=1.0, counted=8, steps_per_batch=1,
                           fractions=[0.5], policies=["prob", "rand"], seed=1, domain=5)
    # experiment() itself asserts: no duplicates, a subset of the exact pairs, the budget after
    # every batch, and the operator without a budget producing EXACT.
    assert exp["exact_operator"] == exp["exact"] > 0
    (row,) = exp["rows"]
    assert row["memory"] == 2
    for p in ("prob", "rand"):
        assert row[f"op_{p}"] <= row["opt"] <= row["exact"], row
        assert row[f"op_{p}_max_rows"] <= 2 and row[f"op_{p}_shed"] > 0, row
    for p in ("prob", "life", "rand"):
        assert row[f"step_{p}"] <= row["opt"], row
    assert row["opt"] < row["exact"], "the budget should cost results on this trace"

    res = {"command": "test", "seconds": 0, "experiments": [exp], "plots": True}
    bench.write(res, tmp_path / "out", "shedding")
    bench.plot(exp, tmp_path / "out" / "shedding_w4_z1.0.png")
    md = (tmp_path / "out" / "shedding.md").read_text()
    assert "| M |" in md and "op_prob/OPT" in md
    assert json.loads((tmp_path / "out" / "shedding.json").read_text())["experiments"][0]["exact"] == exp["exact"]
    assert (tmp_path / "out" / "shedding_w4_z1.0.png").stat().st_size > 0


def test_batched_replay_with_one_step_per_batch_is_the_papers_replay():
    from punctuated.shedding.batched import batched_replay, exact_pairs
    from punctuated.shedding.online import exact_output, replay
    from punctuated.shedding.workloads import paper_sliding_window

    st = paper_sliding_window(10, 1.0, counted_steps=100, seed=3)
    assert len(exact_pairs(st.trace, 10, st.warmup)) == exact_output(st.trace, 10, st.warmup)
    for m in (4, 10):
        for p in ("prob", "life"):
            a = replay(st.trace, 10, m, p, "variable", st.warmup).output
            b = batched_replay(st.trace, 10, m, p, 1, st.warmup)
            assert a == b.output and b.max_held <= m
    # larger batches: still a subset of the exact join, never more than EXACT
    for b in (2, 5):
        r = batched_replay(st.trace, 10, 4, "prob", b, st.warmup, record_pairs=True)
        assert set(r.pairs) <= exact_pairs(st.trace, 10, st.warmup) and len(set(r.pairs)) == len(r.pairs)
        assert r.max_held <= 4
    big = batched_replay(st.trace, 10, 10**6, "prob", 5, st.warmup)
    assert big.output == exact_output(st.trace, 10, st.warmup) and big.shed == 0


def test_bad_arguments_are_named():
    from punctuated.shedding.batched import batched_replay
    from punctuated.shedding.workloads import FIGURE3

    with pytest.raises(ValueError, match="policy"):
        batched_replay(FIGURE3.trace(), 3, 2, "lru")
    with pytest.raises(ValueError, match="steps_per_batch"):
        batched_replay(FIGURE3.trace(), 3, 2, "prob", steps_per_batch=0)


def test_batched_module_examples():
    import doctest

    from punctuated.shedding import batched

    res = doctest.testmod(batched)
    assert res.attempted > 0 and res.failed == 0


def test_budget_against_sparks_own_join(tmp_path, child_env):
    """The user's view (benchmarks/shedding_budget.py) at a tiny size: Spark's own join keeps
    every row and gives the exact result; under the budget the state stays at the budget, the
    results are fewer than exact, and PROB keeps more of them than RAND on skewed keys."""
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "benchmarks.shedding_budget", "--rows", "8000", "--batches", "2",
           "--budget", "300", "--domain", "8000", "--repeats", "1", "--driver-memory", "1g",
           "--out", str(tmp_path)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, env=child_env)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "shedding_budget.json").read_text())
    f, exact = report["results"], report["exact_rows"]
    assert f["native"]["result_rows"]["median"] == exact > 0
    assert f["native"]["state_rows"]["median"] == 8000 and f["native"]["rows_shed"]["median"] == 0
    for p in ("prob", "rand"):
        assert f[p]["max_state_rows"]["max"] <= 2 * 300
        assert f[p]["rows_shed"]["median"] == 8000 - f[p]["state_rows"]["median"]
        assert 0 < f[p]["result_rows"]["median"] < exact
        assert f[p]["state_memory_bytes"]["median"] < f["native"]["state_memory_bytes"]["median"]
    kept = report["ratios_over_native"]
    assert kept["prob"]["kept"] > kept["rand"]["kept"], kept
    md = (tmp_path / "shedding_budget.md").read_text()
    assert "share of exact" in md and "Command:" in md


def test_budget_check_refuses_a_row_neither_held_nor_shed():
    """``shedding_budget.check`` stops a recording whose budget run lost track of a row (the
    accounting a bug in ``JoinInputState.removeRow`` once broke by a few rows in 400 K)."""
    from benchmarks.shedding_budget import check

    def spread(v):
        return {"median": v, "min": v, "max": v}

    figures = {"native": {"result_rows": spread(10)},
               "prob": {"result_rows": spread(6), "max_state_rows": spread(40)}}
    good = {"prob": [{"rows_shed": 60, "state_rows": 40, "input_rows": 100}]}
    check(figures, good, exact=10, budget=20, partitions=2)
    lost = {"prob": [{"rows_shed": 59, "state_rows": 40, "input_rows": 100}]}
    with pytest.raises(SystemExit, match="59 rows shed \\+ 40 held != 100 input rows"):
        check(figures, lost, exact=10, budget=20, partitions=2)
