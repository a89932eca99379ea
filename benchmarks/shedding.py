"""Load shedding inside Spark against OPT-offline on the same traces (Das, Gehrke and
Riedewald 2005, §4 and §5.2).

For each (Zipf skew, window w) one trace of the paper's sliding-window workload
(:func:`punctuated.shedding.workloads.paper_sliding_window`: two streams, one arrival each
per step, Zipf over 50 values, warm-up 2w then ``--counted`` steps) is

* run through the **operator**: the punctuated band join in Spark
  (``benchmarks/shedding_spark.py``: each input punctuates ``step <= c`` per micro-batch, so
  the operator forgets exactly what leaves the window), one partition,
  ``spark.punctuated.shedding.maxStateRows = M``, policy ``prob`` / ``rand`` (``--policies``),
  ``--steps-per-batch`` steps per micro-batch; and once without a budget (must be EXACT);
* solved offline on the same trace: OPT-offline (min-cost flow, one memory pool of M:
  the operator's budget covers both inputs), EXACT, the paper's per-step replays of PROB,
  LIFE and RAND (``online.replay``, variable allocation) and the replay of the operator's own
  model (``batched.batched_replay``: the same micro-batches, shedding at their ends).

Output counts the result pairs whose later row arrives after the warm-up. Every operator run
is checked: its pairs are distinct and a subset of the exact join's. Writes ``shedding.md``,
``shedding.json`` and ``shedding_w<w>_z<skew>.png`` (output vs memory per policy with OPT and
EXACT, as the paper's Figures 7-9) into ``--out``::

    .venv/bin/python -m benchmarks.shedding --out benchmarks/results
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from benchmarks import harness  # noqa: E402
from benchmarks.shedding_spark import run_join, write_trace  # noqa: E402
from punctuated.shedding.batched import batched_replay, exact_pairs  # noqa: E402
from punctuated.shedding.flow import opt_offline  # noqa: E402
from punctuated.shedding.online import exact_output, replay  # noqa: E402
from punctuated.shedding.workloads import paper_sliding_window  # noqa: E402


def experiment(spark, tmp: Path, window: int, skew: float, counted: int, steps_per_batch: int,
               fractions, policies, seed: int, check_exact: bool = True, domain: int = 50, sink=None) -> dict:
    """One trace: the operator per (M, policy) and every offline figure on the same trace;
    ``check_exact``: also run the operator without a budget (it must produce EXACT); ``domain``:
    join values (the paper's 50; tiny tests use fewer so that tiny windows find partners);
    ``sink``: called with the experiment so far after every memory size (to record partial runs)."""
    st = paper_sliding_window(window, skew, domain=domain, counted_steps=counted, seed=seed)
    data = tmp / f"data_w{window}_z{skew}"
    batches = write_trace(st.trace, data, steps_per_batch)
    exact = exact_output(st.trace, window, st.warmup)
    truth = exact_pairs(st.trace, window, st.warmup)

    def operator(memory, policy):
        res = run_join(spark, data, window, memory, policy, tmp / f"ck_{window}_{skew}_{memory}_{policy}")
        got = [(r, s) for r, s, rs, ss in res["pairs"] if max(rs, ss) >= st.warmup]
        assert len(got) == len(set(got)), f"duplicated result pairs (M={memory}, {policy})"
        assert set(got) <= truth, f"result pairs outside the exact join (M={memory}, {policy})"
        if memory is not None:
            assert res["max_state_rows"] <= memory, f"budget exceeded: {res['max_state_rows']} > {memory}"
        return len(got), res

    exact_run = None
    if check_exact:
        exact_run, res = operator(None, "prob")
        assert exact_run == exact, f"the operator without a budget gave {exact_run}, EXACT is {exact}"
    rows = []
    exp = {"window": window, "skew": skew, "domain": domain, "warmup": st.warmup, "steps": st.trace.num_steps,
           "steps_per_batch": steps_per_batch, "batches": batches, "seed": seed, "exact": exact,
           "exact_operator": exact_run, "policies": list(policies), "rows": rows}
    for f in fractions:
        m = max(2, int(round(f * window)))
        row = {"memory": m, "fraction": f, "exact": exact}
        for p in policies:
            out, res = operator(m, p)
            row[f"op_{p}"] = out
            row[f"op_{p}_shed"] = res["shed"]
            row[f"op_{p}_max_rows"] = res["max_state_rows"]
            row[f"op_{p}_seconds"] = res["seconds"]
            row[f"batched_{p}"] = batched_replay(st.trace, window, m, p, steps_per_batch, st.warmup, seed=seed).output
        for p in ("prob", "life", "rand"):
            row[f"step_{p}"] = replay(st.trace, window, m, p, "variable", st.warmup, seed=seed).output
        t0 = time.time()
        row["opt"] = opt_offline(st.trace, window, m, "variable", st.warmup).output
        row["opt_seconds"] = round(time.time() - t0, 1)
        rows.append(row)
        print(f"  w={window} z={skew} M={m}: {row}", flush=True)
        if sink:
            sink(exp)
    return exp


def table(exp: dict) -> list[str]:
    """Markdown rows: outputs and ratios to OPT per memory."""
    ps = exp["policies"]
    cols = [f"op_{p}" for p in ps] + [f"batched_{p}" for p in ps] + ["step_prob", "step_life", "step_rand", "opt", "exact"]
    head = ["M"] + cols + [f"op_{p}/OPT" for p in ps] + ["step_prob/OPT", "step_rand/OPT"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in exp["rows"]:
        ratio = lambda x: f"{x / r['opt']:.3f}" if r["opt"] else "-"  # noqa: E731
        lines.append("| " + " | ".join([str(r["memory"])] + [str(r[c]) for c in cols]
                                        + [ratio(r[f"op_{p}"]) for p in ps]
                                        + [ratio(r["step_prob"]), ratio(r["step_rand"])]) + " |")
    return lines


def plot(exp: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r["memory"] for r in exp["rows"]]
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    styles = {"exact": "k--", "opt": "k-o", "op_prob": "b-s", "op_rand": "r-x", "op_life": "g-^",
              "step_prob": "b:", "step_rand": "r:"}
    labels = {"exact": "EXACT", "opt": "OPT-offline", "op_prob": "operator PROB", "op_rand": "operator RAND",
              "op_life": "operator LIFE", "step_prob": "per-step PROB (offline)", "step_rand": "per-step RAND (offline)"}
    for key, style in styles.items():
        if key in exp["rows"][0]:
            ax.plot(xs, [r[key] for r in exp["rows"]], style, label=labels[key], markersize=4)
    ax.set_xlabel("memory M (rows, both inputs)")
    ax.set_ylabel("output rows after warm-up")
    ax.set_title(f"Zipf {exp['skew']}, w = {exp['window']}, {exp['steps_per_batch']} steps/batch")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(res: dict, out: Path, name: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(res, indent=1) + "\n")
    md = [f"# Load shedding in the operator against OPT-offline (`benchmarks/{Path(__file__).name}`)", "",
          f"Command: `{res['command']}`; {res['seconds']} s on a shared 2-core machine.", "",
          "Columns: `op_*` the punctuated join in Spark (one partition, budget M for both inputs, "
          "shedding at the end of each micro-batch); `batched_*` the offline replay of that model on "
          "the same micro-batches; `step_*` the paper's per-step replays (one pool of M); OPT-offline "
          "(min-cost flow, one pool of M, per step); EXACT (and, unless `--no-exact-run`, the operator "
          "without a budget, which must equal it). Output = result rows whose later row arrives after "
          "the 2w warm-up. Every operator run was checked: distinct pairs, a subset of the exact join, "
          "at most M rows stored after every batch.", ""]
    for exp in res["experiments"]:
        md += [f"## Zipf {exp['skew']}, w = {exp['window']}, {exp['steps']} steps "
               f"({exp['batches']} micro-batches of {exp['steps_per_batch']} steps), EXACT {exp['exact']}"
               + (f", operator without a budget {exp['exact_operator']}" if exp["exact_operator"] is not None else ""), ""]
        md += table(exp) + [""]
        if res.get("plots"):
            md += [f"![output vs memory](shedding_w{exp['window']}_z{exp['skew']}.png)", ""]
    md += ["## Targets", ""]
    for exp in res["experiments"]:
        for r in exp["rows"]:
            if exp["skew"] >= 1 and r["memory"] >= exp["window"] / 2 and r["opt"] and "op_prob" in r:
                ok = r["op_prob"] >= 0.95 * r["opt"]
                md.append(f"- Zipf {exp['skew']}, w={exp['window']}, M={r['memory']}: operator PROB/OPT = "
                          f"{r['op_prob'] / r['opt']:.3f} ({'met' if ok else 'NOT met'}: >= 0.95)"
                          + (f"; operator RAND/OPT = {r['op_rand'] / r['opt']:.3f}" if "op_rand" in r else ""))
    (out / f"{name}.md").write_text("\n".join(md) + "\n")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(harness.DEFAULT_OUT),
                    help=f"directory for the outputs (default {harness.DEFAULT_OUT}; the recorded results only with --out benchmarks/results)")
    ap.add_argument("--name", default="shedding", help="file name stem of the outputs")
    ap.add_argument("--windows", default="30", help="paper: 400,800")
    ap.add_argument("--skews", default="1.0")
    ap.add_argument("--counted", type=int, default=0, help="steps after the warm-up (default 10w; paper 4000)")
    ap.add_argument("--steps-per-batch", type=int, default=3)
    ap.add_argument("--memories", default="0.25,0.5,1.0", help="M as fractions of w")
    ap.add_argument("--policies", default="prob,rand")
    ap.add_argument("--seed", type=int, default=1)
    harness.add_forkless_option(ap)
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--no-exact-run", action="store_true",
                    help="skip the operator run without a budget (the smoke test checks it equals EXACT)")
    args = ap.parse_args(argv)
    from punctuated.cli import local_session

    started = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="punctuated-shedding-"))
    spark = local_session(str(tmp), app="punctuated-shedding",
                          extra_conf=harness.forkless_conf(args))
    res = {"command": "python -m benchmarks.shedding " + " ".join(argv if argv is not None else sys.argv[1:]),
           "experiments": [], "plots": not args.no_plot}
    try:
        for w in [int(x) for x in args.windows.split(",")]:
            for z in [float(x) for x in args.skews.split(",")]:
                print(f"w={w} Zipf {z}", flush=True)
                def sink(exp):   # a long run keeps what it did
                    write({**res, "experiments": res["experiments"] + [exp],
                           "seconds": round(time.time() - started, 1)}, Path(args.out), args.name)
                res["experiments"].append(experiment(
                    spark, tmp, w, z, args.counted or 10 * w, args.steps_per_batch,
                    [float(x) for x in args.memories.split(",")], args.policies.split(","), args.seed,
                    check_exact=not args.no_exact_run, sink=sink))
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    res["seconds"] = round(time.time() - started, 1)
    out = Path(args.out)
    write(res, out, args.name)
    if res["plots"]:
        for exp in res["experiments"]:
            plot(exp, out / f"shedding_w{exp['window']}_z{exp['skew']}.png")
    print(f"wrote {out / (args.name + '.md')}", flush=True)


if __name__ == "__main__":
    main()
