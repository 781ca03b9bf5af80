"""The usage model and its one reading: per (workload, container, template) states, and how they read as
the ContainerUsage the sizing engine takes, for every source and command (a one-shot read is a cold start
of the same states; recommender.model.aggregate, recommender.model.stream, recommender.incremental).

Reading a container: its templates' states are weighed by the replaced-template rule
(recommender.model.recency.template_rule over each template's span); p50..p99 and the mean from the
weighed histograms, each percentile at most the peak, the CPU points then kept at recurring peaks
(recommender.model.recurrence over the running templates' days); max and second-highest from the daily
peaks of the window's days; OOM kills of the window; requests, limits and labels from the newest pod's
spec (and which requests the pods of the templates still weighed had: recommender.model.request_mix);
samples (from the window's first hour on), pods, Jobs and the first seen time over every template (first
seen no earlier than the window). The per-replica steady state is the pooled median: the weighed
histograms' p50 over every pod's samples (before the recurring-peaks rule). Demand: every state's hourly
demand summed per workload over the window's hours (UTC hour grid).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import numpy as np

from podsizer.api.identity import WorkloadRef
from podsizer.owners import Skipped
from podsizer.subject import Subject
from recommender.model import (
    ContainerUsage,
    FloatArray,
    Quantiles,
    RejectedSamples,
    TimeSeries,
    WorkloadDemand,
)
from recommender.model.histogram import CPU_BUCKETS, MEMORY_BUCKETS, Histogram, percentiles_of
from recommender.model.recency import PodSpan, Recency, template_rule
from recommender.model.recurrence import DayUsage, recurring
from recommender.model.request_mix import request_mix
from recommender.model.timegrid import bucket_count, present_sums
from recommender.model.usage_state import (
    CPU_RESETS,
    DAY_S,
    HOUR_S,
    PEAK_DAYS,
    Peak,
    StateKey,
    UsageState,
    open_day_points,
    state_order,
    top_distinct,
    workload_order,
)

_QS = (0.5, 0.9, 0.95, 0.99)


def _dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


@dataclass
class UsageModel:
    """Every state, and the time up to which samples are in them (epoch seconds)."""

    states: dict[StateKey, UsageState] = field(default_factory=dict)
    covered_until: float = math.nan
    built_at: float = math.nan
    """When the states were last rebuilt from the whole window (the cold start)."""
    behind: dict[WorkloadRef, float] = field(default_factory=dict)
    """Workloads whose states hold samples only up to an earlier time than covered_until (restored from
    a checkpoint object an interrupted or failed write left older): the next cycle reads from there."""

    def oldest(self) -> float:
        """The earliest time up to which some workload's samples are in the model."""
        return min([self.covered_until, *self.behind.values()])

    def forget_before(self, t: float) -> int:
        """Drops the states with no sample and no demand hour since `t`; returns how many."""
        gone = [
            k for k, s in self.states.items() if not (s.last_seen >= t) and (s.newest_hour + 1) * HOUR_S <= t
        ]
        for k in gone:
            del self.states[k]
        return len(gone)

    def nbytes(self) -> int:
        """Bytes of the states' arrays (histograms, daily peaks, demand)."""
        return sum(s.nbytes() for s in self.states.values())

    def by_container(self) -> dict[tuple[WorkloadRef, str], list[tuple[StateKey, UsageState]]]:
        out: dict[tuple[WorkloadRef, str], list[tuple[StateKey, UsageState]]] = defaultdict(list)
        for key in sorted(self.states, key=state_order):
            out[key.container_key].append((key, self.states[key]))
        return out


@dataclass(frozen=True)
class ModelView:
    """What the model says for one window: the sizing engine's container inputs, demand and labels."""

    containers: tuple[ContainerUsage, ...]
    demand: tuple[WorkloadDemand, ...]
    pod_labels: Mapping[WorkloadRef, Mapping[str, str]]
    pod_annotations: Mapping[WorkloadRef, Mapping[str, str]]
    skipped: tuple[Skipped, ...]


def _window_tops(states: Iterable[UsageState], since: float) -> tuple[list[float], list[float]]:
    """The PEAK_TOP highest cpu and memory samples of the window's days at distinct times (top_distinct),
    highest first; for a window longer than the PEAK_DAYS days held, each state's highest sample ever
    is a candidate too when it is above every held one (then it is from a day no longer held)."""
    cpu: list[Peak] = []
    mem: list[Peak] = []
    for s in states:
        c, m = s.window_peaks(since)
        if s.newest_day - math.floor(since / DAY_S) >= PEAK_DAYS:
            c += _older(s.cpu_peak, c)
            m += _older(s.memory_peak, m)
        cpu += c
        mem += m
    return [v for v, _ in top_distinct(cpu)], [v for v, _ in top_distinct(mem)]


def _older(peak: float, held: list[Peak]) -> list[Peak]:
    """The highest sample ever, as a sample of its own (time unknown: -inf), when above every held one."""
    above = math.isfinite(peak) and all(peak > v for v, _ in held)
    return [(peak, -math.inf)] if above else []


_NO_QUANTILES = Quantiles(math.nan, math.nan, math.nan, math.nan, math.nan, math.nan)


def _quantiles(points: FloatArray, mean: float, top: list[float]) -> Quantiles:
    """Quantiles from a histogram's p50, p90, p95, p99 and top-bucket value (NaN: empty) and the window's
    highest samples at distinct times (highest first): each percentile at most the peak."""
    if math.isnan(points[0]):
        return _NO_QUANTILES
    peak = top[0] if top else float(points[4])
    p50, p90, p95, p99 = (min(float(p), peak) for p in points[:4])
    second = top[1] if len(top) > 1 else peak
    third = top[2] if len(top) > 2 else None
    return Quantiles(p50, p90, p95, p99, peak, min(mean, peak), second_max=second, third_max=third)


@dataclass(frozen=True)
class _Pending:
    """A container read but for its quantiles, which come from all containers' histograms at once."""

    usage: ContainerUsage
    cpu: Histogram
    memory: Histogram
    cpu_top: list[float]
    memory_top: list[float]
    days: tuple[DayUsage, ...] = ()
    """The running templates' per-day CPU summaries (recommender.model.recurrence)."""


def _rejected(states: Iterable[UsageState]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for s in states:
        for k, n in s.facts.rejected.items():
            out[k] = out.get(k, 0) + n
    return out


def _usage(
    workload: WorkloadRef,
    container: str,
    members: list[tuple[StateKey, UsageState]],
    since: float,
    recency: Recency,
    open_points: Mapping[int, Mapping[int, list[float]]],
) -> _Pending | Skipped:
    """`open_points`: each state's open days' CPU summaries, by id(state) (open_day_points)."""
    seen = [(k, s) for k, s in members if s.samples > 0]
    subject = Subject.of_workload(workload, container)
    if not seen:
        return Skipped(subject, "no finite cpu or memory samples")
    verdict = template_rule(
        [PodSpan(k.template or None, s.first_seen, s.last_seen) for k, s in seen], recency
    )
    weighed = [(s, w) for (_, s), w in zip(seen, verdict.weights, strict=True)]
    kept = [s for s, w in weighed if w > 0]
    if len(seen) == 1:  # the usual case: one template, read as it is
        cpu, mem = seen[0][1].cpu, seen[0][1].memory
    else:
        half = seen[0][1].half_life_s
        cpu, mem = Histogram(CPU_BUCKETS, half), Histogram(MEMORY_BUCKETS, half)
        for (_, s), w in zip(seen, verdict.weights, strict=True):
            cpu.merge(s.cpu, w)
            mem.merge(s.memory, w)
    rejected = _rejected(s for _, s in members)
    missing = [name for name, h in (("cpu", cpu), ("memory", mem)) if h.is_empty()]
    if len(missing) == 2 or (missing and not any(r == missing[0] for r, _ in rejected)):
        why = f"no finite {' or '.join(missing)} samples"
        if rejected:
            why += f" ({sum(rejected.values())} rejected: negative, infinite or above node allocatable)"
        return Skipped(subject, why)
    cpu_top, mem_top = _window_tops(kept, since)
    states = [s for _, s in members]
    newest = max(states, key=lambda s: s.facts.newest_pod_at)
    ooms = [p for s in kept if (p := s.oom_peak(since)) is not None]
    first = min(s.first_seen for _, s in seen)
    usage = ContainerUsage(
        workload=workload,
        container=container,
        cpu_cores=_NO_QUANTILES,
        memory_bytes=_NO_QUANTILES,
        per_replica_cpu_cores=math.nan,
        per_replica_memory_bytes=math.nan,
        samples=sum(s.samples_since(since) for s in states),
        cpu_resets=sum(s.samples_since(since, CPU_RESETS) for s in states),
        first_seen=_dt(max(first, since)),
        last_seen=_dt(max(s.last_seen for _, s in seen)),
        pods=sum(s.facts.pods for s in states),
        oom_kill_memory_bytes=max(ooms) if ooms else None,
        current_requests=dict(newest.facts.requests),
        current_limits=dict(newest.facts.limits),
        init_container=any(s.facts.init_container for s in states),
        rejected=tuple(
            RejectedSamples(resource, rule, n)  # type: ignore[arg-type]
            for (resource, rule), n in sorted(rejected.items())
        ),
        runs=sum(s.facts.jobs for s in states),
        request_mix=request_mix(r for s in kept for r in s.facts.pod_requests.values()),
        recency_note=verdict.note(sum(s.facts.pods for s, w in weighed if w < 1.0)),
    )
    live = [s for (_, s), w in zip(seen, verdict.weights, strict=True) if w >= 1.0]
    days = tuple(d for s in live for d in s.day_usage(since, open_points[id(s)]))
    return _Pending(usage, cpu, mem, cpu_top, mem_top, days)


def _with_quantiles(pending: list[_Pending], recency: Recency) -> list[ContainerUsage]:
    """Every pending container's quantiles, computed over all their histograms at once."""
    qs = (*_QS, 1.0)
    cpu, cpu_mean = percentiles_of([p.cpu for p in pending], qs)
    mem, mem_mean = percentiles_of([p.memory for p in pending], qs)
    out = []
    for i, p in enumerate(pending):
        c = _quantiles(cpu[i], float(cpu_mean[i]), p.cpu_top)
        m = _quantiles(mem[i], float(mem_mean[i]), p.memory_top)
        kept = recurring(c, p.days, recency)
        out.append(
            replace(
                p.usage,
                cpu_cores=kept.cpu,
                memory_bytes=m,
                per_replica_cpu_cores=c.p50,
                per_replica_memory_bytes=m.p50,
                recency_note="; ".join(x for x in (p.usage.recency_note, kept.note) if x),
            )
        )
    return out


def _demand(
    per_workload: Mapping[WorkloadRef, list[UsageState]], start: float, end: float
) -> list[WorkloadDemand]:
    """Each workload's demand over the window's hours: its (non-init) states' hourly demand summed."""
    first_hour = math.floor(start / HOUR_S)
    hours = bucket_count(first_hour * HOUR_S, end, HOUR_S)
    t0 = _dt(first_hour * HOUR_S)
    workloads: list[WorkloadRef] = []
    cpu_rows: list[FloatArray] = []
    mem_rows: list[FloatArray] = []
    starts: list[int] = []
    for workload in sorted(per_workload, key=workload_order):
        rows = [
            s.demand_hours(first_hour, hours) for s in per_workload[workload] if not s.facts.init_container
        ]
        if rows:
            workloads.append(workload)
            starts.append(len(cpu_rows))
            cpu_rows += [r[0] for r in rows]
            mem_rows += [r[1] for r in rows]
    if not workloads:
        return []
    at = np.array(starts, dtype=np.int64)
    cpu, mem = present_sums(np.stack(cpu_rows), at), present_sums(np.stack(mem_rows), at)
    some: list[bool] = np.logical_or(np.isfinite(cpu).any(axis=1), np.isfinite(mem).any(axis=1)).tolist()
    return [
        WorkloadDemand(w, TimeSeries(t0, HOUR_S, cpu[i]), TimeSeries(t0, HOUR_S, mem[i]))
        for i, w in enumerate(workloads)
        if some[i]
    ]


def view(model: UsageModel, start: datetime, end: datetime, recency: Recency) -> ModelView:
    """The model read for the window [start, end] (module docstring)."""
    since = start.timestamp()
    pending: list[_Pending] = []
    skipped: list[Skipped] = []
    per_workload: dict[WorkloadRef, list[UsageState]] = defaultdict(list)
    labels: dict[WorkloadRef, tuple[float, Mapping[str, str], Mapping[str, str]]] = {}
    states = list(model.states.values())
    open_points = {id(s): points for s, points in zip(states, open_day_points(states), strict=True)}
    for (workload, container), members in model.by_container().items():
        usage = _usage(workload, container, members, since, recency, open_points)
        if isinstance(usage, Skipped):
            skipped.append(usage)
        else:
            pending.append(usage)
        for _, s in members:
            per_workload[workload].append(s)
            at = s.facts.newest_pod_at
            newer = workload not in labels or at >= labels[workload][0]
            if math.isfinite(at) and newer:  # a spec seen: the template is known, labels or not
                labels[workload] = (at, s.facts.labels, s.facts.annotations)
    return ModelView(
        containers=tuple(_with_quantiles(pending, recency)),
        demand=tuple(_demand(per_workload, since, end.timestamp())),
        pod_labels={w: dict(lab) for w, (_, lab, _) in labels.items()},
        pod_annotations={w: dict(ann) for w, (_, _, ann) in labels.items() if ann},
        skipped=tuple(skipped),
    )
