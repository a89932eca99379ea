#!/usr/bin/env bash
# Build the punctuated wheel for one Spark minor: the jar built against that Spark inside,
# pyspark pinned to that minor, version <punctuated version>.<spark minor> (0.1.0.4.1):
# docs/spark-versions.md.
#
# Usage: scripts/build-wheel.sh [--spark MINOR] [--jar PATH] [--out DIR]
#   --spark MINOR  a minor listed in project/spark-versions (default: PUNCTUATED_SPARK_VERSION, else the
#                  pyspark pinned in pyproject.toml)
#   --jar PATH     use this assembly jar (it must be built for MINOR) instead of running
#                  `scripts/sbt -Dspark.version=MINOR assembly`
#   --out DIR      where the wheel goes (default dist/)
# Prints the wheel's path on its last line.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
say() { echo "[punctuated wheel] $*" >&2; }

default_full="$(sed -n 's/.*"pyspark==\([0-9][0-9.]*\)".*/\1/p' pyproject.toml | head -1)"
minor="${PUNCTUATED_SPARK_VERSION:-${default_full%.*}}"
jar="" out="$root/dist"
while [ $# -gt 0 ]; do
  case "$1" in
    --spark) minor="$2"; shift 2 ;;
    --jar) jar="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
    --out) mkdir -p "$2"; out="$(cd "$2" && pwd)"; shift 2 ;;
    *) say "unknown option $1 (see the usage at the top of scripts/build-wheel.sh)"; exit 2 ;;
  esac
done
minor="$(echo "$minor" | cut -d. -f1,2)"
full="$(awk -v m="$minor" '$1 == m { print $2 }' project/spark-versions)"
if [ -z "$full" ]; then
  say "Spark $minor is not listed in project/spark-versions (supported: $(awk '!/^#/ && NF >= 2 { printf "%s ", $1 }' project/spark-versions))"
  exit 2
fi
default_minor="${default_full%.*}"

if [ -z "$jar" ]; then
  say "building the jar for Spark $full (scripts/sbt -Dspark.version=$minor assembly)"
  log="$(mktemp)"
  scripts/sbt -Dspark.version="$minor" assembly >"$log" 2>&1 || { cat "$log"; exit 1; }
  rm -f "$log"
  if [ "$minor" = "$default_minor" ]; then jar="target/scala-2.13/punctuated-assembly.jar"
  else jar="target/spark-$minor/scala-2.13/punctuated-assembly.jar"; fi
fi
built="$(unzip -p "$jar" punctuated/build.properties 2>/dev/null | sed -n 's/^spark.version=//p')"
if [ "$(echo "$built" | cut -d. -f1,2)" != "$minor" ]; then
  say "the jar $jar is built for Spark '${built:-unknown}', not $minor: rebuild it with scripts/sbt -Dspark.version=$minor assembly"
  exit 1
fi

# Stage the package with this minor's jar and metadata (the source tree stays as it is).
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp pyproject.toml README.md "$stage/"
mkdir -p "$stage/python"
tar -C python --exclude='__pycache__' --exclude='*.egg-info' --exclude='jars' -cf - . | tar -C "$stage/python" -xf -
mkdir -p "$stage/python/punctuated/jars"
cp "$jar" "$stage/python/punctuated/jars/punctuated-assembly.jar"
major="${minor%%.*}" minor_no="${minor#*.}"
next="$major.$((minor_no + 1))"
base="$(sed -n 's/^version = "\([^"]*\)"/\1/p' pyproject.toml | head -1)"
sed -i \
  -e "s/^version = \"$base\"/version = \"$base.$minor\"/" \
  -e "s/\"pyspark==$default_full\"/\"pyspark>=$full,<$next\"/" \
  -e "s/\"pyspark\[connect\]==$default_full\"/\"pyspark[connect]>=$full,<$next\"/" \
  "$stage/pyproject.toml"
grep -q "\"pyspark>=$full,<$next\"" "$stage/pyproject.toml" || { say "could not pin pyspark in the staged pyproject.toml"; exit 1; }

python="${PYTHON:-$root/.venv/bin/python}"
say "building punctuated $base.$minor (Spark $full) into $out"
"$python" -m pip wheel -q --no-deps --no-build-isolation -w "$out" "$stage" >&2
echo "$out/punctuated-$base.$minor-py3-none-any.whl"
