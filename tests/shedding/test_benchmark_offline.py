"""The offline experiments' runner writes its tables, plots and target checks."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_tiny_run_writes_tables_plots_and_targets(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import shedding_offline

    shedding_offline.main(["--out", str(tmp_path), "--windows", "30", "--counted-steps", "90",
                           "--small-window", "10", "--skews", "0,2", "--static-size", "400"])
    md = (tmp_path / "shedding_offline.md").read_text()
    res = json.loads((tmp_path / "shedding_offline.json").read_text())
    assert (tmp_path / "shedding_offline_w30.png").stat().st_size > 0
    assert "## Targets" in md and "ADG/OPTDP at Zipf 2.0" in md
    for exp in res["sliding"] + [res["uniform"]] + res["skew"] + res["variable"]:
        for r in exp["rows"]:
            assert max(r.get("prob", 0), r.get("life", 0), r.get("rand", 0)) <= r["opt"] <= r["exact"]
    for s in res["static"]:
        assert s["optdp"] / 2 <= s["adg"] <= s["optdp"]
