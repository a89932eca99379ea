"""Shared helpers of the benchmarks that run each measurement in a fresh process.

A parent process spawns one child per (configuration, engine, repetition), alternating the
engines, so that no engine profits from a warm JVM or suffers from another's garbage; a child
prints one line ``RESULT <json>`` with its figures. The summaries give per figure the median
and the spread (min to max) over the repetitions. Used by ``state_memory.py`` and
``multiway_join.py``::

    result = spawn([sys.executable, "-m", "benchmarks.multiway_join", "--child", "native", ...])
    spread([1.0, 3.0, 2.0])  # {"median": 2.0, "min": 1.0, "max": 3.0}
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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


def spread(values):
    """Median, min and max of ``values``."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}
