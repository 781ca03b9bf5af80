"""Where scripts/build_tools.py put the test cluster's executables, and whether they are built (its rule)."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "scripts" / "build_tools.py"


def load_script(name: str, path: Path) -> ModuleType:
    """A script of scripts/ as module `name`, loaded once (registered: its dataclasses look their module up
    while the file runs)."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def build_tools() -> ModuleType:
    """scripts/build_tools.py as a module: the one place that says where a part's outputs are and when a
    part counts as built."""
    return load_script("build_tools", BUILD_SCRIPT)


@dataclass(frozen=True)
class Binaries:
    """Paths of the test cluster's executables and the Kubernetes version they were built from."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubelet: Path
    kwok: Path
    version: str


def pinned_version() -> str:
    """The k8s.io/kubernetes version the tools module requires, e.g. v1.35.4."""
    version: str = build_tools().pinned(ROOT / "tools" / "go.mod", "k8s.io/kubernetes")
    return version


def find_binaries(env: Mapping[str, str] | None = None) -> tuple[Binaries | None, str]:
    """The binaries, or None and a sentence saying what is missing and how to build it.

    PODSIZER_ETCD overrides the etcd of the tools module (it must be one Kubernetes supports).
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    tools = build_tools()
    cache = tools.cache_dir(environ)
    reasons = [why for part in ("tools", "kwok") if (why := tools.unbuilt(part, cache))]
    if reasons:
        return None, "control-plane binaries: " + "; ".join(reasons)
    binaries = Binaries(
        etcd=Path(environ.get("PODSIZER_ETCD") or tools.binary("etcd", cache)),
        kube_apiserver=tools.binary("kube-apiserver", cache),
        kube_controller_manager=tools.binary("kube-controller-manager", cache),
        kube_scheduler=tools.binary("kube-scheduler", cache),
        kubelet=tools.binary("kubelet", cache),
        kwok=tools.binary("kwok", cache),
        version=pinned_version(),
    )
    return binaries, ""
