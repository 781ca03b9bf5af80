"""The rules a dataset's samples pass on their way into the usage model, whichever source read them:
owner resolution, impossible samples turned into gaps, the window cut, hourly means (demand) and the
GPU activity signal. recommender.model.state_build folds what passes into the usage states."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from podsizer.api.identity import WorkloadRef
from podsizer.owners import OwnerGraph, PodOwner, Skipped
from podsizer.plausibility import largest_allocatable
from podsizer.subject import Subject
from recommender.model import ActivitySignal, FloatArray, SampleRule
from recommender.model.raw import ContainerSamples, GpuSamples, PodInfo, RawDataset
from recommender.model.timegrid import bucket_mean

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


def _chunks(groups: Iterable[list[int]], rows: int = 256) -> Iterator[list[int]]:
    """Index groups split so that one stacked matrix stays small (rows x samples)."""
    for idx in groups:
        for i in range(0, len(idx), rows):
            yield idx[i : i + rows]


_RESOURCES = ("cpu", "memory")
_FINITE_MAX = float(np.finfo(np.float64).max)
LIMIT_SLACK = 1.01
"""How far above the container's memory limit a working-set sample may be before it is impossible: the
cgroup holds the working set under the limit; the slack covers rounding, never a bad scrape."""


def node_allocatable(raw: RawDataset) -> dict[str, dict[str, float]]:
    """Each node's finite, positive cpu and memory allocatable, by node name."""
    out: dict[str, dict[str, float]] = {}
    for node in raw.nodes:
        for resource in _RESOURCES:
            value = node.allocatable.get(resource)
            if value is not None and math.isfinite(value) and value > 0:
                out.setdefault(node.name, {})[resource] = value
    return out


@dataclass(frozen=True)
class SampleCeilings:
    """The most a container's samples can physically be (cores, bytes; inf: unknown), and the rule a
    memory sample above its ceiling breaks."""

    cpu: float = math.inf
    memory: float = math.inf
    memory_rule: SampleRule = "above-allocatable"

    def of(self, resource: str) -> float:
        return self.cpu if resource == "cpu" else self.memory


@dataclass(frozen=True)
class Allocatable:
    """The nodes' allocatable as the sample rule reads it: per node, and the largest node's."""

    nodes: Mapping[str, Mapping[str, float]]
    largest: Mapping[str, float]

    @staticmethod
    def of(raw: RawDataset) -> Allocatable:
        nodes = node_allocatable(raw)
        return Allocatable(nodes, largest_allocatable(nodes.values()))

    def ceilings(self, pod: PodInfo | None, container: str) -> SampleCeilings:
        """A container's SampleCeilings: its node's allocatable (the largest node's when its node is not
        known), and for memory its own limit (plus LIMIT_SLACK) where that is lower."""
        node = self.nodes.get(pod.node, self.largest) if pod is not None else self.largest
        cpu, memory = node.get("cpu", math.inf), node.get("memory", math.inf)
        limit = pod.limits.get(container, {}).get("memory") if pod is not None else None
        if limit is not None and math.isfinite(limit) and 0 < limit * LIMIT_SLACK < memory:
            return SampleCeilings(cpu, limit * LIMIT_SLACK, "above-limit")
        return SampleCeilings(cpu, memory)


def masked(s: ContainerSamples, top: SampleCeilings, counts: dict[tuple[str, str], int]) -> ContainerSamples:
    """The series with impossible samples (negative, infinite, above `top`) turned into gaps (NaN), each
    counted in `counts` by rule."""
    arrays = {"cpu": s.cpu_cores, "memory": s.memory_bytes}
    changed = False
    for resource, a in arrays.items():
        ceiling = top.of(resource)
        if a.size == 0 or (np.fmin.reduce(a) >= 0 and np.fmax.reduce(a) <= min(ceiling, _FINITE_MAX)):
            continue  # the usual case, in two reductions that skip NaN gaps and allocate nothing
        infinite = np.isinf(a)
        with np.errstate(invalid="ignore"):
            negative = a < 0
            above = (a > ceiling) & ~infinite
        bad = infinite | negative | above
        if not bad.any():
            continue
        rule = top.memory_rule if resource == "memory" else "above-allocatable"
        for name, mask in (("non-finite", infinite & ~negative), ("negative", negative), (rule, above)):
            n = int(np.count_nonzero(mask))
            if n:
                counts[(resource, name)] = counts.get((resource, name), 0) + n
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
        same = [i for i in idx if series[i].timestamps is ts or np.array_equal(series[i].timestamps, ts)]
        for i in set(idx) - set(same):  # same size and ends, other timestamps: on its own
            s = series[i]
            one = bucket_mean(s.timestamps, np.stack([s.cpu_cores, s.memory_bytes]), start, step, n)
            out[i] = (one[0], one[1])
        rows = np.stack([series[i].cpu_cores for i in same] + [series[i].memory_bytes for i in same])
        means = bucket_mean(ts, rows, start, step, n)
        for j, i in enumerate(same):
            out[i] = (means[j], means[len(same) + j])
    return out


def gpu_activity(g: GpuSamples, signal: ActivitySignal) -> FloatArray | None:
    if signal == "SM_ACTIVE":
        return g.sm_active
    if signal == "GR_ENGINE_ACTIVE":
        return g.gr_engine_active
    return None if g.gpu_util_percent is None else g.gpu_util_percent / 100.0


def has_values(a: FloatArray | None) -> bool:
    """Whether the array is there and has a finite value."""
    return a is not None and bool(np.isfinite(a).any())


def pick_signal(gpus: Sequence[GpuSamples]) -> ActivitySignal | None:
    for signal in ("SM_ACTIVE", "GR_ENGINE_ACTIVE", "GPU_UTIL"):
        if all(has_values(gpu_activity(g, signal)) for g in gpus):
            return signal
    return None


_Sampled = TypeVar("_Sampled", ContainerSamples, GpuSamples)
_Mask = npt.NDArray[np.bool_]


def _in_window(
    series: Iterable[_Sampled], lo: float, hi: float, cut: Callable[[_Sampled, _Mask], _Sampled]
) -> tuple[_Sampled, ...]:
    """The window rule of clip, for one kind of series: samples at lo <= t < hi; a series wholly inside
    is kept as it is, one partly inside is `cut` to its mask, one wholly outside is dropped."""
    out = []
    for s in series:
        keep = (s.timestamps >= lo) & (s.timestamps < hi)
        if keep.all():
            out.append(s)
        elif keep.any():
            out.append(cut(s, keep))
    return tuple(out)


def _cut_container(s: ContainerSamples, keep: _Mask) -> ContainerSamples:
    return replace(
        s,
        timestamps=s.timestamps[keep],
        cpu_cores=s.cpu_cores[keep],
        memory_bytes=s.memory_bytes[keep],
        samples=None if s.samples is None else round(s.samples * keep.mean()),
    )


def _cut_gpu(g: GpuSamples, keep: _Mask) -> GpuSamples:
    def cut(a: FloatArray | None) -> FloatArray | None:
        return None if a is None else a[keep]

    return replace(
        g,
        timestamps=g.timestamps[keep],
        fb_used_mib=g.fb_used_mib[keep],
        fb_free_mib=g.fb_free_mib[keep],
        sm_active=cut(g.sm_active),
        gr_engine_active=cut(g.gr_engine_active),
        gpu_util_percent=cut(g.gpu_util_percent),
        dram_active=cut(g.dram_active),
    )


def clip(raw: RawDataset, start: datetime, end: datetime) -> RawDataset:
    """The samples of `raw` with start <= t < end, and that window; pods, owners and nodes are kept."""
    lo, hi = start.timestamp(), end.timestamp()
    return replace(
        raw,
        start=start,
        end=end,
        containers=_in_window(raw.containers, lo, hi, _cut_container),
        gpus=_in_window(raw.gpus, lo, hi, _cut_gpu),
        ooms=tuple(o for o in raw.ooms if start <= o.at < end),
    )
