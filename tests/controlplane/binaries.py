"""Where scripts/build-controlplane.sh put the test cluster's executables (Kubernetes, etcd, kwok)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULE_DIR = Path(__file__).resolve().parent
GO_MOD = MODULE_DIR / "go.mod"
ETCD_GO_MOD = MODULE_DIR / "etcd" / "go.mod"
KWOK_GO_MOD = MODULE_DIR / "kwok" / "go.mod"
BUILD_SCRIPT = ROOT / "scripts" / "build-controlplane.sh"


@dataclass(frozen=True)
class Binaries:
    """Paths of the test cluster's executables and the Kubernetes version they were built from."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kwok: Path
    version: str


def pinned_version(go_mod: Path = GO_MOD, module: str = "k8s.io/kubernetes") -> str:
    """The version of `module` a wrapper module requires, e.g. v1.35.4 for k8s.io/kubernetes."""
    pattern = rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)"
    match = re.search(pattern, go_mod.read_text(), re.MULTILINE)
    if match is None:
        raise ValueError(f"{go_mod}: no 'require {module} vX.Y.Z' line")
    return match.group(1)


def _cache_base(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("PODSIZER_CACHE") or Path.home() / ".cache" / "podsizer") / "controlplane"


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The Kubernetes binaries' directory: ${PODSIZER_CACHE:-~/.cache/podsizer}/controlplane/<version>."""
    environ: Mapping[str, str] = os.environ if env is None else env
    return _cache_base(environ) / pinned_version()


def find_binaries(env: Mapping[str, str] | None = None) -> tuple[Binaries | None, str]:
    """The binaries, or None and a sentence saying what is missing and how to build it.

    PODSIZER_ETCD overrides the etcd built from tests/controlplane/etcd (it must be one Kubernetes supports).
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    base = _cache_base(environ)
    k8s = cache_dir(environ)
    etcd_built = base / f"etcd-{pinned_version(ETCD_GO_MOD, 'go.etcd.io/etcd/server/v3')}" / "etcd"
    binaries = Binaries(
        etcd=Path(environ.get("PODSIZER_ETCD") or etcd_built),
        kube_apiserver=k8s / "kube-apiserver",
        kube_controller_manager=k8s / "kube-controller-manager",
        kube_scheduler=k8s / "kube-scheduler",
        kwok=base / f"kwok-{pinned_version(KWOK_GO_MOD, 'sigs.k8s.io/kwok')}" / "kwok",
        version=pinned_version(),
    )
    paths = [binaries.etcd, binaries.kube_apiserver, binaries.kube_controller_manager]
    paths += [binaries.kube_scheduler, binaries.kwok]
    missing = [str(p) for p in paths if not os.access(p, os.X_OK)]
    if missing:
        return None, (
            f"control-plane binaries missing: {', '.join(missing)} "
            f"(build them with {BUILD_SCRIPT.relative_to(ROOT)})"
        )
    return binaries, ""
