"""Several recorded NEXMark series pooled: ours against each other engine, pair by pair.

One series of 9 repetitions resolves about ±5 % on a two-core machine; a gap of 3 % needs more
pairs. This reads the per-batch CSV files ``benchmarks/nexmark.py`` records (one or more
series of the same query and command) and pairs repetition k of ``punctuated`` with repetition k
of each other engine of the same series. Per pair, throughput from the summed micro-batch time
(the other engine's time over ours: above 1 is ours faster), over the whole run and over the
micro-batches after the first (where a cold JVM's first plan, generated code and checkpoint
files are). Per other engine: the median of the pairs, a 95 % interval by resampling the pairs
(seeded, so the figures reproduce) and the geometric mean; the A/A figure is the second other
engine's throughput over the first's (``watermark_again`` / ``watermark``, as the reports give it).
Run::

    python -m benchmarks.pooled_pairs nexmark_q7_2000000_time_only_s55 nexmark_q7_2000000_time_only_start_s55

(names in ``benchmarks/results/``, without ``.csv``; or paths).

    >>> pair_ratios({"a": {0: 10.0, 1: 12.0}, "b": {0: 11.0, 1: 12.0}}, "a", "b")
    [1.1, 1.0]
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
OURS = "punctuated"


def series_times(path: Path) -> tuple[dict, dict]:
    """(whole, later): per engine, per repetition, the summed micro-batch ms of one CSV file;
    ``later`` leaves out batch 0."""
    whole: dict = defaultdict(lambda: defaultdict(float))
    later: dict = defaultdict(lambda: defaultdict(float))
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            engine, rep, ms = row["engine"], int(row["rep"]), float(row["batch_ms"])
            whole[engine][rep] += ms
            if int(row["batch"]) > 0:
                later[engine][rep] += ms
    return whole, later


def pair_ratios(times: dict, ours: str, other: str) -> list[float]:
    """Throughput of ``ours`` over ``other`` per repetition both ran: other's time / ours."""
    return [times[other][k] / times[ours][k] for k in sorted(times[ours]) if k in times[other]]


def summary(ratios: list[float], seed: int = 1, rounds: int = 4000) -> dict:
    """Median, 95 % interval of the median by resampling the pairs (seeded), geometric mean.

    >>> summary([1.0, 1.0, 1.0])["median"]
    1.0
    """
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(rounds))
    return {"n": len(ratios), "median": round(statistics.median(ratios), 3),
            "low": round(medians[int(0.025 * rounds)], 3), "high": round(medians[int(0.975 * rounds) - 1], 3),
            "geomean": round(math.exp(statistics.mean(math.log(r) for r in ratios)), 3)}


def pooled(paths: list[Path]) -> dict:
    """Per span (``whole``, ``later``) and comparison (``ours/<engine>``, ``A/A``): a summary."""
    pairs: dict = defaultdict(list)
    for path in paths:
        whole, later = series_times(path)
        for span, times in (("whole", whole), ("later", later)):
            others = [e for e in times if e != OURS]
            for other in others:
                if OURS in times:
                    pairs[(span, f"{OURS}/{other}")] += pair_ratios(times, OURS, other)
            if len(others) >= 2:
                pairs[(span, "A/A")] += pair_ratios(times, others[1], others[0])
    return {key: summary(r) for key, r in pairs.items() if r}


def resolve(name: str) -> Path:
    path = Path(name)
    return path if path.suffix == ".csv" else RESULTS / f"{name}.csv"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("series", nargs="+", help="CSV files of benchmarks/nexmark.py (names in benchmarks/results or paths)")
    args = ap.parse_args(argv)
    for (span, what), s in sorted(pooled([resolve(n) for n in args.series]).items()):
        label = "whole runs" if span == "whole" else "after the first micro-batch"
        print(f"{label}, {what}: {s['n']} pairs, median {s['median']} (95 % {s['low']}–{s['high']}), "
              f"geometric mean {s['geomean']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
