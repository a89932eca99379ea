#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the main job: the auction demo on local Spark.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/setup.sh
exec .venv/bin/punctuated demo "$@"
