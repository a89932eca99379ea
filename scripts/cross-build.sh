#!/usr/bin/env bash
# Build and check Punctuated for one Spark minor outside the default CI run (which covers the
# default, newest Spark): the jar, the representative JVM suites (project/cross-suites), the
# wheel, and a smoke test of the wheel installed offline into a fresh virtual environment.
#
# Usage: scripts/cross-build.sh MINOR [--no-suites | --all-suites]     e.g. scripts/cross-build.sh 4.1
#   default: the suites listed in project/cross-suites; --all-suites: every JVM suite (sbt test,
#   about 45 minutes on 2 cores); --no-suites: none.
# Output goes to stdout; recorded runs are kept in docs/spark-versions/ (docs/spark-versions.md).
# Compiled output: target/spark-MINOR/; environment: .venv-spark-MINOR (scripts/setup.sh --spark).
# Exits non-zero if any step fails; the last line is "cross-build MINOR: N passed, N failed".
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
minor="${1:?usage: scripts/cross-build.sh MINOR [--no-suites | --all-suites]}"
suites=1
case "${2:-}" in
  "") ;;
  --no-suites) suites=0 ;;
  --all-suites) suites=all ;;
  *) echo "unknown option ${2}: use --no-suites or --all-suites"; exit 2 ;;
esac
full="$(awk -v m="$minor" '$1 == m { print $2 }' project/spark-versions)"
[ -n "$full" ] || { echo "Spark $minor is not listed in project/spark-versions"; exit 2; }
passed=0 failed=0
step() {  # step NAME COMMAND...: run, report, count
  local name="$1"; shift
  echo "== $name"
  if "$@"; then echo "-- $name: ok"; passed=$((passed + 1)); else echo "-- $name: FAILED"; failed=$((failed + 1)); fi
}

venv=".venv-spark-$minor"
default_minor="$(sed -n 's/.*"pyspark==\([0-9]*\.[0-9]*\)\..*".*/\1/p' pyproject.toml | head -1)"
[ "$minor" = "$default_minor" ] && venv=".venv"
echo "cross-build: Spark $full (minor $minor), environment $venv, $(date -u +%Y-%m-%dT%H:%MZ)"

# 1. environment, jar and package for this minor (scripts/setup.sh --spark)
step "setup (jar for Spark $full, $venv)" bash scripts/setup.sh --spark "$minor"

# 2. the JVM suites against this Spark
if [ "$suites" != 0 ]; then
  run_suites() {
    local log; log="$(mktemp)"
    local what="testOnly $(grep -v '^#' project/cross-suites | tr '\n' ' ')"
    [ "$suites" = all ] && what="test"
    scripts/sbt -Dspark.version="$minor" "$what" >"$log" 2>&1
    local rc=$?
    grep -E '^\[info\] [A-Za-z]+Suite:$|\*\*\* FAILED \*\*\*|^\[info\] (Tests|Suites|All tests|\*\*\*)|^\[error\] (Failed|Error)' "$log"
    rm -f "$log"
    return $rc
  }
  if [ "$suites" = all ]; then label="every JVM suite (sbt test)"; else label="project/cross-suites"; fi
  step "JVM suites on Spark $full ($label)" run_suites
fi

# 3. the wheel, installed offline into a fresh environment, runs the auction join and the auction demo
smoke() {
  local tmp; tmp="$(mktemp -d)"
  local jar="target/spark-$minor/scala-2.13/punctuated-assembly.jar"
  [ "$minor" = "$default_minor" ] && jar="target/scala-2.13/punctuated-assembly.jar"
  local wheel
  wheel="$(PYTHON="$venv/bin/python" bash scripts/build-wheel.sh --spark "$minor" --jar "$jar" --out "$tmp/dist" | tail -1)" || return 1
  echo "wheel: $(basename "$wheel")"
  "$venv/bin/python" -m venv "$tmp/env" || return 1
  PIP_NO_INDEX=1 "$tmp/env/bin/python" -m pip install -q --no-index --find-links "$venv/wheelhouse" \
    --find-links "$tmp/dist" "punctuated==$(basename "$wheel" | cut -d- -f2)" || return 1
  (cd "$tmp" && env -u PYTHONPATH -u SPARK_HOME "$tmp/env/bin/python" -I "$root/scripts/wheel_smoke.py" \
    "$root/sql/auction_join.sql" 2>"$tmp/smoke.err") || { tail -30 "$tmp/smoke.err"; return 1; }
  # the main job from the installed package: the auction demo, checked against Spark's batch answer
  (cd "$tmp" && env -u PYTHONPATH -u SPARK_HOME "$tmp/env/bin/python" -I -m punctuated demo \
    --auctions 12 --steps 5 --seed 1 --no-progress --out "$tmp/demo" >"$tmp/demo.out" 2>"$tmp/demo.err") \
    || { tail -20 "$tmp/demo.out" "$tmp/demo.err"; return 1; }
  echo "auction demo: ok ($(grep -m1 '^Check' "$tmp/demo.out"))"
  rm -rf "$tmp"
}
step "wheel for Spark $minor: offline install into a fresh environment, auction join, auction demo" smoke

echo "cross-build $minor: $passed passed, $failed failed"
[ "$failed" = 0 ]
