"""The README's code blocks run as written (each in a fresh process, from a scratch directory).

Every fenced block of README.md is either executed here or listed in ``NOT_RUN`` with the
reason; a new block that is neither fails :func:`test_every_block_is_run_or_explained`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)

#: Blocks not executed, by their first line, and why.
NOT_RUN = {
    "bash scripts/demo.sh    # set up everything, then run the main job (the auction demo on local Spark)":
        "the 'two commands' block: scripts/test.sh is the command running this test, and the "
        "demo's defaults run in test_demo_block (the next block)",
    "bash scripts/spark-suites.sh --with-plugin                          # all of them (over an hour on 2 cores)":
        "Spark's own suites take over an hour on 2 cores; scripts/test.sh runs one of them with the "
        "extension loaded (StreamingLeftSemiJoinWithVCFSuite), the counts of all are recorded in "
        "benchmarks/results/spark_suites.md",
}


def blocks() -> list[tuple[str, str]]:
    """(language, text) of every fenced block of README.md, in order."""
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer((REPO / "README.md").read_text())]


def _block(lang: str, first_line_start: str) -> str:
    found = [text for l, text in blocks() if l == lang and text.startswith(first_line_start)]
    assert len(found) == 1, f"README: expected one {lang} block starting {first_line_start!r}"
    return found[0]


def _run(args, cwd, timeout=900, **kw):
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("SPARK_HOME", None)
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, **kw)
    assert done.returncode == 0, f"{args} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


RUN_BY = {"bash scripts/demo.sh                      # defaults": "test_demo_block",
          "CREATE TABLE bids": "test_sql_block",
          "CREATE TABLE bids (auction BIGINT, bidder BIGINT, price DOUBLE, is_punct BOOLEAN)": "test_sql_block",
          "SELECT a.id AS auction": "test_demo_query_block",
          "from pyspark.sql import SparkSession": "test_pyspark_block",
          "source .venv/bin/activate": "test_spark_submit_block",
          "spark-submit --master \"local[2]\" --jars": "test_forkless_block"}


def test_every_block_is_run_or_explained():
    for lang, text in blocks():
        first = text.splitlines()[0]
        assert first in NOT_RUN or any(first.startswith(k) for k in RUN_BY), (
            f"README block `{first}` ({lang}) is neither run by tests/test_readme.py nor in NOT_RUN")


def test_demo_block(tmp_path):
    """`bash scripts/demo.sh [options]`: scripts/demo.sh runs setup, then `punctuated demo` with the
    options: here (set up already) each line runs as `punctuated demo <its options>`."""
    block = _block("bash", "bash scripts/demo.sh                      # defaults")
    lines = [line.split("#", 1)[0].split() for line in block.splitlines() if line.strip()]
    assert len(lines) == 2 and all(line[:2] == ["bash", "scripts/demo.sh"] for line in lines)
    for line in lines:
        done = _run([str(VENV_BIN / "punctuated"), "demo", "--no-progress", *line[2:]], tmp_path)
        assert "closed:" in done.stdout
    assert (tmp_path / "demo-output" / "state.png").stat().st_size > 10_000
    assert (tmp_path / "demo-small" / "state.md").is_file()


def test_demo_query_block():
    """The demo's query as the README shows it is sql/auction.sql's query (which
    tests/test_sql_examples.py runs and tests/test_demo.py compares with the demo's)."""
    from punctuated.sqlrun import split_statements

    block = _block("sql", "SELECT a.id AS auction")
    query = split_statements((REPO / "sql" / "auction.sql").read_text())[-1]
    query = "\n".join(line.split("--", 1)[0] for line in query.splitlines())
    assert " ".join(block.split()) == " ".join(query.split())


def test_sql_block(tmp_path):
    """The `### SQL` block runs with `punctuated run-sql` (tables created, streaming join planned)."""
    block = _block("sql", "CREATE TABLE bids")
    (tmp_path / "readme.sql").write_text(block)
    done = _run([str(VENV_BIN / "punctuated"), "run-sql", "readme.sql"], tmp_path)
    assert "bids: schemes [auction], marker is_punct" in done.stdout
    assert "auctions: schemes [], marker is_punct, unique [id]" in done.stdout


def test_pyspark_block(tmp_path):
    """The `### PySpark` block runs in a fresh Python process and draws the graph it names."""
    block = _block("python", "from pyspark.sql import SparkSession")
    (tmp_path / "snippet.py").write_text(block + "\nspark.stop()\n")
    done = _run([sys.executable, "snippet.py"], tmp_path)
    lines = done.stdout.splitlines()
    assert "bids" in lines[0] and "'auction'" in lines[0], lines[0]   # declarations(bids)
    assert lines[1] == "False ['bids'] ['items(id)']", lines[1]          # as the comment says
    assert (tmp_path / "graph.png").stat().st_size > 1000


def test_spark_submit_block(tmp_path):
    """The spark-submit block, from a directory holding the environment (`.venv`) and a job."""
    block = _block("bash", "source .venv/bin/activate")
    (tmp_path / ".venv").symlink_to(VENV_BIN.parent)
    (tmp_path / "my_job.py").write_text(
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.master('local[1]').getOrCreate()\n"
        "spark.sql(\"CREATE TABLE t (k BIGINT, m BOOLEAN) USING parquet "
        "TBLPROPERTIES ('punctuated.schemes' = 'nope', 'punctuated.marker' = 'm')\")\n"
        "try:\n"
        "    spark.readStream.table('t').schema\n"
        "    print('ACCEPTED')\n"
        "except Exception as e:\n"
        "    print('REJECTED', str(e).splitlines()[0])\n"
        "spark.stop()\n")
    env_path = os.environ.get("PATH", "")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "VIRTUAL_ENV")}
                          | {"PATH": env_path})
    assert done.returncode == 0, done.stderr[-3000:]
    # the extension is loaded: a bad declaration is refused at analysis
    assert "REJECTED" in done.stdout and "PUNCTUATED_INVALID_DECLARATION" in done.stdout, done.stdout


def test_forkless_block(tmp_path):
    """The local file system without forked commands: the block as written runs a stateful query
    whose checkpoint goes through it (the job says which file system Hadoop gave it)."""
    block = _block("bash", 'spark-submit --master "local[2]" --jars')
    (tmp_path / "my_job.py").write_text(
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()\n"
        "print('FS', jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI('file:///'), conf)"
        ".getClass().getName())\n"
        "spark.range(5).write.json('in')\n"
        "q = (spark.readStream.schema('id BIGINT').json('in').dropDuplicates(['id']).writeStream"
        ".format('parquet').option('path', 'out').option('checkpointLocation', 'cp').start())\n"
        "q.processAllAvailable(); q.stop()\n"
        "print('ROWS', spark.read.parquet('out').count())\n"
        "spark.stop()\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "VIRTUAL_ENV")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "FS punctuated.localfs.ForklessLocalFileSystem" in done.stdout, done.stdout
    assert "ROWS 5" in done.stdout, done.stdout
    assert (tmp_path / "cp" / "state" / "0" / "0" / "1.delta").exists()
