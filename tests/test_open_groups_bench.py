"""The open-groups benchmark end to end at a tiny size: Spark's watermark plan and Punctuated's
aggregation over the same files, each in a fresh process (the harness)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_both_engines_give_the_batch_answer_and_ours_holds_the_open_windows_only(tmp_path, monkeypatch, child_jvms):
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import open_groups

    out = tmp_path / "out"
    sensors = 50
    # main() itself stops with an error unless both engines' results equal the batch answer
    assert open_groups.main(["--sensors", str(sensors), "--batches", "4", "--window-seconds", "120",
                             "--repeats", "1", "--driver-memory", "1g", "--forkless-fs", "--out", str(out)]) == 0
    report = json.loads((out / "open_groups.json").read_text())
    # every sensor's two windows, every reading counted once
    assert report["expected"] == {**report["expected"], "rows": 2 * sensors, "count": 4 * sensors}
    r = report["results"]
    # ours: one open window per sensor at most; Spark's watermark closes a window a batch later
    assert r["punctuated"]["max_state_rows"]["median"] == sensors
    assert r["watermark"]["max_state_rows"]["median"] == 2 * sensors
    assert report["punctuated_over_watermark"]["throughput"]["median"] > 0
    assert "many open groups" in (out / "open_groups.md").read_text()


def test_the_batches_must_end_on_a_window_boundary(capsys, monkeypatch):
    import pytest

    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import open_groups

    with pytest.raises(SystemExit):
        open_groups.main(["--batches", "3", "--seconds-per-batch", "60", "--window-seconds", "120"])
    assert "multiple of --window-seconds" in capsys.readouterr().err
