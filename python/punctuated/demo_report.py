"""The demo's comparison as files: ``state.png`` (plot), ``state.md`` (table), ``state.csv``."""

from __future__ import annotations

import csv
from pathlib import Path

COLUMNS = ["step", "auction_rows", "bid_rows", "punctuations", "closed", "open_auctions",
           "ours_input", "ours_state", "ours_ms", "ours_rows_out",
           "spark_input", "spark_state", "spark_ms", "spark_rows_out"]


def _fmt(v) -> str:
    return "–" if v is None else str(v)


def _states(result, key) -> list:
    return [r[f"{key}_state"] for r in result["steps"] if r[f"{key}_state"] is not None]


def summary(result) -> dict:
    """Final and largest state of each plan and their ratios (None where a plan did not run)."""
    s: dict = {}
    for key in ("ours", "spark"):
        states = _states(result, key)
        complete = len(states) == len(result["steps"])
        s[key] = {"final": states[-1] if complete and states else None,
                  "max": max(states) if complete and states else None}
    for what in ("final", "max"):
        o, t = s["ours"][what], s["spark"][what]
        s[f"{what}_ratio"] = None if o is None or not t else round(o / t, 4)
    return s


def summary_lines(result) -> list[str]:
    s, check, errors = summary(result), result["check"], result["errors"]
    n = len(result["totals"]["batch"])
    lines = [f"State rows after the last step: ours {_fmt(s['ours']['final'])}, "
             f"Spark's {_fmt(s['spark']['final'])}"
             + (f" (ours/Spark's = {s['final_ratio']})" if s["final_ratio"] is not None else "")]
    if errors["ours"]:
        lines.append(f"Check NOT RUN: our plan did not run ({errors['ours']})")
    else:
        verdict = "OK" if check["ours_match"] and check["ours_once_on_close"] else "MISMATCH"
        lines.append(f"Check {verdict}: our totals {'equal' if check['ours_match'] else 'differ from'} "
                     f"Spark's batch totals over the same events ({n} auctions); each emitted once, "
                     f"in the step its auction closed: {'yes' if check['ours_once_on_close'] else 'no'}")
    lines.append("Spark's own plan, latest update per auction = batch totals: " + (
        f"not run ({errors['spark']})" if errors["spark"] else "yes" if check["spark_match"] else "NO"))
    lines.append("Written: " + ", ".join(str(p) for p in result["files"].values()))
    return lines


def _plot(result, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    steps = [r["step"] for r in result["steps"]]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True,
                                      gridspec_kw={"height_ratios": [2, 1]})
    for key, label, style in (("spark", "Spark's own plan (update mode)", "-o"),
                              ("ours", "Punctuated (append mode)", "-s")):
        points = [(r["step"], r[f"{key}_state"], r[f"{key}_ms"]) for r in result["steps"]
                  if r[f"{key}_state"] is not None]
        if not points:
            label += " – did not run"
        top.plot([p[0] for p in points], [p[1] for p in points], style, label=label, markersize=4)
        bottom.plot([p[0] for p in points], [p[2] for p in points], style, label=label, markersize=4)
    top.plot(steps, [r["open_auctions"] for r in result["steps"]], ":", color="grey",
             label="open auctions")
    c = result["config"]
    top.set_title(f"Auction query state per micro-batch ({c['auctions']} auctions, "
                  f"{c['steps']} steps, seed {c['seed']})")
    top.set_ylabel("state rows (numRowsTotal)")
    top.legend(loc="upper left", fontsize=8)
    top.grid(alpha=0.3)
    bottom.set_ylabel("batch time (ms)")
    bottom.set_xlabel("step (one micro-batch per plan)")
    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _markdown(result) -> str:
    s, c, errors = summary(result), result["config"], result["errors"]
    lines = ["# Auction demo: state per micro-batch, Punctuated against Spark's own plan", "",
             f"{c['auctions']} auctions, {c['steps']} steps, seed {c['seed']}, "
             f"{result['events']} rows (punctuations included), {result['seconds']} s.", "",
             "Ours: the query over the declared tables, append mode. Spark's: the same query "
             "over the same files without declarations (punctuation rows filtered out), update mode.", ""]
    for key, name in (("ours", "Our plan"), ("spark", "Spark's plan")):
        if errors[key]:
            lines += [f"**{name} did not run to the end:** `{errors[key]}`", ""]
    lines += ["| | ours | Spark's | ours / Spark's |", "|---|---:|---:|---:|",
              f"| state rows after the last step | {_fmt(s['ours']['final'])} | "
              f"{_fmt(s['spark']['final'])} | {_fmt(s['final_ratio'])} |",
              f"| largest state | {_fmt(s['ours']['max'])} | {_fmt(s['spark']['max'])} | "
              f"{_fmt(s['max_ratio'])} |", "",
              f"Our totals equal Spark's batch totals: **{result['check']['ours_match']}**; "
              f"Spark's latest updates equal them: **{result['check']['spark_match']}**.", "",
              "| step | auction rows | bid rows | punctuations | closed | open auctions | "
              "ours: state | ours: ms | ours: rows out | Spark's: state | Spark's: ms | Spark's: rows out |",
              "|" + "---:|" * 12]
    for r in result["steps"]:
        lines.append("| " + " | ".join(_fmt(r[k]) for k in (
            "step", "auction_rows", "bid_rows", "punctuations", "closed", "open_auctions",
            "ours_state", "ours_ms", "ours_rows_out", "spark_state", "spark_ms", "spark_rows_out")) + " |")
    lines += ["", "open auctions: opened and not yet closed after the step. State rows: `numRowsTotal` summed over the plan's stateful operators. "
              "Batch times depend on the machine."]
    return "\n".join(lines) + "\n"


def write(result, out_dir) -> dict:
    """Write the plot, the table and the CSV under ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"png": out / "state.png", "md": out / "state.md", "csv": out / "state.csv"}
    _plot(result, files["png"])
    files["md"].write_text(_markdown(result))
    with open(files["csv"], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows({k: r[k] for k in COLUMNS} for r in result["steps"])
    return {k: str(v) for k, v in files.items()}
