"""Scaling of the safety analysis (Li et al., VLDB 2006, §4.3).

Random continuous join queries of N streams: a random spanning tree of
equi-join predicates plus N/4 extra ones (cycles), each predicate on its own
attribute pair.  Workloads:

* ``simple``: one-attribute schemes on 95% of the join attributes (Theorem 2,
  mostly unsafe at scale);
* ``simple-safe``: one-attribute schemes on every join attribute (safe);
* ``general``: multi-attribute schemes over 2-3 join attributes on half the
  streams plus one-attribute schemes on 70% of the join attributes (Theorem 4);
* ``general-safe``: as ``simple-safe`` plus the multi-attribute schemes
  (Theorem 4, safe).

Measured: ``analyze_safety`` (validation, join classes, verdict and
unpurgeable set), the transformed punctuation graph (Li et al. 2006, Def. 11) and, for small N,
the safe-plan dynamic program (§5.2) against its enumeration bound.

    python benchmarks/safety_scaling.py [--sizes 10 100 1000 10000] [--reps 3]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from punctuated.safety import analyze_safety, safe_plans  # noqa: E402
from punctuated.safety.graph import transformed_punctuation_graph  # noqa: E402
from punctuated.safety.suggest import suggest_schemes  # noqa: E402


def random_query(n: int, workload: str, rng: random.Random):
    names = [f"S{i}" for i in range(n)]
    attrs: dict[str, list[str]] = {s: ["payload"] for s in names}
    preds = []
    pairs = [(i, rng.randrange(i)) for i in range(1, n)] + [tuple(rng.sample(range(n), 2)) for _ in range(n // 4)]
    for k, (i, j) in enumerate(pairs):
        a = f"j{k}"
        attrs[names[i]].append(a)
        attrs[names[j]].append(a)
        preds.append(f"{names[i]}.{a} = {names[j]}.{a}")
    schemes: dict[str, list[list[str]]] = {}
    for s in names:
        joins = attrs[s][1:]
        p1 = {"simple": 0.95, "simple-safe": 1.0, "general": 0.7, "general-safe": 1.0}[workload]
        schemes[s] = [[a] for a in joins if rng.random() < p1]
        if workload.startswith("general") and len(joins) >= 2 and rng.random() < 0.5:
            schemes[s].append(rng.sample(joins, min(len(joins), rng.randint(2, 3))))
    return attrs, preds, schemes


def timed(fn, reps: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10000])
    ap.add_argument("--plan-sizes", type=int, nargs="+", default=[3, 4, 5, 6, 7, 8, 9])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=2006)
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    ap.add_argument("--out", default=os.path.join(here, "safety_scaling.md"))
    ap.add_argument("--png", default=os.path.join(here, "safety_scaling.png"))
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    rows = []
    for workload in ("simple", "simple-safe", "general", "general-safe"):
        for n in args.sizes:
            q = random_query(n, workload, rng)
            t, r = timed(lambda: analyze_safety(*q), args.reps)
            tt, tpg = timed(lambda: transformed_punctuation_graph(r.query), 1)
            ts, (sg, minimal) = timed(lambda: suggest_schemes(r.query), args.reps)
            fix = f"{len(sg[0].schemes)}{'' if minimal else ' (greedy)'}" if sg else "-"
            rows.append((workload, n, len(q[1]), sum(map(len, q[2].values())), t, tt, r.theorem, r.safe,
                         len(r.unpurgeable), tpg.number_of_nodes(), ts, fix))
            print(f"{workload:12s} n={n:6d} analyze={t * 1000:9.2f} ms  tpg={tt * 1000:9.2f} ms "
                  f"suggest={ts * 1000:9.2f} ms safe={r.safe} unpurgeable={len(r.unpurgeable)} fix={fix}", flush=True)
    prow = []
    for n in args.plan_sizes:
        names = [f"S{i}" for i in range(n)]
        streams = {s: ["x", "y"] for s in names}
        preds = [f"S{i}.x = S{i + 1}.y" for i in range(n - 1)] + [f"S{n - 1}.x = S0.y"]
        schemes = {s: [["x"], ["y"]] for s in names}
        t, res = timed(lambda: safe_plans(streams, preds, schemes, limit=3), 1)
        prow.append((n, t, res.checks, res.bound, res.complete, res.plans[0] if res.plans else None))
        print(f"plans n={n} {t * 1000:.1f} ms checks={res.checks} bound={res.bound}", flush=True)
    write(args, rows, prow)


def write(args, rows, prow) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    cmd = "python benchmarks/safety_scaling.py " + " ".join(sys.argv[1:])
    lines = [f"# Safety analysis scaling\n", f"Command: `{cmd.strip()}`\n",
             f"Python {sys.version.split()[0]}, median of {args.reps} runs, seed {args.seed}. "
             "Tests never assert on these timings.\n",
             "## analyze_safety (Theorems 2/4) and the transformed punctuation graph (Li et al. 2006, Def. 11)\n",
             "*suggest*: `suggest_schemes` (the smallest extra schemes making the query safe; exact search "
             "up to 30 streams, past it the greedy repair on the TPG, marked *greedy*), *fix* its number of "
             "schemes.\n",
             "| workload | streams | predicates | schemes | analyze_safety (ms) | TPG (ms) | suggest (ms) | theorem "
             "| safe | unpurgeable | TPG nodes | fix |", "|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---|"]
    for w, n, p, s, t, tt, th, safe, un, tn, ts, fix in rows:
        lines.append(f"| {w} | {n} | {p} | {s} | {t * 1000:.2f} | {tt * 1000:.2f} | {ts * 1000:.2f} | {th} | {safe} "
                     f"| {un} | {tn} | {fix} |")
    import math
    lines.append("\nEmpirical growth exponent k in time ~ streams^k between the two largest sizes: " + ", ".join(
        f"{w} {math.log(b[4] / a[4]) / math.log(b[1] / a[1]):.2f}"
        for w in dict.fromkeys(r[0] for r in rows)
        for a, b in [[r for r in rows if r[0] == w][-2:]] if b[1] != a[1]) + " (1 = linear).")
    lines += ["", "## Safe-plan enumeration (§5.2), cyclic query with every join attribute punctuable\n",
              "Every connected subset of streams is safe here, the worst case for this join graph. *bound* is the number of "
              "candidate operators without pruning, sum_k C(n,k)(Bell(k)-1); *checks* the purgeability "
              "checks made (default cap 50,000, past which the search stops and returns the single MJoin).\n",
              "| streams | time (ms) | checks | bound | complete | best plan |", "|---:|---:|---:|---:|---|---|"]
    for n, t, c, b, comp, best in prow:
        lines.append(f"| {n} | {t * 1000:.1f} | {c} | {b} | {comp} | {best} |")
    lines.append(f"\n![growth curve]({os.path.basename(args.png)})\n")
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(10, 4))
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    for w in dict.fromkeys(r[0] for r in rows):
        pts = [(r[1], r[4]) for r in rows if r[0] == w]
        ax1.loglog(*zip(*pts), marker="o", label=f"analyze_safety, {w}")
    pts = [(r[1], r[5]) for r in rows if r[0] == "general"]
    ax1.loglog(*zip(*pts), marker="s", ls="--", label="TPG (Li et al. 2006, Def. 11), general")
    ax1.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax1.set_xlabel("streams")
    ax1.set_ylabel("seconds")
    ax1.set_title("Safety analysis")
    ax1.legend(fontsize=7)
    ax2.semilogy([r[0] for r in prow], [r[1] for r in prow], marker="o", label="DP time (s)")
    ax2.semilogy([r[0] for r in prow], [r[2] for r in prow], marker="s", label="checks")
    ax2.semilogy([r[0] for r in prow], [r[3] for r in prow], marker="^", label="bound")
    ax2.set_xlabel("streams")
    ax2.set_title("Safe-plan enumeration (§5.2)")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
