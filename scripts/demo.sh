#!/usr/bin/env bash
# The demo: recommendations from the built-in data set, a pod mutated in auto mode, a dry-run annotation.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
py="$("$root/scripts/venv.sh" --runtime)"  # the project alone: the demo needs no test tools
exec "$(dirname "$py")/podsizer" demo "$@"
