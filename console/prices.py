"""CPU and memory prices per instance type ($ per core-hour, $ per GiB-hour), with the basis named."""

from __future__ import annotations

from dataclasses import dataclass

HOURS_PER_MONTH = 730.0
# AWS Fargate list price, us-east-1, Linux/x86 (aws.amazon.com/fargate/pricing): the default rate and the
# CPU:memory ratio an instance's price is split by.
FARGATE_CPU_HOURLY = 0.04048
FARGATE_GIB_HOURLY = 0.004445
FARGATE_BASIS = "AWS Fargate us-east-1 list price ($0.04048/vCPU-h, $0.004445/GB-h)"

# instance type -> (vCPUs, memory GiB, on-demand $/h, us-east-1 Linux list price)
_INSTANCES: dict[str, tuple[float, float, float]] = {
    "m5.large": (2, 8, 0.096),
    "m5.xlarge": (4, 16, 0.192),
    "m5.2xlarge": (8, 32, 0.384),
    "m6i.large": (2, 8, 0.096),
    "m6i.xlarge": (4, 16, 0.192),
    "m6i.2xlarge": (8, 32, 0.384),
    "m7i.xlarge": (4, 16, 0.2016),
    "c5.xlarge": (4, 8, 0.17),
    "c6i.xlarge": (4, 8, 0.17),
    "r5.xlarge": (4, 32, 0.252),
    "r6i.xlarge": (4, 32, 0.252),
}


@dataclass(frozen=True)
class ResourcePrice:
    """What a core and a GiB of requests cost per hour on one instance type, and where that comes from."""

    cpu_hourly: float
    memory_gib_hourly: float
    basis: str

    def hourly(self, cores: float, gib: float) -> float:
        return cores * self.cpu_hourly + gib * self.memory_gib_hourly


DEFAULT_PRICE = ResourcePrice(FARGATE_CPU_HOURLY, FARGATE_GIB_HOURLY, FARGATE_BASIS)


def resource_price(instance_type: str | None) -> ResourcePrice:
    """The instance's on-demand price split in Fargate's CPU:memory ratio; the Fargate rate when the type
    is unknown (GPU instances too: their price is the GPU's, costed on the GPU page)."""
    known = _INSTANCES.get(instance_type or "")
    if known is None:
        where = f"{instance_type} not in the CPU/memory table" if instance_type else "instance type unknown"
        return ResourcePrice(FARGATE_CPU_HOURLY, FARGATE_GIB_HOURLY, f"{FARGATE_BASIS}; {where}")
    vcpus, gib, hourly = known
    scale = hourly / (vcpus * FARGATE_CPU_HOURLY + gib * FARGATE_GIB_HOURLY)
    return ResourcePrice(
        FARGATE_CPU_HOURLY * scale,
        FARGATE_GIB_HOURLY * scale,
        f"{instance_type} on-demand ${hourly}/h (us-east-1 list price) split in Fargate's CPU:memory ratio",
    )
