#!/usr/bin/env bash
# Regenerates manifests/install, manifests/olm and manifests/catalog from charts/podsizer (--check: only report
# drift; --registry, --set and --out: the same files for your registry and values, see docs/install.md).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
helm="${PODSIZER_CACHE:-$HOME/.cache/podsizer}/bin/helm"
[ -x "$helm" ] || python3 scripts/build_tools.py tools
py="${PODSIZER_PYTHON:-$root/.venv/bin/python}"
exec "$py" scripts/render_manifests.py --helm "$helm" "$@"
