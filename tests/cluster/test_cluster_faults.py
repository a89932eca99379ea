"""Punctuated queries on a cluster and through faults, with real processes.

* executors killed (SIGKILL by PID, found with ``ps``) in the middle of a micro-batch, on
  ``local-cluster[2,1,1024]`` and on a standalone cluster (``scripts/cluster.sh``): Spark
  relaunches them, the new executors load the state stores from the checkpoint;
* drivers killed (the query's child process group) inside a batch, between the state commit
  and the sink's write, and between batches, then restarted from the checkpoint;

for a punctuated join, the auction query (join + aggregation), a deduplication and the
three-input multi-way join, with both state store providers, writing to the file sink or a
``foreachBatch`` that overwrites the batch's directory (idempotent by batch id). Each output
must equal the batch answer as a multiset. The workload and the kill machinery are
``benchmarks/chaos.py``'s.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.chaos import Run, build_query, compare, executor_pids, generate, kill_one, write_inputs
from clusterkit import LOCAL_CLUSTER, long_cluster_test


def _kill_an_executor(app_id: str, driver_port: str | None = None) -> int:
    pids = executor_pids(app_id, driver_port)
    assert len(pids) == 2, f"expected two executor JVMs of {app_id} (driver port {driver_port}), found {pids}"
    os.kill(pids[0], signal.SIGKILL)
    return pids[0]


def _in_process(spark, tmp_path: Path, query: str, kill_at: int, provider: str) -> dict:
    """Runs ``query`` in this process's cluster session to the end, one executor killed
    while batch ``kill_at`` runs (foreachBatch holds it 2 s, the kill lands in the hold or
    in the write that runs the stateful operators)."""
    spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                   {"hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
                    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"}[provider])
    stream = generate(11)
    from benchmarks.chaos import QUERIES
    write_inputs(tmp_path / "data", {n: stream[n] for n in QUERIES[query]})
    out, started = tmp_path / "out", threading.Event()
    killed = []

    def write(batch, batch_id):
        if batch_id == kill_at:
            started.set()
            time.sleep(2)
        batch.write.mode("overwrite").parquet(str(out / f"batch_id={batch_id}"))

    app_id = spark.sparkContext.applicationId
    q = (build_query(spark, query, tmp_path / "data").writeStream.outputMode("append")
         .trigger(availableNow=True).option("checkpointLocation", str(tmp_path / "checkpoint"))
         .foreachBatch(write).start())
    try:
        assert started.wait(240), "the batch to kill in never started"
        time.sleep(random.Random(kill_at).uniform(0.5, 2.5))
        killed.append(_kill_an_executor(app_id))
        q.awaitTermination(400)
        assert q.exception() is None, q.exception()
        assert not q.isActive, "the query did not finish"
    finally:
        q.stop()
    rows = [list(r) for r in spark.read.parquet(str(out)).drop("batch_id").collect()]
    result = compare(query, stream, rows)
    # Spark relaunched the killed executor: two executors again, the killed one not among them
    deadline = time.time() + 60
    while len(executor_pids(app_id)) < 2 and time.time() < deadline:
        time.sleep(1)
    assert killed[0] not in executor_pids(app_id)
    return result


def test_auction_query_on_local_cluster_survives_an_executor_kill(local_cluster, tmp_path):
    result = _in_process(local_cluster, tmp_path, "agg", kill_at=3, provider="rocksdb")
    assert result["lost"] == 0 and result["duplicated"] == 0 and result["rows"] > 40, result


@long_cluster_test
def test_three_input_join_on_standalone_cluster_survives_an_executor_kill(standalone, tmp_path):
    result = _in_process(standalone, tmp_path, "multiway", kill_at=2, provider="hdfs")
    assert result["lost"] == 0 and result["duplicated"] == 0 and result["rows"] > 50, result
    # it ran as one multi-way join: its plan log is in the checkpoint
    assert (tmp_path / "checkpoint" / "state" / "0" / "_punctuated" / "plan").is_dir()


def _executor_kill_in_child(work: Path, query: str, sink: str, provider: str, batch: int) -> dict:
    """A child driver on local-cluster; one executor killed once batch ``batch`` began."""
    run = Run(work, query, sink, provider, LOCAL_CLUSTER, seed=5)
    try:
        if sink == "foreach":
            run.start(hold_batches=[batch], hold_seconds=2)
            assert run.wait_until(lambda: run.marker(f"started-{batch}"), timeout=400)
        else:
            run.start()
            assert run.wait_until(lambda: batch in run.offsets(), timeout=400)
        _kill_an_executor((work / "app_id").read_text(), (work / "driver_port").read_text())
        return run.finish(timeout=500)
    finally:
        run.stop()


@long_cluster_test
def test_join_and_deduplication_survive_executor_kills_in_child_drivers(tmp_path):
    cases = [("join", "file", "hdfs", 3), ("dedup", "foreach", "rocksdb", 4)]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda c: _executor_kill_in_child(tmp_path / c[0], *c), cases))
    for (query, *_), result in zip(cases, results):
        assert result["lost"] == 0 and result["duplicated"] == 0 and result["rows"] > 50, (query, result)


DRIVER_KILLS = [
    # query, sink, provider, [(point, batch) ...] killed in turn, then run to the end
    ("join", "foreach", "rocksdb", [("state-committed", 2), ("in-batch", 4)]),
    ("multiway", "file", "hdfs", [("in-batch", 1), ("between-batches", 3)]),
]


def _driver_kills(work: Path, query, sink, provider, points) -> tuple[list, dict]:
    run = Run(work, query, sink, provider, "local[2]", seed=9)
    rnd, observed = random.Random(query), []
    try:
        for point, batch in points:
            observed.append(kill_one(run, rnd, point, batch))
        return observed, run.finish(timeout=500)
    finally:
        run.stop()


def _check_driver_kills(tmp_path: Path, cases: list) -> set:
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda c: _driver_kills(tmp_path / f"{c[0]}-{c[1]}", *c), cases))
    seen = set()
    for (query, sink, provider, points), (kills, result) in zip(cases, outcomes):
        assert result["lost"] == 0 and result["duplicated"] == 0 and result["rows"] > 50, (query, result)
        for (point, batch), k in zip(points, kills):
            # the process died where planned (the checkpoint shows it), not after finishing
            assert k["observed"] == point and k["observed_batch"] == batch, (query, k)
            seen.add(point)
    return seen


def test_driver_kills_at_each_point_then_restart_from_the_checkpoint(tmp_path, child_jvms):
    # child_jvms (tests/conftest.py): the child drivers' JVMs start faster; kills and results as before
    seen = _check_driver_kills(tmp_path, DRIVER_KILLS)
    assert seen == {"in-batch", "state-committed", "between-batches"}
