#!/usr/bin/env bash
# Everything a fresh machine needs, from the registries it reaches (Debian packages,
# Maven Central, PyPI), then the extension jar built and installed inside the Python
# package. Idempotent: a second run only rebuilds what changed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
say() { echo "[punctuated setup] $*" >&2; }

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
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  "$python" -m venv .venv
fi
stamp=.venv/.punctuated-deps
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  say "installing Python dependencies"
  .venv/bin/python -m pip install -q --upgrade "pip>=24" "setuptools>=68" wheel
  .venv/bin/python - <<'PY' > .venv/requirements.txt
import tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(p["dependencies"] + [d for ds in p["optional-dependencies"].values() for d in ds]))
PY
  .venv/bin/python -m pip install -q -r .venv/requirements.txt
  touch "$stamp"
fi

# 3. The extension jar (sbt assembly), shipped inside the Python package.
say "building the extension jar (sbt assembly)"
scripts/sbt assembly >.venv/sbt-assembly.log 2>&1 || { cat .venv/sbt-assembly.log; exit 1; }
mkdir -p python/punctuated/jars
cp target/scala-2.13/punctuated-assembly.jar python/punctuated/jars/

# 4. Install the package itself (not editable: the installed copy holds the jar).
say "installing the punctuated package into .venv"
.venv/bin/python -m pip install -q --no-deps --no-build-isolation --force-reinstall . \
  >.venv/pip-install.log 2>&1 || { cat .venv/pip-install.log; exit 1; }
rm -rf build
say "ready"
