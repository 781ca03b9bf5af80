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
    ForecastRow,
    GpuDevice,
    GpuNode,
    GpuPodRow,
    Line,
    Mark,
    Meta,
    MigInstance,
    Mode,
    PodDetail,
    PodRow,
    Reference,
    SkippedRow,
    StaticConsoleData,
    WorkloadDetail,
    WorkloadRow,
)
from console.prices import resource_price
from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import parse
from podsizer.api.resource import ContainerRecommendation, Recommendation
from podsizer.keys import EXCLUDE_KEY
from podsizer.owners import Skipped
from podsizer.plan_reasons import adjustments, shown_reason
from podsizer.plan_view import ContainerPlan, WorkloadPlan
from podsizer.podspec import Field
from podsizer.policy import PlanPolicy
from podsizer.resources import GPU, is_mig, mig_profile
from podsizer.subject import Subject
from recommender.model import ActivitySignal, ContainerUsage, FloatArray, NodeInfo, UsageSnapshot
from recommender.model.freshness import Freshness, of_raw
from recommender.model.raw import GpuSamples, PodInfo, RawDataset
from recommender.model.request_mix import describe
from recommender.model.samples import gpu_activity, owner_graph
from recommender.output.report import Report
from recommender.sizing.batch import is_batch
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import RecommendationRun
from recommender.sizing.gpu import gpu_model

MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"


def shown_mode(plan: WorkloadPlan) -> tuple[Mode, str]:
    """The mode the webhook resolves for the workload's pod template and where it comes from."""
    resolved = plan.resolved
    if resolved.excluded_by is not None:
        return "excluded", f"{EXCLUDE_KEY} on the {resolved.excluded_by}"
    return resolved.mode, resolved.describe()


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


def _container_row(
    c: ContainerRecommendation, plan: WorkloadPlan | None, usage: ContainerUsage | None
) -> ContainerRow:
    cp = plan.container(c.name) if plan is not None else None
    gpu = plan.gpu(c.name) if plan is not None else None
    return ContainerRow(
        name=c.name,
        current_requests=_values(cp, "requests", after=False),
        recommended_requests=_quantities(c.requests),
        recommended_limits=_quantities(c.limits),
        confidence=c.confidence,
        low_confidence=c.low_confidence,
        reason=shown_reason(c.reason, plan, c.name),
        adjusted=adjustments(plan, c.name) if plan is not None else (),
        current_limits=_values(cp, "limits", after=False),
        planned_requests=_values(cp, "requests", after=True),
        planned_limits=_values(cp, "limits", after=True),
        changes=cp.changes if cp is not None else (),
        gpu_recommended=parse(gpu.recommended) if gpu is not None and gpu.recommended else None,
        gpu_needs_opt_in=gpu is not None and gpu.needs_opt_in,
        pods_differ=describe(usage.request_mix) if usage is not None else "",
    )


def _quantities(values: Mapping[str, str]) -> dict[str, float]:
    return {k: parse(v) for k, v in values.items()}


def _pods_at_end(raw: RawDataset, newest: datetime | None) -> set[tuple[str, str]]:
    """(namespace, pod) of pods with a sample within two sampling steps of the newest sample of the data
    (the window's end when the data is fresh; stale data would otherwise count no pod at all)."""
    if newest is None:
        return set()
    end = newest.timestamp()
    out: set[tuple[str, str]] = set()
    for s in raw.containers:
        ts = np.asarray(s.timestamps, dtype=np.float64)
        if ts.size == 0:
            continue
        step = float(np.median(np.diff(ts))) if ts.size > 1 else 300.0
        if float(ts.max()) >= end - 2.0 * step - 1.0:
            out.add((s.namespace, s.pod))
    return out


def _stale(freshness: Freshness) -> str:
    """The header's line for stale data: the shared statement and what the console makes of it."""
    said = freshness.statement()
    return f"{said}; replicas and savings count the pods present at that sample" if said else ""


def _replicas(
    ref: WorkloadRef, pods: Sequence[PodInfo], snapshot: UsageSnapshot, at_end: set[tuple[str, str]]
) -> tuple[int, str]:
    """The workload's current replica count and where it comes from: its autoscaler's current replicas
    when the usage model has them, else the pods present at the data's newest sample."""
    scaler = next((a for a in snapshot.autoscalers if a.workload == ref), None)
    if scaler is not None and scaler.current_replicas is not None:
        return scaler.current_replicas, f"{scaler.kind} {scaler.name} current replicas"
    return sum(1 for p in pods if (p.namespace, p.name) in at_end), "pods present at the newest sample"


def _mean_running(pods: Sequence[PodInfo], raw: RawDataset) -> tuple[float, str] | None:
    """A CronJob's or Job's pods come and go, so the pods present at one sample say nothing of its cost:
    the mean pods running over the window (each pod's sampled time, its distinct sample times x the
    sampling step, summed over the window's length), and that basis in words; None: no pod sampled."""
    names = {(p.namespace, p.name) for p in pods}
    times: dict[tuple[str, str], list[FloatArray]] = defaultdict(list)
    for s in raw.containers:
        if (s.namespace, s.pod) in names and s.timestamps.size:
            times[(s.namespace, s.pod)].append(np.asarray(s.timestamps, dtype=np.float64))
    if not times:
        return None
    running = 0.0
    for parts in times.values():
        ts = np.unique(np.concatenate(parts))
        step = float(np.median(np.diff(ts))) if ts.size > 1 else 300.0
        running += ts.size * step
    window = (raw.end - raw.start).total_seconds()
    share = running / window if window > 0 else 0.0
    hours = f"{running / 3600:.1f} h of pods running in {window / 3600:.0f} h"
    pods_seen = f"{len(times)} pod" + ("" if len(times) == 1 else "s")
    return share, f"mean pods running over the window ({pods_seen}, {hours})"


def _instance_type(pods: Sequence[PodInfo], nodes: Mapping[str, NodeInfo]) -> str | None:
    """The instance type most of the workload's pods run on (None: unknown)."""
    types = [t for p in pods if (n := nodes.get(p.node)) is not None and (t := n.instance_type)]
    return max(sorted(set(types)), key=types.count) if types else None


def _workload_rows(
    report: Report,
    raw: RawDataset,
    snapshot: UsageSnapshot,
    pods_of: Mapping[WorkloadRef, list[PodInfo]],
    run: RecommendationRun,
    replicas: Mapping[WorkloadRef, tuple[int, str]],
    nodes: Mapping[str, NodeInfo],
) -> tuple[WorkloadRow, ...]:
    """One row per Recommendation, each container as the pod plan leaves it: the plan `recommend` shows
    (Report.plan: the snapshot's current values and pod template), so both show the same."""
    rows: list[WorkloadRow] = []
    policy = report.policy
    usage = {(u.workload, u.container): u for u in snapshot.containers}
    for rec in sorted(report.recommendations, key=lambda r: r.target):
        pods = pods_of.get(rec.target, [])
        plan = report.plan(rec)
        mode, source = shown_mode(plan) if plan is not None else (policy.default_mode, "default")
        share, basis = None, replicas[rec.target][1] if rec.target in replicas else "pods seen"
        ran = _mean_running(pods, raw) if is_batch(rec.target) else None
        if ran is not None:
            share, basis = ran
        rows.append(
            WorkloadRow(
                workload=rec.target,
                mode=mode,
                mode_source=source,
                sizing_mode=rec.sizing_mode,
                reason=rec.reason,
                pods=tuple(sorted(p.name for p in pods)),
                containers=tuple(
                    _container_row(c, plan, usage.get((rec.target, c.name))) for c in rec.containers
                ),
                gpu_hourly_cost=run.costs.by_workload.get(rec.target, 0.0),
                gpu_wasted_hourly_cost=run.costs.wasted_by_workload.get(rec.target, 0.0),
                gpu_allocated=rec.gpu.allocated if rec.gpu is not None else 0,
                gpu_suggested_resource=rec.gpu.suggested_resource if rec.gpu is not None else None,
                plan_skip=plan.plan.skip if plan is not None else "current-unknown",
                gpu_resize=plan.plan.gpu_resize if plan is not None else policy.gpu_resize,
                replicas=replicas[rec.target][0] if rec.target in replicas else None,
                replicas_basis=basis,
                running_share=share,
                price=resource_price(_instance_type(pods, nodes)),
            )
        )
    return tuple(rows)


def _gpu_nodes(raw: RawDataset, app_pods: set[tuple[str, str]], prices: PriceTable) -> tuple[GpuNode, ...]:
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
            dev = devices.get(g.uuid) or GpuDevice(g.gpu_index, g.uuid, gpu_model(g.model_name))
            pod = f"{g.namespace}/{g.pod}" if g.pod else None
            pods = dev.pods if pod is None or pod in dev.pods else (*dev.pods, pod)
            migs = dev.mig
            if g.mig_profile and not any(m.instance_id == g.mig_instance_id for m in migs):
                migs = (*migs, MigInstance(g.mig_profile, g.mig_instance_id or "", pod))
            devices[g.uuid] = GpuDevice(dev.index, dev.uuid, dev.model, pods, migs)
        label = (info.gpu_product if info else None) or (samples[0].model_name if samples else None)
        per_gpu = prices.gpu_cost(info, 1.0)
        out.append(
            GpuNode(
                name=name,
                model=gpu_model(label) if label else None,
                gpu_count=info.gpu_count if info else len(devices),
                gpu_memory_mib=info.gpu_memory_mib if info else None,
                instance_type=info.instance_type if info else None,
                capacity_type=info.capacity_type if info else "on-demand",
                mig_strategy=info.labels.get(MIG_STRATEGY_LABEL) if info else None,
                allocated_gpus=allocated,
                allocated_mig=dict(sorted(mig.items())),
                devices=tuple(sorted(devices.values(), key=lambda d: (len(d.index), d.index))),
                gpu_hourly_price=per_gpu.hourly,
                price_basis=f"{per_gpu.basis}: {per_gpu.source}",
            )
        )
    return tuple(out)


def _gpu_label(g: GpuSamples) -> str:
    label = f"GPU {g.gpu_index}"
    return f"{label} MIG {g.mig_profile} #{g.mig_instance_id}" if g.mig_profile else label


def _ooms(raw: RawDataset, namespace: str, pods: set[str]) -> tuple[Mark, ...]:
    """OOM kills of the pods `pods` of `namespace`, as chart marks."""
    return tuple(
        Mark(f"OOM kill {o.pod}/{o.container} at {o.memory_bytes / 2**20:.0f}Mi", o.at.timestamp())
        for o in raw.ooms
        if o.namespace == namespace and o.pod in pods
    )


def _pod_charts(
    pod: PodInfo,
    raw: RawDataset,
    row: WorkloadRow | None,
    signal: ActivitySignal | None,
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
            limit = pod.limits.get(s.container, {}).get(resource)
            if limit is not None and resource == "memory":
                refs.append(Reference(f"{s.container} limit", limit))
            row_c = recs.get(s.container)  # what a new pod of the workload gets: the plan's, not the estimate
            if row_c is not None and row_c.planned_requests.get(resource, 0.0) > 0:
                refs.append(Reference(f"{s.container} new request", row_c.planned_requests[resource]))
        lines = tuple(Line(s.container, s.timestamps, getattr(s, attr)) for s in containers)
        if lines:
            charts.append(
                Chart(
                    key,
                    title,
                    unit,
                    lines,
                    tuple(refs),
                    _ooms(raw, pod.namespace, {pod.name}) if key == "memory" else (),
                )
            )
    if gpus:
        signal = signal or "SM_ACTIVE"
        act = tuple(
            Line(_gpu_label(g), g.timestamps, a) for g in gpus if (a := gpu_activity(g, signal)) is not None
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


def _peak_over_pods(parts: list[tuple[FloatArray, FloatArray]]) -> tuple[FloatArray, FloatArray]:
    """One series from many pods' series: at each timestamp, the largest finite value (NaN: none)."""
    ts = np.concatenate([t for t, _ in parts])
    vs = np.concatenate([v for _, v in parts])
    vs = np.where(np.isfinite(vs), vs, -np.inf)
    order = np.argsort(ts, kind="stable")
    ts, vs = ts[order], vs[order]
    uniq, starts = np.unique(ts, return_index=True)
    peaks = np.maximum.reduceat(vs, starts) if ts.size else vs
    return uniq, np.where(np.isfinite(peaks), peaks, np.nan)


def _workload_refs(row: WorkloadRow, resource: str) -> tuple[Reference, ...]:
    """Request and limit lines today and once the pod plan is applied, per container."""
    refs: list[Reference] = []
    for c in row.containers:
        for label, values in (
            ("request", c.current_requests),
            ("limit", c.current_limits),
            ("new request", c.planned_requests),
            ("new limit", c.planned_limits),
        ):
            if resource in values and values[resource] > 0:
                refs.append(Reference(f"{c.name} {label}", values[resource]))
    return tuple(refs)


def _workload_detail(
    rec: Recommendation, row: WorkloadRow, pods: Sequence[PodInfo], raw: RawDataset
) -> WorkloadDetail:
    """History over all the workload's pods (peak per container), OOM kills marked, and the forecast."""
    names = {p.name for p in pods}
    ns = rec.target.namespace
    samples = [s for s in raw.containers if s.namespace == ns and s.pod in names]
    charts: list[Chart] = []
    plots: tuple[tuple[str, str, ChartUnit, str, str], ...] = (
        ("cpu", "CPU usage, peak over pods", "cores", "cpu_cores", "cpu"),
        ("memory", "Memory working set, peak over pods", "bytes", "memory_bytes", "memory"),
    )
    ooms = _ooms(raw, ns, names)
    for key, title, unit, attr, resource in plots:
        lines: list[Line] = []
        for container in sorted({s.container for s in samples}):
            parts = [(s.timestamps, getattr(s, attr)) for s in samples if s.container == container]
            ts, vs = _peak_over_pods(parts)
            lines.append(Line(container, ts, vs))
        if lines:
            marks = ooms if resource == "memory" else ()
            charts.append(Chart(key, title, unit, tuple(lines), _workload_refs(row, resource), marks))
    f = rec.forecast
    forecast = (
        ForecastRow(f.horizon_days, f.cpu_cores_peak, f.memory_bytes_peak, f.method)
        if f is not None
        else None
    )
    return WorkloadDetail(rec.target, tuple(charts), forecast)


def build_console_data(
    raw: RawDataset,
    snapshot: UsageSnapshot,
    run: RecommendationRun,
    now: datetime,
    *,
    policy: PlanPolicy | None = None,
    prices: PriceTable | None = None,
) -> StaticConsoleData:
    """All console values of one run; pods that resolve to no workload (deployer/hook...) are skipped.
    `policy` (default: PlanPolicy()) is the pod plan's policy, as the webhook's settings give it."""
    graph = owner_graph(raw)
    pods_of: dict[WorkloadRef, list[PodInfo]] = defaultdict(list)
    workload_of: dict[tuple[str, str], WorkloadRef] = {}
    skipped: dict[Subject, SkippedRow] = {}
    for p in raw.pods:
        resolved = graph.resolve(p.namespace, p.name)
        if isinstance(resolved, Skipped):
            skipped.setdefault(resolved.subject, SkippedRow(resolved.subject, resolved.reason))
            continue
        pods_of[resolved].append(p)
        workload_of[(p.namespace, p.name)] = resolved
    for s in (*snapshot.skipped, *run.skipped):
        skipped.setdefault(s.subject, SkippedRow(s.subject, s.reason, s.failed))

    freshness = of_raw(raw)
    at_end = _pods_at_end(raw, freshness.newest)
    replicas = {ref: _replicas(ref, pods, snapshot, at_end) for ref, pods in pods_of.items()}
    nodes = {n.name: n for n in raw.nodes}
    report = Report.of(run, snapshot, policy or PlanPolicy())
    rows = _workload_rows(report, raw, snapshot, pods_of, run, replicas, nodes)
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
            model=gpu_model(g.model_name),
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
    workload_details = tuple(
        _workload_detail(rec, row_of[rec.target], pods_of.get(rec.target, []), raw)
        for rec in run.recommendations
    )
    return StaticConsoleData(
        workload_details=workload_details,
        info=Meta(snapshot.source or "unknown", now, raw.start, raw.end, stale=_stale(freshness)),
        workload_rows=rows,
        skipped_rows=tuple(sorted(skipped.values(), key=lambda s: s.subject)),
        nodes=_gpu_nodes(raw, set(workload_of), prices or PriceTable.load(None)),
        gpu_pod_rows=gpu_rows,
        waste_rows=waste,
        cost_rollup=costs,
        details=tuple(details),
    )
