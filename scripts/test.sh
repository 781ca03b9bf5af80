#!/usr/bin/env bash
# Runs every check: ruff, mypy, then the whole pytest suite (unit, integration, e2e, browser).
# Builds what the tests need first, each step skipped when already done: the venv, Debian packages
# (as root), helm/kubeconform/operator-sdk, the Argo Rollouts controller and the e2e cluster (kube-apiserver,
# kube-controller-manager, kube-scheduler, etcd, kwok) from Go modules (cached in $PODSIZER_CACHE, default ~/.cache/podsizer). Extra arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export PODSIZER_CACHE="${PODSIZER_CACHE:-$HOME/.cache/podsizer}"
py="$("$root/scripts/venv.sh")"
"$root/scripts/system-deps.sh" || echo "warning: some system packages are missing; their tests will skip" >&2
"$root/scripts/tools.sh"
"$root/scripts/build-controlplane.sh" >/dev/null
echo "== ruff"; "$py" -m ruff check .
echo "== mypy"; "$py" -m mypy
echo "== pytest"; "$py" -m pytest -q -rs "$@"
