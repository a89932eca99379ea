"""Shared fixtures: one local SparkSession with the bundled extension for the whole run."""

from __future__ import annotations

import os

import pytest

#: JVM options for the child processes of the benchmark smoke tests (read by every JVM through
#: ``JAVA_TOOL_OPTIONS``): the client compiler only and the serial collector. A smoke run's JVM
#: lives for seconds, where the server compiler's work never pays off (its threads take about
#: half a cold JVM's CPU); results, state sizes and files do not depend on either option.
#: Test-only: the benchmarks' own runs keep the JVM's defaults.
CHILD_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: The session JVM's (the ``spark`` fixture's) option: the client compiler only, as the scalatest
#: JVM (build.sbt). Thousands of short queries, each with generated classes: the server
#: compiler's threads took a fifth of a test JVM's CPU for no shorter run.
SESSION_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"


@pytest.fixture(scope="session")
def child_env():
    """The environment of a benchmark's child processes: ours, with ``CHILD_JVM_OPTIONS`` added."""
    opts = " ".join(o for o in (os.environ.get("JAVA_TOOL_OPTIONS"), CHILD_JVM_OPTIONS) if o)
    return {**os.environ, "JAVA_TOOL_OPTIONS": opts}


@pytest.fixture
def child_jvms(monkeypatch, child_env):
    """For a benchmark's ``main()`` run in this process: its children get ``child_env``."""
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", child_env["JAVA_TOOL_OPTIONS"])


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from punctuated.cli import forkless_local_fs, local_session

    # Hadoop's local file system without forked commands: the same files, a fraction of the time;
    # the client compiler only (SESSION_JVM_OPTIONS)
    session = local_session(str(tmp_path_factory.mktemp("spark")), app="punctuated-tests",
                            extra_conf={**forkless_local_fs(), "spark.driver.extraJavaOptions": SESSION_JVM_OPTIONS})
    yield session
    session.stop()


@pytest.fixture
def table_name(spark, request):
    """A fresh catalog table name, dropped after the test."""
    import re

    name = "t_" + re.sub(r"[^0-9A-Za-z_]", "_", request.node.name)[:50]
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    yield name
    spark.sql(f"DROP TABLE IF EXISTS {name}")
