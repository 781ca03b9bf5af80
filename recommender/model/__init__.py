"""The usage model: what every metrics source produces and every sizing policy consumes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from podsizer.api.identity import WorkloadRef
from podsizer.modes import Meta
from podsizer.owners import Skipped
from recommender.model.request_mix import RequestSet

FloatArray = npt.NDArray[np.float64]

ActivitySignal = Literal["SM_ACTIVE", "GR_ENGINE_ACTIVE", "GPU_UTIL"]


# Why a namespace the source found is skipped when nothing in it has usage series (not an error).
NO_SERIES = "no container CPU or memory series in the window"


@dataclass(frozen=True)
class Quantiles:
    """Summary of a sample distribution (same unit as the samples).

    second_max, third_max and min are optional (None: not computed or too few samples): the next-highest
    samples (at distinct times, where the source tells them apart) and the lowest one, which let sizing
    tell a peak few scrapes support (recommender.sizing.robust) or negative samples from real usage.
    """

    p50: float
    p90: float
    p95: float
    p99: float
    max: float
    mean: float
    second_max: float | None = None
    min: float | None = None
    third_max: float | None = None

    @staticmethod
    def of(values: FloatArray) -> Quantiles:
        """Quantiles of the finite values (second_max and min too); raises ValueError when there are none."""
        finite = values[np.isfinite(values)]
        if finite.size == 0:
            raise ValueError("no finite samples")
        p50, p90, p95, p99 = np.quantile(finite, [0.5, 0.9, 0.95, 0.99])
        top = np.sort(np.partition(finite, -3)[-3:] if finite.size > 3 else finite)[::-1]
        return Quantiles(
            float(p50),
            float(p90),
            float(p95),
            float(p99),
            float(finite.max()),
            float(finite.mean()),
            second_max=float(top[1] if top.size > 1 else top[0]),
            min=float(finite.min()),
            third_max=float(top[2]) if top.size > 2 else None,
        )


@dataclass(frozen=True, eq=False)
class TimeSeries:
    """Evenly spaced samples; NaN marks a gap."""

    start: datetime
    step_seconds: float
    values: FloatArray

    def __len__(self) -> int:
        return int(self.values.size)


SampleRule = Literal["negative", "non-finite", "above-allocatable", "above-limit"]


@dataclass(frozen=True)
class RejectedSamples:
    """Samples of one resource left out of a container's Quantiles by one rule (counted, never silent)."""

    resource: Literal["cpu", "memory"]
    rule: SampleRule
    count: int


@dataclass(frozen=True)
class ContainerUsage:
    """One container of one workload, aggregated across its pods (deployer/hook pods already excluded).

    cpu in cores, memory in bytes, GPUs as counts.
    """

    workload: WorkloadRef
    container: str
    cpu_cores: Quantiles
    memory_bytes: Quantiles
    per_replica_cpu_cores: float
    per_replica_memory_bytes: float
    samples: int
    first_seen: datetime
    last_seen: datetime
    pods: int = 1
    oom_kill_memory_bytes: float | None = None
    current_requests: Mapping[str, float] = field(default_factory=dict)
    current_limits: Mapping[str, float] = field(default_factory=dict)
    init_container: bool = False
    rejected: tuple[RejectedSamples, ...] = ()
    runs: int = 0
    """Distinct Jobs its pods belonged to (a CronJob's runs; 0: no pod of a Job)."""
    recency_note: str = ""
    """What the replaced-template rule did to these figures, for the reason (recommender.model.recency:
    "replaced template web-5f8b left out (...)"); "" when no template was replaced."""
    request_mix: tuple[RequestSet, ...] = ()
    """The requests its pods had, most pods first, when they differ (recommender.model.request_mix);
    `current_requests` is the newest pod's; () or one set: the pods agree (or the source cannot tell)."""
    cpu_resets: int = 0
    """Resets of the CPU counter among the window's raw samples (0 where the source cannot tell): many are
    a counter not to be trusted (recommender.sizing.confidence)."""


@dataclass(frozen=True)
class GpuUsage:
    """GPU use of one container of one workload (all its GPUs / GPU instances together)."""

    workload: WorkloadRef
    container: str
    pod: str
    node: str
    model_name: str
    gpu_count: int
    activity_signal: ActivitySignal
    activity: Quantiles
    fb_used_max_mib: float
    fb_total_mib: float
    activity_series: TimeSeries
    dram_active: Quantiles | None = None
    mig_profile: str | None = None
    uuids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Autoscaler:
    """A horizontal autoscaler (HPA or KEDA ScaledObject) owning a workload's replica count."""

    workload: WorkloadRef
    kind: Literal["HorizontalPodAutoscaler", "ScaledObject"]
    name: str
    min_replicas: int
    max_replicas: int
    target_utilization: Mapping[str, float]
    current_replicas: int | None = None


@dataclass(frozen=True)
class NodeInfo:
    """A node's pricing-relevant facts."""

    name: str
    instance_type: str | None
    capacity_type: Literal["on-demand", "spot"]
    gpu_product: str | None = None
    gpu_count: int = 0
    gpu_memory_mib: float | None = None
    region: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    allocatable: Mapping[str, float] = field(default_factory=dict)  # cpu cores, memory bytes, GPUs


@dataclass(frozen=True)
class WorkloadDemand:
    """A workload's total demand over time (sum over its pods), input to the forecast."""

    workload: WorkloadRef
    cpu_cores: TimeSeries
    memory_bytes: TimeSeries


@dataclass(frozen=True)
class UsageSnapshot:
    """Everything the sizing policies need for one run."""

    window_start: datetime
    window_end: datetime
    containers: tuple[ContainerUsage, ...]
    gpus: tuple[GpuUsage, ...] = ()
    autoscalers: tuple[Autoscaler, ...] = ()
    nodes: tuple[NodeInfo, ...] = ()
    demand: tuple[WorkloadDemand, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    source: str = ""
    pod_labels: Mapping[WorkloadRef, Mapping[str, str]] = field(default_factory=dict)
    """Labels of each workload's most recently seen pod (what its pod template carries), where known."""
    pod_annotations: Mapping[WorkloadRef, Mapping[str, str]] = field(default_factory=dict)
    """The `podsizer.io/` annotations of that same pod (the only ones the pod plan reads), where known."""
    unmatched_scope: tuple[str, ...] = ()
    """Parts of the run's scope (namespace patterns, the selector, kinds) that matched no workload."""

    def workloads(self) -> list[WorkloadRef]:
        return sorted({c.workload for c in self.containers} | {g.workload for g in self.gpus})

    def pod_meta(self, workload: WorkloadRef) -> Meta:
        """The labels and annotations of the workload's pod template as the pod plan reads them (the same
        inputs for `recommend`, `explain` and the console; the webhook reads the pod itself)."""
        return Meta(self.pod_labels.get(workload, {}), self.pod_annotations.get(workload, {}))


@dataclass(frozen=True)
class WorkloadUsage:
    """One workload's part of a snapshot, so sizing reads it without scanning the whole snapshot."""

    containers: tuple[ContainerUsage, ...] = ()
    gpus: tuple[GpuUsage, ...] = ()
    autoscaler: Autoscaler | None = None
    demand: WorkloadDemand | None = None


def index_by_workload(snapshot: UsageSnapshot) -> dict[WorkloadRef, WorkloadUsage]:
    """Every workload's usage, in one pass over the snapshot (the first autoscaler or demand seen wins)."""
    containers: dict[WorkloadRef, list[ContainerUsage]] = {}
    gpus: dict[WorkloadRef, list[GpuUsage]] = {}
    for c in snapshot.containers:
        containers.setdefault(c.workload, []).append(c)
    for g in snapshot.gpus:
        gpus.setdefault(g.workload, []).append(g)
    autoscalers: dict[WorkloadRef, Autoscaler] = {}
    for a in snapshot.autoscalers:
        autoscalers.setdefault(a.workload, a)
    demand: dict[WorkloadRef, WorkloadDemand] = {}
    for d in snapshot.demand:
        demand.setdefault(d.workload, d)
    return {
        w: WorkloadUsage(
            tuple(containers.get(w, ())), tuple(gpus.get(w, ())), autoscalers.get(w), demand.get(w)
        )
        for w in sorted(containers.keys() | gpus.keys())
    }


Progress = Callable[[int, int, str], None]
"""progress(done, total, what): called by long-running steps."""


class MetricsSource(Protocol):
    """Anything that can turn a time window into a UsageSnapshot."""

    name: str

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot: ...


class SourceError(RuntimeError):
    """A metrics source could not answer (unreachable, bad response); the message says which and why."""
