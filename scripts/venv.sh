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
  # The aws extra (botocore, for the SigV4 tests) pins python-dateutil<3 while kubernetes wants >=3;
  # botocore works with both, so it goes in without its pins.
  "$venv/bin/python" -m pip install -q --no-deps "botocore>=1.31" "jmespath>=0.7.1" >&2
  touch "$stamp"
fi
echo "$venv/bin/python"
