"""Damaged checkpoints of a punctuated join: what a restart says, file by file (real Spark).

A punctuated join (``auctions ⋈ bids``, ``benchmarks/chaos.py``'s stream) runs six
micro-batches into the file sink; the checkpoint is then damaged and the query restarted with
two more input files. Every damage must stop the query before the sink records a batch: no
silent partial result. The messages asserted here are Spark's own (see docs/clusters.md,
"Damaged checkpoints"): they name the file where Spark knows it (a missing state file, a
deleted store or state directory), and say nothing useful for a truncated state file or a
commit file deleted without its checksum file -- cases the docs spell out.
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.chaos import PROVIDERS, QUERIES, build_query, compare, generate, write_inputs  # noqa: E402

STREAM = generate(4)
INPUTS = QUERIES["join"]


def _run(spark, work: Path):
    """Runs the join to the end of its files; the error text, or the comparison."""
    q = (build_query(spark, "join", work / "data").writeStream.outputMode("append")
         .trigger(availableNow=True).option("checkpointLocation", str(work / "checkpoint"))
         .format("parquet").option("path", str(work / "out")).start())
    try:
        q.awaitTermination()
    except Exception as e:  # StreamingQueryException
        return str(e).split("=== Streaming Query")[0]
    finally:
        q.stop()
    return compare("join", STREAM, [list(r) for r in spark.read.parquet(str(work / "out")).collect()])


@pytest.fixture(scope="module", params=["hdfs", "rocksdb"])
def damaged(spark, tmp_path_factory, request):
    """``damaged(fn)``: a checkpoint of six batches (under the provider of the param), damaged
    by ``fn(checkpoint)``, restarted with the last two files; the run's error text or result,
    and the sink's committed batches afterwards."""
    provider = request.param
    key = "spark.sql.streaming.stateStore.providerClass"
    spark.conf.set(key, PROVIDERS[provider])
    base = tmp_path_factory.mktemp(f"damaged-{provider}")
    live, backup = base / "live", base / "backup"
    write_inputs(live / "data", {n: STREAM[n][:6] for n in INPUTS})
    first = _run(spark, live)
    assert isinstance(first, dict) and first["duplicated"] == 0 and first["lost"] > 0, first
    shutil.copytree(live, backup)

    def run(damage):
        spark.conf.set(key, PROVIDERS[provider])
        shutil.rmtree(live)
        shutil.copytree(backup, live)   # the same paths: the file source logs absolute paths
        write_inputs(live / "data", {n: STREAM[n] for n in INPUTS})
        damage(live / "checkpoint")
        outcome = _run(spark, live)
        sink_batches = sorted(int(p.name) for p in (live / "out" / "_spark_metadata").iterdir()
                              if p.name.isdigit())
        return outcome, sink_batches

    run.provider = provider
    yield run
    spark.conf.unset(key)


def _store_files(cp: Path, pattern: str) -> list[str]:
    return sorted(glob.glob(str(cp / "state" / "0" / "0" / "left-punctuated-rows" / pattern)))


def _truncate(path: str) -> None:
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def test_an_undamaged_checkpoint_continues_exactly(damaged):
    outcome, batches = damaged(lambda cp: None)
    assert (outcome["lost"], outcome["duplicated"]) == (0, 0) and outcome["rows"] > 100, outcome
    assert batches == list(range(8))


def test_a_truncated_state_file_fails_without_naming_it(damaged):
    """HDFS ``<v>.delta`` / RocksDB ``<v>.zip`` cut in half: Spark fails with an
    uncategorized load error that names neither the file nor a fix (docs/clusters.md)."""
    suffix = "delta" if damaged.provider == "hdfs" else "zip"
    outcome, batches = damaged(lambda cp: _truncate(_store_files(cp, f"6.{suffix}")[0]))
    assert "[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during loading state." in outcome
    assert batches == list(range(6)), "no batch may reach the sink from a damaged state"


def test_a_missing_state_file_is_named(damaged):
    if damaged.provider == "hdfs":
        outcome, batches = damaged(lambda cp: os.unlink(_store_files(cp, "4.delta")[0]))
        assert "[CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS]" in outcome
        assert "state/0/0/left-punctuated-rows/4.delta does not exist" in outcome
    else:
        outcome, batches = damaged(lambda cp: os.unlink(_store_files(cp, "6.zip")[0]))
        assert "[CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE]" in outcome
        assert "state/0/0/left-punctuated-rows/6.changelog does not exist" in outcome
        assert "create a new checkpoint location" in outcome
    assert batches == list(range(6))


def test_a_deleted_store_directory_is_named(damaged):
    outcome, batches = damaged(lambda cp: shutil.rmtree(cp / "state" / "0" / "0" / "left-punctuated-rows"))
    assert "[CANNOT_LOAD_STATE_STORE." in outcome and "left-punctuated-rows" in outcome, outcome
    assert batches == list(range(6))


def test_a_deleted_state_directory_is_refused_at_start(damaged):
    for gone in ("state/0", "state"):
        outcome, batches = damaged(lambda cp: shutil.rmtree(cp / gone))
        assert "[STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY] Cannot restart streaming " \
               "query with stateful operators because the state directory is empty or missing." in outcome
        assert batches == list(range(6))


def test_a_missing_last_commit_reruns_its_batch_exactly(damaged):
    """``commits/5`` and its checksum file removed: Spark re-runs batch 5 from state version 5
    (the file sink skips the batch it already recorded) and the output stays exact."""
    def damage(cp):
        os.unlink(cp / "commits" / "5")
        os.unlink(cp / "commits" / ".5.crc")
    outcome, batches = damaged(damage)
    assert isinstance(outcome, dict) and (outcome["lost"], outcome["duplicated"]) == (0, 0), outcome
    assert batches == list(range(8))


def test_a_commit_deleted_without_its_checksum_reads_as_a_concurrent_query(damaged):
    """``commits/5`` removed but ``commits/.5.crc`` left: Spark re-runs batch 5, cannot write
    the commit over the stale checksum, and blames a concurrent query (docs/clusters.md)."""
    outcome, batches = damaged(lambda cp: os.unlink(cp / "commits" / "5"))
    assert "Multiple streaming queries are concurrently using" in outcome and "/commits" in outcome
    assert batches == list(range(6))
