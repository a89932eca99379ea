#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the main job: the auction demo on local Spark -- our
# plan against Spark's own for the same query, state per step in demo-output/state.{png,md,csv}.
# Options go to `punctuated demo` (--auctions N --steps N --seed N --max-bids N --out DIR).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/setup.sh
exec .venv/bin/punctuated demo "$@"
