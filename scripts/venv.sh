#!/usr/bin/env bash
# Creates (once) and refreshes the project's virtual environment in .venv; prints its python path.
# The venv counts as installed only when its stamp is newer than pyproject.toml and it imports the project and
# its test tools; otherwise it is installed again.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${PODSIZER_VENV:-$root/.venv}"
stamp="$venv/.podsizer-installed"
# What an installed venv must answer: the project's packages and the tools test.sh calls.
proof='import podsizer, recommender, webhook, updater, console, certs, pytest, mypy, ruff, hypothesis, botocore'

usable() {
  [ -x "$venv/bin/python" ] || return 1
  [ -f "$stamp" ] || return 1
  [ "$root/pyproject.toml" -nt "$stamp" ] && return 1
  "$venv/bin/python" -c "$proof" 2>/dev/null || return 1
}

if ! usable; then
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
  fi
  rm -f "$stamp"
  "$venv/bin/python" -m pip install -q --upgrade pip >&2
  "$venv/bin/python" -m pip install -q -e "$root[dev]" >&2
  # The aws extra (botocore, for the SigV4 tests) pins python-dateutil<3 while kubernetes wants >=3;
  # botocore works with both, so it goes in without its pins.
  "$venv/bin/python" -m pip install -q --no-deps "botocore>=1.31" "jmespath>=0.7.1" >&2
  if ! "$venv/bin/python" -c "$proof" >&2; then
    echo "venv: $venv was installed but does not import what the tests need (above)" >&2
    exit 1
  fi
  touch "$stamp"
fi
echo "$venv/bin/python"
