#!/usr/bin/env bash
# Regenerates manifests/install and manifests/olm from charts/podsizer (--check: only report drift).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
helm="${PODSIZER_CACHE:-$HOME/.cache/podsizer}/bin/helm"
[ -x "$helm" ] || python3 scripts/build_tools.py tools
py="${PODSIZER_PYTHON:-$root/.venv/bin/python}"
exec "$py" scripts/render_manifests.py --helm "$helm" "$@"
