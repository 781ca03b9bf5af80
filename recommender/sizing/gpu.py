"""GPU sizing: whole-GPU count from activity, and the smallest MIG slice a single-GPU pod would fit.

Inputs (GpuUsage): `activity` is the container's mean activity over its GPUs (0-1); a distribution
whose max exceeds 1 is read as already summed over GPUs. `fb_used_max_mib` / `fb_total_mib` cover all
of the container's GPUs together.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from podsizer.resources import GPU, mig_resource
from podsizer.sizing_policy import SizingPolicy
from recommender.model import GpuUsage


@dataclass(frozen=True)
class MigProfile:
    """One MIG GPU-instance profile: `<g>g.<mem>gb`, g compute slices of `slices`."""

    name: str
    compute: int
    memory_gb: float
    slices: int = 7
    usable_fraction: float = 0.95  # of the nominal size, as GiB, that the slice really exposes

    @property
    def fraction(self) -> float:
        return self.compute / self.slices

    @property
    def resource(self) -> str:
        return mig_resource(self.name)


def _profiles(*names: str, usable: float = 0.95) -> tuple[MigProfile, ...]:
    out = []
    for n in names:
        m = re.fullmatch(r"(\d+)g\.(\d+)gb", n)
        if m is None:  # pragma: no cover - table typo
            raise ValueError(n)
        out.append(MigProfile(n, int(m.group(1)), float(m.group(2)), usable_fraction=usable))
    # Smallest first: by memory, then compute (1g.20gb after 1g.10gb, before 2g.20gb).
    return tuple(sorted(out, key=lambda p: (p.memory_gb, p.compute)))


# MIG profiles per GPU family (NVIDIA MIG user guide; k8s-device-plugin mixed strategy names).
# usable: A100/H100 slices expose ~95 % of the nominal size in GiB (A100 80GB 1g.10gb: 9.5 GiB);
# an H200 1g.18gb exposes ~16 GiB (89 %), so the H200 and H100 NVL tables use a conservative 0.88.
MIG_PROFILES: Mapping[str, tuple[MigProfile, ...]] = MappingProxyType(
    {
        "A100-80GB": _profiles("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
        "A100-40GB": _profiles("1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
        "H100-80GB": _profiles("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
        "H100-NVL": _profiles("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb", usable=0.88),
        "H200": _profiles("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb", usable=0.88),
    }
)


def gpu_model(raw: str) -> str:
    """The one spelling of a GPU model, whoever names it: GPU feature discovery's node label
    (`nvidia.com/gpu.product`, "NVIDIA-H100-80GB-HBM3") and dcgm-exporter's `modelName` ("NVIDIA H100
    80GB HBM3", "NVIDIA A100-SXM4-40GB") both become words joined by single spaces ("NVIDIA H100 80GB
    HBM3", "NVIDIA A100 SXM4 40GB")."""
    return " ".join(w for w in re.split(r"[\s-]+", raw) if w)


def fb_peak(gpu: GpuUsage) -> str:
    """The framebuffer peak as reasons write it, saying when it is the sum over several GPUs."""
    peak = f"fb peak {gpu.fb_used_max_mib:.0f}MiB"
    return peak + (f" summed over {gpu.gpu_count} GPUs" if gpu.gpu_count > 1 else "")


def mig_family(model_name: str, fb_total_mib_per_gpu: float | None = None) -> str | None:
    """DCGM modelName -> MIG_PROFILES key; None for GPUs without MIG (L40S, L4, A10G, T4...).

    "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL",
    "NVIDIA H200". An A100 without a size in the name is told apart by its framebuffer.
    """
    name = model_name.upper()
    if "H200" in name:
        return "H200"
    if "H100" in name:
        return "H100-NVL" if "NVL" in name else "H100-80GB"
    if "A100" in name:
        if "80GB" in name or "80G" in name:
            return "A100-80GB"
        if "40GB" in name or "40G" in name:
            return "A100-40GB"
        if fb_total_mib_per_gpu is not None and fb_total_mib_per_gpu > 0:
            return "A100-80GB" if fb_total_mib_per_gpu > 50_000 else "A100-40GB"
    return None


def total_activity_p95(gpu: GpuUsage) -> float:
    """Activity p95 summed over the container's GPUs (in GPUs' worth of work)."""
    p95 = max(0.0, gpu.activity.p95)
    if gpu.activity.max > 1.0 + 1e-9:
        return p95
    return p95 * max(1, gpu.gpu_count)


def recommended_count(gpu: GpuUsage, policy: SizingPolicy) -> int:
    """ceil(sum of activity p95 / gpu_effective_use_threshold), at least what the framebuffer needs
    (fb peak x (1 + mig_memory_headroom) over per-GPU memory), at least 1, at most the allocation."""
    allocated = max(1, gpu.gpu_count)
    by_activity = math.ceil(round(total_activity_p95(gpu) / policy.gpu_effective_use_threshold, 9))
    per_gpu_fb = gpu.fb_total_mib / allocated if gpu.fb_total_mib > 0 else 0.0
    by_memory = (
        math.ceil(round(gpu.fb_used_max_mib * (1 + policy.mig_memory_headroom) / per_gpu_fb, 9))
        if per_gpu_fb > 0
        else allocated
    )
    return max(1, min(allocated, max(by_activity, by_memory)))


def suggest_mig(gpu: GpuUsage, policy: SizingPolicy) -> MigProfile | None:
    """Smallest MIG profile whose usable memory (nominal GiB x the family's usable fraction, capped by
    policy.mig_usable_memory_fraction) holds fb peak x (1 + headroom) and on which the activity p95,
    rescaled to the slice (p95 / fraction), stays <= mig_activity_ceiling. Single whole-GPU pods only;
    the full-GPU profile (7g) is never suggested, since it saves nothing."""
    if gpu.gpu_count != 1 or gpu.mig_profile:
        return None
    family = mig_family(gpu.model_name, gpu.fb_total_mib or None)
    if family is None:
        return None
    need_mib = gpu.fb_used_max_mib * (1 + policy.mig_memory_headroom)
    p95 = max(0.0, gpu.activity.p95)
    for profile in MIG_PROFILES[family]:
        if profile.compute >= profile.slices:
            continue
        usable = min(profile.usable_fraction, policy.mig_usable_memory_fraction)
        usable_mib = profile.memory_gb * 1024 * usable
        if need_mib <= usable_mib and p95 / profile.fraction <= policy.mig_activity_ceiling:
            return profile
    return None


def gpu_equivalents(gpu: GpuUsage) -> float:
    """Whole GPUs' worth the container holds: a MIG slice <g>g counts g/7 of a GPU. Several profiles
    ("1g.10gb+3g.40gb") are taken as the instances spread evenly over them."""
    if not gpu.mig_profile:
        return float(gpu.gpu_count)
    computes = [int(m.group(1)) for p in gpu.mig_profile.split("+") if (m := re.match(r"(\d+)g\.", p))]
    if not computes:
        return float(gpu.gpu_count)
    per_profile = max(1, gpu.gpu_count) / len(computes)
    return per_profile * sum(computes) / 7.0


@dataclass(frozen=True)
class GpuSizing:
    """What to request for one GPU container (`resource`: count, requests == limits), and why."""

    count: int
    mig: MigProfile | None
    reason: str
    resource: str | None = GPU  # None: leave the container's GPU requests as they are


def size_gpu(gpu: GpuUsage, policy: SizingPolicy, mig_strategy: str | None = None) -> GpuSizing:
    """Whole-GPU count (requests == limits) plus the MIG suggestion, with a readable reason.

    A container already on a MIG slice keeps its slice: `nvidia.com/mig-<profile>` with the mixed
    strategy (the default), `nvidia.com/gpu` when the node says nvidia.com/mig.strategy=single.
    """
    if gpu.mig_profile and "+" in gpu.mig_profile:
        reason = f"gpu: on several MIG profiles ({gpu.mig_profile}); GPU requests left unchanged"
        return GpuSizing(max(1, gpu.gpu_count), None, reason, None)
    if gpu.mig_profile:
        resource = GPU if mig_strategy == "single" else mig_resource(gpu.mig_profile)
        count = max(1, gpu.gpu_count)
        reason = (
            f"gpu: on MIG slice {gpu.mig_profile}, {gpu.activity_signal} p95 {gpu.activity.p95:.2f}"
            f" -> keeps {count} x {resource}"
        )
        return GpuSizing(count, None, reason, resource)
    count = recommended_count(gpu, policy)
    mig = suggest_mig(gpu, policy)
    signal = gpu.activity_signal
    parts = [
        f"gpu: {signal} p95 {gpu.activity.p95:.2f} over {gpu.gpu_count} GPU(s), {fb_peak(gpu)} -> {count}"
    ]
    if count < gpu.gpu_count:
        parts.append(
            f"fits {count} of {gpu.gpu_count} at {policy.gpu_effective_use_threshold:g} effective use"
        )
    if mig is not None:
        parts.append(f"fits MIG {mig.name} ({mig.resource})")
    return GpuSizing(count, mig, "; ".join(parts))
