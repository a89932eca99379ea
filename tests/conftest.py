"""Shared fixtures: one local SparkSession with the bundled extension for the whole run."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from punctuated.cli import forkless_local_fs, local_session

    # Hadoop's local file system without forked commands: the same files, a fraction of the time.
    session = local_session(str(tmp_path_factory.mktemp("spark")), app="punctuated-tests",
                            extra_conf=forkless_local_fs())
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
