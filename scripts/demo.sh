#!/usr/bin/env bash
# The demo: recommendations from the built-in data set, a pod mutated in auto mode, a dry-run annotation.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
py="$("$root/scripts/venv.sh")"
exec "$(dirname "$py")/podsizer" demo "$@"
