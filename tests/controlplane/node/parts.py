"""What the real node runs (programs, image archives) and whether it is all there: the build scripts' rule."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from tests.controlplane.binaries import ROOT, build_tools, load_script

IMAGES_SCRIPT = ROOT / "scripts" / "build_images.py"
CNI_DIR = Path("/usr/lib/cni")  # Debian's containernetworking-plugins
CNI_PLUGINS = ("bridge", "host-local", "loopback")
HOST_COMMANDS = ("runc", "unshare", "nsenter", "ip", "iptables", "mount", "umount")
IMAGE_PARTS = ("pause", "node-images", "base-image", "podsizer-image")


def build_images() -> ModuleType:
    """scripts/build_images.py as a module (it imports build_tools, loaded first under its own name)."""
    build_tools()
    return load_script("build_images", IMAGES_SCRIPT)


@dataclass(frozen=True)
class NodeParts:
    """The node's programs (containerd, its runc shim, ctr, the kubelet and Prometheus from the tools module;
    Debian's runc and CNI plugins) and the image archives containerd imports, with their references."""

    containerd: Path
    shim: Path
    ctr: Path
    kubelet: Path
    prometheus: Path
    runc: Path
    cni_dir: Path
    archives: Mapping[str, Path]  # image -> docker archive (pause, load, podsizer)
    refs: Mapping[str, str]  # image -> reference the pods use


def find_node_parts(env: Mapping[str, str] | None = None) -> tuple[NodeParts | None, str]:
    """The parts, or None and a sentence naming what is missing and how to get it."""
    environ: Mapping[str, str] = os.environ if env is None else env
    if os.geteuid() != 0:
        return None, "the real node needs root (mounts, cgroups, a bridge)"
    tools = build_tools()
    cache = tools.cache_dir(environ)
    reasons = [why for part in ("tools", "load") if (why := tools.unbuilt(part, cache))]
    missing = [c for c in HOST_COMMANDS if shutil.which(c) is None]
    missing += [str(CNI_DIR / p) for p in CNI_PLUGINS if not (CNI_DIR / p).is_file()]
    if missing:
        reasons.append(f"missing {', '.join(missing)} (run scripts/system-deps.sh)")
    if not reasons:
        images = build_images()
        parts = images.parts()
        reasons += [why for name in IMAGE_PARTS if (why := tools.unbuilt(name, cache, parts, "build_images"))]
    if reasons:
        return None, "real node: " + "; ".join(reasons)
    runc = shutil.which("runc")
    assert runc is not None
    return NodeParts(
        containerd=tools.binary("containerd", cache),
        shim=tools.binary("containerd-shim-runc-v2", cache),
        ctr=tools.binary("ctr", cache),
        kubelet=tools.binary("kubelet", cache),
        prometheus=tools.binary("prometheus", cache),
        runc=Path(runc),
        cni_dir=CNI_DIR,
        archives={image: images.archive(cache, image) for image in ("pause", "load", "podsizer")},
        refs=images.refs(),
    ), ""
