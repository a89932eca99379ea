"""The band-only join benchmark end to end at a tiny size: Spark's own hand-bucketed plan and
Punctuated's band-only join over the same files, each in a fresh process (the harness)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_both_engines_give_the_batch_answer_and_bounded_state(tmp_path, monkeypatch, child_jvms):
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import band_only_join

    out = tmp_path / "out"
    # main() itself stops with an error unless both engines' results equal the batch join's
    assert band_only_join.main(["--rows", "4000", "--batches", "4", "--seconds-per-batch", "600", "--band", "2",
                                "--repeats", "1", "--driver-memory", "1g", "--forkless-fs", "--out", str(out)]) == 0
    report = json.loads((out / "band_only_join.json").read_text())
    assert report["exact_rows"] > 0
    per_batch_rows = 4000 // 4
    for engine in ("native", "punctuated"):
        figures = report["results"][engine]
        assert figures["result_rows"]["median"] == report["exact_rows"]
        assert figures["batches"]["median"] == 4
        # both forget what the band closed (Spark by its watermark, a batch later)
        assert 0 < figures["state_rows"]["median"] < 4000, (engine, figures)
    # ours holds at most the rows the last punctuations left open: fewer than one batch's
    assert report["results"]["punctuated"]["state_rows"]["median"] < per_batch_rows, report["results"]
    assert report["punctuated_over_native"]["throughput"]["median"] > 0
    assert "A join on time alone" in (out / "band_only_join.md").read_text()
