"""``punctuated.declaration`` split by job: every public name still importable from the
package, each module's examples run, no import loop, and one scheme-text parser shared
with the safety analysis."""

from __future__ import annotations

import ast
import doctest
import importlib
from pathlib import Path

import pytest

import punctuated.declaration as declaration
from punctuated.safety import analyze_safety, build_query

PACKAGE = Path(declaration.__file__).parent
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def test_the_package_has_one_module_per_job():
    assert MODULES == ["decode", "errors", "resolve", "text", "types"]


@pytest.mark.parametrize("name", MODULES)
def test_module_examples(name):
    module = importlib.import_module(f"punctuated.declaration.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_public_names_are_importable_from_the_package():
    for name in declaration.__all__:
        assert hasattr(declaration, name), name
    assert declaration.DeclarationError.__module__ == "punctuated.declaration"


def _imports(module: str) -> set[str]:
    """The ``punctuated.*`` modules ``module`` imports when it is loaded."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    out = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("punctuated"):
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("punctuated"))
    return out


def test_no_import_loop_and_nothing_above_the_model():
    graph = {m: {i.rsplit(".", 1)[-1] for i in _imports(m) if i.startswith("punctuated.declaration.")}
             for m in MODULES}
    done: list[str] = []
    while len(done) < len(graph):   # topological order exists iff there is no loop
        ready = [m for m in graph if m not in done and graph[m] <= set(done)]
        assert ready, f"import loop among {sorted(set(graph) - set(done))}"
        done.extend(ready)
    outside = {i for m in MODULES for i in _imports(m) if not i.startswith("punctuated.declaration")}
    assert outside <= {"punctuated.model"}, outside


def test_the_safety_analysis_reads_schemes_with_the_declarations_parser():
    streams = {"a": ["bid id", "day"], "b": ["x", "day"]}
    q = build_query(streams, ["a.`bid id` = b.x", "a.day = b.day"],
                    {"a": [["`bid id`"], ["`bid id`", "day<="]], "b": ["x"]})
    assert [str(s) for s in q.schemes] == ["a(bid id)", "a(bid id, day<=)", "b(x)"]
    assert q.to_dict()["schemes"]["a"] == [["`bid id`"], ["`bid id`", "day<="]]
    assert build_query(streams, q.to_dict()["predicates"], q.to_dict()["schemes"]).to_dict() == q.to_dict()
    assert analyze_safety(streams, ["a.`bid id` = b.x"], {"a": [["`bid id`"]], "b": [["x"]]}).safe
    # a name that is no plain identifier must be backquoted, as in punctuated.schemes
    with pytest.raises(ValueError, match=r"scheme \[.bid id.\] of stream .a.: unexpected .id. after .bid."):
        build_query(streams, [], {"a": [["bid id"]]})
