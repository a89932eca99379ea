"""Smoke test of an installed punctuated wheel: the auction join, run as a user would.

Run it with the Python of an environment the wheel was installed into, from a directory
outside the source tree (so ``import punctuated`` finds the installed copy)::

    /tmp/env/bin/python -I scripts/wheel_smoke.py sql/auction_join.sql

It checks that the package is the installed one, that its jar was built for the running
pyspark's Spark minor (``punctuated.spark_version``), runs ``sql/auction_join.sql`` (two
declared tables, a streaming join) and checks the rows and that the join ran as the
punctuated operator. Prints one ``wheel smoke: ok ...`` line; exits non-zero otherwise.
Used by tests/test_packaging.py and scripts/cross-build.sh.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path


def main(sql: str) -> int:
    import pyspark
    from pyspark.sql import SparkSession

    import punctuated
    from punctuated.spark_version import check_spark_version, jar_spark_version
    from punctuated.sqlrun import run_file

    where = Path(punctuated.__file__).resolve()
    assert "site-packages" in where.parts, f"punctuated imported from {where}, not an installed wheel"
    minor = check_spark_version()
    warehouse = tempfile.mkdtemp(prefix="punctuated-smoke-")
    spark = (punctuated.configure_spark(SparkSession.builder.master("local[2]"))
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.warehouse.dir", warehouse)
             .getOrCreate())
    try:
        progress: list = []
        rows = sorted(tuple(r) for r in run_file(spark, sql, progress=progress))
        expected = [(1, 10, 100, 5.0), (1, 10, 101, 7.5), (2, 11, 100, 3.0), (3, 12, 102, 9.0)]
        assert rows == expected, rows
        operators = {op["operatorName"] for p in progress for op in p["stateOperators"]}
        assert operators and all(o.startswith("punctuated") for o in operators), operators
    finally:
        spark.stop()
    print(f"wheel smoke: ok (pyspark {pyspark.__version__}, jar built for Spark {jar_spark_version()}, "
          f"minor {minor}, operators {sorted(operators)}, punctuated from {where.parent})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -I scripts/wheel_smoke.py <path of sql/auction_join.sql>", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
