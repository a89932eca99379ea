"""The test session's local file system: Hadoop's, without forked shell commands.

Every streaming test's checkpoints and state stores go through it (``tests/conftest.py``), so a
checkpoint written and read back here is the same files on disk a user's Hadoop writes.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_session_uses_the_forkless_local_file_system(spark):
    """The session's Hadoop configuration names it for both APIs. (``FileSystem.get`` may still
    return an instance cached earlier in the JVM under a configuration without these settings —
    its cache is keyed by scheme and user, not configuration — so the fresh instance is checked.)"""
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    assert conf.get("fs.file.impl") == "punctuated.localfs.ForklessLocalFileSystem"
    fs = jvm.org.apache.hadoop.fs.FileSystem.newInstance(jvm.java.net.URI("file:///"), conf)
    assert fs.getClass().getName() == "punctuated.localfs.ForklessLocalFileSystem"
    fc = jvm.org.apache.hadoop.fs.FileContext.getLocalFSFileContext(conf)
    assert fc.getDefaultFileSystem().getClass().getName() == "punctuated.localfs.ForklessLocalFs"


def test_a_stateful_query_restarts_from_its_checkpoint(spark, tmp_path):
    """Offsets, commits and state-store deltas written through it are read back on restart."""
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.json").write_text('{"k": 1}\n{"k": 1}\n{"k": 2}\n')
    checkpoint = str(tmp_path / "cp")
    out = str(tmp_path / "out")

    def run():
        stream = spark.readStream.schema("k INT").json(str(src)).dropDuplicates(["k"])
        query = (stream.writeStream.format("parquet").option("path", out)
                 .option("checkpointLocation", checkpoint).outputMode("append").start())
        query.processAllAvailable()
        query.stop()
        return sorted(r.k for r in spark.read.parquet(out).collect())

    assert run() == [1, 2]
    (src / "b.json").write_text('{"k": 2}\n{"k": 3}\n')
    assert run() == [1, 2, 3]  # the restarted query remembers 2 from its state store: once each
    assert (tmp_path / "cp" / "state" / "0" / "0" / "1.delta").exists()
