"""Spark's offline state repartitioning on a punctuated query's checkpoint (real Spark 4.2).

Spark 4.2's ``spark._streamingCheckpointManager.repartition(checkpoint, n)`` rewrites every
operator's state through the ``statestore`` reader. It cannot read punctuated operators'
stores, so it stops, leaving the offsets of a batch no commit follows; Spark then refuses every
restart and asks for a retry that fails the same way. A restart of the punctuated query must
say what happened and how to continue (``PUNCTUATED_UNFINISHED_REPARTITION``, at ``start()``,
before any batch runs), and the fix it names must continue the query exactly once:
docs/checkpoints.md, "Spark's offline state tools".
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.chaos import PROVIDERS, QUERIES, build_query, compare, generate, write_inputs  # noqa: E402

STREAM = generate(4)


def _start(spark, work: Path, query: str):
    return (build_query(spark, query, work / "data").writeStream.outputMode("append")
            .trigger(availableNow=True).option("checkpointLocation", str(work / "checkpoint"))
            .format("parquet").option("path", str(work / "out")).start())


def _run(spark, work: Path, query: str) -> dict:
    q = _start(spark, work, query)
    try:
        q.awaitTermination()
    finally:
        q.stop()
    return compare(query, STREAM, [list(r) for r in spark.read.parquet(str(work / "out")).collect()])


def _sink_batches(work: Path) -> list[int]:
    return sorted(int(p.name) for p in (work / "out" / "_spark_metadata").iterdir() if p.name.isdigit())


CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
PARTITIONS = "spark.sql.shuffle.partitions"


# (RocksDB with changelog checkpointing: a snapshot the repartitioning left of the rerun batch's
# version would be loaded by later restarts in place of the query's changelog of it)
@pytest.mark.parametrize("query,provider,changelog", [
    ("agg", "rocksdb", False), ("dedup", "hdfs", False), ("dedup", "rocksdb", True)])
def test_an_unfinished_offline_repartition_is_named_and_its_fix_continues_exactly_once(
        spark, tmp_path, query, provider, changelog):
    if not hasattr(spark, "_streamingCheckpointManager"):
        pytest.skip("Spark before 4.2 has no offline state repartitioning")
    key = "spark.sql.streaming.stateStore.providerClass"
    partitions = spark.conf.get(PARTITIONS)   # (other tests of the session may have changed it)
    spark.conf.set(key, PROVIDERS[provider])
    spark.conf.set(CHANGELOG, str(changelog).lower())
    spark.conf.set(PARTITIONS, "2")
    try:
        inputs = QUERIES[query]
        write_inputs(tmp_path / "data", {n: STREAM[n][:6] for n in inputs})
        first = _run(spark, tmp_path, query)
        assert first["duplicated"] == 0 and first["lost"] > 0, first
        committed = _sink_batches(tmp_path)
        checkpoint = tmp_path / "checkpoint"
        last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())

        # Spark's tool cannot rewrite our stores: it fails, leaving batch last + 1 uncommitted
        with pytest.raises(Exception):
            spark._streamingCheckpointManager.repartition(str(checkpoint), 4)
        assert (checkpoint / "offsets" / str(last + 1)).exists()
        assert not (checkpoint / "commits" / str(last + 1)).exists()

        # the restart is refused at start(), naming the batch, the file to delete and the operators
        write_inputs(tmp_path / "data", {n: STREAM[n] for n in inputs})
        with pytest.raises(Exception) as refused:
            _start(spark, tmp_path, query).stop()
        message = str(refused.value)
        assert "PUNCTUATED_UNFINISHED_REPARTITION" in message, message
        assert f"The newest batch ({last + 1})" in message and "(2 -> 4 shuffle partitions)" in message, message
        assert str(checkpoint / "offsets" / str(last + 1)) in message, message
        assert ("punctuated operators (aggregation; join)" if query == "agg" else "punctuated operators (deduplication)") in message, message
        assert _sink_batches(tmp_path) == committed   # nothing ran

        version = last + 2   # the state version of batch last + 1
        written = [p for p in (checkpoint / "state").rglob("*")
                   if re.fullmatch(rf"\.?{version}(_[^.]+)?\.(zip|delta|snapshot|changelog)(\.crc)?", p.name)]
        if written:
            files = len([p for p in written if not p.name.endswith(".crc")])
            assert f"the {files} files of state version {version} that the repartitioning wrote" in message, message
        else:
            assert "files of state version" not in message, message

        # the fix as printed: the uncommitted offsets file (and its checksum file) and the state
        # files the repartitioning wrote; then exactly once
        for name in (str(last + 1), f".{last + 1}.crc"):
            (checkpoint / "offsets" / name).unlink(missing_ok=True)
        for p in written:
            p.unlink()
        result = _run(spark, tmp_path, query)
        assert result["lost"] == 0 and result["duplicated"] == 0, result
    finally:
        spark.conf.unset(key)
        spark.conf.unset(CHANGELOG)
        spark.conf.set(PARTITIONS, partitions)
