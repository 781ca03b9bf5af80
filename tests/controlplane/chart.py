"""The chart's RBAC for e2e tests: `helm template --show-only` of charts/podsizer, for the test apiserver."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.controlplane.binaries import ROOT

CHART = ROOT / "charts" / "podsizer"
RBAC_TEMPLATES = (
    "templates/serviceaccounts.yaml",
    "templates/rbac-webhook.yaml",
    "templates/rbac-recommender.yaml",
    "templates/rbac-updater.yaml",
)
# The updater is off in the chart by default; the e2e cluster gets its ServiceAccount and roles too.
RBAC_VALUES = ("updater.enabled=true",)
RELEASE = "podsizer"
RELEASE_NAMESPACE = "podsizer"


def find_helm(env: Mapping[str, str] | None = None) -> Path | None:
    """helm from PODSIZER_HELM, scripts/build_tools.py's ($PODSIZER_CACHE/bin), or PATH; None if absent."""
    environ: Mapping[str, str] = os.environ if env is None else env
    for candidate in (
        environ.get("PODSIZER_HELM"),
        str(Path(environ.get("PODSIZER_CACHE") or Path.home() / ".cache" / "podsizer") / "bin" / "helm"),
        shutil.which("helm"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def render(
    helm: Path,
    templates: Sequence[str],
    kube_version: str,
    namespace: str = RELEASE_NAMESPACE,
    release: str = RELEASE,
    values: Sequence[str] = RBAC_VALUES,
) -> str:
    """`helm template` of the given chart templates for `release` in `namespace` with `--set` values;
    raises on failure."""
    argv = [
        str(helm),
        "template",
        release,
        str(CHART),
        "--namespace",
        namespace,
        "--kube-version",
        kube_version,
    ]
    for t in templates:
        argv += ["--show-only", t]
    for v in values:
        argv += ["--set", v]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout
