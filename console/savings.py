"""The savings rule, in one place for the overview, its cards, the workload page and the GPU page: what
the pod plan frees per pod x the replicas counted, in resources and dollars per hour."""

from __future__ import annotations

from dataclasses import dataclass

from console.data import ContainerRow, WorkloadRow
from console.fmt import GIB
from podsizer.resources import GPU


def saved(c: ContainerRow, resource: str, replicas: float) -> float | None:
    """What the pod plan frees of a request over `replicas` pods (None: the request is unknown)."""
    current = c.current_requests.get(resource)
    planned = c.planned_requests.get(resource)
    if current is None or planned is None:
        return None
    return (current - planned) * replicas


def known_sum(values: list[float | None]) -> float | None:
    """The sum of the known values (None: none is known)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def replicas(row: WorkloadRow) -> int:
    """The workload's current replica count: its autoscaler's or the pods present, else every pod seen."""
    return row.replicas if row.replicas is not None else max(1, len(row.pods))


def counted(row: WorkloadRow) -> float:
    """What savings are multiplied by: a CronJob's or Job's mean pods running over the window (its pods
    come and go), else the current replicas."""
    return row.running_share if row.running_share is not None else float(replicas(row))


@dataclass(frozen=True)
class Figures:
    """A workload's savings in resources and dollars per hour (over its counted replicas); `gpu_opt_in`
    the GPU savings the GPU opt-in would add (the recommended counts written)."""

    cpu_saved: float | None
    memory_saved: float | None
    gpus_saved: float | None
    gpu_savings: float
    cpu_hourly: float
    memory_hourly: float
    gpu_opt_in: float = 0.0

    @property
    def hourly(self) -> float:
        return self.cpu_hourly + self.memory_hourly + self.gpu_savings


def _gpu_savings(row: WorkloadRow, gpus_freed: float | None) -> float:
    """GPU $/h saved: the idle waste, or the cost share of the GPUs freed, whichever is larger."""
    share = 0.0
    if row.gpu_allocated > 0 and gpus_freed is not None and gpus_freed > 0:
        share = row.gpu_hourly_cost * min(1.0, gpus_freed / row.gpu_allocated)
    return max(row.gpu_wasted_hourly_cost, share)


def _opted_in(c: ContainerRow, replicas: float) -> float | None:
    """GPUs a container frees over the replicas once the recommended count is written (the opt-in)."""
    current = c.current_requests.get(GPU)
    if c.gpu_needs_opt_in and current is not None and c.gpu_recommended is not None:
        return (current - c.gpu_recommended) * replicas
    return saved(c, GPU, replicas)


def figures(row: WorkloadRow) -> Figures:
    """CPU and memory at the workload's prices; GPU as idle waste or the cost share of GPUs freed."""
    n = counted(row)
    cpu = known_sum([saved(c, "cpu", n) for c in row.containers])
    mem = known_sum([saved(c, "memory", n) for c in row.containers])
    gpus = known_sum([saved(c, GPU, n) for c in row.containers])
    gpu_savings = _gpu_savings(row, gpus)
    with_opt_in = _gpu_savings(row, known_sum([_opted_in(c, n) for c in row.containers]))
    return Figures(
        cpu,
        mem,
        gpus,
        gpu_savings,
        (cpu or 0.0) * row.price.cpu_hourly,
        (mem or 0.0) / GIB * row.price.memory_gib_hourly,
        max(0.0, with_opt_in - gpu_savings),
    )


def has_savings(f: Figures) -> bool:
    """The plan frees some CPU, memory or GPU (the overview's has_savings filter)."""
    return any(v is not None and v > 1e-9 for v in (f.cpu_saved, f.memory_saved, f.gpus_saved, f.gpu_savings))
