"""The planning-cost benchmark end to end at a tiny size: Spark's watermark plan and ours for
NEXMark q7, each in a fresh process (the harness), the analyzer and optimizer timed on the last
micro-batch's plan."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_both_engines_measured_and_our_rules_ranked(tmp_path, monkeypatch, child_jvms):
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import planning_cost

    out = tmp_path / "out"
    assert planning_cost.main(["--query", "q7", "--reps", "1", "--events", "20000", "--events-per-batch", "10000",
                               "--warmup-plans", "5", "--plans", "5", "--rounds", "2", "--driver-memory", "1g", "--out", str(out),
                               "--name", "pc"]) == 0
    report = json.loads((out / "pc.json").read_text())
    summary = report["summary"]
    for engine in ("watermark", "punctuated"):
        figures = summary["engines"][engine]
        assert figures["optimize_ms"]["median"] > 0, (engine, figures)
        assert figures["operators"]["median"] > 3 and figures["expression_nodes"]["median"] > 10, figures
        # Spark's rules ran on the plan, and the metering saw them
        assert summary["rules"][engine].get("ColumnPruning", 0) > 0, summary["rules"][engine]
    # our optimizer rules run on our plan only in earnest, and show in the ranking
    assert summary["rules"]["punctuated"]["PassPunctuationsThroughFilters"] > 0
    assert any(name == "PassPunctuationsThroughFilters" for name, _, _ in
               planning_cost.rule_excess(summary["rules"]["punctuated"], summary["rules"]["watermark"], 50))
    # our plan carries its punctuation bookkeeping: more expression nodes than Spark's
    assert summary["engines"]["punctuated"]["expression_nodes"]["median"] > \
        summary["engines"]["watermark"]["expression_nodes"]["median"]
    assert summary["ratios"]["optimize_ms"]["median"] > 0
    md = (out / "pc.md").read_text()
    assert "| engine | analyzer ms/plan | optimizer ms/plan |" in md and "Rules by what they cost" in md


def test_pure_helpers_doctests(monkeypatch):
    import doctest

    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import planning_cost

    assert doctest.testmod(planning_cost).failed == 0
