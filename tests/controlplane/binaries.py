"""Where scripts/build-controlplane.sh put kube-apiserver and kube-controller-manager, and the etcd to use."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GO_MOD = Path(__file__).resolve().parent / "go.mod"
BUILD_SCRIPT = ROOT / "scripts" / "build-controlplane.sh"


@dataclass(frozen=True)
class Binaries:
    """Paths of the three control-plane executables."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    version: str


def pinned_version(go_mod: Path = GO_MOD) -> str:
    """The k8s.io/kubernetes version the wrapper module requires, e.g. v1.32.13."""
    match = re.search(r"^\s*(?:require\s+)?k8s\.io/kubernetes\s+(v\S+)", go_mod.read_text(), re.MULTILINE)
    if match is None:
        raise ValueError(f"{go_mod}: no 'require k8s.io/kubernetes vX.Y.Z' line")
    return match.group(1)


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where the build script writes: ${PODSIZER_CACHE:-~/.cache/podsizer}/controlplane/<version>."""
    environ: Mapping[str, str] = os.environ if env is None else env
    base = Path(environ.get("PODSIZER_CACHE") or Path.home() / ".cache" / "podsizer")
    return base / "controlplane" / pinned_version()


def find_binaries(env: Mapping[str, str] | None = None) -> tuple[Binaries | None, str]:
    """The binaries, or None and a sentence saying what is missing and how to build it."""
    environ: Mapping[str, str] = os.environ if env is None else env
    directory = cache_dir(environ)
    etcd_path = environ.get("PODSIZER_ETCD") or shutil.which("etcd") or "/usr/bin/etcd"
    etcd = Path(etcd_path)
    apiserver = directory / "kube-apiserver"
    kcm = directory / "kube-controller-manager"
    missing = [str(p) for p in (etcd, apiserver, kcm) if not os.access(p, os.X_OK)]
    if missing:
        return None, (
            f"control-plane binaries missing: {', '.join(missing)} "
            f"(build them with {BUILD_SCRIPT.relative_to(ROOT)}; etcd comes from Debian's etcd-server)"
        )
    return Binaries(etcd, apiserver, kcm, pinned_version()), ""
