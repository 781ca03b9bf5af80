"""What the console shows, as frozen values behind one narrow protocol, so pages and API never see sources."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from console.prices import DEFAULT_PRICE, ResourcePrice
from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import SizingMode
from podsizer.plan_reasons import Adjustment
from podsizer.podspec import Change
from podsizer.subject import Subject
from recommender.model import FloatArray
from recommender.sizing.waste import WasteFinding

Mode = Literal["off", "dry-run", "auto", "excluded"]  # what the webhook does to the workload's pods
MODES: tuple[Mode, ...] = ("off", "dry-run", "auto", "excluded")
ChartUnit = Literal["cores", "bytes", "ratio", "MiB"]


@dataclass(frozen=True)
class ContainerRow:
    """One container of a workload (per pod, base units): requests/limits today, the recommendation, and
    the values once the pod plan is applied (`planned_*`, what the webhook writes; `changes` its changes;
    `adjusted` the values it writes other than the estimate, and why; `reason` says both)."""

    name: str
    current_requests: Mapping[str, float]
    recommended_requests: Mapping[str, float]
    recommended_limits: Mapping[str, float]
    confidence: float
    low_confidence: bool
    reason: str
    current_limits: Mapping[str, float] = field(default_factory=dict)
    planned_requests: Mapping[str, float] = field(default_factory=dict)
    planned_limits: Mapping[str, float] = field(default_factory=dict)
    changes: tuple[Change, ...] = ()
    adjusted: tuple[Adjustment, ...] = ()
    gpu_recommended: float | None = None  # the Recommendation's GPU count for the resource held
    gpu_needs_opt_in: bool = False  # that count differs, but the plan writes it only with the GPU opt-in
    pods_differ: str = ""  # the pods had different requests: which (recommender.model.request_mix); "" alike


@dataclass(frozen=True)
class WorkloadRow:
    """One workload of the overview; `pods` are its app pods only (never deployer or hook pods)."""

    workload: WorkloadRef
    mode: Mode
    mode_source: str
    sizing_mode: SizingMode
    reason: str
    pods: tuple[str, ...]
    containers: tuple[ContainerRow, ...]
    gpu_hourly_cost: float = 0.0
    gpu_wasted_hourly_cost: float = 0.0
    gpu_allocated: int = 0
    gpu_suggested_resource: str | None = None
    plan_skip: str | None = None  # why the pod plan changes nothing (low-confidence, mode-off, ...)
    gpu_resize: bool = False  # podsizer.io/gpu resolved to resize: GPU counts may change
    replicas: int | None = None  # current replicas (None: count the pods seen)
    replicas_basis: str = "pods seen in the window"
    running_share: float | None = None  # CronJob/Job: mean pods running over the window (savings count it)
    price: ResourcePrice = DEFAULT_PRICE  # CPU/memory $ per hour where its pods run


@dataclass(frozen=True)
class MigInstance:
    """One MIG GPU instance on a physical GPU, and the pod holding it (None: free or not reported)."""

    profile: str
    instance_id: str
    pod: str | None


@dataclass(frozen=True)
class GpuDevice:
    """One physical GPU of a node as dcgm-exporter reports it."""

    index: str
    uuid: str
    model: str
    pods: tuple[str, ...] = ()
    mig: tuple[MigInstance, ...] = ()


@dataclass(frozen=True)
class GpuNode:
    """A node with GPUs: inventory from its labels, allocation from its pods' requests."""

    name: str
    model: str | None
    gpu_count: int
    gpu_memory_mib: float | None
    instance_type: str | None
    capacity_type: str
    mig_strategy: str | None
    allocated_gpus: int
    allocated_mig: Mapping[str, int] = field(default_factory=dict)
    devices: tuple[GpuDevice, ...] = ()
    gpu_hourly_price: float = 0.0  # $ per GPU-hour on this node
    price_basis: str = ""


@dataclass(frozen=True)
class GpuPodRow:
    """GPU use of one container of one pod over the window (activity and DRAM as 0-1 ratios)."""

    workload: WorkloadRef
    pod: str
    container: str
    node: str
    model: str
    gpu_count: int
    mig_profile: str | None
    activity_signal: str
    activity_p95: float
    activity_mean: float
    dram_active_p95: float | None
    fb_used_max_mib: float
    fb_total_mib: float
    hourly_cost: float
    idle: bool


@dataclass(frozen=True)
class CostLine:
    """GPU cost of one subject (a workload, a namespace, the cluster), $ per hour."""

    subject: str
    hourly: float
    wasted_hourly: float


@dataclass(frozen=True)
class CostRollup:
    """GPU cost per workload, per namespace and for the cluster."""

    by_workload: tuple[CostLine, ...] = ()
    by_namespace: tuple[CostLine, ...] = ()
    cluster: CostLine = CostLine("cluster", 0.0, 0.0)


@dataclass(frozen=True)
class SkippedRow:
    """Something left out of the workloads (deployer/hook pods, bare pods) or whose sizing failed, and why."""

    subject: Subject
    reason: str
    failed: bool = False


@dataclass(frozen=True)
class PodRow:
    """A pod that belongs to a workload, for drill-down links."""

    namespace: str
    name: str
    node: str
    workload: WorkloadRef
    has_gpu: bool


@dataclass(frozen=True, eq=False)
class Line:
    """One plotted series: epoch-second timestamps and values (NaN = gap)."""

    label: str
    timestamps: FloatArray
    values: FloatArray


@dataclass(frozen=True)
class Reference:
    """A horizontal reference line on a chart (a request, a recommendation, a capacity)."""

    label: str
    value: float


@dataclass(frozen=True)
class Mark:
    """An event drawn as a vertical line on a chart (an OOM kill), at epoch seconds."""

    label: str
    timestamp: float


@dataclass(frozen=True, eq=False)
class Chart:
    """One chart of a pod or workload drill-down."""

    key: str
    title: str
    unit: ChartUnit
    lines: tuple[Line, ...]
    references: tuple[Reference, ...] = ()
    marks: tuple[Mark, ...] = ()


@dataclass(frozen=True)
class ForecastRow:
    """Predicted workload demand (sum over pods) over the forecast horizon."""

    horizon_days: float
    cpu_cores_peak: float
    memory_bytes_peak: float
    method: str


@dataclass(frozen=True, eq=False)
class WorkloadDetail:
    """A workload's history over all its pods (peak per container) and its forecast."""

    workload: WorkloadRef
    charts: tuple[Chart, ...]
    forecast: ForecastRow | None = None


@dataclass(frozen=True, eq=False)
class PodDetail:
    """A pod's time series: CPU and memory per container, DCGM activity, DRAM and framebuffer per GPU."""

    pod: PodRow
    charts: tuple[Chart, ...]


@dataclass(frozen=True)
class Meta:
    """Where the data comes from and which window it covers."""

    source: str
    generated_at: datetime
    window_start: datetime
    window_end: datetime
    store: str = ""  # the Recommendation store in force ("" where none is read: hand-built data)
    origin: str = ""  # where the recommendations shown come from: the store, or a run over the data
    error: str | None = None  # the last refresh failed: why (the data shown is the previous build)
    cluster_name: str = ""  # the cluster the console is configured for ("" not named)
    stale: str = ""  # the data's newest sample is well before the window's end: says so ("" fresh)


class ConsoleData(Protocol):
    """Everything the console reads; implementations precompute, the console never calls a source."""

    def meta(self) -> Meta: ...
    def workloads(self) -> Sequence[WorkloadRow]: ...
    def skipped(self) -> Sequence[SkippedRow]: ...
    def gpu_nodes(self) -> Sequence[GpuNode]: ...
    def gpu_pods(self) -> Sequence[GpuPodRow]: ...
    def waste(self) -> Sequence[WasteFinding]: ...
    def costs(self) -> CostRollup: ...
    def pods(self) -> Sequence[PodRow]: ...
    def pod_detail(self, namespace: str, name: str) -> PodDetail | None: ...
    def workload_detail(self, ref: WorkloadRef) -> WorkloadDetail | None: ...


@dataclass(frozen=True, eq=False)
class StaticConsoleData:
    """ConsoleData from values held in memory (hand-built in tests, or computed once by a builder)."""

    info: Meta
    workload_rows: tuple[WorkloadRow, ...] = ()
    skipped_rows: tuple[SkippedRow, ...] = ()
    nodes: tuple[GpuNode, ...] = ()
    gpu_pod_rows: tuple[GpuPodRow, ...] = ()
    waste_rows: tuple[WasteFinding, ...] = ()
    cost_rollup: CostRollup = CostRollup()
    details: tuple[PodDetail, ...] = ()
    workload_details: tuple[WorkloadDetail, ...] = ()

    def meta(self) -> Meta:
        return self.info

    def workloads(self) -> Sequence[WorkloadRow]:
        return self.workload_rows

    def skipped(self) -> Sequence[SkippedRow]:
        return self.skipped_rows

    def gpu_nodes(self) -> Sequence[GpuNode]:
        return self.nodes

    def gpu_pods(self) -> Sequence[GpuPodRow]:
        return self.gpu_pod_rows

    def waste(self) -> Sequence[WasteFinding]:
        return self.waste_rows

    def costs(self) -> CostRollup:
        return self.cost_rollup

    def pods(self) -> Sequence[PodRow]:
        return tuple(d.pod for d in self.details)

    def pod_detail(self, namespace: str, name: str) -> PodDetail | None:
        return next((d for d in self.details if d.pod.namespace == namespace and d.pod.name == name), None)

    def workload_detail(self, ref: WorkloadRef) -> WorkloadDetail | None:
        return next((d for d in self.workload_details if d.workload == ref), None)
