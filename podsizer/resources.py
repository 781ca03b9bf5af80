"""Resource names podsizer reads and writes, defined once: cpu, memory, nvidia.com/gpu, MIG slices."""

from __future__ import annotations

CPU = "cpu"
MEMORY = "memory"
CPU_MEMORY = (CPU, MEMORY)
GPU = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"


def is_mig(name: str) -> bool:
    """True for a MIG slice resource such as `nvidia.com/mig-1g.10gb`."""
    return name.startswith(MIG_PREFIX)


def mig_resource(profile: str) -> str:
    """The resource of a MIG profile: `1g.10gb` -> `nvidia.com/mig-1g.10gb`."""
    return MIG_PREFIX + profile


def mig_profile(name: str) -> str:
    """The profile of a MIG resource: `nvidia.com/mig-1g.10gb` -> `1g.10gb`."""
    return name.removeprefix(MIG_PREFIX)
