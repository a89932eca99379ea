#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run every test: scalatest (sbt test) and pytest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/setup.sh
echo "== scalatest =="
scripts/sbt test
echo "== pytest =="
# pytest exits 5 when it collects no test: that is a failure here too.
.venv/bin/python -m pytest -q "$@"
