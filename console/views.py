"""The console's numbers: ConsoleData -> pydantic response models; the JSON API and the HTML pages both
render these, so a page never shows a figure the API would not return."""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

from pydantic import BaseModel, Field

from console.data import (
    ConsoleData,
    ContainerRow,
    CostLine,
    GpuNode,
    GpuPodRow,
    Mode,
    PodDetail,
    PodRow,
    WorkloadRow,
)
from console.series import downsample_max
from podsizer.api.identity import WorkloadRef
from podsizer.resources import GPU
from recommender.sizing.waste import WasteFinding

DEFAULT_POINTS = 240
MAX_POINTS = 2000
_Out = TypeVar("_Out", bound=BaseModel)


class WorkloadId(BaseModel):
    """A workload's identity (DeploymentConfigs and Rollouts are listed like Deployments)."""

    namespace: str
    kind: str
    name: str
    api_version: str
    recommendation: str = Field(description="name of its Recommendation object")

    @staticmethod
    def of(ref: WorkloadRef) -> WorkloadId:
        return WorkloadId(
            namespace=ref.namespace,
            kind=ref.kind,
            name=ref.name,
            api_version=ref.api_version,
            recommendation=ref.recommendation_name,
        )


class MetaOut(BaseModel):
    source: str
    generated_at: datetime
    window_start: datetime
    window_end: datetime


class ContainerOut(BaseModel):
    """Per pod (base units: cores, bytes, counts): requests/limits today, the recommendation, and the
    values once the pod plan is applied (what the webhook writes); savings over all pods."""

    name: str
    current_requests: dict[str, float]
    current_limits: dict[str, float]
    recommended_requests: dict[str, float]
    recommended_limits: dict[str, float]
    planned_requests: dict[str, float] = Field(description="requests once the pod plan is applied")
    planned_limits: dict[str, float] = Field(description="limits once the pod plan is applied")
    changes: list[dict[str, str | None]] = Field(
        description="the pod plan's changes, as the podsizer.io/dry-run annotation holds them"
    )
    confidence: float
    low_confidence: bool
    reason: str
    cpu_cores_saved: float | None = Field(description="(current - planned) x pods; < 0: needs more")
    memory_bytes_saved: float | None
    gpus_saved: float | None


class WorkloadOut(BaseModel):
    workload: WorkloadId
    mode: Mode
    mode_source: str
    plan_skip: str | None = Field(description="why the pod plan changes nothing (low-confidence, ...)")
    gpu_resize: bool = Field(description="podsizer.io/gpu resolved to resize: GPU counts may change")
    sizing_mode: str = Field(description="static or autopilot: which sizing path produced it")
    reason: str
    pods: list[str]
    confidence: float = Field(description="lowest container confidence")
    containers: list[ContainerOut]
    cpu_cores_saved: float | None
    memory_bytes_saved: float | None
    gpus_saved: float | None
    gpu_allocated: int
    gpu_suggested_resource: str | None
    gpu_hourly_cost: float
    gpu_wasted_hourly_cost: float
    gpu_hourly_savings: float = Field(description="idle waste, or the cost share of GPUs not needed")


class SkippedOut(BaseModel):
    subject: str
    reason: str


class TotalsOut(BaseModel):
    workloads: int
    cpu_cores_saved: float
    memory_bytes_saved: float
    gpu_hourly_cost: float
    gpu_wasted_hourly_cost: float
    gpu_hourly_savings: float


class OverviewOut(BaseModel):
    meta: MetaOut
    totals: TotalsOut
    workloads: list[WorkloadOut]
    skipped: list[SkippedOut]


class MigInstanceOut(BaseModel):
    profile: str
    instance_id: str
    pod: str | None


class GpuDeviceOut(BaseModel):
    index: str
    uuid: str
    model: str
    pods: list[str]
    mig: list[MigInstanceOut]


class GpuNodeOut(BaseModel):
    name: str
    model: str | None
    gpu_count: int
    gpu_memory_mib: float | None
    instance_type: str | None
    capacity_type: str
    mig_strategy: str | None
    allocated_gpus: int
    allocated_mig: dict[str, int]
    mig_layout: str = Field(description="MIG instances per GPU, e.g. 'GPU 0: 3g.40gb, 4g.40gb'")
    devices: list[GpuDeviceOut]


class GpuPodOut(BaseModel):
    workload: WorkloadId
    pod: str
    namespace: str
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


class WasteOut(BaseModel):
    workload: WorkloadId
    pod: str
    namespace: str
    container: str
    node: str
    model: str
    gpus: int
    activity_signal: str
    idle_since: datetime
    idle_hours: float
    threshold: float
    wasted_hourly_cost: float
    price_basis: str


class CostLineOut(BaseModel):
    subject: str
    hourly: float
    wasted_hourly: float


class CostsOut(BaseModel):
    by_workload: list[CostLineOut]
    by_namespace: list[CostLineOut]
    cluster: CostLineOut


class GpuOut(BaseModel):
    meta: MetaOut
    nodes: list[GpuNodeOut]
    pods: list[GpuPodOut]
    waste: list[WasteOut]
    costs: CostsOut


class PodOut(BaseModel):
    namespace: str
    name: str
    node: str
    workload: WorkloadId
    has_gpu: bool


class LineOut(BaseModel):
    label: str
    timestamps: list[float] = Field(description="epoch seconds, bucket centres")
    values: list[float | None] = Field(description="bucket maximum; null where the bucket has no sample")


class ReferenceOut(BaseModel):
    label: str
    value: float


class ChartOut(BaseModel):
    key: str
    title: str
    unit: str
    lines: list[LineOut]
    references: list[ReferenceOut]


class PodDetailOut(BaseModel):
    pod: PodOut
    charts: list[ChartOut]


def meta(data: ConsoleData) -> MetaOut:
    m = data.meta()
    return MetaOut(
        source=m.source, generated_at=m.generated_at, window_start=m.window_start, window_end=m.window_end
    )


def _saved(c: ContainerRow, resource: str, pods: int) -> float | None:
    """What the pod plan frees of a request over all pods (None: the request is unknown)."""
    current = c.current_requests.get(resource)
    planned = c.planned_requests.get(resource)
    if current is None or planned is None:
        return None
    return (current - planned) * pods


def _sum(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def container_out(c: ContainerRow, pods: int) -> ContainerOut:
    return ContainerOut(
        name=c.name,
        current_requests=dict(c.current_requests),
        current_limits=dict(c.current_limits),
        recommended_requests=dict(c.recommended_requests),
        recommended_limits=dict(c.recommended_limits),
        planned_requests=dict(c.planned_requests),
        planned_limits=dict(c.planned_limits),
        changes=[ch.to_json() for ch in c.changes],
        confidence=c.confidence,
        low_confidence=c.low_confidence,
        reason=c.reason,
        cpu_cores_saved=_saved(c, "cpu", pods),
        memory_bytes_saved=_saved(c, "memory", pods),
        gpus_saved=_saved(c, GPU, pods),
    )


def workload_out(row: WorkloadRow) -> WorkloadOut:
    pods = max(1, len(row.pods))
    containers = [container_out(c, pods) for c in row.containers]
    gpus_saved = _sum([c.gpus_saved for c in containers])
    share = 0.0
    if row.gpu_allocated > 0 and gpus_saved is not None and gpus_saved > 0:
        share = row.gpu_hourly_cost * min(1.0, gpus_saved / row.gpu_allocated)
    return WorkloadOut(
        workload=WorkloadId.of(row.workload),
        mode=row.mode,
        mode_source=row.mode_source,
        plan_skip=row.plan_skip,
        gpu_resize=row.gpu_resize,
        sizing_mode=row.sizing_mode,
        reason=row.reason,
        pods=list(row.pods),
        confidence=min((c.confidence for c in row.containers), default=0.0),
        containers=containers,
        cpu_cores_saved=_sum([c.cpu_cores_saved for c in containers]),
        memory_bytes_saved=_sum([c.memory_bytes_saved for c in containers]),
        gpus_saved=gpus_saved,
        gpu_allocated=row.gpu_allocated,
        gpu_suggested_resource=row.gpu_suggested_resource,
        gpu_hourly_cost=row.gpu_hourly_cost,
        gpu_wasted_hourly_cost=row.gpu_wasted_hourly_cost,
        gpu_hourly_savings=max(row.gpu_wasted_hourly_cost, share),
    )


def overview(data: ConsoleData) -> OverviewOut:
    workloads = [workload_out(r) for r in data.workloads()]
    costs = data.costs().cluster
    return OverviewOut(
        meta=meta(data),
        totals=TotalsOut(
            workloads=len(workloads),
            cpu_cores_saved=sum(w.cpu_cores_saved or 0.0 for w in workloads),
            memory_bytes_saved=sum(w.memory_bytes_saved or 0.0 for w in workloads),
            gpu_hourly_cost=costs.hourly,
            gpu_wasted_hourly_cost=costs.wasted_hourly,
            gpu_hourly_savings=sum(w.gpu_hourly_savings for w in workloads),
        ),
        workloads=workloads,
        skipped=[SkippedOut(subject=s.subject, reason=s.reason) for s in data.skipped()],
    )


def _mig_layout(node: GpuNode) -> str:
    parts = [
        f"GPU {d.index}: " + ", ".join(m.profile for m in sorted(d.mig, key=lambda m: m.instance_id))
        for d in node.devices
        if d.mig
    ]
    return "; ".join(parts) if parts else "none"


def gpu_nodes(data: ConsoleData) -> list[GpuNodeOut]:
    return [
        GpuNodeOut(
            name=n.name,
            model=n.model,
            gpu_count=n.gpu_count,
            gpu_memory_mib=n.gpu_memory_mib,
            instance_type=n.instance_type,
            capacity_type=n.capacity_type,
            mig_strategy=n.mig_strategy,
            allocated_gpus=n.allocated_gpus,
            allocated_mig=dict(n.allocated_mig),
            mig_layout=_mig_layout(n),
            devices=[
                GpuDeviceOut(
                    index=d.index,
                    uuid=d.uuid,
                    model=d.model,
                    pods=list(d.pods),
                    mig=[
                        MigInstanceOut(profile=m.profile, instance_id=m.instance_id, pod=m.pod) for m in d.mig
                    ],
                )
                for d in n.devices
            ],
        )
        for n in data.gpu_nodes()
    ]


def _row_out(out: type[_Out], row: GpuPodRow | WasteFinding) -> _Out:
    """`out` from the same-named fields of a row about a workload's pod; the workload as a WorkloadId
    and its namespace."""
    same = {name: getattr(row, name) for name in out.model_fields if name not in ("workload", "namespace")}
    return out(workload=WorkloadId.of(row.workload), namespace=row.workload.namespace, **same)


def gpu_pods(data: ConsoleData) -> list[GpuPodOut]:
    return [_row_out(GpuPodOut, g) for g in data.gpu_pods()]


def waste(data: ConsoleData) -> list[WasteOut]:
    return [_row_out(WasteOut, w) for w in data.waste()]


def _cost_line(c: CostLine) -> CostLineOut:
    return CostLineOut(subject=c.subject, hourly=c.hourly, wasted_hourly=c.wasted_hourly)


def costs(data: ConsoleData) -> CostsOut:
    c = data.costs()
    return CostsOut(
        by_workload=[_cost_line(x) for x in c.by_workload],
        by_namespace=[_cost_line(x) for x in c.by_namespace],
        cluster=_cost_line(c.cluster),
    )


def gpu(data: ConsoleData) -> GpuOut:
    return GpuOut(
        meta=meta(data), nodes=gpu_nodes(data), pods=gpu_pods(data), waste=waste(data), costs=costs(data)
    )


def pod_out(p: PodRow) -> PodOut:
    return PodOut(
        namespace=p.namespace, name=p.name, node=p.node, workload=WorkloadId.of(p.workload), has_gpu=p.has_gpu
    )


def pods(data: ConsoleData) -> list[PodOut]:
    return [pod_out(p) for p in data.pods()]


class UnknownPod(LookupError):
    """No such pod among the workloads' pods; the message says why and where to look."""


def pod_detail(data: ConsoleData, namespace: str, name: str, points: int = DEFAULT_POINTS) -> PodDetailOut:
    """A pod's charts, each line downsampled to at most `points` bucket peaks."""
    if not 1 <= points <= MAX_POINTS:
        raise ValueError(f"points must be within 1..{MAX_POINTS}, got {points}")
    detail: PodDetail | None = data.pod_detail(namespace, name)
    if detail is None:
        skipped = next(
            (s for s in data.skipped() if s.subject == f"{namespace}/pod/{name}"),
            None,
        )
        why = f": {skipped.reason}" if skipped is not None else ""
        raise UnknownPod(
            f"pod {namespace}/{name} is not a pod of any workload in the console data{why}; "
            "GET /api/pods lists the known pods"
        )
    charts: list[ChartOut] = []
    for chart in detail.charts:
        lines = []
        for line in chart.lines:
            ts, vs = downsample_max(line.timestamps, line.values, points)
            lines.append(LineOut(label=line.label, timestamps=ts, values=vs))
        charts.append(
            ChartOut(
                key=chart.key,
                title=chart.title,
                unit=chart.unit,
                lines=lines,
                references=[ReferenceOut(label=r.label, value=r.value) for r in chart.references],
            )
        )
    return PodDetailOut(pod=pod_out(detail.pod), charts=charts)
