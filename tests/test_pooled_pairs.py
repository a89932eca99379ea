"""Pooling recorded NEXMark series pair by pair (``benchmarks/pooled_pairs.py``): the pairs'
direction, the first micro-batch left out of the later span, the A/A figure, and the figures the
results README quotes from the recorded CSV files."""

from __future__ import annotations

import csv
import doctest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_series(path: Path, ms: dict) -> Path:
    """A CSV as benchmarks/nexmark.py records it: ``ms[engine][rep]`` lists each batch's ms."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["engine", "rep", "batch", "events", "input_rows", "state_rows", "punctuations_held",
                    "batch_ms", "planning_ms", "state_commit_ms", "live_working_set"])
        for engine, reps in ms.items():
            for rep, batches in enumerate(reps):
                for batch, t in enumerate(batches):
                    w.writerow([engine, rep, batch, 0, 0, 0, 0, t, 0, 0, ""])
    return path


def test_pairs_span_and_a_over_a(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import pooled_pairs

    assert doctest.testmod(pooled_pairs).failed == 0
    # ours: a slow first batch, then faster than Spark's plan
    one = write_series(tmp_path / "one.csv", {
        "watermark": [[100, 50, 50], [100, 50, 50]],
        "watermark_again": [[100, 50, 50], [100, 100, 100]],
        "punctuated": [[200, 40, 40], [200, 40, 40]],
    })
    two = write_series(tmp_path / "two.csv", {
        "watermark": [[100, 50, 50]],
        "watermark_again": [[100, 50, 50]],
        "punctuated": [[300, 50, 50]],
    })
    figures = pooled_pairs.pooled([one, two])
    whole, later = figures[("whole", "punctuated/watermark")], figures[("later", "punctuated/watermark")]
    assert whole["n"] == 3 and later["n"] == 3
    # whole runs: 200/280, 200/280, 200/400 (Spark's time over ours)
    assert whole["median"] == round(200 / 280, 3)
    # after the first batch: 100/80 twice, 100/100
    assert later["median"] == 1.25 and 1.0 <= later["low"] <= 1.25
    assert figures[("later", "punctuated/watermark_again")]["median"] == 1.25
    # A/A: the second copy's throughput over the first's (the first's time over the second's)
    aa = figures[("whole", "A/A")]
    assert aa["n"] == 3 and aa["median"] == 1.0 and round(200 / 300, 3) <= aa["low"] <= 1.0


def test_the_readme_figures_reproduce_from_the_recorded_series(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import pooled_pairs

    names = ["nexmark_q7_2000000_time_only_plan_s54", "nexmark_q7_2000000_time_only_plan2_s54",
             "nexmark_q7_2000000_time_only_s55"]
    figures = pooled_pairs.pooled([pooled_pairs.resolve(n) for n in names])
    assert figures[("whole", "punctuated/watermark")] == {
        "n": 27, "median": 0.972, "low": 0.953, "high": 0.992, "geomean": 0.967}
    assert figures[("later", "punctuated/watermark")]["median"] == 1.003
    four = pooled_pairs.pooled([pooled_pairs.resolve(n) for n in names + ["nexmark_q7_2000000_time_only_start_s55"]])
    assert (four[("whole", "punctuated/watermark")]["median"], four[("later", "punctuated/watermark")]["median"]) == (0.968, 1.005)
    readme = (ROOT / "benchmarks" / "results" / "README.md").read_text()
    assert "0.972 (0.953–0.992)" in readme and "0.968 (0.941–0.980)" in readme
    assert pooled_pairs.main(names) == 0
    assert "27 pairs, median 0.972 (95 % 0.953–0.992)" in capsys.readouterr().out
    # session 63: the current engine's q7 series (docs/contract.md quotes the 25 pairs), and
    # the dropped experiment's
    s63 = [f"nexmark_q7_2000000_time_only_{s}s63" for s in ("", "b_", "c_", "d_")]
    today = pooled_pairs.pooled([pooled_pairs.resolve(n) for n in s63])
    assert today[("whole", "punctuated/watermark")] == {
        "n": 20, "median": 0.979, "low": 0.946, "high": 1.006, "geomean": 0.98}
    assert today[("later", "punctuated/watermark")]["median"] == 1.019
    current = pooled_pairs.pooled([pooled_pairs.resolve(n) for n in ["nexmark_q7_2000000_time_only_lowest_s62"] + s63])
    assert (current[("whole", "punctuated/watermark")]["median"], current[("later", "punctuated/watermark")]["median"]) == (0.986, 1.023)
    tried = pooled_pairs.pooled([pooled_pairs.resolve(n.replace("only_", "only_async_")) for n in s63])
    assert (tried[("whole", "punctuated/watermark")]["median"], tried[("later", "punctuated/watermark")]["median"]) == (0.99, 1.034)
    assert "0.979 (95 % 0.946–1.006)" in readme and "0.99 (0.981–1.022)" in readme
    contract = (ROOT / "docs" / "contract.md").read_text()
    assert "0.986x (0.963–1.006)" in contract
    # session 69: after the restore step's read-ahead (docs/contract.md quotes the 26 pairs)
    s69 = [f"nexmark_q7_2000000_time_only_{s}s69" for s in ("pilot_", "", "b_")]
    after = pooled_pairs.pooled([pooled_pairs.resolve(n) for n in s69])
    assert after[("whole", "punctuated/watermark")] == {
        "n": 26, "median": 1.044, "low": 0.959, "high": 1.125, "geomean": 1.043}
    assert after[("later", "punctuated/watermark")]["median"] == 1.092
    assert "1.044 (95 % 0.959–1.125)" in readme and "**1.044x** (0.959–1.125)" in contract
    # q5 in session 69 (below 1.0; the read-ahead's own A/B above it)
    q5 = pooled_pairs.pooled([pooled_pairs.resolve(f"nexmark_q5_2000000_time_only_{s}s69") for s in ("", "b_")])
    w5 = q5[("whole", "punctuated/watermark")]
    assert (w5["n"], w5["median"], w5["low"], w5["high"]) == (10, 0.947, 0.875, 0.999)
    assert "0.947x (0.875–0.999)" in contract and "0.947 (95 % 0.875–0.999)" in readme
    # session 70: q5, q7 and q8 with the replicating shuffle's change (84a8b96), and the series before it
    def whole(names):
        w = pooled_pairs.pooled([pooled_pairs.resolve(n) for n in names])[("whole", "punctuated/watermark")]
        return (w["n"], w["median"], w["low"], w["high"])
    assert whole(["nexmark_q5_2000000_time_only_b_s70"]) == (12, 1.015, 0.944, 1.097)
    assert whole(["nexmark_q7_2000000_time_only_s70"]) == (10, 1.04, 0.979, 1.096)
    assert whole(["nexmark_q8_2000000_b_s70"]) == (8, 1.032, 0.983, 1.116)
    assert whole(["nexmark_q5_2000000_time_only_s70", "nexmark_q5_2000000_time_only_b_s70"]) == (20, 1.015, 0.964, 1.091)
    assert whole(["nexmark_q8_2000000_s70", "nexmark_q8_2000000_b_s70"]) == (16, 1.032, 0.97, 1.106)
    assert whole(s69 + ["nexmark_q7_2000000_time_only_s70"]) == (36, 1.044, 0.979, 1.08)
    assert whole([f"nexmark_q5_2000000_time_only_{s}s{n}" for n in (69, 70) for s in ("", "b_")]) == (30, 0.99, 0.944, 1.018)
    assert "**1.015x** (12 pairs, 0.944–1.097)" in contract and "**1.032x** (8 pairs, 0.983–1.116)" in contract
    assert "1.044 (0.979–1.08)" in readme and "0.99 (0.944–1.018)" in readme
    # q5 and q8 with the current engine (session 63)
    for names, whole, later in (
            (["nexmark_q5_2000000_time_only_s63", "nexmark_q5_2000000_time_only_b_s63"], (1.029, 0.993, 1.087), 1.086),
            (["nexmark_q8_2000000_s63", "nexmark_q8_2000000_b_s63"], (1.002, 0.987, 1.017), 1.039)):
        f = pooled_pairs.pooled([pooled_pairs.resolve(n) for n in names])
        w = f[("whole", "punctuated/watermark")]
        assert (w["n"], w["median"], w["low"], w["high"]) == (10,) + whole
        assert f[("later", "punctuated/watermark")]["median"] == later
        assert f"{whole[0]}x ({whole[1]}–{whole[2]})" in contract
