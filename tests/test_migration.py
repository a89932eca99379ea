"""Changing a running multi-way join's plan from Python: ``punctuated.migrate`` / ``join_plan``.

A chain ``a(k) ⋈ b(k, v) ⋈ c(v)`` of file streams runs under ``mjoin``; in the middle of the
run the plan is changed to a left-deep tree, then to the right-deep one, then handed back
with ``auto`` (real Spark, memory sink). The output is the batch join of every row sent,
each result exactly once; ``join_plan`` reports each plan once a batch ran under it; a plan
that does not fit the join fails naming its inputs before anything is written.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter

import pytest

import punctuated
from punctuated.migration import plan_text

SCHEMA = "k LONG, v LONG, w LONG, p BOOLEAN"


def test_plan_text_spells_left_deep_bushy_and_keywords():
    assert plan_text(["a", "b", "c"]) == "((a ⋈ b) ⋈ c)"
    assert plan_text(["a", ["b", "c"]]) == "(a ⋈ (b ⋈ c))"
    assert plan_text([["a", "b"], ["c", "d"]]) == "((a ⋈ b) ⋈ (c ⋈ d))"
    assert plan_text("MJoin") == "mjoin" and plan_text("auto") == "auto"
    with pytest.raises(ValueError, match="list of two or more input names"):
        plan_text(["a"])


def _write(directory, rows):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{uuid.uuid4().hex}.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _row(k=None, v=None, w=0, p=False):
    return {"k": k, "v": v, "w": w, "p": p}


def test_migrate_a_running_chain_join_results_exactly_once(spark, tmp_path):
    spark.conf.set("spark.punctuated.join.plan", "mjoin")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    try:
        dirs = {n: tmp_path / n for n in "abc"}
        for d in dirs.values():
            d.mkdir()
        streams = {}
        for n, schemes in (("a", ["k"]), ("b", ["k", "v"]), ("c", ["v"])):
            df = spark.readStream.schema(SCHEMA).json(str(dirs[n]))
            df = df.selectExpr(*[f"{c} AS {n}_{c}" for c in ("k", "v", "w", "p")])
            streams[n] = punctuated.with_schemes(df, schemes=[f"{n}_{s}" for s in schemes], marker=f"{n}_p", name=n)
        a, b, c = streams["a"], streams["b"], streams["c"]
        joined = (a.join(b, a["a_k"] == b["b_k"]).join(c, b["b_v"] == c["c_v"])
                  .select("a_k", "b_v", "a_w", "b_w", "c_w"))
        name = "mig_" + uuid.uuid4().hex[:8]
        q = (joined.writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
        sent = {"a": [], "b": [], "c": []}

        def send(n, rows):
            _write(dirs[n], rows)
            sent[n] += [r for r in rows if not r["p"]]

        def expected():
            return Counter((x["k"], y["v"], x["w"], y["w"], z["w"]) for x in sent["a"] for y in sent["b"]
                           for z in sent["c"] if x["k"] == y["k"] and y["v"] == z["v"])

        def check():
            q.processAllAvailable()
            got = Counter(tuple(r) for r in spark.table(name).collect())
            assert got == expected()

        try:
            w = iter(range(1, 10_000))
            send("a", [_row(1, 0, next(w)), _row(2, 0, next(w))])
            send("b", [_row(1, 7, next(w)), _row(2, 8, next(w))])
            send("c", [_row(None, 7, next(w))])
            check()
            assert punctuated.join_plan(q) == "mjoin"

            with pytest.raises(Exception, match="does not fit the multi-way join of a, b, c"):
                punctuated.migrate(q, ["a", "c", "b"])  # a and c share no join column

            assert punctuated.migrate(q, ["a", "b", "c"]) == 0
            send("c", [_row(None, 8, next(w)), _row(None, 7, next(w))])
            send("a", [_row(1, 0, next(w))])
            check()
            assert punctuated.join_plan(q) == ["a", "b", "c"]

            punctuated.migrate(q, ["a", ["b", "c"]])
            send("b", [_row(1, 8, next(w)), _row(2, 7, next(w))])
            send("b", [_row(k=2, w=None, p=True)])
            check()
            assert punctuated.join_plan(q) == ["a", ["b", "c"]]

            punctuated.migrate(q, "auto")  # back to spark.punctuated.join.plan (mjoin)
            send("a", [_row(2, 0, next(w)), _row(3, 0, next(w))])
            send("c", [_row(None, 8, next(w))])
            check()
            assert punctuated.join_plan(q) == "mjoin"
            progress = q.lastProgress["stateOperators"]
            assert [op["operatorName"] for op in progress] == ["punctuatedMultiJoin"]
        finally:
            q.stop()
    finally:
        spark.conf.unset("spark.punctuated.join.plan")
        spark.conf.unset("spark.sql.shuffle.partitions")
