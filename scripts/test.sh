#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run every test: scalatest (sbt test), one of Spark's own
# streaming suites with the extension loaded (scripts/spark-suites.sh; all of them take over an
# hour, recorded in benchmarks/results/spark_suites.md), and pytest.
# Every part runs even when an earlier one fails; the end of the output names each failed
# part and, for scalatest, each failed test with its message (the logs are long: a CI that
# shows only the last lines still shows what failed). Exits non-zero if any part failed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/setup.sh
logs="$(mktemp -d)"
failed=()

echo "== scalatest =="
scripts/sbt test 2>&1 | tee "$logs/scalatest.log" || failed+=("scalatest (sbt test)")
echo "== Spark's own suites with the extension loaded (a subset; all: scripts/spark-suites.sh) =="
scripts/spark-suites.sh --with-plugin StreamingLeftSemiJoinWithVCFSuite || failed+=("Spark's own suites")
echo "== pytest =="
# pytest exits 5 when it collects no test: that is a failure here too.
.venv/bin/python -m pytest -q "$@" || failed+=("pytest")

if [ "${#failed[@]}" -eq 0 ]; then
  echo "== every test passed =="
  exit 0
fi
echo "== failed: ${failed[*]} =="
if grep -q '\*\*\* FAILED \*\*\*' "$logs/scalatest.log"; then
  echo "-- scalatest failures (each with the test output that follows it) --"
  # the suite each failed test ran in is the last "<Suite>:" line before it
  awk '/^\[info\] [A-Za-z0-9]+Suite:$/ { suite = $2 }
       /\*\*\* FAILED \*\*\*/ { print "in " suite; n = 25 }
       n > 0 && /^\[(info|error)\]/ { print; n-- }' "$logs/scalatest.log" | cut -c1-400 | head -400
fi
exit 1
