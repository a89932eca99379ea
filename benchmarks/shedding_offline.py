"""Load shedding offline: the experiments of Das, Gehrke and Riedewald (2005, §5) on the
tools of ``punctuated.shedding`` -- PROB, LIFE, RAND against OPT-offline and EXACT on the
same traces (§5.2, Figures 7-10), and ADG/NDG against OPTDP for the static join (§5.1).

    .venv/bin/python -m benchmarks.shedding_offline --out benchmarks/results

Writes ``shedding_offline.md`` (tables, the targets checked), ``shedding_offline.json``
and, matplotlib being a dependency, ``shedding_offline_w<w>.png`` (output vs memory per
policy, with OPT and EXACT, as the paper's Figures 7-9) in ``--out``.

OPT is solved with networkx's network simplex, pure Python: on the paper's full trace
(2w warm-up + 4000 steps) one flow for w = 400 takes about ten minutes on this machine,
so the default ``--counted-steps`` is 800 (the warm-up stays 2w, the ratios are what
is compared), w = 800 is left out (``--windows 400,800``), and Figures 9, 10 and 14
use ``--small-window`` 100 with the paper's memory/window ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from punctuated.shedding.flow import opt_offline
from punctuated.shedding.online import exact_output, replay
from punctuated.shedding.static import adg, components, ndg, optdp
from punctuated.shedding.workloads import paper_sliding_window, zipf_relations

POLICIES = ("prob", "life", "rand", "prob*")
#: ``prob*`` is PROB with the whole trace's value counts (the paper's §5.2 setting) instead
#: of the online estimator.


def sliding(window: int, skew: float, counted: int, seed: int, memories=None, allocation="fixed",
            skew_s=None, policies=POLICIES) -> dict:
    """One trace, every memory size: each policy's output, OPT's, EXACT's and the times."""
    st = paper_sliding_window(window, skew, counted_steps=counted, seed=seed, skew_s=skew_s)
    rows = []
    exact = exact_output(st.trace, window, st.warmup)
    for m in memories or st.memories:
        row = {"memory": m}
        for p in policies:
            row[p] = replay(st.trace, window, m, p.rstrip("*"), allocation, st.warmup, seed=seed,
                            whole_trace=p.endswith("*")).output
        t0 = time.time()
        # With 2(w-1) memory every live tuple fits (a window holds w-1 tuples after a step):
        row["opt"] = exact if m >= 2 * (window - 1) else opt_offline(st.trace, window, m, allocation, st.warmup).output
        row["opt_seconds"] = round(time.time() - t0, 1)
        row["exact"] = exact
        rows.append(row)
        print(f"  w={window} skew={skew} {allocation} M={m}: {row}", flush=True)
    return {"window": window, "skew": skew, "skew_s": skew_s, "allocation": allocation,
            "steps": st.trace.num_steps, "warmup": st.warmup, "seed": seed, "rows": rows}


def static(size: int, comps: int, k: int, skews, seed: int) -> list[dict]:
    """§5.1: ADG and NDG (k/2 tuples kept per relation) against OPTDP, per skew."""
    out = []
    for z in skews:
        a, b = zipf_relations(size, comps, z, seed)
        cs = components(a, b)
        t0 = time.time()
        o = optdp(cs, k)
        t1 = time.time()
        g = adg(cs, k)
        t2 = time.time()
        n = ndg(cs, size - k // 2, size - (k - k // 2))
        out.append({"skew": z, "optdp": o.edges, "adg": g.edges, "ndg": n.edges,
                    "adg_ratio": round(g.edges / o.edges, 4) if o.edges else 1.0,
                    "ndg_ratio": round(n.edges / o.edges, 4) if o.edges else 1.0,
                    "optdp_seconds": round(t1 - t0, 2), "adg_seconds": round(t2 - t1, 4)})
        print(f"  static skew={z}: {out[-1]}", flush=True)
    return out


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "-"


def _table(exp: dict, policies=POLICIES) -> list[str]:
    cols = list(policies) + ["opt", "exact"]
    lines = ["| M | " + " | ".join(c.upper() for c in cols) + " | " + " | ".join(f"{p.upper()}/OPT" for p in policies) + " | OPT s |",
             "|---|" + "---|" * (len(cols) + len(policies) + 1)]
    for r in exp["rows"]:
        ratios = [f"{r[p] / r['opt']:.3f}" if r["opt"] else "-" for p in policies]
        lines.append(f"| {r['memory']} | " + " | ".join(str(r[c]) for c in cols) + " | " + " | ".join(ratios) + f" | {r['opt_seconds']} |")
    return lines


def _plot(exp: dict, path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r["memory"] for r in exp["rows"]]
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for key, style in (("exact", "k--"), ("opt", "k-o"), ("prob", "b-s"), ("prob*", "c:s"), ("life", "g-^"), ("rand", "r-x")):
        if key in exp["rows"][0]:
            ax.plot(xs, [r[key] for r in exp["rows"]], style, label=key.upper(), markersize=4)
    ax.set_xlabel("memory M (tuples)")
    ax.set_ylabel("output tuples after warm-up")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    ap.add_argument("--counted-steps", type=int, default=800, help="steps after the 2w warm-up (paper: 4000)")
    ap.add_argument("--windows", default="400", help="Figures 7/8 (paper: 400,800)")
    ap.add_argument("--small-window", type=int, default=100,
                    help="window of Figures 9, 10 and 14 (paper: 400; same memory/window ratios)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skews", default="0,0.5,1,1.5,2", help="Figure 10's skew sweep (M = w = 400)")
    ap.add_argument("--static-size", type=int, default=50_000, help="§5.1: tuples per relation (paper: 50K)")
    ap.add_argument("--windows-only", action="store_true", help="only Figures 7/8 (output vs memory per window)")
    ap.add_argument("--name", default="shedding_offline", help="file name stem of the outputs")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    started = time.time()
    res: dict = {"counted_steps": args.counted_steps, "seed": args.seed, "sliding": [], "skew": [], "static": []}
    for w in [int(x) for x in args.windows.split(",") if x]:
        print(f"Figures 7/8: w={w}", flush=True)
        res["sliding"].append(sliding(w, 1.0, args.counted_steps, args.seed))
    sw = args.small_window
    small_counted = 10 * sw
    if args.windows_only:
        return _write(res, args, argv, started)
    res["small_window"], res["small_counted_steps"] = sw, small_counted
    print(f"Figure 9: uniform, w={sw}", flush=True)
    res["uniform"] = sliding(sw, 0.0, small_counted, args.seed)
    print(f"Figure 10: skew sweep, M = w = {sw}", flush=True)
    for z in [float(x) for x in args.skews.split(",") if x]:
        res["skew"].append(sliding(sw, z, small_counted, args.seed, memories=(sw,), policies=("prob", "rand", "prob*")))
    print(f"Figure 14: Zipf(1)/uniform, variable vs fixed, w={sw}", flush=True)
    res["variable"] = [sliding(sw, 1.0, small_counted, args.seed, memories=(sw // 2, sw), allocation=a,
                               skew_s=0.0, policies=("prob", "rand")) for a in ("fixed", "variable")]
    print("§5.1 static join", flush=True)
    k = args.static_size // 10
    res["static"] = static(args.static_size, max(1, args.static_size // 50), k, (0.25, 0.5, 1.0, 1.5, 2.0), args.seed)
    _write(res, args, argv, started)


def _write(res: dict, args, argv, started: float) -> None:
    res["seconds"] = round(time.time() - started, 1)
    with open(os.path.join(args.out, f"{args.name}.json"), "w") as f:
        json.dump(res, f, indent=1)
    for exp in res["sliding"] + ([res["uniform"]] if "uniform" in res else []):
        name = f"shedding_offline_w{exp['window']}" + ("_uniform" if exp["skew"] == 0 else "") + ".png"
        _plot(exp, os.path.join(args.out, name), f"w={exp['window']}, Zipf({exp['skew']:g}), fixed M/2+M/2")
    with open(os.path.join(args.out, f"{args.name}.md"), "w") as f:
        f.write("\n".join(report(res, argv)) + "\n")


def report(res: dict, argv) -> list[str]:
    cmd = ".venv/bin/python -m benchmarks.shedding_offline " + " ".join(sys.argv[1:] if argv is None else argv)
    out = ["# Load shedding offline: PROB, LIFE, RAND vs OPT and EXACT; ADG/NDG vs OPTDP", "",
           f"`{cmd.strip()}` -- {res['seconds']} s. Das, Gehrke, Riedewald 2005, §5; tools in "
           "`punctuated.shedding` (docs/shedding.md). Domain 50, uncorrelated streams, warm-up 2w, "
           f"{res['counted_steps']} counted steps after it (the paper: 4000), seed {res['seed']}. "
           "PROB/LIFE use the online estimator (H never reached: no halving); PROB* uses the "
           "whole trace's value counts, as the paper's experiments do. Output = result tuples "
           "after the warm-up. OPT: `networkx.network_simplex` (seconds per flow in the tables).", ""]
    for exp in res["sliding"]:
        out += [f"## Figure {7 if exp['window'] == 400 else 8}: w = {exp['window']}, Zipf(1), fixed allocation", "",
                f"![w={exp['window']}](shedding_offline_w{exp['window']}.png)", ""] + _table(exp) + [""]
    if "uniform" not in res:
        return out + ["## Targets", ""] + targets(res)
    u = res["uniform"]
    sw = res["small_window"]
    out += [f"Figures 9, 10 and 14 at w = {sw} with {res['small_counted_steps']} counted steps "
            "(the paper: w = 400; the same memory/window ratios), to keep OPT's flows short.", ""]
    out += [f"## Figure 9: uniform values, w = {sw}", "", f"![uniform](shedding_offline_w{sw}_uniform.png)", ""] + _table(u) + [""]
    out += [f"## Figure 10: skew sweep, M = w = {sw} (fixed)", "", "| Zipf | PROB/OPT | PROB*/OPT | RAND/OPT | OPT/EXACT |", "|---|---|---|---|---|"]
    for e in res["skew"]:
        r = e["rows"][0]
        out.append(f"| {e['skew']:g} | {_ratio(r['prob'], r['opt'])} | {_ratio(r['prob*'], r['opt'])} | {_ratio(r['rand'], r['opt'])} | {_ratio(r['opt'], r['exact'])} |")
    out += ["", f"## Figure 14: R Zipf(1), S uniform; fixed vs variable allocation (w = {sw})", ""]
    for e in res["variable"]:
        out += [f"{e['allocation']}:", ""] + _table(e, ("prob", "rand")) + [""]
    out += ["## §5.1 static join: ADG and NDG vs OPTDP (k = 10% of the tuples kept; NDG keeps k/2 per relation)", "",
            "| Zipf | OPTDP | ADG | NDG | ADG/OPTDP | NDG/OPTDP | OPTDP s | ADG s |", "|---|---|---|---|---|---|---|---|"]
    for s in res["static"]:
        out.append(f"| {s['skew']} | {s['optdp']} | {s['adg']} | {s['ndg']} | {s['adg_ratio']} | {s['ndg_ratio']} | {s['optdp_seconds']} | {s['adg_seconds']} |")
    out += ["", "## Targets", ""] + targets(res)
    return out


def targets(res: dict) -> list[str]:
    """The issue's targets, checked: PROB >= 0.95 OPT where Zipf >= 1 and M >= w/2;
    RAND clearly below; ADG >= 0.99 OPTDP."""
    lines = []
    for e in res["sliding"] + res["skew"]:
        if e["skew"] < 1:
            continue
        for r in e["rows"]:
            if r["memory"] >= e["window"] / 2 and r["opt"]:
                ok = r["prob"] >= 0.95 * r["opt"]
                lines.append(f"- PROB/OPT at w={e['window']}, Zipf({e['skew']:g}), M={r['memory']}: "
                             f"{r['prob'] / r['opt']:.3f} ({'meets' if ok else 'MISSES'} 0.95); "
                             f"PROB*/OPT {r['prob*'] / r['opt']:.3f}; RAND/OPT {r['rand'] / r['opt']:.3f}")
    for s in res["static"]:
        lines.append(f"- ADG/OPTDP at Zipf {s['skew']}: {s['adg_ratio']} ({'meets' if s['adg_ratio'] >= 0.99 else 'MISSES'} 0.99)")
    return lines


if __name__ == "__main__":
    main()
