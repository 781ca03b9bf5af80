#!/usr/bin/env bash
# Runs every check: ruff, mypy, then the whole pytest suite (unit, integration, e2e, browser).
# Builds what the tests need first, each step skipped when its proven output is already there: the venv
# (scripts/venv.sh), Debian packages (scripts/system-deps.sh, as root) and the Go programs
# (scripts/build_tools.py: the control plane, kubelet, containerd, Prometheus, etcd, kwok, helm, kubeconform,
# olm-validate, the Argo Rollouts controller and its CRDs, VPA's estimator, the load program; cached in
# $PODSIZER_CACHE, default ~/.cache/podsizer), then the real node's images (scripts/build_images.py, which
# needs the Debian packages).
# The venv, the Debian packages and the images that need no Go program are made in the background while Go
# compiles. A failing step stops the run
# naming its log; at the end a table gives each step's wall time. Extra arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export PODSIZER_CACHE="${PODSIZER_CACHE:-$HOME/.cache/podsizer}"
logs="$PODSIZER_CACHE/logs"
mkdir -p "$logs"
# Not a PODSIZER_* name: every podsizer process refuses unknown PODSIZER_* variables, and the tests run some.
times="$(mktemp)"
run_start=$SECONDS

print_times() {
  echo "== step times (wall seconds)"
  awk -F'\t' '{ printf "  %-22s %-8s %6d\n", $1, $2, $3 }' "$times"
  printf "  %-22s %-8s %6d\n" "whole run" "" "$((SECONDS - run_start))"
  rm -f "$times"
}
trap print_times EXIT

# step NAME COMMAND...: runs one external command (a script or program, never a shell function: errexit
# does not reach into a function run as a condition), records its time and status, stops the run on failure.
step() {
  local name="$1" start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  printf '%s\t%s\t%d\n' "$name" "$([ "$rc" = 0 ] && echo ok || echo "FAILED")" "$((SECONDS - start))" \
    >>"$times"
  if [ "$rc" != 0 ]; then
    echo "test.sh: step '$name' failed (exit $rc)" >&2
  fi
  return "$rc"
}

# The venv and the Debian packages are network and disk work: they run while Go compiles, and so do the two
# images that need no Go program (debootstrap's base and the podsizer image: downloads and unpacking). A
# failure there is not final: the images step below builds what is missing again and stops on its failure.
scripts/venv.sh >"$logs/venv.log" 2>&1 &
venv_pid=$!
BUILD_STEP_TIMES="$times" bash -c 'scripts/system-deps.sh || exit
  python3 scripts/build_images.py base-image podsizer-image || echo "test.sh: early images failed" >&2' \
  >"$logs/system-deps.log" 2>&1 &
deps_pid=$!

step "go programs" env BUILD_STEP_TIMES="$times" python3 scripts/build_tools.py

# await NAME PID LOG: the background step's status; its log is printed when it failed.
await() {
  local name="$1" pid="$2" log="$3" start=$SECONDS rc=0
  wait "$pid" || rc=$?
  printf '%s\t%s\t%d\n' "$name (bg)" "$([ "$rc" = 0 ] && echo ok || echo "FAILED")" "$((SECONDS - start))" \
    >>"$times"
  if [ "$rc" != 0 ]; then
    echo "test.sh: $name failed (exit $rc); its log, $log:" >&2
    tail -n 30 "$log" >&2
  fi
  return "$rc"
}
await venv "$venv_pid" "$logs/venv.log"
if ! await "packages, images" "$deps_pid" "$logs/system-deps.log"; then
  # Outside CI a developer without root may go on: the tests that need a missing package skip and say so.
  [ -z "${CI:-}" ] || exit 1
  echo "warning: some system packages are missing; their tests will skip" >&2
fi
# The real node's images: buildah and debootstrap come from the system packages, the load program from the
# Go step. As for the packages, a developer without root may go on (the realnode tests skip and say why).
if ! step images env BUILD_STEP_TIMES="$times" python3 scripts/build_images.py; then
  [ -z "${CI:-}" ] || exit 1
  echo "warning: the real node's images are not built; the realnode tests will skip" >&2
fi

py="${PODSIZER_VENV:-$root/.venv}/bin/python"
echo "== ruff"
step ruff "$py" -m ruff check .
echo "== mypy"
step mypy "$py" -m mypy
echo "== pytest"
step pytest "$py" -m pytest -q -rs "$@"
