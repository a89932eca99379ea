"""The shared harness of the benchmarks: each measurement in a fresh process, engines interleaved.

A figure that does not reproduce is worse than no figure. When engines share one JVM one
after the other, the memory an earlier engine leaves behind slows the later ones and the
order decides the ratio. So a parent process spawns one child per (engine, repetition), all
with the same command line and JVM options, in an interleaved order (A B, B A, A B, ...: each
repetition alternates which engine goes first); a child prints one line ``RESULT <json>``
with its figures. The machine's load average is recorded before and after every child.

Summaries: per figure the median and the spread (min to max) per engine; per ratio (an
engine against a reference engine) the median and spread of the per-repetition ratios,
repetition k of one engine paired with repetition k of the other. Used by ``nexmark.py``,
``auction_join.py``, ``state_memory.py``, ``undeclared_overhead.py``,
``multiway_join.py`` and ``migration.py``::

    runs = run({e: [sys.executable, "-m", "benchmarks.nexmark", "--child", e] for e in ("a", "b")}, 3)
    ratio_spread(runs, "events_per_second", "b", "a")   # {"median": 1.4, "min": 1.3, "max": 1.5}
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Where a benchmark writes unless told (``--out``): never the tracked ``benchmarks/results/``,
#: which a run writes only when given ``--out benchmarks/results``.
DEFAULT_OUT = Path(tempfile.gettempdir()) / "punctuated-benchmarks"


#: ``--forkless-fs``: what every benchmark that offers it says of it.
FORKLESS_HELP = ("every engine on the local file system without forked commands (punctuated.localfs): "
                 "per-batch state-store commits then cost little, so the engines' own work shows")


def add_forkless_option(ap) -> None:
    """Adds ``--forkless-fs`` to a benchmark's argument parser.

    >>> import argparse; ap = argparse.ArgumentParser(); add_forkless_option(ap)
    >>> ap.parse_args(["--forkless-fs"]).forkless_fs, ap.parse_args([]).forkless_fs
    (True, False)
    """
    ap.add_argument("--forkless-fs", action="store_true", help=FORKLESS_HELP)


def forkless_flag(args) -> list[str]:
    """The option as passed on to a child process (nothing without it).

    >>> import argparse
    >>> forkless_flag(argparse.Namespace(forkless_fs=True)), forkless_flag(argparse.Namespace())
    (['--forkless-fs'], [])
    """
    return ["--forkless-fs"] if getattr(args, "forkless_fs", False) else []


def forkless_note(args) -> str:
    """The clause a result's header adds for ``--forkless-fs`` ('' without it).

    >>> import argparse; forkless_note(argparse.Namespace(forkless_fs=False))
    ''
    """
    if not getattr(args, "forkless_fs", False):
        return ""
    return "; every engine on the local file system without forked commands (`--forkless-fs`)"


def forkless_conf(args) -> dict | None:
    """The session settings ``--forkless-fs`` stands for (``punctuated.cli.forkless_local_fs``), else None."""
    if not getattr(args, "forkless_fs", False):
        return None
    from punctuated.cli import forkless_local_fs
    return forkless_local_fs()


def add_generated_run_options(ap, name: str) -> None:
    """The options every :func:`generate_and_run` benchmark shares: ``--name`` (default
    ``name``) and ``--out`` for its report, and the internal ``--child`` and ``--data``.

    >>> import argparse; ap = argparse.ArgumentParser(); add_generated_run_options(ap, "x")
    >>> a = ap.parse_args([]); (a.name, a.child, a.data, a.out == str(DEFAULT_OUT))
    ('x', None, None, True)
    """
    import argparse

    ap.add_argument("--name", default=name)
    ap.add_argument("--out", default=str(DEFAULT_OUT),
                    help=f"directory for the JSON and Markdown (default {DEFAULT_OUT}; the recorded "
                         "results are written only when given --out benchmarks/results)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)


def write_report(out, name: str, report: dict, md: str) -> None:
    """Writes ``<out>/<name>.json`` (``report``) and ``<out>/<name>.md`` (``md``), and prints ``md``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / f"{name}.md").write_text(md)
    print(md)


def spawn(command: list[str]) -> dict | None:
    """Runs ``command`` (from the repository root); the JSON of its ``RESULT`` line, or None.
    Exits with the child's stderr tail when it fails without a result."""
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"child failed: {' '.join(command)}")
    return None


def emit(result) -> None:
    """A child's side of ``spawn``: prints ``RESULT <json>`` (one line) and flushes.
    ``emit({"seconds": 1.5})`` prints ``RESULT {"seconds": 1.5}``."""
    print("RESULT " + json.dumps(result), flush=True)


def spread(values):
    """Median, min and max of ``values``: ``spread([1.0, 3.0, 2.0])`` is
    ``{"median": 2.0, "min": 1.0, "max": 3.0}``."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def schedule(engines, reps: int) -> list[tuple[str, int]]:
    """The interleaved order of (engine, repetition): repetition k runs the engines in their
    order when k is even, reversed when odd, so no engine always goes first or last.
    ``schedule(["a", "b"], 3)`` is ``[("a", 0), ("b", 0), ("b", 1), ("a", 1), ("a", 2), ("b", 2)]``."""
    engines = list(engines)
    if reps < 1:
        raise ValueError(f"reps must be at least 1, not {reps} (--reps)")
    order = []
    for k in range(reps):
        order += [(e, k) for e in (engines if k % 2 == 0 else engines[::-1])]
    return order


def load_record(before, after) -> dict:
    """One child's load record from two ``os.getloadavg()`` triples (1, 5, 15 minutes):
    ``load_record((1.0, 2.0, 3.0), (1.5, 2.0, 3.0))`` is
    ``{"load_1min_before": 1.0, "load_1min_after": 1.5, "load_5min_before": 2.0}``."""
    return {"load_1min_before": round(before[0], 2), "load_1min_after": round(after[0], 2),
            "load_5min_before": round(before[1], 2)}


def run(children: dict, reps: int, load=os.getloadavg, launch=spawn, on_done=None) -> dict:
    """Runs each (engine, repetition) of ``schedule(children, reps)`` as a fresh process
    (``children[engine]``: its command line, the same JVM options for all); returns per engine
    the list of its results in repetition order, each result the child's ``RESULT`` JSON with
    ``rep``, ``order`` (its place in the schedule) and its ``load_record`` added. ``load`` and
    ``launch`` are there for tests; ``on_done(engine, rep, result)`` after each child.
    ``run({"a": [...], "b": [...]}, 2)`` is ``{"a": [{..., "rep": 0}, {..., "rep": 1}], "b": [...]}``."""
    runs = {e: [None] * reps for e in children}
    for i, (engine, k) in enumerate(schedule(children, reps)):
        before = load()
        result = launch(list(children[engine])) or {}
        result.update(rep=k, order=i, **load_record(before, load()))
        runs[engine][k] = result
        if on_done is not None:
            on_done(engine, k, result)
    return runs


def generate_and_run(module: str, engines, common: list[str], reps: int, prefix: str,
                     launch=spawn) -> tuple[dict, dict]:
    """The inputs once, then every engine over them: spawns ``python -m <module> --child
    generate --data D`` (D a fresh directory), then ``--child <engine> --data D`` for each
    engine through :func:`run` (``common`` appended to every command line), and removes D.
    Returns the generating child's result and the runs, printing each run as it ends.
    ``generate_and_run("benchmarks.band_only_join", ["native", "punctuated"], [], 3, "bo-")``
    is ``({"exact_rows": ...}, {"native": [...], "punctuated": [...]})``."""
    import shutil

    me = [sys.executable, "-m", module]
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        generated = launch(me + ["--child", "generate", "--data", str(root)] + common)
        if generated is None:
            raise SystemExit("generating the inputs failed")
        runs = run({e: me + ["--child", e, "--data", str(root)] + common for e in engines}, reps, launch=launch,
                   on_done=lambda e, k, r: print(f"[{k}] {e}: {r}", file=sys.stderr))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return generated, runs


def figure_spread(runs: dict, key: str) -> dict:
    """Per engine the spread of figure ``key`` over its repetitions (repetitions without the
    figure, e.g. a failed run, left out; an engine with none maps to None).
    ``figure_spread({"a": [{"x": 1}, {"x": 3}]}, "x")`` is ``{"a": {"median": 2.0, "min": 1, "max": 3}}``."""
    out = {}
    for engine, results in runs.items():
        values = [r[key] for r in results if r and r.get(key) is not None]
        out[engine] = spread(values) if values else None
    return out


def paired_ratios(runs: dict, key: str, engine: str, reference: str) -> list[float]:
    """Per repetition k, ``key`` of ``engine``'s run k over ``reference``'s run k (pairs where
    either lacks the figure or the reference's is 0 left out).
    ``paired_ratios({"a": [{"x": 2}, {"x": 4}], "b": [{"x": 3}, {"x": 2}]}, "x", "b", "a")``
    is ``[1.5, 0.5]``."""
    ratios = []
    for mine, ref in zip(runs.get(engine, []), runs.get(reference, [])):
        if mine and ref and mine.get(key) is not None and ref.get(key):
            ratios.append(mine[key] / ref[key])
    return ratios


def ratio_spread(runs: dict, key: str, engine: str, reference: str, digits: int = 3) -> dict | None:
    """Median and spread of the paired per-repetition ratios ``engine / reference`` of
    ``key``, rounded; None when no pair has the figure. With the runs of ``paired_ratios``'
    example: ``{"median": 1.0, "min": 0.5, "max": 1.5}``."""
    ratios = paired_ratios(runs, key, engine, reference)
    if not ratios:
        return None
    return {k: round(v, digits) for k, v in spread(ratios).items()}


def load_summary(runs: dict) -> dict | None:
    """The spread of the 1-minute load average over every child, before and after it ran:
    ``{"median": ..., "min": ..., "max": ...}``, or None without records."""
    values = [r[k] for results in runs.values() for r in results if r
              for k in ("load_1min_before", "load_1min_after") if k in r]
    return spread(values) if values else None


def fmt_spread(s: dict | None, digits: int = 3, thousands: bool = False) -> str:
    """A spread as text, median first: ``fmt_spread({"median": 1.2, "min": 1.1, "max": 1.4})``
    is ``"1.2 (1.1–1.4)"``; ``"–"`` for None."""
    if s is None:
        return "–"
    f = (lambda v: f"{round(v):,}") if thousands else (lambda v: f"{round(v, digits)}")
    return f"{f(s['median'])} ({f(s['min'])}–{f(s['max'])})"
