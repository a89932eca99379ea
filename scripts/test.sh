#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run every test: scalatest (sbt test), one of Spark's own
# streaming suites with the extension loaded (scripts/spark-suites.sh; all of them take over an
# hour, recorded in benchmarks/results/spark_suites.md), and pytest.
#
# pytest runs beside scalatest, not after it: where the 2 cores have room each takes about a
# fifth longer than alone and both together well under their sum (60 min against about 100);
# where they are busy it costs nothing (benchmarks/results/ci_time.md).
# pytest's output goes to a file and is printed once scalatest and Spark's suites are done.
#
# Every part runs even when an earlier one fails; the end of the output names each failed
# part and, for scalatest, each failed test with its message (the logs are long: a CI that
# shows only the last lines still shows what failed). Exits non-zero if any part failed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/setup.sh
logs="$(mktemp -d)"
failed=()
started=$SECONDS

# pytest exits 5 when it collects no test: that is a failure here too (any non-zero status is).
.venv/bin/python -m pytest -q "$@" > "$logs/pytest.log" 2>&1 &
pytest_pid=$!
# a CI that stops this script stops pytest too (its Spark JVM ends with it)
trap 'kill "$pytest_pid" 2>/dev/null || true' EXIT

echo "== scalatest (pytest runs beside it: $logs/pytest.log) =="
scripts/sbt test 2>&1 | tee "$logs/scalatest.log" || failed+=("scalatest (sbt test)")
echo "== scalatest done after $(( (SECONDS - started) / 60 )) min =="
echo "== Spark's own suites with the extension loaded (a subset; all: scripts/spark-suites.sh) =="
scripts/spark-suites.sh --with-plugin StreamingLeftSemiJoinWithVCFSuite || failed+=("Spark's own suites")
echo "== pytest (waiting for it) =="
pytest_rc=0
wait "$pytest_pid" || pytest_rc=$?
trap - EXIT
cat "$logs/pytest.log"
echo "== pytest done; $(( (SECONDS - started) / 60 )) min since the tests started =="
[ "$pytest_rc" -eq 0 ] || failed+=("pytest")

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
if [ "$pytest_rc" -ne 0 ]; then
  echo "-- pytest's summary --"
  sed -n '/short test summary info/,$p' "$logs/pytest.log" | cut -c1-400 | head -100
fi
exit 1
