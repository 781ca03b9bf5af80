"""The console's numbers: ConsoleData -> pydantic response models; the JSON API and the HTML pages both
render these, so a page never shows a figure the API would not return."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TypeVar

from pydantic import BaseModel, Field

from console.data import (
    MODES,
    Chart,
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
from console.prices import HOURS_PER_MONTH
from console.query import OverviewQuery, Summary, select
from console.savings import Figures, counted, figures, has_savings, known_sum, replicas, saved
from console.series import downsample_max
from podsizer.api.identity import WorkloadRef
from podsizer.plan_reasons import Rule
from podsizer.resources import GPU
from podsizer.subject import Subject
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
    cluster: str = Field("", description="the cluster it runs in (empty: a single-cluster setup)")

    @staticmethod
    def of(ref: WorkloadRef) -> WorkloadId:
        return WorkloadId(
            cluster=ref.cluster,
            namespace=ref.namespace,
            kind=ref.kind,
            name=ref.name,
            api_version=ref.api_version,
            recommendation=ref.recommendation_name,
        )


class MetaOut(BaseModel):
    """Source, store, where the recommendations come from, the window, and the last refresh error."""

    source: str
    generated_at: datetime
    window_start: datetime
    window_end: datetime
    store: str = ""
    origin: str = ""
    error: str | None = None
    stale: str = Field("", description="the data's newest sample lies well before the window's end: how far")
    clusters: list[str] = Field(
        default_factory=list,
        description="the clusters of the workloads shown (empty: none is labelled, a single cluster)",
    )
    cluster_name: str = Field("", description="the cluster this console is configured for (empty: unnamed)")


class StepOut(BaseModel):
    rule: Rule
    text: str


class AdjustedOut(BaseModel):
    """A value the pod plan writes (or keeps) other than the Recommendation's estimate, and why."""

    container: str
    field: str
    resource: str
    estimate: str | None
    planned: str | None
    why: list[StepOut]


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
    adjusted: list[AdjustedOut] = Field(
        default_factory=list,
        description="values the pod plan writes other than the estimate, and the rules that moved them",
    )
    confidence: float
    low_confidence: bool
    reason: str = Field(description="the sizing reason, then `plan: ...` for each adjusted value")
    pods_differ: str = Field(
        "", description="the pods had different requests (current_requests: the newest pod's): which"
    )
    cpu_cores_saved: float | None = Field(
        description="(current - planned) x the counted replicas (replicas_counted); < 0: needs more"
    )
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
    gpu_opt_in_hourly_savings: float = Field(
        0.0,
        description="$ per hour more GPU savings with the GPU opt-in (podsizer.io/gpu: resize): the "
        "recommended GPU counts written",
    )
    replicas: int = Field(description="current replicas")
    replicas_counted: float = Field(
        description="what the savings multiply by: the current replicas, or for a CronJob or Job the mean"
        " pods running over the window"
    )
    replicas_basis: str = Field(description="where the counted replicas come from")
    cpu_hourly_savings: float = Field(description="$ per hour: CPU cores saved x the CPU price")
    memory_hourly_savings: float = Field(description="$ per hour: memory GiB saved x the memory price")
    hourly_savings: float = Field(description="$ per hour: CPU + memory + GPU savings")
    monthly_savings: float = Field(description=f"$ per month ({HOURS_PER_MONTH:g} h)")
    price_basis: str = Field(description="where the CPU and memory prices come from")
    has_savings: bool = Field(description="the pod plan frees CPU, memory or GPU")
    low_confidence: bool = Field(description="some container's recommendation has low confidence")


class SkippedOut(BaseModel):
    subject: str = Field(description="what was left out, as people read it")
    reason: str
    failed: bool = Field(False, description="its sizing failed (an error, not a skip)")
    about: dict[str, str] = Field(
        default_factory=dict,
        description="its fields: cluster, namespace, kind, name, container, pod, resource, node, gpu",
    )


class TotalsOut(BaseModel):
    """Over the workloads matching the filters and search (every page of them, not only this one)."""

    workloads: int = Field(description="all workloads, matching or not")
    matching: int = Field(0, description="workloads matching the filters and search: the sums cover these")
    cpu_cores_saved: float
    memory_bytes_saved: float
    gpu_hourly_cost: float
    gpu_wasted_hourly_cost: float
    gpu_hourly_savings: float
    cpu_hourly_savings: float = 0.0
    memory_hourly_savings: float = 0.0
    hourly_savings: float = 0.0
    monthly_savings: float = 0.0
    gpu_unallocated_hourly_cost: float = Field(
        0.0,
        description="GPUs on GPU nodes no pod requests: cluster-wide, in no workload (no filter narrows it)",
    )


class PageOut(BaseModel):
    """Which slice of the matching workloads this response holds."""

    page: int
    per_page: int
    pages: int
    matching: int = Field(description="workloads matching the filters and search")
    sort: str
    order: str


class FacetsOut(BaseModel):
    """The values the overview's filters can take."""

    clusters: list[str] = Field(description="the workloads' clusters; more than one: a cluster column")
    namespaces: list[str]
    kinds: list[str]
    modes: list[str]
    sizing_modes: list[str]


class OverviewOut(BaseModel):
    meta: MetaOut
    totals: TotalsOut
    page: PageOut
    facets: FacetsOut
    workloads: list[WorkloadOut] = Field(description="this page of the matching workloads")
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
    unallocated_gpus: int = Field(description="GPUs no pod requests (whole GPUs, MIG GPUs in use counted)")
    unallocated_hourly_cost: float = Field(description="$ per hour of the unallocated GPUs")
    gpu_hourly_price: float
    price_basis: str


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
    fb_used_max_mib: float = Field(description="framebuffer used, peak of the sum over the pod's GPUs")
    fb_total_mib: float = Field(description="framebuffer size, summed over the pod's GPUs")
    hourly_cost: float
    idle: bool
    recommended_gpus: float | None = Field(
        None, description="the Recommendation's GPU count for this container (per pod)"
    )
    suggested_mig: str | None = Field(None, description="the MIG slice the workload's recommendation names")


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


class GpuWorkloadOut(BaseModel):
    """A workload holding GPUs: per pod now and as recommended, and what it saves with and without the
    GPU opt-in (the overview's figures for it)."""

    workload: WorkloadId
    gpus_per_pod: float = Field(description="GPUs a pod requests now (all its containers)")
    recommended_per_pod: float | None = Field(description="GPUs a pod gets as recommended")
    suggested_mig: str | None
    gpu_resize: bool = Field(description="the GPU opt-in is on: the plan writes GPU counts")
    replicas: float = Field(description="the replicas the savings count (replicas_counted)")
    gpu_hourly_cost: float
    gpu_hourly_savings: float
    gpu_opt_in_hourly_savings: float


def gpu_workload_out(row: WorkloadRow) -> GpuWorkloadOut:
    w = workload_out(row)
    recommended = [c.gpu_recommended for c in row.containers if GPU in c.current_requests]
    return GpuWorkloadOut(
        workload=w.workload,
        gpus_per_pod=sum(c.current_requests.get(GPU, 0.0) for c in row.containers),
        recommended_per_pod=known_sum(recommended),
        suggested_mig=w.gpu_suggested_resource,
        gpu_resize=w.gpu_resize,
        replicas=w.replicas_counted,
        gpu_hourly_cost=w.gpu_hourly_cost,
        gpu_hourly_savings=w.gpu_hourly_savings,
        gpu_opt_in_hourly_savings=w.gpu_opt_in_hourly_savings,
    )


class GpuOut(BaseModel):
    meta: MetaOut
    unallocated_gpus: int
    unallocated_hourly_cost: float
    dcgm: bool = Field(True, description="the window holds dcgm-exporter series (false: GPU use is unknown)")
    workloads: list[GpuWorkloadOut] = Field(
        default_factory=list, description="workloads holding GPUs: GPUs now and recommended, savings, opt-in"
    )
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


class MarkOut(BaseModel):
    label: str
    timestamp: float = Field(description="epoch seconds")


class ChartOut(BaseModel):
    key: str
    title: str
    unit: str
    lines: list[LineOut]
    references: list[ReferenceOut]
    marks: list[MarkOut] = Field(default_factory=list, description="events (OOM kills) on the time axis")


class ForecastOut(BaseModel):
    horizon_days: float
    cpu_cores_peak: float = Field(
        description="the busiest hour's mean CPU over the horizon (the highest forecast hourly mean), the"
        " workload total (sum over pods); not a sample peak"
    )
    memory_bytes_peak: float = Field(
        description="the busiest hour's mean memory over the horizon, workload total (sum over pods)"
    )
    method: str


class WorkloadDetailOut(BaseModel):
    """A workload page: the recommendation, the pod plan's changes, its pods, history and forecast."""

    workload: WorkloadOut
    pods: list[PodOut]
    charts: list[ChartOut]
    forecast: ForecastOut | None


class PodDetailOut(BaseModel):
    pod: PodOut
    charts: list[ChartOut]


def meta(data: ConsoleData) -> MetaOut:
    m = data.meta()
    return MetaOut(
        source=m.source,
        generated_at=m.generated_at,
        window_start=m.window_start,
        window_end=m.window_end,
        store=m.store,
        origin=m.origin,
        error=m.error,
        stale=m.stale,
        clusters=clusters(data.workloads()),
        cluster_name=m.cluster_name,
    )


def clusters(rows: Sequence[WorkloadRow]) -> list[str]:
    """The distinct non-empty clusters of the workloads (empty: none is labelled)."""
    return sorted({r.workload.cluster for r in rows} - {""})


def container_out(c: ContainerRow, n: float) -> ContainerOut:
    """A container's values per pod and its savings over `n` counted replicas."""
    return ContainerOut(
        name=c.name,
        current_requests=dict(c.current_requests),
        current_limits=dict(c.current_limits),
        recommended_requests=dict(c.recommended_requests),
        recommended_limits=dict(c.recommended_limits),
        planned_requests=dict(c.planned_requests),
        planned_limits=dict(c.planned_limits),
        changes=[ch.to_json() for ch in c.changes],
        adjusted=[AdjustedOut.model_validate(a.to_json()) for a in c.adjusted],
        confidence=c.confidence,
        low_confidence=c.low_confidence,
        reason=c.reason,
        pods_differ=c.pods_differ,
        cpu_cores_saved=saved(c, "cpu", n),
        memory_bytes_saved=saved(c, "memory", n),
        gpus_saved=saved(c, GPU, n),
    )


def workload_out(row: WorkloadRow, f: Figures | None = None) -> WorkloadOut:
    f = f or figures(row)
    n = counted(row)
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
        containers=[container_out(c, n) for c in row.containers],
        cpu_cores_saved=f.cpu_saved,
        memory_bytes_saved=f.memory_saved,
        gpus_saved=f.gpus_saved,
        gpu_allocated=row.gpu_allocated,
        gpu_suggested_resource=row.gpu_suggested_resource,
        gpu_hourly_cost=row.gpu_hourly_cost,
        gpu_wasted_hourly_cost=row.gpu_wasted_hourly_cost,
        gpu_hourly_savings=f.gpu_savings,
        gpu_opt_in_hourly_savings=f.gpu_opt_in,
        replicas=replicas(row),
        replicas_counted=n,
        replicas_basis=row.replicas_basis
        if row.replicas is not None or row.running_share is not None
        else "pods seen in the window",
        cpu_hourly_savings=f.cpu_hourly,
        memory_hourly_savings=f.memory_hourly,
        hourly_savings=f.hourly,
        monthly_savings=f.hourly * HOURS_PER_MONTH,
        price_basis=row.price.basis,
        has_savings=has_savings(f),
        low_confidence=any(c.low_confidence for c in row.containers),
    )


def _summary(row: WorkloadRow, f: Figures) -> Summary[tuple[WorkloadRow, Figures]]:
    ref = row.workload
    return Summary(
        item=(row, f),
        cluster=ref.cluster,
        namespace=ref.namespace,
        kind=ref.kind,
        name=ref.name,
        mode=row.mode,
        sizing=row.sizing_mode,
        confidence=min((c.confidence for c in row.containers), default=0.0),
        low_confidence=any(c.low_confidence for c in row.containers),
        has_savings=has_savings(f),
        replicas=counted(row),
        cpu_saved=f.cpu_saved or 0.0,
        memory_saved=f.memory_saved or 0.0,
        savings=f.hourly,
        gpu_cost=row.gpu_hourly_cost,
    )


def _facets(rows: Sequence[WorkloadRow]) -> FacetsOut:
    return FacetsOut(
        clusters=clusters(rows),
        namespaces=sorted({r.workload.namespace for r in rows}),
        kinds=sorted({r.workload.kind for r in rows}),
        modes=[m for m in MODES if any(r.mode == m for r in rows)],
        sizing_modes=sorted({r.sizing_mode for r in rows}),
    )


def _totals(matched: Sequence[tuple[WorkloadRow, Figures]], workloads: int, unallocated: float) -> TotalsOut:
    """The overview's cards: sums over the matching workloads; the unallocated GPUs are cluster-wide."""
    figs = [f for _, f in matched]
    hourly = sum(f.hourly for f in figs)
    return TotalsOut(
        workloads=workloads,
        matching=len(matched),
        cpu_cores_saved=sum(f.cpu_saved or 0.0 for f in figs),
        memory_bytes_saved=sum(f.memory_saved or 0.0 for f in figs),
        gpu_hourly_cost=sum(r.gpu_hourly_cost for r, _ in matched),
        gpu_wasted_hourly_cost=sum(r.gpu_wasted_hourly_cost for r, _ in matched),
        gpu_hourly_savings=sum(f.gpu_savings for f in figs),
        cpu_hourly_savings=sum(f.cpu_hourly for f in figs),
        memory_hourly_savings=sum(f.memory_hourly for f in figs),
        hourly_savings=hourly,
        monthly_savings=hourly * HOURS_PER_MONTH,
        gpu_unallocated_hourly_cost=unallocated,
    )


def overview(data: ConsoleData, query: OverviewQuery | None = None) -> OverviewOut:
    """Totals over the workloads matching the query (all its pages); `workloads` is the query's page
    (WorkloadOut built for it only)."""
    q = query or OverviewQuery()
    rows = data.workloads()
    summaries = [_summary(r, figures(r)) for r in rows]
    chosen, page = select(summaries, q)
    matched = [s.item for s in summaries if q.matches(s)]
    return OverviewOut(
        meta=meta(data),
        totals=_totals(matched, len(rows), sum(_unallocated(n)[1] for n in data.gpu_nodes())),
        page=PageOut(
            page=page.page,
            per_page=page.per_page,
            pages=page.pages,
            matching=page.matching,
            sort=q.sort,
            order=q.order,
        ),
        facets=_facets(rows),
        workloads=[workload_out(r, f) for r, f in chosen],
        skipped=[
            SkippedOut(subject=str(s.subject), reason=s.reason, failed=s.failed, about=s.subject.fields())
            for s in data.skipped()
        ],
    )


def _unallocated(node: GpuNode) -> tuple[int, float]:
    """GPUs of the node no pod holds (a GPU with a MIG instance in use counts as held), and their $/h."""
    mig_held = sum(1 for d in node.devices if any(m.pod is not None for m in d.mig))
    if node.allocated_mig and not mig_held:
        mig_held = 1  # MIG in use but the device layout is unknown: count at least one GPU as held
    free = max(0, node.gpu_count - node.allocated_gpus - mig_held)
    return free, free * node.gpu_hourly_price


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
            unallocated_gpus=_unallocated(n)[0],
            unallocated_hourly_cost=_unallocated(n)[1],
            gpu_hourly_price=n.gpu_hourly_price,
            price_basis=n.price_basis,
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


def _row_out(out: type[_Out], row: GpuPodRow | WasteFinding, **more: object) -> _Out:
    """`out` from the same-named fields of a row about a workload's pod (and `more`); the workload as a
    WorkloadId and its namespace."""
    skip = {"workload", "namespace", *more}
    same = {name: getattr(row, name) for name in out.model_fields if name not in skip}
    return out(workload=WorkloadId.of(row.workload), namespace=row.workload.namespace, **same, **more)


def gpu_pods(data: ConsoleData) -> list[GpuPodOut]:
    """Per-pod GPU use, with the recommendation of the pod's container and its workload's MIG slice."""
    rows = {r.workload: r for r in data.workloads()}
    out = []
    for g in data.gpu_pods():
        row = rows.get(g.workload)
        c = next((c for c in row.containers if c.name == g.container), None) if row is not None else None
        out.append(
            _row_out(
                GpuPodOut,
                g,
                recommended_gpus=c.gpu_recommended if c is not None else None,
                suggested_mig=row.gpu_suggested_resource if row is not None else None,
            )
        )
    return out


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
    nodes = gpu_nodes(data)
    pods = gpu_pods(data)
    return GpuOut(
        meta=meta(data),
        dcgm=bool(pods) or any(n.devices for n in nodes),
        unallocated_gpus=sum(n.unallocated_gpus for n in nodes),
        unallocated_hourly_cost=sum(n.unallocated_hourly_cost for n in nodes),
        workloads=[gpu_workload_out(r) for r in data.workloads() if r.gpu_allocated > 0],
        nodes=nodes,
        pods=pods,
        waste=waste(data),
        costs=costs(data),
    )


def pod_out(p: PodRow) -> PodOut:
    return PodOut(
        namespace=p.namespace, name=p.name, node=p.node, workload=WorkloadId.of(p.workload), has_gpu=p.has_gpu
    )


def pods(data: ConsoleData) -> list[PodOut]:
    return [pod_out(p) for p in data.pods()]


class Unknown(LookupError):
    """A page or API path names nothing the console has: `what` says so (the page shows it), the message
    adds where the API lists what there is."""

    def __init__(self, what: str, api_hint: str) -> None:
        super().__init__(f"{what}; {api_hint}")
        self.what = what


class UnknownPod(Unknown):
    """No such pod among the workloads' pods; `what` says why."""


def pod_detail(data: ConsoleData, namespace: str, name: str, points: int = DEFAULT_POINTS) -> PodDetailOut:
    """A pod's charts, each line downsampled to at most `points` bucket peaks."""
    if not 1 <= points <= MAX_POINTS:
        raise ValueError(f"points must be within 1..{MAX_POINTS}, got {points}")
    detail: PodDetail | None = data.pod_detail(namespace, name)
    if detail is None:
        skipped = next(
            (s for s in data.skipped() if s.subject.in_cluster("") == Subject.of_pod(namespace, name)),
            None,
        )
        why = f": {skipped.reason}" if skipped is not None else ""
        raise UnknownPod(
            f"pod {namespace}/{name} is not a pod of any workload in the console data{why}",
            "GET /api/pods lists the known pods",
        )
    return PodDetailOut(pod=pod_out(detail.pod), charts=[chart_out(c, points) for c in detail.charts])


def chart_out(chart: Chart, points: int) -> ChartOut:
    """A chart with each line downsampled to at most `points` bucket peaks."""
    lines = []
    for line in chart.lines:
        ts, vs = downsample_max(line.timestamps, line.values, points)
        lines.append(LineOut(label=line.label, timestamps=ts, values=vs))
    return ChartOut(
        key=chart.key,
        title=chart.title,
        unit=chart.unit,
        lines=lines,
        references=[ReferenceOut(label=r.label, value=r.value) for r in chart.references],
        marks=[MarkOut(label=m.label, timestamp=m.timestamp) for m in chart.marks],
    )


class UnknownWorkload(Unknown):
    """No such workload among the recommendations."""


def workload_detail(
    data: ConsoleData,
    namespace: str,
    kind: str,
    name: str,
    points: int = DEFAULT_POINTS,
    cluster: str | None = None,
) -> WorkloadDetailOut:
    """Everything the workload page shows; UnknownWorkload when no recommendation targets it. `cluster`
    None: the workload in any cluster (the first by cluster name when several have it)."""
    if not 1 <= points <= MAX_POINTS:
        raise ValueError(f"points must be within 1..{MAX_POINTS}, got {points}")
    row = min(
        (
            r
            for r in data.workloads()
            if (r.workload.namespace, r.workload.kind, r.workload.name) == (namespace, kind, name)
            and (cluster is None or r.workload.cluster == cluster)
        ),
        key=lambda r: r.workload.cluster,
        default=None,
    )
    if row is None:
        where = f" in cluster {cluster!r}" if cluster else ""
        raise UnknownWorkload(
            f"no recommendation for workload {namespace}/{kind}/{name}{where}", "GET /api/overview lists them"
        )
    detail = data.workload_detail(row.workload)
    f = detail.forecast if detail is not None else None
    pods_by_name = {p.name: p for p in data.pods() if p.namespace == namespace}
    return WorkloadDetailOut(
        workload=workload_out(row),
        pods=[pod_out(pods_by_name[p]) for p in row.pods if p in pods_by_name],
        charts=[chart_out(c, points) for c in detail.charts] if detail is not None else [],
        forecast=None
        if f is None
        else ForecastOut(
            horizon_days=f.horizon_days,
            cpu_cores_peak=f.cpu_cores_peak,
            memory_bytes_peak=f.memory_bytes_peak,
            method=f.method,
        ),
    )
