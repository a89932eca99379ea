"""What the cluster tests share: the masters, the session builder, the gate of the longer tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

LOCAL_CLUSTER = "local-cluster[2,1,1024]"
#: The longer cluster tests run only with PUNCTUATED_CLUSTER_TESTS=all (see docs/clusters.md):
#: each starts executor JVMs, several minutes on a busy 2-core machine.
ALL = os.environ.get("PUNCTUATED_CLUSTER_TESTS") == "all"
long_cluster_test = pytest.mark.skipif(
    not ALL, reason="a longer cluster test: run with PUNCTUATED_CLUSTER_TESTS=all")

#: Ports of the test cluster, apart from the defaults a user's `scripts/cluster.sh start` takes.
TEST_MASTER_PORT = "17077"


def cluster_session(master: str, warehouse: Path, app: str):
    """A SparkSession against ``master`` with the extension: 1 GiB executors, 2 cores."""
    from pyspark.sql import SparkSession

    import punctuated

    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.executor.memory", "1g")
               .config("spark.driver.memory", "1g")
               .config("spark.cores.max", "2")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.warehouse.dir", str(warehouse / "warehouse"))
               .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={warehouse}"))
    spark = punctuated.configure_spark(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
