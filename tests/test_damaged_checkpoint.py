"""Damaged checkpoints of a punctuated join: what a restart says, file by file (real Spark).

A punctuated join (``auctions ⋈ bids``, ``benchmarks/chaos.py``'s stream) runs six
micro-batches into the file sink; the checkpoint is then damaged and the query restarted with
two more input files. Every damage must stop the query before the sink records a batch: no
silent partial result. The messages asserted here are Spark's own where it names the file (a missing state file, a
deleted store or state directory) and Punctuated's ``PUNCTUATED_DAMAGED_CHECKPOINT`` where
Spark's say nothing useful (a truncated state file; a commit file deleted without its
checksum file): see docs/clusters.md, "Damaged checkpoints".
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
# temporary files a state store writes and renames (they may vanish while the tree is copied)
_TEMPORARY = shutil.ignore_patterns("*.tmp", "*.tmp.crc")


def _run(spark, work: Path, query: str = "join"):
    """Runs ``query`` to the end of its files; the error text, or the comparison."""
    q = (build_query(spark, query, work / "data").writeStream.outputMode("append")
         .trigger(availableNow=True).option("checkpointLocation", str(work / "checkpoint"))
         .format("parquet").option("path", str(work / "out")).start())
    try:
        q.awaitTermination()
    except Exception as e:  # StreamingQueryException
        return str(e).split("=== Streaming Query")[0]
    finally:
        q.stop()
    return compare(query, STREAM, [list(r) for r in spark.read.parquet(str(work / "out")).collect()])


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
    shutil.copytree(live, backup, ignore=_TEMPORARY)  # a store may still be renaming its temporary files

    def run(damage):
        spark.conf.set(key, PROVIDERS[provider])
        shutil.rmtree(live)
        shutil.copytree(backup, live, ignore=_TEMPORARY)   # the same paths: the file source logs absolute paths
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


def test_a_truncated_state_file_is_named_with_the_fix(damaged):
    """HDFS ``<v>.delta`` / RocksDB ``<v>.zip`` cut in half: Spark's uncategorized load error
    names no file; the operator names the file whose length disagrees with its checksum file,
    the checkpoint and what to do (docs/clusters.md)."""
    suffix = "delta" if damaged.provider == "hdfs" else "zip"
    outcome, batches = damaged(lambda cp: _truncate(_store_files(cp, f"6.{suffix}")[0]))
    assert "[PUNCTUATED_DAMAGED_CHECKPOINT] Cannot load state store 'left-punctuated-rows'" in outcome, outcome
    assert f"damaged: file:" in outcome and f"/state/0/0/left-punctuated-rows/6.{suffix} (" in outcome, outcome
    assert "restore the damaged file(s) from a backup of the checkpoint" in outcome
    assert "[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED]" in outcome, "Spark's own error stays the cause"
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
    """Spark 4.2 refuses the restart itself; Spark 4.0 and 4.1 have no such check, and the
    first store the operator opens names the missing file and what to do."""
    import pyspark
    from punctuated.spark_version import minor_at_least

    for gone in ("state/0", "state"):
        outcome, batches = damaged(lambda cp: shutil.rmtree(cp / gone))
        if minor_at_least(pyspark.__version__, "4.2"):
            assert "[STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY] Cannot restart streaming " \
                   "query with stateful operators because the state directory is empty or missing." in outcome
        else:
            assert "[PUNCTUATED_DAMAGED_CHECKPOINT] Cannot load state store" in outcome, outcome
            assert "does not exist" in outcome and "restore the damaged file(s) from a backup" in outcome, outcome
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


def test_a_commit_deleted_without_its_checksum_is_named_before_the_batch_runs(damaged):
    """``commits/5`` removed but ``commits/.5.crc`` left: Spark would re-run batch 5, fail to
    write the commit over the stale checksum and blame a concurrent query; the operator's
    planning names the checksum file and the fix before the batch runs (docs/clusters.md)."""
    outcome, batches = damaged(lambda cp: os.unlink(cp / "commits" / "5"))
    assert "[PUNCTUATED_DAMAGED_CHECKPOINT]" in outcome and "commits/.5.crc" in outcome, outcome
    assert "delete" in outcome and "Multiple streaming queries" not in outcome
    assert batches == list(range(6))


@pytest.mark.parametrize("provider", ["hdfs", "rocksdb"])
def test_a_truncated_state_file_of_a_deduplication_is_named(spark, tmp_path, provider):
    """The deduplication's store is opened by Spark's ``mapPartitionsWithStateStore``, before
    any of the operator's code: a truncated file is still named, with the fix."""
    key = "spark.sql.streaming.stateStore.providerClass"
    spark.conf.set(key, PROVIDERS[provider])
    try:
        inputs = QUERIES["dedup"]
        write_inputs(tmp_path / "data", {n: STREAM[n][:6] for n in inputs})
        first = _run(spark, tmp_path, "dedup")
        assert isinstance(first, dict) and first["duplicated"] == 0, first
        write_inputs(tmp_path / "data", {n: STREAM[n] for n in inputs})
        suffix = "delta" if provider == "hdfs" else "zip"
        _truncate(str(tmp_path / "checkpoint" / "state" / "0" / "0" / f"6.{suffix}"))
        outcome = _run(spark, tmp_path, "dedup")
        assert "[PUNCTUATED_DAMAGED_CHECKPOINT] Cannot load state store 'default'" in outcome, outcome
        assert f"/state/0/0/6.{suffix} (" in outcome, outcome
    finally:
        spark.conf.unset(key)
