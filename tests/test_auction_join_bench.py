"""The auction-join benchmark (``benchmarks/auction_join.py``) end to end at a tiny size: Spark's
own join and Punctuated's over the same files, each engine in a fresh process (the harness),
on the local file system without forked commands. No timing is asserted."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_both_engines_give_the_same_results_and_ours_keeps_the_open_auctions(tmp_path, monkeypatch, child_jvms):
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import auction_join

    out = tmp_path / "out"
    assert auction_join.main(["--bids", "2000", "--batches", "4", "--auctions-per-batch", "20",
                              "--auction-life", "2", "--reps", "1", "--driver-memory", "1g",
                              "--forkless-fs", "--out", str(out)]) == 0
    report = json.loads((out / "auction_join.json").read_text())
    assert report["results_identical"], report["engines"]
    native, ours = report["engines"]
    assert native["engine"] == "native" and ours["engine"] == "punctuated"
    assert native["result_rows"] == ours["result_rows"] > 0
    # Spark's own join keeps every row; ours the auctions still open (2 batches of 20) at most
    assert native["final_state_rows"] == native["events"]
    assert ours["max_state_rows"] <= 2 * 20 * 2, ours
    assert report["config"]["forkless_fs"] is True
    md = (out / "auction_join.md").read_text()
    assert "without forked commands" in md and "Results identical" in md
    with open(out / "auction_join.csv") as f:
        assert {r["engine"] for r in csv.DictReader(f)} == {"native", "punctuated"}
