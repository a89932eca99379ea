#!/usr/bin/env bash
# Run the Python tests against another pyspark release of a supported minor: the one a user
# gets from `pip install` of the minor's wheel, whose pyspark range (`>=4.2.0,<4.3`) admits
# every later patch release, while the jar is built against the release in project/spark-versions
# (Maven Central may not have the newer one: docs/spark-versions.md).
#
# Usage: scripts/check-pyspark.sh PYSPARK_VERSION [pytest arguments...]   e.g. scripts/check-pyspark.sh 4.2.1
#   The minor's jar must be built first (scripts/setup.sh, or scripts/setup.sh --spark MINOR).
#   Makes .venv-pyspark-PYSPARK_VERSION (from PyPI: that pyspark, its Connect extras, the
#   minor's wheel and the test dependencies), then runs pytest there (default: every test).
# Recorded runs are kept in docs/spark-versions/spark-MINOR.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
say() { echo "[punctuated check-pyspark] $*" >&2; }

version="${1:?usage: scripts/check-pyspark.sh PYSPARK_VERSION [pytest arguments...]}"
shift
minor="$(echo "$version" | cut -d. -f1,2)"
full="$(awk -v m="$minor" '$1 == m { print $2 }' project/spark-versions)"
[ -n "$full" ] || { say "Spark $minor is not listed in project/spark-versions"; exit 2; }
default_full="$(sed -n 's/.*"pyspark==\([0-9][0-9.]*\)".*/\1/p' pyproject.toml | head -1)"
jar="target/spark-$minor/scala-2.13/punctuated-assembly.jar"
[ "$minor" = "${default_full%.*}" ] && jar="target/scala-2.13/punctuated-assembly.jar"
[ -f "$jar" ] || { say "no jar for Spark $minor at $jar: run scripts/setup.sh --spark $minor first"; exit 2; }

venv=".venv-pyspark-$version"
python="${PYTHON:-python3}"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade "pip>=24" "setuptools>=77" wheel
wheel="$(PYTHON="$venv/bin/python" bash scripts/build-wheel.sh --spark "$minor" --jar "$jar" --out "$venv/dist" | tail -1)"
say "installing pyspark $version and $(basename "$wheel") (jar built against Spark $full) into $venv"
"$venv/bin/python" - "$version" "$wheel" <<'PY' > "$venv/requirements.txt"
import sys, tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
version, wheel = sys.argv[1], sys.argv[2]
extras = [d for ds in p["optional-dependencies"].values() for d in ds]
# pyspark (and its Connect extras) at the asked release; everything else as pyproject.toml says
pins = [d for d in p["dependencies"] + extras if not d.startswith("pyspark")]
print("\n".join([f"pyspark=={version}", f"pyspark[connect]=={version}", *pins, wheel]))
PY
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel"
"$venv/bin/python" -m pip install -q -r "$venv/requirements.txt"
got="$("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')"
[ "$got" = "$version" ] || { say "pip installed pyspark $got, not $version"; exit 1; }
say "pytest with pyspark $got and the jar built against Spark $full"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
