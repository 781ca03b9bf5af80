"""Builds StaticConsoleData from one sizing run: raw samples (series, pods, nodes) + snapshot + run."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np

from console.data import (
    Chart,
    ChartUnit,
    ContainerRow,
    CostLine,
    CostRollup,
    GpuDevice,
    GpuNode,
    GpuPodRow,
    Line,
    Meta,
    MigInstance,
    Mode,
    PodDetail,
    PodRow,
    Reference,
    SkippedRow,
    StaticConsoleData,
    WorkloadRow,
)
from podsizer import modes
from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import parse
from podsizer.api.resource import ContainerRecommendation, Recommendation
from podsizer.owners import OwnerGraph, PodOwner, Skipped
from podsizer.plan_view import ContainerPlan, WorkloadPlan, plan_workload
from podsizer.podspec import CurrentResources, Field
from podsizer.policy import Mode as PlanMode
from podsizer.policy import PlanPolicy
from podsizer.resources import GPU, is_mig, mig_profile
from recommender.model import FloatArray, UsageSnapshot
from recommender.model.raw import GpuSamples, PodInfo, RawDataset
from recommender.sizing.engine import RecommendationRun

MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"


def _graph(raw: RawDataset) -> OwnerGraph:
    return OwnerGraph.build(
        [
            PodOwner(p.namespace, p.name, p.owner_kind, p.owner_name, p.labels, p.annotations)
            for p in raw.pods
        ],
        [(o.namespace, o.kind, o.name, o.owner_kind, o.owner_name) for o in raw.owners],
    )


def _representative(pods: Sequence[PodInfo], policy: PlanPolicy) -> tuple[PodInfo, modes.Resolved] | None:
    """The pod that stands for the workload's template (its pods share it), with what its metadata
    resolves to: the first (by name) that opts out, else the first that sets a mode, else the first."""
    found = [(p, modes.resolve(policy, _meta(p))) for p in sorted(pods, key=lambda p: p.name)]
    return (
        next((f for f in found if f[1].excluded_by is not None), None)
        or next((f for f in found if f[1].mode_source != "default"), None)
        or (found[0] if found else None)
    )


def _meta(pod: PodInfo) -> modes.Meta:
    return modes.Meta(pod.labels, pod.annotations)


def _shown_mode(resolved: modes.Resolved) -> tuple[Mode, str]:
    if resolved.excluded_by is not None:
        return "excluded", f"{modes.EXCLUDE_KEY} on the pod"
    return resolved.mode, resolved.describe()


def workload_mode(pods: Sequence[PodInfo], default: PlanMode) -> tuple[Mode, str]:
    """The webhook's decision for the workload's pods, by podsizer.modes.resolve: "excluded" when a pod
    opts out, else the first pod (by name) that sets a mode, else the default."""
    chosen = _representative(pods, PlanPolicy(default_mode=default))
    return _shown_mode(chosen[1]) if chosen is not None else (default, "default")


def _current(pod: PodInfo, rec: Recommendation) -> list[CurrentResources]:
    """The pod's containers (and the recommendation's) with their requests/limits today."""
    names = dict.fromkeys([*pod.requests, *pod.limits, *(c.name for c in rec.containers)])
    return [
        CurrentResources.of(n, pod.requests.get(n, {}), pod.limits.get(n, {}), n in pod.init_containers)
        for n in names
    ]


def _values(cp: ContainerPlan | None, fld: Field, after: bool) -> dict[str, float]:
    """A container's requests or limits today or once the plan is applied (a removed key counts 0)."""
    if cp is None:
        return {}
    today = cp.current.requests if fld == "requests" else cp.current.limits
    names = dict.fromkeys([*today, *(c.resource for c in cp.changes if c.field == fld)])
    out: dict[str, float] = {}
    for name in names:
        value = cp.after(fld, name) if after else cp.before(fld, name)
        if value is not None:
            out[name] = parse(value)
        elif after and cp.change(fld, name) is not None:
            out[name] = 0.0
    return out


def _container_row(c: ContainerRecommendation, plan: WorkloadPlan | None) -> ContainerRow:
    cp = plan.container(c.name) if plan is not None else None
    return ContainerRow(
        name=c.name,
        current_requests=_values(cp, "requests", after=False),
        recommended_requests=_quantities(c.requests),
        recommended_limits=_quantities(c.limits),
        confidence=c.confidence,
        low_confidence=c.low_confidence,
        reason=c.reason,
        current_limits=_values(cp, "limits", after=False),
        planned_requests=_values(cp, "requests", after=True),
        planned_limits=_values(cp, "limits", after=True),
        changes=cp.changes if cp is not None else (),
    )


def _quantities(values: Mapping[str, str]) -> dict[str, float]:
    return {k: parse(v) for k, v in values.items()}


def _workload_rows(
    recs: Sequence[Recommendation],
    pods_of: Mapping[WorkloadRef, list[PodInfo]],
    run: RecommendationRun,
    policy: PlanPolicy,
) -> tuple[WorkloadRow, ...]:
    """One row per Recommendation, each container as the pod plan leaves it (for the workload's pod)."""
    rows: list[WorkloadRow] = []
    for rec in sorted(recs, key=lambda r: r.target):
        pods = pods_of.get(rec.target, [])
        chosen = _representative(pods, policy)
        plan = None
        mode: Mode = policy.default_mode
        source = "default"
        if chosen is not None:
            pod, resolved = chosen
            plan = plan_workload(rec, _current(pod, rec), policy, _meta(pod))
            mode, source = _shown_mode(resolved)
        rows.append(
            WorkloadRow(
                workload=rec.target,
                mode=mode,
                mode_source=source,
                sizing_mode=rec.sizing_mode,
                reason=rec.reason,
                pods=tuple(sorted(p.name for p in pods)),
                containers=tuple(_container_row(c, plan) for c in rec.containers),
                gpu_hourly_cost=run.costs.by_workload.get(rec.target, 0.0),
                gpu_wasted_hourly_cost=run.costs.wasted_by_workload.get(rec.target, 0.0),
                gpu_allocated=rec.gpu.allocated if rec.gpu is not None else 0,
                gpu_suggested_resource=rec.gpu.suggested_resource if rec.gpu is not None else None,
                plan_skip=plan.plan.skip if plan is not None else "current-unknown",
                gpu_resize=plan.plan.gpu_resize if plan is not None else policy.gpu_resize,
            )
        )
    return tuple(rows)


def _gpu_nodes(raw: RawDataset, app_pods: set[tuple[str, str]]) -> tuple[GpuNode, ...]:
    """GPU nodes; allocation counts the GPU requests of app pods (deployer/hook pods left out)."""
    samples_by_host: dict[str, list[GpuSamples]] = defaultdict(list)
    for g in raw.gpus:
        samples_by_host[g.hostname].append(g)
    pods_by_node: dict[str, list[PodInfo]] = defaultdict(list)
    for p in raw.pods:
        if (p.namespace, p.name) in app_pods:
            pods_by_node[p.node].append(p)
    out: list[GpuNode] = []
    names = {n.name for n in raw.nodes if n.gpu_count > 0} | set(samples_by_host)
    infos = {n.name: n for n in raw.nodes}
    for name in sorted(names):
        info = infos.get(name)
        samples = samples_by_host.get(name, [])
        allocated = 0
        mig: dict[str, int] = defaultdict(int)
        for p in pods_by_node.get(name, []):
            for res in p.requests.values():
                for key, value in res.items():
                    if key == GPU:
                        allocated += int(value)
                    elif is_mig(key):
                        mig[mig_profile(key)] += int(value)
        devices: dict[str, GpuDevice] = {}
        for g in sorted(samples, key=lambda g: (g.gpu_index, g.mig_instance_id or "")):
            dev = devices.get(g.uuid) or GpuDevice(g.gpu_index, g.uuid, g.model_name)
            pod = f"{g.namespace}/{g.pod}" if g.pod else None
            pods = dev.pods if pod is None or pod in dev.pods else (*dev.pods, pod)
            migs = dev.mig
            if g.mig_profile and not any(m.instance_id == g.mig_instance_id for m in migs):
                migs = (*migs, MigInstance(g.mig_profile, g.mig_instance_id or "", pod))
            devices[g.uuid] = GpuDevice(dev.index, dev.uuid, dev.model, pods, migs)
        model = (info.gpu_product if info else None) or (samples[0].model_name if samples else None)
        out.append(
            GpuNode(
                name=name,
                model=model,
                gpu_count=info.gpu_count if info else len(devices),
                gpu_memory_mib=info.gpu_memory_mib if info else None,
                instance_type=info.instance_type if info else None,
                capacity_type=info.capacity_type if info else "on-demand",
                mig_strategy=info.labels.get(MIG_STRATEGY_LABEL) if info else None,
                allocated_gpus=allocated,
                allocated_mig=dict(sorted(mig.items())),
                devices=tuple(sorted(devices.values(), key=lambda d: (len(d.index), d.index))),
            )
        )
    return tuple(out)


def _activity(g: GpuSamples, signal: str) -> FloatArray | None:
    if signal == "SM_ACTIVE":
        return g.sm_active
    if signal == "GR_ENGINE_ACTIVE":
        return g.gr_engine_active
    return None if g.gpu_util_percent is None else g.gpu_util_percent / 100.0


def _gpu_label(g: GpuSamples) -> str:
    label = f"GPU {g.gpu_index}"
    return f"{label} MIG {g.mig_profile} #{g.mig_instance_id}" if g.mig_profile else label


def _pod_charts(
    pod: PodInfo,
    raw: RawDataset,
    row: WorkloadRow | None,
    signal: str | None,
) -> tuple[Chart, ...]:
    containers = sorted(
        (s for s in raw.containers if s.namespace == pod.namespace and s.pod == pod.name),
        key=lambda s: s.container,
    )
    gpus = sorted(
        (g for g in raw.gpus if g.namespace == pod.namespace and g.pod == pod.name),
        key=lambda g: (g.gpu_index, g.mig_instance_id or ""),
    )
    recs = {c.name: c for c in row.containers} if row is not None else {}
    charts: list[Chart] = []
    plots: tuple[tuple[str, str, ChartUnit, str, str], ...] = (
        ("cpu", "CPU usage", "cores", "cpu_cores", "cpu"),
        ("memory", "Memory working set", "bytes", "memory_bytes", "memory"),
    )
    for key, title, unit, attr, resource in plots:
        refs: list[Reference] = []
        for s in containers:
            current = pod.requests.get(s.container, {}).get(resource)
            if current is not None:
                refs.append(Reference(f"{s.container} request", current))
            rec = recs.get(s.container)
            if rec is not None and resource in rec.recommended_requests:
                refs.append(Reference(f"{s.container} recommended", rec.recommended_requests[resource]))
        lines = tuple(Line(s.container, s.timestamps, getattr(s, attr)) for s in containers)
        if lines:
            charts.append(Chart(key, title, unit, lines, tuple(refs)))
    if gpus:
        signal = signal or "SM_ACTIVE"
        act = tuple(
            Line(_gpu_label(g), g.timestamps, a) for g in gpus if (a := _activity(g, signal)) is not None
        )
        if act:
            charts.append(Chart("gpu-activity", f"GPU activity ({signal})", "ratio", act))
        dram = tuple(
            Line(_gpu_label(g), g.timestamps, g.dram_active) for g in gpus if g.dram_active is not None
        )
        if dram:
            charts.append(Chart("dram-activity", "DRAM activity (DCGM_FI_PROF_DRAM_ACTIVE)", "ratio", dram))
        fb = tuple(Line(_gpu_label(g), g.timestamps, g.fb_used_mib) for g in gpus)
        totals: list[Reference] = []
        for g in gpus:
            cap = g.fb_used_mib + g.fb_free_mib
            finite = cap[np.isfinite(cap)]
            if finite.size:
                totals.append(Reference(f"{_gpu_label(g)} total", float(finite.max()) + g.fb_reserved_mib))
        if len({r.value for r in totals}) == 1:
            totals = [Reference("framebuffer size" + (" (each)" if len(totals) > 1 else ""), totals[0].value)]
        charts.append(
            Chart("framebuffer", "Framebuffer used (DCGM_FI_DEV_FB_USED)", "MiB", fb, tuple(totals))
        )
    return tuple(charts)


def build_console_data(
    raw: RawDataset,
    snapshot: UsageSnapshot,
    run: RecommendationRun,
    now: datetime,
    *,
    policy: PlanPolicy | None = None,
) -> StaticConsoleData:
    """All console values of one run; pods that resolve to no workload (deployer/hook...) are skipped.
    `policy` (default: PlanPolicy()) is the pod plan's policy, as the webhook's settings give it."""
    graph = _graph(raw)
    pods_of: dict[WorkloadRef, list[PodInfo]] = defaultdict(list)
    workload_of: dict[tuple[str, str], WorkloadRef] = {}
    skipped: dict[str, SkippedRow] = {}
    for p in raw.pods:
        resolved = graph.resolve(p.namespace, p.name)
        if isinstance(resolved, Skipped):
            skipped.setdefault(resolved.subject, SkippedRow(resolved.subject, resolved.reason))
            continue
        pods_of[resolved].append(p)
        workload_of[(p.namespace, p.name)] = resolved
    for s in (*snapshot.skipped, *run.skipped):
        skipped.setdefault(s.subject, SkippedRow(s.subject, s.reason))

    rows = _workload_rows(run.recommendations, pods_of, run, policy or PlanPolicy())
    row_of = {r.workload: r for r in rows}
    waste = tuple(sorted(run.waste, key=lambda w: (-w.wasted_hourly_cost, w.workload, w.pod)))
    idle_pods = {(w.workload, w.pod, w.container) for w in waste}
    pod_cost: dict[tuple[WorkloadRef, str, str], float] = defaultdict(float)
    for item in run.costs.items:
        pod_cost[(item.workload, item.pod, item.container)] += item.hourly_cost
    gpu_rows = tuple(
        GpuPodRow(
            workload=g.workload,
            pod=g.pod,
            container=g.container,
            node=g.node,
            model=g.model_name,
            gpu_count=g.gpu_count,
            mig_profile=g.mig_profile,
            activity_signal=g.activity_signal,
            activity_p95=g.activity.p95,
            activity_mean=g.activity.mean,
            dram_active_p95=g.dram_active.p95 if g.dram_active is not None else None,
            fb_used_max_mib=g.fb_used_max_mib,
            fb_total_mib=g.fb_total_mib,
            hourly_cost=pod_cost.get((g.workload, g.pod, g.container), 0.0),
            idle=(g.workload, g.pod, g.container) in idle_pods,
        )
        for g in sorted(snapshot.gpus, key=lambda g: (g.workload, g.pod, g.container))
    )
    costs = CostRollup(
        by_workload=tuple(
            CostLine(str(w), h, run.costs.wasted_by_workload.get(w, 0.0))
            for w, h in sorted(run.costs.by_workload.items())
        ),
        by_namespace=tuple(
            CostLine(ns, h, run.costs.wasted_by_namespace.get(ns, 0.0))
            for ns, h in sorted(run.costs.by_namespace.items())
        ),
        cluster=CostLine("cluster", run.costs.cluster_hourly, run.costs.cluster_wasted_hourly),
    )
    signals = {(g.workload, g.pod): g.activity_signal for g in snapshot.gpus}
    details: list[PodDetail] = []
    for p in sorted(raw.pods, key=lambda p: (p.namespace, p.name)):
        workload = workload_of.get((p.namespace, p.name))
        if workload is None:
            continue
        has_gpu = any(g.namespace == p.namespace and g.pod == p.name for g in raw.gpus)
        charts = _pod_charts(p, raw, row_of.get(workload), signals.get((workload, p.name)))
        details.append(PodDetail(PodRow(p.namespace, p.name, p.node, workload, has_gpu), charts))
    return StaticConsoleData(
        info=Meta(snapshot.source or "unknown", now, raw.start, raw.end),
        workload_rows=rows,
        skipped_rows=tuple(sorted(skipped.values(), key=lambda s: s.subject)),
        nodes=_gpu_nodes(raw, set(workload_of)),
        gpu_pod_rows=gpu_rows,
        waste_rows=waste,
        cost_rollup=costs,
        details=tuple(details),
    )
