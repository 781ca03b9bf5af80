#!/usr/bin/env bash
# Runs every check: ruff, mypy, then the whole pytest suite (unit, integration, e2e). Extra args go to pytest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
py="$("$root/scripts/venv.sh")"
echo "== ruff"; "$py" -m ruff check .
echo "== mypy"; "$py" -m mypy
echo "== pytest"; "$py" -m pytest -q -rs "$@"
