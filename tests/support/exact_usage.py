"""Exact figures of a RawDataset's samples, computed plainly for tests to hold the usage model's
histogram reading against: per container of one pod template, the recency-weighted percentiles of its
pooled samples (CPU then through the recurring-peaks rule over its exact days), its peaks, counts and
span; per workload, the hourly demand. Test oracle only: the product reads the model (usage_model.view)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from podsizer.api.identity import WorkloadRef
from recommender.model import FloatArray, Quantiles
from recommender.model.raw import ContainerSamples, RawDataset
from recommender.model.recency import Recency, template_of, weighted_quantiles
from recommender.model.recurrence import DayUsage, recurring
from recommender.model.samples import Allocatable, masked, owner_graph

QS = (0.5, 0.9, 0.95, 0.99)
HOUR_S = 3600.0
DAY_S = 86400.0


@dataclass(frozen=True)
class Exact:
    cpu: Quantiles
    memory: Quantiles
    samples: int
    pods: int
    first_seen: datetime
    last_seen: datetime


def _groups(raw: RawDataset) -> dict[tuple[WorkloadRef, str], list[ContainerSamples]]:
    resolve = owner_graph(raw).resolve
    pods = {(p.namespace, p.name): p for p in raw.pods}
    allocatable = Allocatable.of(raw)
    out: dict[tuple[WorkloadRef, str], list[ContainerSamples]] = defaultdict(list)
    templates: dict[tuple[WorkloadRef, str], set[str | None]] = defaultdict(set)
    for s in raw.containers:
        w = resolve(s.namespace, s.pod)
        info = pods.get((s.namespace, s.pod))
        if not isinstance(w, WorkloadRef) or info is None:
            continue
        out[(w, s.container)].append(masked(s, allocatable.ceilings(info, s.container), {}))
        templates[(w, s.container)].add(template_of(info.owner_kind, info.owner_name))
    return {k: v for k, v in out.items() if len(templates[k]) == 1}


def _days(ts: FloatArray, cpu: FloatArray) -> list[DayUsage]:
    days = np.floor(ts / DAY_S).astype(np.int64)
    out = []
    for d in np.unique(days).tolist():
        on = days == d
        p = np.quantile(cpu[on], QS, method="inverted_cdf")
        hours = int(np.unique(np.floor(ts[on] / HOUR_S)).size)
        out.append(DayUsage(d, hours, (float(p[0]), float(p[1]), float(p[2]), float(p[3]))))
    return out


def _top_at_distinct_times(values: FloatArray, ts: FloatArray) -> list[float]:
    """The three highest of the per-time maxima (pods scraped at one time count once), highest first."""
    per_time: dict[float, float] = {}
    for t, v in zip(ts.tolist(), values.tolist(), strict=True):
        per_time[t] = max(per_time.get(t, -np.inf), v)
    return sorted(per_time.values(), reverse=True)[:3]


def _weighted(values: FloatArray, weights: FloatArray, ts: FloatArray) -> Quantiles:
    p = weighted_quantiles(values[None, :], weights[None, :], QS)[:, 0]
    top = _top_at_distinct_times(values, ts)
    mean = float(np.average(values, weights=weights))
    p50, p90, p95, p99 = (float(v) for v in p)
    second = top[1] if len(top) > 1 else top[0]
    third = top[2] if len(top) > 2 else None
    return Quantiles(p50, p90, p95, p99, top[0], mean, second_max=second, third_max=third)


def exact_usage(raw: RawDataset, recency: Recency) -> dict[tuple[WorkloadRef, str], Exact]:
    """Every container of a single pod template with finite CPU and memory samples (module docstring)."""
    out = {}
    for key, series in _groups(raw).items():
        ts = np.concatenate([s.timestamps for s in series])
        cpu = np.concatenate([s.cpu_cores for s in series])
        mem = np.concatenate([s.memory_bytes for s in series])
        c_ok, m_ok = np.isfinite(cpu), np.isfinite(mem)
        if not c_ok.any() or not m_ok.any():
            continue
        weights = recency.age_weights(ts, float(ts[c_ok | m_ok].max()))
        cpu_q = recurring(
            _weighted(cpu[c_ok], weights[c_ok], ts[c_ok]), _days(ts[c_ok], cpu[c_ok]), recency
        ).cpu
        seen = c_ok | m_ok
        counts = [
            int(np.count_nonzero(np.isfinite(s.cpu_cores) | np.isfinite(s.memory_bytes))) for s in series
        ]
        samples = sum(n if s.samples is None else s.samples for s, n in zip(series, counts, strict=True))
        out[key] = Exact(
            cpu_q,
            _weighted(mem[m_ok], weights[m_ok], ts[m_ok]),
            samples,
            len({s.pod for s, n in zip(series, counts, strict=True) if n}),
            datetime.fromtimestamp(float(ts[seen].min()), UTC),
            datetime.fromtimestamp(float(ts[seen].max()), UTC),
        )
    return out


def exact_demand(raw: RawDataset) -> dict[WorkloadRef, tuple[float, FloatArray, FloatArray]]:
    """Per workload: (first UTC hour's start, cpu, memory) of each hour from the window's first hour:
    each non-init series' mean within the hour, summed (NaN: no sample in the hour)."""
    resolve = owner_graph(raw).resolve
    pods = {(p.namespace, p.name): p for p in raw.pods}
    allocatable = Allocatable.of(raw)
    first = np.floor(raw.start.timestamp() / HOUR_S) * HOUR_S
    hours = int(np.ceil((raw.end.timestamp() - first) / HOUR_S))
    sums: dict[WorkloadRef, FloatArray] = {}
    for s in raw.containers:
        w = resolve(s.namespace, s.pod)
        info = pods.get((s.namespace, s.pod))
        if not isinstance(w, WorkloadRef) or info is None or s.container in info.init_containers:
            continue
        m = masked(s, allocatable.ceilings(info, s.container), {})
        at = np.floor((m.timestamps - first) / HOUR_S).astype(np.int64)
        row = sums.setdefault(w, np.full((2, hours), np.nan))
        for h in np.unique(at).tolist():
            for r, values in enumerate((m.cpu_cores, m.memory_bytes)):
                v = values[at == h]
                if np.isfinite(v).any():
                    row[r, h] = np.nan_to_num(row[r, h]) + float(np.nanmean(v))
    return {w: (float(first), r[0], r[1]) for w, r in sums.items()}
