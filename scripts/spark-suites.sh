#!/usr/bin/env bash
# Spark's own streaming suites (from its published test jars, the version build.sbt pins),
# run without or with the extension loaded through spark.sql.extensions.
#
#   scripts/spark-suites.sh [--with-plugin|--without] [--rebuild] [Suite ...]
#
# Suites are simple names under org.apache.spark.sql.streaming or fully qualified names;
# default: the stream-stream joins, aggregation, deduplication, multiple stateful
# operators and file source suites. The join suites are abstract in Spark 4.2: a join suite's
# name (StreamingInnerJoinSuite ...) runs its three state formats (...WithVCFSuite,
# ...WithoutVCFSuite, ...V4Suite). Spark's SharedSparkSession builds its conf from
# `new SparkConf()`, which reads spark.* system properties: -Dspark.sql.extensions loads the
# extension without changing the suites (punctuated.spark.SparkSuitesProbeSuite runs first
# and fails if the session's rules do not match the mode). Each suite runs in its own JVM;
# the summary line per suite and a list of failed tests go to target/spark-suites/<mode>/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

mode=without
suites=()
for a in "$@"; do
  case "$a" in
    --with-plugin) mode=with-plugin ;;
    --without) mode=without ;;
    --rebuild) rm -f "$root/target/spark-suites/classpath" ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) suites+=("$a") ;;
  esac
done
if [ ${#suites[@]} -eq 0 ]; then
  suites=(StreamingInnerJoinSuite StreamingOuterJoinSuite StreamingFullOuterJoinSuite
          StreamingLeftSemiJoinSuite StreamingAggregationSuite StreamingDeduplicationSuite
          MultiStatefulOperatorsSuite FileStreamSourceSuite)
fi

out="$root/target/spark-suites/$mode"
mkdir -p "$out"
# The test classpath (extension classes, Spark and its test jars), cached until build.sbt
# or an extension source (jvm/src/main) changes (--rebuild forces it).
cp_file="$root/target/spark-suites/classpath"
if [ ! -s "$cp_file" ] || [ build.sbt -nt "$cp_file" ] || \
   [ -n "$(find jvm/src/main -newer "$cp_file" -name '*.scala' -print -quit)" ]; then
  echo "[spark-suites] compiling and exporting the test classpath (sbt)" >&2
  scripts/sbt "Test/compile" "export Test/fullClasspath" > "$out/sbt.log" 2>&1 || { cat "$out/sbt.log"; exit 1; }
  # the extension's classes are copied, so that a later build does not change them under a run
  snap="$root/target/spark-suites/classes"
  rm -rf "$snap"; mkdir -p "$snap"
  cp -r target/scala-2.13/classes "$snap/main"; cp -r target/scala-2.13/test-classes "$snap/test"
  tail -1 "$out/sbt.log" | sed "s|$root/target/scala-2.13/classes|$snap/main|; s|$root/target/scala-2.13/test-classes|$snap/test|" > "$cp_file"
fi

props=(-Dspark.testing=1 -Dspark.ui.enabled=false -Dspark.ui.showConsoleProgress=false
       -Dspark.unsafe.exceptionOnMemoryLeak=true -Dspark.master.rest.enabled=false
       -Dspark.test.home="$root" -Djava.io.tmpdir="$out/tmp")
if [ "$mode" = with-plugin ]; then
  props+=(-Dspark.sql.extensions=punctuated.spark.PunctuatedExtensions)
fi
opens=()
for p in java.lang java.lang.invoke java.lang.reflect java.io java.net java.nio java.util \
         java.util.concurrent java.util.concurrent.atomic sun.nio.ch sun.nio.cs \
         sun.security.action sun.util.calendar; do
  opens+=("--add-opens=java.base/$p=ALL-UNNAMED")
done

run_suite() {  # <fully qualified suite> -> appends "<suite> <summary>" to summary.txt
  local suite="$1" log="$out/$(basename "${1//./\/}").log"
  rm -rf "$out/tmp" "$out/work"; mkdir -p "$out/tmp" "$out/work"
  echo "[spark-suites] $mode: $suite" >&2
  local start=$SECONDS
  ( cd "$out/work" && java -Xmx3g -XX:+IgnoreUnrecognizedVMOptions "${opens[@]}" \
      -Djdk.reflect.useDirectMethodHandle=false -Dio.netty.tryReflectionSetAccessible=true \
      "${props[@]}" -cp "$(cat "$cp_file")" org.scalatest.tools.Runner -oDW -s "$suite" ) \
    > "$log" 2>&1 || true
  local summary
  summary="$(grep -E '^Tests: succeeded' "$log" | tail -1)"
  [ -n "$summary" ] || summary="did not finish (see $log)"
  echo "$suite $summary ($((SECONDS - start)) s)" | tee -a "$out/summary.txt"
  grep -E '^- .*\*\*\* FAILED \*\*\*' "$log" | sed "s|^|$suite |" >> "$out/failed.txt" || true
}

: > "$out/summary.txt"; : > "$out/failed.txt"
run_suite punctuated.spark.SparkSuitesProbeSuite
for s in "${suites[@]}"; do
  case "$s" in
    *.*) run_suite "$s" ;;
    Streaming*JoinSuite)
      for f in WithVCF WithoutVCF V4; do run_suite "org.apache.spark.sql.streaming.${s%Suite}${f}Suite"; done ;;
    *) run_suite "org.apache.spark.sql.streaming.$s" ;;
  esac
done
echo "[spark-suites] $mode: summaries in $out/summary.txt, failed tests in $out/failed.txt" >&2
! grep -q -v -E 'succeeded [0-9]+, failed 0,' "$out/summary.txt"
