#!/usr/bin/env bash
# Creates (once) and refreshes the project's virtual environment in .venv; prints its python path.
#
#   scripts/venv.sh              # the project with its test tools (what test.sh needs)
#   scripts/venv.sh --runtime    # the project alone (what the demo needs: a fraction of the install)
#
# The venv counts as installed only when a stamp of what was asked (or of more: the full install serves the
# runtime too) is newer than pyproject.toml and it imports what that needs; otherwise it is installed again.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${PODSIZER_VENV:-$root/.venv}"
full_stamp="$venv/.podsizer-installed"
runtime_stamp="$venv/.podsizer-installed-runtime"
runtime_proof='import podsizer, recommender, webhook, updater, console, certs'
# What a full venv must answer: the project's packages and the tools test.sh calls.
proof="$runtime_proof, pytest, mypy, ruff, hypothesis, botocore"
stamps=("$full_stamp")
stamp="$full_stamp"
if [ "${1:-}" = "--runtime" ]; then
  proof="$runtime_proof"
  stamps=("$full_stamp" "$runtime_stamp")
  stamp="$runtime_stamp"
elif [ -n "${1:-}" ]; then
  echo "venv: unknown argument '$1' (expected nothing or --runtime)" >&2
  exit 2
fi

fresh_stamp() {
  local s
  for s in "${stamps[@]}"; do
    if [ -f "$s" ] && [ ! "$root/pyproject.toml" -nt "$s" ]; then
      return 0
    fi
  done
  return 1
}

usable() {
  [ -x "$venv/bin/python" ] || return 1
  fresh_stamp || return 1
  "$venv/bin/python" -c "$proof" 2>/dev/null || return 1
}

if ! usable; then
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
  fi
  rm -f "$stamp"
  "$venv/bin/python" -m pip install -q --upgrade pip >&2
  if [ "$stamp" = "$runtime_stamp" ]; then
    "$venv/bin/python" -m pip install -q -e "$root" >&2
    if ! "$venv/bin/python" -c "$proof" >&2; then
      echo "venv: $venv was installed but does not import the project (above)" >&2
      exit 1
    fi
    touch "$stamp"
    echo "$venv/bin/python"
    exit 0
  fi
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
