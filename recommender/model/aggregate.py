"""Turns raw per-pod samples (RawDataset) into the usage model (UsageSnapshot) with vectorised numpy.

Rules:
- Every source produces a RawDataset and this is the one place it becomes a UsageSnapshot.
- Every pod is resolved to its workload through `OwnerGraph`; pods that resolve to `Skipped`
  (DeploymentConfig deployer/hook pods, bare pods, unsupported owners, pods without PodInfo) are left
  out of every aggregate and listed once in `snapshot.skipped`.
- Impossible samples (negative, infinite, above the largest node's allocatable where the nodes report it)
  are gaps, counted per (workload, container) in ContainerUsage.rejected; a container whose every sample
  of a resource was rejected keeps NaN quantiles for it, so sizing skips the workload with that reason.
- Per (workload, container): cpu/memory Quantiles (second_max and min too) over all finite samples of all
  its pods, weighted by recency (recommender.model.recency: the age decay and the replaced-template rule;
  percentiles and mean weighted, max/second_max/min not; pods of a replaced template left out drop their
  OOM kills too); the per-replica steady state is the median across pods of each pod's median;
  requests/limits come from the most recently seen pod's spec; samples, pods and first_seen count every
  pod (the workload's history). A container with no finite cpu or memory sample is skipped.
  `samples` counts raw samples: a pre-reduced series (ContainerSamples.samples set) brings its own count.
  `runs` counts the distinct Jobs (owner_kind Job) of the pods with samples: a CronJob's runs.
- GPUs: one GpuUsage per (workload, container, pod) — the sizing engine takes the largest need over a
  container's pods and prices each pod. Activity is the mean over the pod's GPUs per timestamp, from
  the best signal every GPU of the pod exports: SM_ACTIVE, else GR_ENGINE_ACTIVE, else GPU_UTIL / 100.
- Each workload's pod template (labels, `podsizer.io/` annotations) is its pod seen last: the one input
  of the pod plan for every consumer (UsageSnapshot.pod_meta).
- Demand per workload: per pod and container the mean within each hour, summed over pods and
  (non-init) containers; hours without any sample are NaN.
- Time buckets (activity, demand) are those of timegrid: [start + i*step, start + (i+1)*step).
- A dataset of one cluster of several (RawDataset.cluster) puts every workload in that cluster
  (recommender.model.clusters).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import cast

import numpy as np
import numpy.typing as npt

from podsizer.api.identity import WorkloadRef
from podsizer.keys import ours
from podsizer.owners import OwnerGraph, PodOwner, Skipped
from podsizer.subject import Subject
from recommender.model import (
    ActivitySignal,
    ContainerUsage,
    FloatArray,
    GpuUsage,
    Quantiles,
    RejectedSamples,
    TimeSeries,
    UsageSnapshot,
    WorkloadDemand,
)
from recommender.model.clusters import snapshot_in
from recommender.model.raw import ContainerSamples, GpuSamples, PodInfo, RawDataset
from recommender.model.recency import DEFAULT as DEFAULT_RECENCY
from recommender.model.recency import (
    PodSpan,
    Recency,
    template_of,
    template_rule,
    weighted_mean,
    weighted_quantiles,
)
from recommender.model.recurrence import DAY_S, DayUsage, recurring
from recommender.model.request_mix import request_mix
from recommender.model.timegrid import bucket_count, bucket_max, bucket_mean, present_sums

ACTIVITY_STEP_SECONDS = 300.0
DEMAND_STEP_SECONDS = 3600.0
HOUR_S = 3600.0
_QS = (0.5, 0.9, 0.95, 0.99)

Resolver = Callable[[str, str], WorkloadRef | Skipped]


def owner_graph(raw: RawDataset) -> OwnerGraph:
    """The OwnerGraph described by a RawDataset's pods and owner links."""
    return OwnerGraph.build(
        [
            PodOwner(p.namespace, p.name, p.owner_kind, p.owner_name, p.labels, p.annotations)
            for p in raw.pods
        ],
        [(o.namespace, o.kind, o.name, o.owner_kind, o.owner_name) for o in raw.owners],
    )


def _dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def _chunks(groups: Iterable[list[int]], rows: int = 256) -> Iterator[list[int]]:
    """Index groups split so that one stacked matrix stays small (rows x samples)."""
    for idx in groups:
        for i in range(0, len(idx), rows):
            yield idx[i : i + rows]


def _top_two(m: FloatArray, low: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Each row's largest and second-largest value (the largest again for a one-column matrix), by two
    max passes instead of a partition: the largest is swapped for the row's minimum `low` (the second is
    at least that) and swapped back; `m` is restored."""
    rows = np.arange(m.shape[0])
    at = m.argmax(axis=1)
    mx = m[rows, at]
    if m.shape[1] < 2:
        return mx, mx
    m[rows, at] = low
    second = m.max(axis=1)
    m[rows, at] = mx
    return mx, second


def _row_stats(arrays: Sequence[FloatArray], weights: Sequence[FloatArray | None]) -> list[Quantiles]:
    """Quantiles of each (finite, non-empty) array, weighted where it has weights (percentiles and mean;
    recency.weighted_quantiles); arrays of equal length (and alike weighted or not) are one matrix."""
    out: list[Quantiles | None] = [None] * len(arrays)
    by_len: dict[tuple[int, bool], list[int]] = defaultdict(list)
    for i, a in enumerate(arrays):
        by_len[(a.size, weights[i] is not None)].append(i)
    for idx in _chunks(by_len.values()):
        m = np.stack([arrays[i] for i in idx]) if len(idx) > 1 else arrays[idx[0]][None, :].copy()
        if weights[idx[0]] is None:
            q, mean = np.quantile(m, _QS, axis=1), m.mean(axis=1)
        else:
            w = np.stack([cast(FloatArray, weights[i]) for i in idx])
            q, mean = weighted_quantiles(m, w, _QS), weighted_mean(m, w)
        low = m.min(axis=1)
        mx, second = _top_two(m, low)
        for j, i in enumerate(idx):
            out[i] = Quantiles(
                float(q[0, j]),
                float(q[1, j]),
                float(q[2, j]),
                float(q[3, j]),
                float(mx[j]),
                float(mean[j]),
                second_max=float(second[j]),
                min=float(low[j]),
            )
    return [q for q in out if q is not None]


def _row_medians(arrays: Sequence[FloatArray]) -> FloatArray:
    """Median of each non-empty array (NaN for an empty one), batched by length."""
    out = np.full(len(arrays), np.nan)
    by_len: dict[int, list[int]] = defaultdict(list)
    for i, a in enumerate(arrays):
        if a.size:
            by_len[a.size].append(i)
    for idx in _chunks(by_len.values()):
        m = np.stack([arrays[i] for i in idx]) if len(idx) > 1 else arrays[idx[0]][None, :]
        out[idx] = np.median(m, axis=1)
    return out


def _pooled(arrays: list[FloatArray]) -> FloatArray:
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _median_of(values: FloatArray) -> float:
    """Median of the finite values (one per pod: few, so in Python rather than numpy's per-call cost)."""
    finite = _finite(values)
    return float(statistics.median(finite.tolist())) if finite.size else math.nan


def _finite(a: FloatArray) -> FloatArray:
    mask = np.isfinite(a)
    return a if mask.all() else a[mask]


@dataclass
class _ContainerGroup:
    workload: WorkloadRef
    container: str
    series: list[ContainerSamples]
    rejected: dict[tuple[str, str], int] = field(default_factory=dict)  # (resource, rule) -> samples
    weights: list[float] = field(default_factory=list)  # per series: the template rule's factor
    templates: list[str | None] = field(default_factory=list)  # per series: its pod template
    replaced: list[ContainerSamples] = field(default_factory=list)  # left out: pods of a replaced template
    note: str = ""  # what the template rule did (TemplateVerdict.note)


_RESOURCES = ("cpu", "memory")
_FINITE_MAX = float(np.finfo(np.float64).max)


def largest_allocatable(raw: RawDataset) -> dict[str, float]:
    """The largest cpu and memory allocatable over the nodes that report it (nothing above can be used)."""
    out: dict[str, float] = {}
    for node in raw.nodes:
        for resource in _RESOURCES:
            value = node.allocatable.get(resource)
            if value is not None and math.isfinite(value) and value > 0:
                out[resource] = max(out.get(resource, 0.0), value)
    return out


def masked(
    s: ContainerSamples, top: dict[str, float], counts: dict[tuple[str, str], int]
) -> ContainerSamples:
    """The series with impossible samples turned into gaps (NaN), each counted in `counts` by rule."""
    arrays = {"cpu": s.cpu_cores, "memory": s.memory_bytes}
    changed = False
    for resource, a in arrays.items():
        if a.size == 0 or (np.fmin.reduce(a) >= 0 and np.fmax.reduce(a) <= top.get(resource, _FINITE_MAX)):
            continue  # the usual case, in two reductions that skip NaN gaps and allocate nothing
        infinite = np.isinf(a)
        with np.errstate(invalid="ignore"):
            negative = a < 0
            above = (a > top[resource]) & ~infinite if resource in top else np.zeros_like(infinite)
        bad = infinite | negative | above
        if not bad.any():
            continue
        for rule, mask in (
            ("non-finite", infinite & ~negative),
            ("negative", negative),
            ("above-allocatable", above),
        ):
            n = int(np.count_nonzero(mask))
            if n:
                counts[(resource, rule)] = counts.get((resource, rule), 0) + n
        arrays[resource] = np.where(bad, np.nan, a)
        changed = True
    return replace(s, cpu_cores=arrays["cpu"], memory_bytes=arrays["memory"]) if changed else s


@dataclass
class Resolution:
    resolve: Resolver
    skipped: dict[Subject, Skipped]

    def workload(self, namespace: str, pod: str) -> WorkloadRef | None:
        r = self.resolve(namespace, pod)
        if isinstance(r, Skipped):
            self.skipped.setdefault(r.subject, r)
            return None
        return r


def memo(resolver: Resolver) -> Resolver:
    cache: dict[tuple[str, str], WorkloadRef | Skipped] = {}

    def resolve(namespace: str, pod: str) -> WorkloadRef | Skipped:
        key = (namespace, pod)
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = resolver(namespace, pod)
        return hit

    return resolve


def _container_usage(
    group: _ContainerGroup,
    pods: dict[tuple[str, str], PodInfo],
    oom: dict[tuple[WorkloadRef, str], float],
    cpu_q: Quantiles,
    mem_q: Quantiles,
    cpu_pod_medians: FloatArray,
    mem_pod_medians: FloatArray,
) -> ContainerUsage:
    first = math.inf
    last = -math.inf
    samples = 0
    latest_pod: ContainerSamples | None = None
    latest_t = -math.inf
    pod_names: set[str] = set()
    for s in group.series:
        seen = np.isfinite(s.cpu_cores) | np.isfinite(s.memory_bytes)
        n = int(np.count_nonzero(seen))
        if n == 0:
            continue
        samples += n if s.samples is None else s.samples
        pod_names.add(s.pod)
        ts = s.timestamps[seen]
        first = min(first, float(ts.min()))
        t_last = float(ts.max())
        if t_last > latest_t:
            latest_t, latest_pod = t_last, s
        last = max(last, t_last)
    for s in group.replaced:  # history facts (samples, pods, first seen) count them too
        seen = np.isfinite(s.cpu_cores) | np.isfinite(s.memory_bytes)
        n = int(np.count_nonzero(seen))
        if n:
            samples += n if s.samples is None else s.samples
            pod_names.add(s.pod)
            first = min(first, float(s.timestamps[seen].min()))
    info = pods.get((latest_pod.namespace, latest_pod.pod)) if latest_pod is not None else None
    init = any(
        group.container in p.init_containers
        for s in group.series
        if (p := pods.get((s.namespace, s.pod))) is not None
    )
    jobs = {
        p.owner_name
        for s in group.series
        if s.pod in pod_names and (p := pods.get((s.namespace, s.pod))) is not None and p.owner_kind == "Job"
    }
    return ContainerUsage(
        workload=group.workload,
        container=group.container,
        cpu_cores=cpu_q,
        memory_bytes=mem_q,
        per_replica_cpu_cores=_median_of(cpu_pod_medians),
        per_replica_memory_bytes=_median_of(mem_pod_medians),
        samples=samples,
        first_seen=_dt(first),
        last_seen=_dt(last),
        pods=len(pod_names),
        oom_kill_memory_bytes=oom.get((group.workload, group.container)),
        rejected=tuple(
            RejectedSamples(resource, rule, n)  # type: ignore[arg-type]
            for (resource, rule), n in sorted(group.rejected.items())
        ),
        current_requests=dict(info.requests.get(group.container, {})) if info else {},
        current_limits=dict(info.limits.get(group.container, {})) if info else {},
        init_container=init,
        runs=len(jobs),
        recency_note=group.note,
        request_mix=request_mix(
            p.requests.get(group.container, {})
            for name in sorted(pod_names - {r.pod for r in group.replaced})
            if (p := pods.get((group.workload.namespace, name))) is not None
        ),
    )


_Usable = tuple[_ContainerGroup, FloatArray, FloatArray, FloatArray | None, FloatArray | None]


def _weights(g: _ContainerGroup, recency: Recency) -> tuple[FloatArray | None, FloatArray | None]:
    """The pooled cpu and memory samples' weights (age decay x template factor), finite samples only;
    None when every sample weighs alike."""
    factors = g.weights or [1.0] * len(g.series)
    if not recency.decays and all(f == 1.0 for f in factors):
        return None, None
    newest = max((float(s.timestamps[-1]) for s in g.series if s.timestamps.size), default=0.0)
    per = [recency.age_weights(s.timestamps, newest) for s in g.series]
    for f, w in zip(factors, per, strict=True):
        if f != 1.0:
            w *= f
    cpu = _pooled([_like_finite(w, s.cpu_cores) for w, s in zip(per, g.series, strict=True)])
    mem = _pooled([_like_finite(w, s.memory_bytes) for w, s in zip(per, g.series, strict=True)])
    return cpu, mem


def _like_finite(w: FloatArray, values: FloatArray) -> FloatArray:
    """The weights of values' finite samples (as _finite keeps them)."""
    mask = np.isfinite(values)
    return w if mask.all() else w[mask]


def _usable(
    groups: list[_ContainerGroup], skipped: dict[Subject, Skipped], recency: Recency
) -> Iterator[_Usable]:
    """Groups with finite cpu and memory samples, with those samples (and their weights) pooled over the
    pods."""
    for g in groups:
        cpu = _finite(_pooled([s.cpu_cores for s in g.series]))
        mem = _finite(_pooled([s.memory_bytes for s in g.series]))
        subject = Subject.of_workload(g.workload, g.container)
        cpu_gone = cpu.size == 0 and any(r == "cpu" for r, _ in g.rejected)
        mem_gone = mem.size == 0 and any(r == "memory" for r, _ in g.rejected)
        if cpu_gone != mem_gone:  # one resource's samples all rejected: NaN, so sizing names it and skips
            cpu, mem = (np.array([np.nan]) if cpu_gone else cpu), (np.array([np.nan]) if mem_gone else mem)
        missing = [name for name, a in (("cpu", cpu), ("memory", mem)) if a.size == 0]
        if missing:
            why = f"no finite {' or '.join(missing)} samples"
            if g.rejected:
                why += f" ({sum(g.rejected.values())} rejected: negative, infinite or above node allocatable)"
            skipped.setdefault(subject, Skipped(subject, why))
            continue
        cpu_w, mem_w = _weights(g, recency)
        yield (
            g,
            cpu,
            mem,
            (cpu_w if cpu_w is not None and cpu_w.size == cpu.size else None),
            (mem_w if mem_w is not None and mem_w.size == mem.size else None),
        )


def alone(u: _Usable) -> bool:
    """One pod's unweighted samples: its p50 is its median."""
    return len(u[0].series) == 1 and u[3] is None and u[4] is None


def _by_template(group: _ContainerGroup, pods: dict[tuple[str, str], PodInfo], recency: Recency) -> None:
    """The template rule (recommender.model.recency) on a group: each series' factor; series of a
    replaced template at factor 0 move to `replaced`."""
    spans = []
    for s in group.series:
        info = pods.get((s.namespace, s.pod))
        ts = s.timestamps
        spans.append(
            PodSpan(
                template_of(info.owner_kind, info.owner_name) if info else None,
                float(ts[0]) if ts.size else math.inf,
                float(ts[-1]) if ts.size else -math.inf,
            )
        )
    verdict = template_rule(spans, recency)
    factors = verdict.weights
    group.note = verdict.note()
    kept = [(s, f, span.template) for s, f, span in zip(group.series, factors, spans, strict=True) if f > 0]
    group.replaced = [s for s, f in zip(group.series, factors, strict=True) if f <= 0]
    group.series, group.weights = [s for s, _, _ in kept], [f for _, f, _ in kept]
    group.templates = [t for _, _, t in kept]


def _containers(
    groups: list[_ContainerGroup],
    pods: dict[tuple[str, str], PodInfo],
    oom: dict[tuple[WorkloadRef, str], float],
    skipped: dict[Subject, Skipped],
    recency: Recency,
    batch: int = 512,
) -> list[ContainerUsage]:
    """ContainerUsage per group, `batch` groups at a time so pooled copies stay small."""
    out: list[ContainerUsage] = []
    usable = _usable(groups, skipped, recency)
    while chunk := list(itertools.islice(usable, batch)):
        cpu_qs = _row_stats([u[1] for u in chunk], [u[3] for u in chunk])
        mem_qs = _row_stats([u[2] for u in chunk], [u[4] for u in chunk])
        # Per-pod medians (unweighted), batched over every series of every multi-pod group; an unweighted
        # group of one series already has its median as p50.
        multi = [s for u in chunk if not alone(u) for s in u[0].series]
        cpu_med = _row_medians([_finite(s.cpu_cores) for s in multi])
        mem_med = _row_medians([_finite(s.memory_bytes) for s in multi])
        offset = 0
        for i, u in enumerate(chunk):
            g = u[0]
            if alone(u):
                cpu_pods, mem_pods = np.array([cpu_qs[i].p50]), np.array([mem_qs[i].p50])
            else:
                sl = slice(offset, offset + len(g.series))
                offset += len(g.series)
                cpu_pods, mem_pods = cpu_med[sl], mem_med[sl]
            kept = recurring(cpu_qs[i], [d for series in _live(g) for d in day_usage(series)], recency)
            g.note = "; ".join(x for x in (g.note, kept.note) if x)
            out.append(_container_usage(g, pods, oom, kept.cpu, mem_qs[i], cpu_pods, mem_pods))
    return out


def _live(g: _ContainerGroup) -> list[list[ContainerSamples]]:
    """The group's series of templates still running (the template rule's factor 1), by template."""
    factors = g.weights or [1.0] * len(g.series)
    templates = g.templates or [None] * len(g.series)
    by: dict[str | None, list[ContainerSamples]] = defaultdict(list)
    for s, f, t in zip(g.series, factors, templates, strict=True):
        if f >= 1.0:
            by[t].append(s)
    return list(by.values())


def day_usage(series: Sequence[ContainerSamples]) -> list[DayUsage]:
    """Each UTC day of the series' finite CPU samples pooled (one template's pods): p50, p90, p95 and p99
    (the sample at each rank, as a histogram reads it) and the hours with samples
    (recommender.model.recurrence's input)."""
    parts = [(s.timestamps[ok], s.cpu_cores[ok]) for s in series if (ok := np.isfinite(s.cpu_cores)).any()]
    if not parts:
        return []
    ts = np.concatenate([t for t, _ in parts])
    values = np.concatenate([v for _, v in parts])
    days = np.floor(ts / DAY_S).astype(np.int64)
    order = np.argsort(days, kind="stable")
    days, ts, values = days[order], ts[order], values[order]
    cuts = np.flatnonzero(np.diff(days)) + 1
    out = []
    for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), days.size], strict=True):
        p50, p90, p95, p99 = np.quantile(values[lo:hi], _QS, method="inverted_cdf")
        hours = np.unique(np.floor(ts[lo:hi] / HOUR_S)).size
        out.append(DayUsage(int(days[lo]), int(hours), (float(p50), float(p90), float(p95), float(p99))))
    return out


def hourly_means(
    series: Sequence[ContainerSamples], start: float, step: float, n: int
) -> list[tuple[FloatArray, FloatArray]]:
    """Mean cpu and memory of each series within each demand step (NaN where it has no sample); series
    over the same timestamps (a shared grid) are bucketed together, 256 at a time."""
    by_grid: dict[tuple[int, float, float], list[int]] = defaultdict(list)
    for i, s in enumerate(series):
        ts = s.timestamps
        by_grid[(ts.size, float(ts[0]), float(ts[-1])) if ts.size else (0, 0.0, 0.0)].append(i)
    out: list[tuple[FloatArray, FloatArray]] = [(np.empty(0), np.empty(0))] * len(series)
    for idx in _chunks(by_grid.values()):
        ts = series[idx[0]].timestamps
        same = [i for i in idx if np.array_equal(series[i].timestamps, ts)]
        for i in set(idx) - set(same):  # same size and ends, other timestamps: on its own
            s = series[i]
            one = bucket_mean(s.timestamps, np.stack([s.cpu_cores, s.memory_bytes]), start, step, n)
            out[i] = (one[0], one[1])
        rows = np.stack([series[i].cpu_cores for i in same] + [series[i].memory_bytes for i in same])
        means = bucket_mean(ts, rows, start, step, n)
        for j, i in enumerate(same):
            out[i] = (means[j], means[len(same) + j])
    return out


def _demand(
    groups: Iterable[_ContainerGroup],
    pods: dict[tuple[str, str], PodInfo],
    start: float,
    end: float,
    step: float,
) -> list[WorkloadDemand]:
    n_hours = bucket_count(start, end, step)
    per_workload: dict[WorkloadRef, list[ContainerSamples]] = defaultdict(list)
    for g in groups:
        for s in (*g.series, *g.replaced):  # demand is every pod's, replaced templates' too
            info = pods.get((s.namespace, s.pod))
            if info is not None and s.container in info.init_containers:
                continue
            per_workload[g.workload].append(s)
    out: list[WorkloadDemand] = []
    t0 = _dt(start)
    ordered = sorted(per_workload)
    means: Iterator[tuple[FloatArray, FloatArray]] = iter(())
    for k, workload in enumerate(ordered):
        if k % 128 == 0:  # the next 128 workloads' series bucketed together; their means only then
            batch = [s for w in ordered[k : k + 128] for s in per_workload[w]]
            means = iter(hourly_means(batch, start, step, n_hours))
        cpu_rows, mem_rows = zip(*(next(means) for _ in per_workload[workload]), strict=True)
        one = np.zeros(1, dtype=np.int64)  # every row one group: the workload's
        sums = [present_sums(np.stack(rows), one)[0] for rows in (cpu_rows, mem_rows)]
        out.append(
            WorkloadDemand(
                workload,
                TimeSeries(t0, step, sums[0]),
                TimeSeries(t0, step, sums[1]),
            )
        )
    return out


def gpu_activity(g: GpuSamples, signal: ActivitySignal) -> FloatArray | None:
    if signal == "SM_ACTIVE":
        return g.sm_active
    if signal == "GR_ENGINE_ACTIVE":
        return g.gr_engine_active
    return None if g.gpu_util_percent is None else g.gpu_util_percent / 100.0


def _has(a: FloatArray | None) -> bool:
    return a is not None and bool(np.isfinite(a).any())


def pick_signal(gpus: Sequence[GpuSamples]) -> ActivitySignal | None:
    for signal in ("SM_ACTIVE", "GR_ENGINE_ACTIVE", "GPU_UTIL"):
        if all(_has(gpu_activity(g, signal)) for g in gpus):
            return signal
    return None


def _across_gpus(
    gpus: Sequence[GpuSamples], arrays: Sequence[FloatArray], how: str
) -> tuple[FloatArray, FloatArray]:
    """(timestamps, values): per-timestamp mean/sum over the GPUs when they share timestamps, else the
    samples pooled (sorted by time)."""
    if len(gpus) == 1:
        return gpus[0].timestamps, arrays[0]
    same = all(
        g.timestamps.shape == gpus[0].timestamps.shape and np.array_equal(g.timestamps, gpus[0].timestamps)
        for g in gpus[1:]
    )
    if not same:
        ts = np.concatenate([g.timestamps for g in gpus])
        order = np.argsort(ts, kind="stable")
        return ts[order], np.concatenate(arrays)[order]
    m = np.stack(arrays)
    finite = np.isfinite(m)
    counts = finite.sum(axis=0)
    totals = np.where(finite, m, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        combined = totals / counts if how == "mean" else totals
    return gpus[0].timestamps, np.where(counts > 0, combined, np.nan)


def _gpu_usage(
    workload: WorkloadRef,
    container: str,
    pod: str,
    node: str,
    gpus: list[GpuSamples],
    start: float,
    end: float,
    step: float,
) -> GpuUsage | Skipped:
    subject = Subject.of_workload(workload, container, pod=pod, resource="gpu")
    signal = pick_signal(gpus)
    if signal is None:
        return Skipped(subject, "no GPU activity signal (SM_ACTIVE, GR_ENGINE_ACTIVE, GPU_UTIL) on every GPU")
    acts = [a for g in gpus if (a := gpu_activity(g, signal)) is not None]
    ts, activity = _across_gpus(gpus, acts, "mean")
    series = bucket_max(ts, activity, start, step, bucket_count(start, end, step))
    dram = [g.dram_active for g in gpus if g.dram_active is not None]
    dram_q = (
        Quantiles.of(_across_gpus(gpus, dram, "mean")[1])
        if len(dram) == len(gpus) and all(_has(d) for d in dram)
        else None
    )
    _, used = _across_gpus(gpus, [g.fb_used_mib for g in gpus], "sum")
    used_f = _finite(used)
    fb_total = 0.0
    for g in gpus:
        cap = _finite(g.fb_used_mib + g.fb_free_mib)
        fb_total += (float(cap.max()) if cap.size else 0.0) + g.fb_reserved_mib
    profiles = sorted({g.mig_profile for g in gpus if g.mig_profile})
    return GpuUsage(
        workload=workload,
        container=container,
        pod=pod,
        node=node,
        model_name=gpus[0].model_name,
        gpu_count=len({(g.uuid, g.mig_instance_id) for g in gpus}),
        activity_signal=signal,
        activity=Quantiles.of(activity),
        fb_used_max_mib=float(used_f.max()) if used_f.size else 0.0,
        fb_total_mib=fb_total,
        activity_series=TimeSeries(_dt(start), step, series),
        dram_active=dram_q,
        mig_profile="+".join(profiles) if profiles else None,
        uuids=tuple(sorted({g.uuid for g in gpus})),
    )


def _gpu_usages(
    gpus: Iterable[GpuSamples],
    res: Resolution,
    start: float,
    end: float,
    step: float,
    nodes_of_pods: dict[tuple[str, str], str],
) -> list[GpuUsage]:
    """GpuUsage per (workload, container, pod) from dcgm-exporter samples."""
    groups: dict[tuple[WorkloadRef, str, str, str], list[GpuSamples]] = defaultdict(list)
    for g in gpus:
        if not g.pod:
            subject = Subject.of_gpu(g.hostname, g.uuid, g.mig_instance_id)
            res.skipped.setdefault(subject, Skipped(subject, "GPU not attached to a pod"))
            continue
        workload = res.workload(g.namespace, g.pod)
        if workload is None:
            continue
        groups[(workload, g.container, g.namespace, g.pod)].append(g)
    out: list[GpuUsage] = []
    for (workload, container, namespace, pod), members in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][3])
    ):
        node = nodes_of_pods.get((namespace, pod)) or members[0].hostname
        usage = _gpu_usage(workload, container, pod, node, members, start, end, step)
        if isinstance(usage, Skipped):
            res.skipped.setdefault(usage.subject, usage)
        else:
            out.append(usage)
    return out


def _templates(raw: RawDataset, res: Resolution) -> dict[WorkloadRef, PodInfo]:
    """Each workload's pod template as its pod seen last shows it (latest container sample; later in the
    dataset on a tie): the one rule for the labels and annotations every consumer plans with."""
    last: dict[tuple[str, str], float] = {}
    for s in raw.containers:
        if s.timestamps.size:
            key = (s.namespace, s.pod)
            last[key] = max(last.get(key, -math.inf), float(s.timestamps[-1]))
    best: dict[WorkloadRef, tuple[float, PodInfo]] = {}
    for p in raw.pods:
        workload = res.workload(p.namespace, p.name)
        if workload is None:
            continue
        t = last.get((p.namespace, p.name), -math.inf)
        if workload not in best or t >= best[workload][0]:
            best[workload] = (t, p)
    return {w: p for w, (_, p) in best.items()}


def clip(raw: RawDataset, start: datetime, end: datetime) -> RawDataset:
    """The samples of `raw` with start <= t < end, and that window; pods, owners and nodes are kept."""
    lo, hi = start.timestamp(), end.timestamp()
    containers = []
    for s in raw.containers:
        keep = (s.timestamps >= lo) & (s.timestamps < hi)
        if keep.all():
            containers.append(s)
        elif keep.any():
            containers.append(
                replace(
                    s,
                    timestamps=s.timestamps[keep],
                    cpu_cores=s.cpu_cores[keep],
                    memory_bytes=s.memory_bytes[keep],
                    samples=None if s.samples is None else round(s.samples * keep.mean()),
                )
            )
    gpus = []
    for g in raw.gpus:
        keep = (g.timestamps >= lo) & (g.timestamps < hi)
        if keep.all():
            gpus.append(g)
        elif keep.any():

            def cut(a: FloatArray | None, keep: npt.NDArray[np.bool_] = keep) -> FloatArray | None:
                return None if a is None else a[keep]

            gpus.append(
                replace(
                    g,
                    timestamps=g.timestamps[keep],
                    fb_used_mib=g.fb_used_mib[keep],
                    fb_free_mib=g.fb_free_mib[keep],
                    sm_active=cut(g.sm_active),
                    gr_engine_active=cut(g.gr_engine_active),
                    gpu_util_percent=cut(g.gpu_util_percent),
                    dram_active=cut(g.dram_active),
                )
            )
    return replace(
        raw,
        start=start,
        end=end,
        containers=tuple(containers),
        gpus=tuple(gpus),
        ooms=tuple(o for o in raw.ooms if start <= o.at < end),
    )


def aggregate(
    raw: RawDataset,
    *,
    source: str,
    resolve: Resolver | None = None,
    demand_step: float = DEMAND_STEP_SECONDS,
    activity_step: float = ACTIVITY_STEP_SECONDS,
    recency: Recency = DEFAULT_RECENCY,
) -> UsageSnapshot:
    """The UsageSnapshot of a RawDataset (see the module docstring for the rules).

    resolve: owner resolution to use instead of the OwnerGraph of raw's pods and owner links (a source
    that carries no pods, like the DCGM scraper, brings the cluster's); recency: how samples weigh by
    age and template (recommender.model.recency; the default: the settings' defaults)."""
    res = Resolution(memo(resolve or owner_graph(raw).resolve), {s.subject: s for s in raw.skipped})
    pods = {(p.namespace, p.name): p for p in raw.pods}
    for p in raw.pods:
        res.workload(p.namespace, p.name)

    groups: dict[tuple[WorkloadRef, str], _ContainerGroup] = {}
    top = largest_allocatable(raw)
    for s in raw.containers:
        workload = res.workload(s.namespace, s.pod)
        if workload is None:
            continue
        key = (workload, s.container)
        group = groups.get(key)
        if group is None:
            group = groups[key] = _ContainerGroup(workload, s.container, [])
        group.series.append(masked(s, top, group.rejected))
    ordered = [groups[k] for k in sorted(groups)]
    for group in ordered:
        _by_template(group, pods, recency)
    replaced = {(s.namespace, s.pod, g.container) for g in ordered for s in g.replaced}

    oom: dict[tuple[WorkloadRef, str], float] = {}
    for o in raw.ooms:
        workload = res.workload(o.namespace, o.pod)
        if workload is None or not math.isfinite(o.memory_bytes):
            continue
        if (o.namespace, o.pod, o.container) in replaced:
            continue  # a replaced template's kill: that template no longer runs
        key = (workload, o.container)
        oom[key] = max(oom.get(key, -math.inf), o.memory_bytes)

    start, end = raw.start.timestamp(), raw.end.timestamp()
    containers = _containers(ordered, pods, oom, res.skipped, recency)
    demand = _demand(ordered, pods, start, end, demand_step)
    nodes_of_pods = {(p.namespace, p.name): p.node for p in raw.pods if p.node}
    gpu_usage = _gpu_usages(raw.gpus, res, start, end, activity_step, nodes_of_pods)
    templates = _templates(raw, res)
    snapshot = UsageSnapshot(
        window_start=raw.start,
        window_end=raw.end,
        containers=tuple(containers),
        gpus=tuple(gpu_usage),
        autoscalers=raw.autoscalers,
        nodes=raw.nodes,
        demand=tuple(demand),
        skipped=tuple(res.skipped.values()),
        source=source,
        pod_labels={w: dict(p.labels) for w, p in templates.items()},
        pod_annotations={w: a for w, p in templates.items() if (a := ours(p.annotations))},
    )
    return snapshot_in(snapshot, raw.cluster)  # every workload in the dataset's cluster
