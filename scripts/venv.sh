#!/usr/bin/env bash
# Creates (once) and refreshes the project's virtual environment in .venv; prints its python path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${PODSIZER_VENV:-$root/.venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" >&2
fi
stamp="$venv/.podsizer-installed"
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
  "$venv/bin/python" -m pip install -q --upgrade pip >&2
  "$venv/bin/python" -m pip install -q -e "$root[dev]" >&2
  touch "$stamp"
fi
echo "$venv/bin/python"
