"""Command line of the offline shedding tools (docs/shedding.md)::

    python -m punctuated.shedding generate trace.jsonl --steps 1600 --skew 1 --seed 1
    python -m punctuated.shedding compare trace.jsonl --window 100 --memory 50 [--variable] [--warmup 200]

``compare`` prints EXACT, OPT (min-cost flow) and each policy's output with its ratio
to OPT, one ``name output ratio`` line each.
"""

from __future__ import annotations

import argparse
import sys

from punctuated.shedding.flow import opt_offline
from punctuated.shedding.online import POLICIES, exact_output, replay
from punctuated.shedding.trace import Trace
from punctuated.shedding.workloads import zipf_streams


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m punctuated.shedding", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="write a Zipf trace of two streams (Das et al. 2005, §5.2)")
    g.add_argument("path")
    g.add_argument("--steps", type=int, default=1600)
    g.add_argument("--skew", type=float, default=1.0)
    g.add_argument("--domain", type=int, default=50)
    g.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("compare", help="EXACT, OPT and PROB/LIFE/RAND over one trace")
    c.add_argument("path")
    c.add_argument("--window", type=int, required=True)
    c.add_argument("--memory", type=int, required=True)
    c.add_argument("--warmup", type=int, default=0)
    c.add_argument("--variable", action="store_true", help="one memory pool for both streams")
    c.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if a.cmd == "generate":
        zipf_streams(a.steps, a.skew, a.domain, a.seed).save(a.path)
        return 0
    t = Trace.load(a.path)
    alloc = "variable" if a.variable else "fixed"
    opt = opt_offline(t, a.window, a.memory, alloc, a.warmup).output
    rows = [("exact", exact_output(t, a.window, a.warmup)), ("opt", opt)]
    rows += [(p, replay(t, a.window, a.memory, p, alloc, a.warmup, a.seed).output) for p in POLICIES]
    for name, n in rows:
        print(f"{name} {n} {n / opt:.4f}" if opt else f"{name} {n} -")
    return 0


if __name__ == "__main__":
    sys.exit(main())
