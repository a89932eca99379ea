"""The auction demo: our plan against Spark's own plan for the same query, in the same run.

Each step appends one step of the auction stream (:mod:`punctuated.auction_stream`) to the
catalog tables, then runs both plans over what arrived (``trigger(availableNow=True)``
from their checkpoints, so one step is one micro-batch of each):

* **ours**: the query over the declared tables in *append* mode -- an auction's total is
  emitted in the batch its closing punctuation arrives and its state is dropped;
* **Spark's**: the same query over undeclared tables sharing the same files (punctuation
  rows filtered out) in *update* mode, the only mode Spark allows for it without a
  watermark: it can never drop a row, so its state grows with every event. (Spark 4.0 and
  4.1 refuse a stream-stream join in update mode as well: there the demo reports Spark's
  plan as refused at its first step and runs ours alone.)

Per step it records input rows, state rows (``numRowsTotal`` of every stateful operator)
and batch time of each plan; at the end it checks our totals against Spark's batch answer
over the same events and writes ``state.png``, ``state.md`` and ``state.csv``
(:mod:`punctuated.demo_report`).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from punctuated import auction_stream
from punctuated.auction_stream import AUCTIONS_DDL, BIDS_DDL

SELECT = ("SELECT a.id AS auction, a.category, count(*) AS bids, sum(b.price) AS total, "
          "max(b.price) AS final_price")
OUR_QUERY = SELECT + """
FROM STREAM({db}.auctions) a JOIN STREAM({db}.bids) b ON a.id = b.auction
GROUP BY a.id, a.category"""
SPARK_QUERY = SELECT + """
FROM STREAM({db}.spark_auctions) a JOIN STREAM({db}.spark_bids) b ON a.id = b.auction
WHERE NOT b.is_punct
GROUP BY a.id, a.category"""
BATCH_QUERY = SELECT + """
FROM {db}.spark_auctions a JOIN {db}.spark_bids b ON a.id = b.auction
WHERE NOT b.is_punct
GROUP BY a.id, a.category"""


@dataclass
class Plan:
    key: str  # "ours" / "spark"
    label: str
    sql: str
    mode: str
    checkpoint: str
    error: str | None = None  # why the plan stopped running (first line of the exception)
    latest: dict = field(default_factory=dict)  # auction -> (category, bids, total, final_price)
    emitted_at: dict = field(default_factory=dict)  # auction -> steps its rows came out
    state: int = 0


def _setup_tables(spark, db: str, data: Path) -> None:
    spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")
    spark.sql(f"CREATE DATABASE {db}")
    for name, ddl, props in (
        ("auctions", AUCTIONS_DDL, "'punctuated.unique' = 'id', 'punctuated.marker' = 'is_punct'"),
        ("bids", BIDS_DDL, "'punctuated.schemes' = 'auction', 'punctuated.marker' = 'is_punct'"),
    ):
        (data / name).mkdir(parents=True, exist_ok=True)
        location = str(data / name).replace("'", "\\'")
        spark.sql(f"CREATE TABLE {db}.{name} ({ddl}) USING parquet LOCATION '{location}' "
                  f"TBLPROPERTIES ({props})")
        # Spark's plan reads the same files through a table without declarations
        spark.sql(f"CREATE TABLE {db}.spark_{name} ({ddl}) USING parquet LOCATION '{location}'")


def _literal(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"CAST('{v!r}' AS DOUBLE)"
    return str(int(v))


def _append(spark, table: str, rows: list) -> None:
    """INSERT the rows (a JVM-only job: no Python worker to start, unlike createDataFrame)."""
    if rows:
        values = ", ".join("(" + ", ".join(_literal(v) for v in row) + ")" for row in rows)
        spark.sql(f"INSERT INTO {table} VALUES {values}")


def _run(spark, plan: Plan, step: int) -> dict:
    """One availableNow run of a plan from its checkpoint: what came out, what it holds."""
    rows: list = []
    # foreachBatch, not the memory sink: the memory sink cannot restart from a checkpoint
    query = (spark.sql(plan.sql).writeStream.foreachBatch(lambda df, _: rows.extend(df.collect()))
             .outputMode(plan.mode).option("checkpointLocation", plan.checkpoint)
             .queryName(f"punctuated_demo_{plan.key}").trigger(availableNow=True).start())
    try:
        query.awaitTermination()
        progress = query.recentProgress
    finally:
        query.stop()
    with_state = [p for p in progress if p["stateOperators"]]
    if with_state:
        plan.state = sum(op["numRowsTotal"] for op in with_state[-1]["stateOperators"])
    for r in rows:
        plan.latest[r["auction"]] = (r["category"], r["bids"], r["total"], r["final_price"])
        plan.emitted_at.setdefault(r["auction"], []).append(step)
    return {
        "rows": rows, "state": plan.state,
        "input": sum(p["numInputRows"] for p in progress),
        "ms": sum(p["durationMs"].get("triggerExecution", 0) for p in progress),
    }


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _open_auctions(stream, closes: dict, step: int) -> int:
    """Auctions opened by ``step`` and not closed in it: what a purging plan must still track."""
    opened = {row[0] for s in stream[: step + 1] for row in s.auctions}
    return sum(1 for a in opened if closes.get(a, step + 1) > step)


def _num(v) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.2f}"


def _closed_line(r) -> str:
    return (f"  auction {r['auction']} (category {r['category']}) closed: {r['bids']} bids, "
            f"total {_num(r['total'])}, final price {_num(r['final_price'])}")


def _step(spark, plans: list[Plan], k: int, rec: dict, say, show: int) -> None:
    """Runs every plan still running over step ``k``; records what each did into ``rec``."""
    for plan in plans:
        rec.update({f"{plan.key}_{m}": None for m in ("input", "state", "ms", "rows_out")})
        if plan.error:
            continue
        try:
            got = _run(spark, plan, k)
        except Exception as e:  # e.g. our plan before the punctuated aggregation exists
            plan.error = _first_line(e)
            say(f"{plan.label} plan stopped at step {k}: {plan.error}")
            continue
        rec.update({f"{plan.key}_input": got["input"], f"{plan.key}_state": got["state"],
                    f"{plan.key}_ms": got["ms"], f"{plan.key}_rows_out": len(got["rows"])})
        if plan.key == "ours" and got["rows"]:
            say(f"step {k}: {len(got['rows'])} auction(s) closed, final totals:")
            ordered = sorted(got["rows"], key=lambda r: r["auction"])
            for r in ordered[:show]:
                say(_closed_line(r))
            if len(ordered) > show:
                say(f"  ... and {len(ordered) - show} more")


def run_demo(spark, out_dir: str | Path = "demo-output", auctions: int = 40, steps: int = 12,
             seed: int = 7, max_bids: int = 12, db: str = "auction_demo", progress: bool = True,
             show: int = 4, out=None) -> dict:
    """Run the demo on ``spark`` (a session with the extension); return what it measured.

    Writes ``state.png``, ``state.md`` and ``state.csv`` under ``out_dir``; prints (to
    ``out``, default stdout) the totals our plan emits as auctions close (``show`` a step)
    and the check against Spark's batch answer.
    """
    from tqdm import tqdm

    from punctuated import demo_report

    out = out or sys.stdout
    say = lambda msg: tqdm.write(msg, file=out)  # noqa: E731 -- keeps the bar intact
    stream = auction_stream.generate(auctions=auctions, steps=steps, seed=seed, max_bids=max_bids)
    closes = auction_stream.closes(stream)
    tmp = Path(tempfile.mkdtemp(prefix="punctuated-demo-"))
    plans = [Plan("ours", "Punctuated (append)", OUR_QUERY.format(db=db), "append", str(tmp / "ckpt-ours")),
             Plan("spark", "Spark's own (update)", SPARK_QUERY.format(db=db), "update", str(tmp / "ckpt-spark"))]
    records: list[dict] = []
    started = time.time()
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")  # tiny batches: one state store per operator
    try:
        _setup_tables(spark, db, tmp / "data")
        with tqdm(total=steps, desc="auction demo", unit="step", file=sys.stderr,
                  disable=not progress) as bar:
            for k, step in enumerate(stream):
                _append(spark, f"{db}.auctions", step.auctions)
                _append(spark, f"{db}.bids", step.bids)
                rec = {"step": k, "auction_rows": len(step.auctions),
                       "bid_rows": len(step.bids) - step.punctuations,
                       "punctuations": step.punctuations,
                       "closed": sum(1 for s in closes.values() if s == k),
                       "open_auctions": _open_auctions(stream, closes, k)}
                _step(spark, plans, k, rec, say, show)
                records.append(rec)
                bar.set_postfix_str(" ".join(
                    f"state {p.key}={'-' if rec[p.key + '_state'] is None else rec[p.key + '_state']}"
                    for p in plans))
                bar.update()
        spark.sql(f"REFRESH TABLE {db}.spark_auctions")
        spark.sql(f"REFRESH TABLE {db}.spark_bids")
        batch = {r["auction"]: (r["category"], r["bids"], r["total"], r["final_price"])
                 for r in spark.sql(BATCH_QUERY.format(db=db)).collect()}
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", partitions)
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")  # its tables point into tmp
        shutil.rmtree(tmp, ignore_errors=True)
    ours, theirs = plans
    result = {
        "config": {"auctions": auctions, "steps": steps, "seed": seed, "max_bids": max_bids},
        "seconds": round(time.time() - started, 1),
        "steps": records,
        "events": sum(s.rows for s in stream),
        "errors": {p.key: p.error for p in plans},
        "totals": {"ours": ours.latest, "spark": theirs.latest, "batch": batch},
        "check": {
            "ours_match": ours.error is None and ours.latest == batch,
            "ours_once_on_close": ours.error is None and all(
                ours.emitted_at.get(a) == [s] for a, s in closes.items() if a in batch),
            "spark_match": theirs.error is None and theirs.latest == batch,
        },
    }
    result["files"] = demo_report.write(result, out_dir)
    for line in demo_report.summary_lines(result):
        say(line)
    return result
