"""The chaos workload itself (no Spark): its stream's punctuations are valid, every auction and
key is closed by the last step, and the batch answers are not trivial."""

from __future__ import annotations

import json

from benchmarks.chaos import STEPS, compare, expected, generate, markdown, merge


def _closed_then_quiet(steps, marker, attr):
    """Every value of ``attr`` punctuated at step s has no data row at or after s."""
    closed = {}
    for s, rows in enumerate(steps):
        for r in rows:
            if r[marker] and r.get(attr) is not None:
                closed.setdefault(r[attr], s)
    for s, rows in enumerate(steps):
        for r in rows:
            if not r[marker]:
                assert r[attr] not in closed or s < closed[r[attr]], (attr, r, s)
    return closed


def test_the_stream_is_valid_and_closes_everything():
    for seed in range(20):
        st = generate(seed)
        assert all(len(st[n]) == STEPS for n in st)
        bids_closed = _closed_then_quiet(st["bids"], "is_punct", "auction")
        assert set(bids_closed) == {r["id"] for rows in st["auctions"] for r in rows}
        _closed_then_quiet(st["x"], "p", "k")
        _closed_then_quiet(st["y"], "p", "k")
        _closed_then_quiet(st["y"], "p", "v")
        _closed_then_quiet(st["z"], "p", "v")
        for q in ("join", "agg", "dedup", "multiway"):
            assert sum(expected(q, st).values()) > 20, (seed, q)


def test_compare_counts_lost_and_duplicated_rows():
    st = generate(3)
    rows = sorted(expected("dedup", st).elements())
    assert compare("dedup", st, rows) == {"expected": len(rows), "rows": len(rows), "lost": 0, "duplicated": 0}
    damaged = rows[1:] + rows[-1:]
    assert compare("dedup", st, damaged)["lost"] == 1 and compare("dedup", st, damaged)["duplicated"] == 1


def test_merged_report_lists_every_run_and_command(tmp_path):
    def part(seed, lost):
        run = {"run": 0, "query": "join", "sink": "file", "result": {"expected": 5, "rows": 5, "lost": lost,
               "duplicated": 0, "seconds": 1.0},
               "kills": [{"planned": "in-batch", "batch": 1, "observed": "in-batch", "observed_batch": 1}]}
        p = tmp_path / f"{seed}.json"
        p.write_text(json.dumps({"provider": "hdfs", "master": "local[2]", "seed": seed, "kills": 1,
                                 "runs": [run], "ok": lost == 0}))
        return p
    ok = merge([part(1, 0), part(2, 0)])
    assert ok["kills"] == 2 and ok["ok"] and [r["run"] for r in ok["runs"]] == ["1/0", "2/0"]
    md = markdown(ok)
    assert "--seed 1" in md and "--seed 2" in md and "0 rows lost, 0 duplicated" in md
    assert not merge([part(1, 0), part(3, 1)])["ok"]
