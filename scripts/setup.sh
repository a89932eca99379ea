#!/usr/bin/env bash
# Everything a fresh machine needs, from the registries it reaches (Debian packages,
# Maven Central, PyPI), then the extension jar built and installed inside the Python
# package. Idempotent: a second run only rebuilds what changed.
#
# Usage: scripts/setup.sh [--spark MINOR]   (or PUNCTUATED_SPARK_VERSION=MINOR scripts/setup.sh)
# MINOR is a Spark minor listed in project/spark-versions; the default is the pyspark pinned in
# pyproject.toml (the newest). Another minor gets its own environment, .venv-spark-MINOR
# (PUNCTUATED_VENV overrides), and its jar builds into target/spark-MINOR/: the default .venv
# and target/ stay as they are (docs/spark-versions.md).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
say() { echo "[punctuated setup] $*" >&2; }

default_full="$(sed -n 's/.*"pyspark==\([0-9][0-9.]*\)".*/\1/p' pyproject.toml | head -1)"
spark="${PUNCTUATED_SPARK_VERSION:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --spark) spark="$2"; shift 2 ;;
    *) say "unknown option $1 (usage: scripts/setup.sh [--spark MINOR])"; exit 2 ;;
  esac
done
spark="$(echo "${spark:-${default_full%.*}}" | cut -d. -f1,2)"
spark_full="$(awk -v m="$spark" '$1 == m { print $2 }' project/spark-versions)"
[ -n "$spark_full" ] || { say "Spark $spark is not listed in project/spark-versions"; exit 2; }
if [ "$spark" = "${default_full%.*}" ]; then venv="${PUNCTUATED_VENV:-.venv}"; target=target
else venv="${PUNCTUATED_VENV:-.venv-spark-$spark}"; target="target/spark-$spark"; fi

apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing $* with apt-get"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    say "please install: $*"; exit 1
  fi
}

# 1. JDK 17 and the Maven client (used to fetch the sbt launcher from Maven Central).
if ! command -v java >/dev/null || ! java -version 2>&1 | grep -q 'version "17'; then
  apt_install openjdk-17-jdk-headless
fi
command -v mvn >/dev/null || apt_install maven

# 2. Python environment in .venv with the package's dependencies.
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv"
  "$python" -m venv "$venv"
fi
stamp="$venv/.punctuated-deps"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  say "installing Python dependencies"
  "$venv/bin/python" -m pip install -q --upgrade "pip>=24" "setuptools>=77" wheel
  "$venv/bin/python" - "$default_full" "$spark_full" <<'PY' > "$venv/requirements.txt"
import sys, tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
reqs = p["dependencies"] + [d for ds in p["optional-dependencies"].values() for d in ds]
print("\n".join(r.replace(f"=={sys.argv[1]}", f"=={sys.argv[2]}") for r in reqs))
PY
  # Every dependency as a wheel in $venv/wheelhouse, installed from there: the same wheels
  # install offline into a fresh environment (tests/test_packaging.py, scripts/cross-build.sh).
  "$venv/bin/python" -m pip wheel -q -w "$venv/wheelhouse" -r "$venv/requirements.txt" pip setuptools wheel
  "$venv/bin/python" -m pip install -q --no-index --find-links "$venv/wheelhouse" -r "$venv/requirements.txt"
  touch "$stamp"
fi

# 3. The extension jar (sbt assembly), shipped inside the Python package.
say "building the extension jar for Spark $spark_full (sbt assembly)"
scripts/sbt -Dspark.version="$spark" assembly >"$venv/sbt-assembly.log" 2>&1 || { cat "$venv/sbt-assembly.log"; exit 1; }

# 4. Install the package itself (not editable: the installed copy holds the jar).
say "installing the punctuated package into $venv"
if [ "$target" = target ]; then
  mkdir -p python/punctuated/jars
  cp target/scala-2.13/punctuated-assembly.jar python/punctuated/jars/
  "$venv/bin/python" -m pip install -q --no-deps --no-build-isolation --force-reinstall . \
    >"$venv/pip-install.log" 2>&1 || { cat "$venv/pip-install.log"; exit 1; }
  rm -rf build
else
  # another minor: its wheel (the source tree's python/punctuated/jars keeps the default jar)
  wheel="$(PYTHON="$venv/bin/python" scripts/build-wheel.sh --spark "$spark" \
    --jar "$target/scala-2.13/punctuated-assembly.jar" --out "$venv/dist" | tail -1)"
  "$venv/bin/python" -m pip install -q --no-deps --force-reinstall "$wheel" \
    >"$venv/pip-install.log" 2>&1 || { cat "$venv/pip-install.log"; exit 1; }
fi
say "ready (Spark $spark_full, $venv)"
