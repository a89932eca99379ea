"""Fixtures for tests on a cluster: Spark's ``local-cluster[2,1,1024]`` (two executor JVMs
launched by the driver) and a standalone master with two workers on 127.0.0.1
(``scripts/cluster.sh``, started and stopped by the fixture), both with the bundled
extension jar (``spark.jars``) and ``spark.sql.extensions`` (``punctuated.configure_spark``).

A session fixture here stops the session (and, for the standalone cluster, the daemons) also
when the test fails: a running application keeps its master relaunching executors.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks.chaos: the workload and its kill machinery
    sys.path.insert(0, str(ROOT))

from clusterkit import LOCAL_CLUSTER, TEST_MASTER_PORT, cluster_session  # noqa: E402


@pytest.fixture(scope="session")
def standalone_master(tmp_path_factory):
    """A standalone master and two workers (1 core, 1 GiB each) on 127.0.0.1; its URL.
    Started with ``scripts/cluster.sh start`` under a temporary directory, stopped afterwards."""
    env = dict(os.environ, PUNCTUATED_CLUSTER_DIR=str(tmp_path_factory.mktemp("cluster")),
               PUNCTUATED_MASTER_PORT=TEST_MASTER_PORT, PUNCTUATED_MASTER_WEBUI_PORT="0")
    script = str(ROOT / "scripts" / "cluster.sh")
    try:
        started = subprocess.run([script, "start"], env=env, capture_output=True, text=True, timeout=180)
        assert started.returncode == 0, started.stderr
        url = started.stdout.strip().splitlines()[-1]
        assert url == f"spark://127.0.0.1:{TEST_MASTER_PORT}"
        yield url
    finally:
        subprocess.run([script, "stop"], env=env, capture_output=True, text=True, timeout=120)


def _session_fixture(master_of):
    @pytest.fixture
    def fixture(request, tmp_path):
        from pyspark import SparkContext

        active = SparkContext._active_spark_context
        if active is not None:  # the suite's local[2] session: one context per driver JVM
            active.stop()
        spark = cluster_session(master_of(request), tmp_path, f"punctuated-{request.node.name}"[:60])
        try:
            yield spark
        finally:
            spark.stop()
    return fixture


#: A ``local-cluster[2,1,1024]`` session (separate executor JVMs) with the extension.
local_cluster = _session_fixture(lambda request: LOCAL_CLUSTER)
#: A session on the standalone cluster of ``standalone_master`` with the extension.
standalone = _session_fixture(lambda request: request.getfixturevalue("standalone_master"))
