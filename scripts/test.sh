#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run every test: scalatest (sbt test), one of Spark's own
# streaming suites with the extension loaded (scripts/spark-suites.sh), and pytest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/setup.sh
echo "== scalatest =="
scripts/sbt test
echo "== Spark's own suites with the extension loaded (a subset; all: scripts/spark-suites.sh) =="
scripts/spark-suites.sh --with-plugin StreamingLeftSemiJoinWithVCFSuite
echo "== pytest =="
# pytest exits 5 when it collects no test: that is a failure here too.
.venv/bin/python -m pytest -q "$@"
