"""No text cites a paper by its file number ("paper 000"): sources, docs, SQL,
benchmarks and README cite author, year and section (e.g. "Li et al. (VLDB
2006), Theorem 2"), and what users read — explain(), ``punctuated check``
output, the picture — names no bare "Def N" either."""
import re
from pathlib import Path

import pytest

from punctuated.safety import analyze_plan, analyze_safety
from punctuated.safety.spark import format_report, report_from_join_graph

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ["python", "docs", "sql", "benchmarks", "jvm/src/main", "README.md"]
SUFFIXES = {".py", ".md", ".sql", ".scala", ".java", ".txt", ".toml", ".cfg", ".json"}
PAPER_NUMBER = re.compile(r"\bpapers? (?:\d{3}|0\d)\b", re.IGNORECASE)
BARE_DEF = re.compile(r"\bDefs?\b\.? ?\d")


def _files():
    for name in SCANNED:
        p = ROOT / name
        if p.is_file():
            yield p
        elif p.is_dir():
            yield from (f for f in sorted(p.rglob("*")) if f.is_file() and f.suffix in SUFFIXES)


def test_no_source_doc_or_sql_cites_a_paper_by_number():
    files = list(_files())
    assert any(f.name == "report.py" for f in files) and any(f.suffix == ".sql" for f in files)
    hits = [f"{f.relative_to(ROOT)}:{k}: {line.strip()}"
            for f in files for k, line in enumerate(f.read_text(errors="replace").splitlines(), 1)
            if PAPER_NUMBER.search(line)]
    assert not hits, "cite author, year and section instead:\n" + "\n".join(hits)


FIG3 = {"S1": ["A", "B"], "S2": ["B", "C"], "S3": ["C", "A"]}
CYCLE = ["S1.B = S2.B", "S2.C = S3.C", "S3.A = S1.A"]


def _spark_report():
    return report_from_join_graph({"streams": [
        {"name": "x", "attributes": ["k", "v"], "schemes": [["k"]], "declared": True},
        {"name": "y", "attributes": ["k", "v"], "schemes": [["k"], ["v"]], "declared": True},
        {"name": "z", "attributes": ["v"], "schemes": [["v"]], "declared": True}],
        "predicates": ["x.k = y.k", "y.v = z.v"], "tree": [["x", "y"], "z"]})


REPORTS = {
    "safe, Theorem 2": lambda: analyze_safety({"a": ["id"], "b": ["id"]}, ["a.id = b.id"],
                                              {"a": [["id"]], "b": [["id"]]}),
    "unsafe, Theorem 4": lambda: analyze_safety(FIG3, CYCLE, {"S1": [["B"]], "S2": [["B"]], "S3": [["A", "C"]]}),
    "check_safety report with Spark's join tree": _spark_report,
}


def _cites_by_author(where, text):
    assert not re.search(r"\bpaper\b", text, re.IGNORECASE), (where, text)
    assert not BARE_DEF.search(text), (where, text)


@pytest.mark.parametrize("make", REPORTS.values(), ids=REPORTS.keys())
def test_explain_and_check_output_cite_by_author_and_meaning(make):
    r = make()
    for where, text in {"explain()": r.explain(), "explain(None)": r.explain(None),
                        "punctuated check": format_report(r)}.items():
        _cites_by_author(where, text)
    assert f"Li et al. (VLDB 2006), {r.theorem}, §4." in r.explain()
    assert "a query is safe iff its" in r.explain()


@pytest.mark.parametrize("make", REPORTS.values(), ids=REPORTS.keys())
def test_picture_texts_cite_by_author_and_meaning(make):
    from punctuated.safety.draw import build_figure
    fig = build_figure(make())
    _cites_by_author("picture", "\n".join([t.get_text() for t in fig.texts + fig.axes[0].texts]
                                          + [t.get_text() for t in fig.legends[0].get_texts()]))


def test_plan_explain_cites_by_author_and_meaning():
    text = analyze_plan(FIG3, CYCLE, {"S1": [["B"]], "S2": [["C"]], "S3": [["A"]]}, [["S1", "S2"], "S3"]).explain()
    assert "Li et al. (VLDB 2006)" in text and "a plan is safe iff every join operator is purgeable" in text
    _cites_by_author("plan explain()", text)
