"""One sizing run: a UsageSnapshot in, Recommendations (+ skipped, waste, costs) out.

Per workload: each container of a CronJob or Job is sized from the peaks of its runs (batch.py); other
containers by autopilot when an HPA/ScaledObject targets cpu or memory utilization, else statically;
GPU containers get nvidia.com/gpu requests == limits (whole numbers) and the workload's
GpuRecommendation; the demand forecast fills Recommendation.forecast. A workload whose sizing raises is
skipped with the error text; the run goes on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import INT64_MAX, MIB, format_count
from podsizer.api.resource import (
    ContainerPolicy,
    ContainerRecommendation,
    Forecast,
    GpuRecommendation,
    Recommendation,
    SizingMode,
    Window,
    check_recommendation,
)
from podsizer.api.wire import container_name_problem
from podsizer.bounds import clip_count, policy_for
from podsizer.owners import Skipped
from podsizer.plausibility import Ceilings
from podsizer.sizing_policy import SizingPolicy
from podsizer.subject import Subject
from recommender.model import (
    Autoscaler,
    ContainerUsage,
    GpuUsage,
    NodeInfo,
    UsageSnapshot,
    WorkloadDemand,
    WorkloadUsage,
    index_by_workload,
)
from recommender.model.request_mix import describe
from recommender.sizing.autopilot import is_autopilot, label, size_autopilot
from recommender.sizing.batch import batch_reason, is_batch, size_batch
from recommender.sizing.confidence import SECONDS_PER_DAY, is_low
from recommender.sizing.cost import CostItem, CostReport, PriceTable
from recommender.sizing.estimators import Resource
from recommender.sizing.forecast import Feed, demand_feeds, forecast_demand
from recommender.sizing.gpu import GpuSizing, gpu_equivalents, gpu_model, size_gpu
from recommender.sizing.robust import robust_usage
from recommender.sizing.static import ContainerSizing, size_static
from recommender.sizing.waste import WasteFinding, find_idle


@dataclass(frozen=True)
class RecommendationRun:
    """Everything one run produced."""

    recommendations: tuple[Recommendation, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    waste: tuple[WasteFinding, ...] = ()
    costs: CostReport = field(default_factory=CostReport)


@dataclass(frozen=True)
class WorkloadResult:
    """One workload's recommendation with its waste findings and cost items."""

    recommendation: Recommendation
    waste: tuple[WasteFinding, ...]
    costs: tuple[CostItem, ...]


def _gpu_part(
    gpus: Sequence[GpuUsage],
    policy: SizingPolicy,
    prices: PriceTable,
    nodes: Mapping[str, NodeInfo],
) -> tuple[dict[str, GpuSizing], GpuRecommendation, list[WasteFinding], list[CostItem]]:
    """Per-container GPU sizing (the largest need over the container's pods) and the workload summary."""
    per_container: dict[str, GpuSizing] = {}
    for g in gpus:
        node = nodes.get(g.node)
        s = size_gpu(g, policy, node.labels.get("nvidia.com/mig.strategy") if node else None)
        prev = per_container.get(g.container)
        if prev is None:
            per_container[g.container] = s
            continue
        count = max(prev.count, s.count)
        # One MIG profile only when every pod of the container fits it; take the larger one.
        mig = None
        if prev.mig is not None and s.mig is not None:
            mig = max(prev.mig, s.mig, key=lambda p: (p.memory_gb, p.compute))
        reason = prev.reason if prev.count >= s.count else s.reason
        per_container[g.container] = GpuSizing(count, mig, reason, prev.resource)
    waste: list[WasteFinding] = []
    costs: list[CostItem] = []
    for g in gpus:
        cost = prices.gpu_cost(nodes.get(g.node), gpu_equivalents(g))
        finding = find_idle(
            g, policy.gpu_idle_threshold, policy.gpu_idle_window_hours, cost.hourly, cost.basis
        )
        if finding is not None:
            waste.append(finding)
        costs.append(
            CostItem(
                workload=g.workload,
                container=g.container,
                pod=g.pod,
                node=g.node,
                gpus=gpu_equivalents(g),
                hourly_cost=cost.hourly,
                wasted_hourly_cost=cost.hourly if finding is not None else 0.0,
                basis=cost.basis,
                instance_type=cost.instance_type,
            )
        )
    migs = {s.mig.resource for s in per_container.values() if s.mig is not None}
    all_idle = len(waste) == len(gpus) and bool(gpus)
    summary = GpuRecommendation(
        model=gpu_model(gpus[0].model_name),
        allocated=sum(g.gpu_count for g in gpus),
        sm_active_p95=max(g.activity.p95 for g in gpus),
        fb_used_max_bytes=int(max(g.fb_used_max_mib for g in gpus) * MIB),
        idle=all_idle,
        idle_since=max(w.idle_since for w in waste) if all_idle else None,
        suggested_resource=next(iter(migs)) if len(migs) == 1 and len(per_container) == 1 else None,
        hourly_cost=sum(c.hourly_cost for c in costs),
        wasted_hourly_cost=sum(c.wasted_hourly_cost for c in costs),
        activity_signal=gpus[0].activity_signal,
    )
    return per_container, summary, waste, costs


def _gpu_confidence(gpus: Sequence[GpuUsage], policy: SizingPolicy) -> float:
    """For a container known only from DCGM: span of its activity series over confidence_full_days."""
    span_days = max(
        (len(g.activity_series) * g.activity_series.step_seconds / SECONDS_PER_DAY for g in gpus), default=0.0
    )
    return (
        max(0.0, min(1.0, span_days / policy.confidence_full_days))
        if policy.confidence_full_days > 0
        else 1.0
    )


def _size_container(
    usage: ContainerUsage,
    autoscaler: Autoscaler | None,
    policy: SizingPolicy,
    bounds: Sequence[ContainerPolicy],
    ceilings: Ceilings,
    feeds: Mapping[Resource, Feed] | None = None,
) -> ContainerSizing:
    """Sized from the robust usage (recommender.sizing.robust); what it ignored ends the reason; `feeds`
    raise a static container's requests (a certain rising trend of its workload)."""
    robust = robust_usage(usage, ceilings)
    if is_batch(usage.workload):
        sized = size_batch(robust.usage, policy, bounds, ceilings)
    elif autoscaler is not None and is_autopilot(autoscaler) and not usage.init_container:
        sized = size_autopilot(robust.usage, autoscaler, policy, bounds, ceilings)
    else:
        sized = size_static(robust.usage, policy, bounds, ceilings, feeds)
    if not robust.notes:
        return sized
    return replace(sized, reason="; ".join((sized.reason, *robust.notes)))


def _feeds(
    workload: WorkloadRef, demand: WorkloadDemand | None, autoscaler: Autoscaler | None, policy: SizingPolicy
) -> dict[Resource, Feed]:
    """A certain rising trend of the workload's demand raises its requests, only where nothing else
    answers a rise: no horizontal autoscaler (replicas would absorb it), not batch (runs, not days)."""
    if demand is None or autoscaler is not None or is_batch(workload) or policy.forecast_feed_days <= 0:
        return {}
    try:
        return demand_feeds(demand, policy.forecast_feed_days)
    except (ValueError, np.linalg.LinAlgError):  # a trend is extra information; sizing stands without it
        return {}


def run_ceilings(snapshot: UsageSnapshot, policy: SizingPolicy) -> Ceilings:
    """The largest node's allocatable where the source reports it, else the configured ceilings."""
    return policy.ceilings().from_nodes(n.allocatable for n in snapshot.nodes)


def _gpu_count(resource: str, count: int, ceilings: Ceilings) -> tuple[int, str]:
    """A GPU count within the ceiling (MIG slices have none), and why it was lowered."""
    ceiling = ceilings.of(resource)
    if ceiling is None or count <= ceiling:
        return count, ""
    top = max(1, math.floor(ceiling))
    return top, f"{resource} {count} capped at {ceilings.where} {top}"


def _plausible_gpu(rec: GpuRecommendation) -> GpuRecommendation:
    """Summary values within what the contract holds: activity in [0, 1], framebuffer bytes int64-safe."""
    fb = rec.fb_used_max_bytes
    act = rec.sm_active_p95
    return replace(
        rec,
        sm_active_p95=min(1.0, max(0.0, act)) if math.isfinite(act) else 0.0,
        fb_used_max_bytes=min(max(0, fb), INT64_MAX),
    )


def _plausible_forecast(forecast: Forecast, ceilings: Ceilings, replicas: int) -> str:
    """Why the forecast is left out ("" when it is kept): each peak must be finite, non-negative and at most
    the ceiling times the containers' pods (the workload's total cannot be more), which is int64-safe."""
    for name, value, ceiling in (
        ("cpu", forecast.cpu_cores_peak, ceilings.cpu_cores),
        ("memory", forecast.memory_bytes_peak, ceilings.memory_bytes),
    ):
        top = min(ceiling * max(1, replicas), INT64_MAX / 1000 if name == "cpu" else float(INT64_MAX))
        if not (math.isfinite(value) and 0 <= value <= top):
            return f"implausible {name} demand peak {value:.3g} (at most {top:.3g} from {ceilings.where})"
    return ""


@dataclass(frozen=True)
class RunIndex:
    """The snapshot indexed once per run: each workload's usage and the nodes by name."""

    workloads: Mapping[WorkloadRef, WorkloadUsage]
    nodes: Mapping[str, NodeInfo]

    @staticmethod
    def of(snapshot: UsageSnapshot) -> RunIndex:
        return RunIndex(index_by_workload(snapshot), {n.name: n for n in snapshot.nodes})

    def with_valid_names(self) -> tuple[RunIndex, tuple[Skipped, ...]]:
        """This index less the containers whose name no Recommendation may hold (a metrics label that is
        not a Kubernetes name), each skipped with the reason: the workload's other containers are sized
        (a workload left with none is not)."""
        workloads: dict[WorkloadRef, WorkloadUsage] = {}
        skipped: list[Skipped] = []
        for ref, usage in self.workloads.items():
            names = {c.container for c in usage.containers} | {g.container for g in usage.gpus}
            problems = {n: p for n in sorted(names) if (p := container_name_problem(n)) is not None}
            skipped += [
                Skipped(Subject.of_workload(ref, n), f"container not sized: {p}") for n, p in problems.items()
            ]
            if not problems:
                workloads[ref] = usage
            elif len(problems) < len(names):
                workloads[ref] = replace(
                    usage,
                    containers=tuple(c for c in usage.containers if c.container not in problems),
                    gpus=tuple(g for g in usage.gpus if g.container not in problems),
                )
        return replace(self, workloads=workloads), tuple(skipped)


def recommend_workload(
    workload: WorkloadRef,
    snapshot: UsageSnapshot,
    policy: SizingPolicy,
    prices: PriceTable,
    now: datetime,
    bounds: Sequence[ContainerPolicy] = (),
    ceilings: Ceilings | None = None,
    index: RunIndex | None = None,
) -> WorkloadResult:
    """Size one workload; `index` (built once per run by `recommend`) spares a scan of the snapshot."""
    top = ceilings or run_ceilings(snapshot, policy)
    run = index or RunIndex.of(snapshot)
    usage = run.workloads.get(workload, WorkloadUsage())
    containers, gpus, demand = list(usage.containers), list(usage.gpus), usage.demand
    autoscaler = None if is_batch(workload) else usage.autoscaler  # Jobs have no scale subresource
    nodes = run.nodes
    mode: SizingMode = "autopilot" if is_autopilot(autoscaler) else "static"

    feeds = _feeds(workload, demand, autoscaler, policy)
    sized = {c.container: _size_container(c, autoscaler, policy, bounds, top, feeds) for c in containers}
    gpu_rec: GpuRecommendation | None = None
    waste: list[WasteFinding] = []
    costs: list[CostItem] = []
    gpu_sizing: dict[str, GpuSizing] = {}
    if gpus:
        gpu_sizing, gpu_rec, waste, costs = _gpu_part(gpus, policy, prices, nodes)
        gpu_rec = _plausible_gpu(gpu_rec)

    out: list[ContainerRecommendation] = []
    for name in sorted(set(sized) | set(gpu_sizing)):
        s = sized.get(name)
        g = gpu_sizing.get(name)
        requests, limits = s.formatted() if s is not None else ({}, {})
        reasons = [s.reason] if s is not None else []
        capped = ""
        if g is not None:
            reasons.append(g.reason)
            if g.resource is not None:
                count, note = clip_count(g.resource, g.count, policy_for(name, bounds))
                count, capped = _gpu_count(g.resource, count, top)
                requests[g.resource] = limits[g.resource] = format_count(count)
                reasons.extend(n for n in (note, capped) if n)
        if s is not None:
            confidence, low = s.confidence, s.low_confidence
        else:
            confidence = _gpu_confidence([x for x in gpus if x.container == name], policy)
            low = is_low(confidence, policy)
            if low and not capped:
                reasons.append(f"low confidence {confidence:.2f} (short GPU history): not applied")
        if capped:  # beyond the ceiling: no real container's count, refused (as static.implausible_series)
            confidence, low = 0.0, True
            reasons.append("implausible GPU count: not applied")
        mix = next((describe(c.request_mix) for c in containers if c.container == name), "")
        reasons.extend([mix] if mix else [])
        out.append(
            ContainerRecommendation(
                name=name,
                requests=requests,
                limits=limits,
                confidence=confidence,
                reason="; ".join(reasons),
                low_confidence=low,
            )
        )

    forecast: Forecast | None = None
    forecast_note = ""
    if demand is not None:
        try:
            forecast = forecast_demand(demand, policy.forecast_horizon_days)
        except ValueError as exc:  # a forecast is extra information; sizing stands without it
            forecast_note = f"; forecast unavailable: {exc}"
        pods = sum(c.pods for c in containers)
        implausible = _plausible_forecast(forecast, top, pods) if forecast is not None else ""
        if implausible:
            forecast, forecast_note = None, f"; forecast unavailable: {implausible}"

    if is_batch(workload):
        reason = batch_reason(workload, containers, policy)
    elif autoscaler is not None and mode == "autopilot":
        reason = f"autopilot: {label(autoscaler)}"
    elif autoscaler is not None:
        reason = f"static: {autoscaler.kind} {autoscaler.name} targets neither cpu nor memory"
    else:
        reason = "static: no horizontal autoscaler"
    reason += forecast_note
    rec = Recommendation(
        target=workload,
        generated_at=now,
        window=Window(
            snapshot.window_start,
            snapshot.window_end,
            max((c.samples for c in containers), default=0),
        ),
        sizing_mode=mode,
        containers=tuple(out),
        reason=reason,
        gpu=gpu_rec,
        forecast=forecast,
        policy=tuple(bounds),
    )
    return WorkloadResult(rec, tuple(waste), tuple(costs))


def recommend(
    snapshot: UsageSnapshot,
    policy: SizingPolicy,
    prices: PriceTable,
    now: datetime,
    bounds: Mapping[WorkloadRef, tuple[ContainerPolicy, ...]] | None = None,
) -> RecommendationRun:
    """Size every workload of the snapshot; a failing workload becomes a Skipped entry."""
    bounds = bounds or {}
    ceilings = run_ceilings(snapshot, policy)
    index, refused = RunIndex.of(snapshot).with_valid_names()
    recs: list[Recommendation] = []
    skipped: list[Skipped] = [*snapshot.skipped, *refused]
    waste: list[WasteFinding] = []
    costs: list[CostItem] = []
    for workload in index.workloads:
        try:
            result = recommend_workload(
                workload, snapshot, policy, prices, now, bounds.get(workload, ()), ceilings, index
            )
            check_recommendation(result.recommendation)  # what no store could write is not a result
        except Exception as exc:  # one bad workload never stops the run
            why = f"sizing failed: {type(exc).__name__}: {exc}"
            skipped.append(Skipped(Subject.of_workload(workload), why, failed=True))
            continue
        recs.append(result.recommendation)
        waste.extend(result.waste)
        costs.extend(result.costs)
    return RecommendationRun(tuple(recs), tuple(skipped), tuple(waste), CostReport.of(costs))
