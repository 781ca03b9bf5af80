"""UsageStates from a RawDataset: the same series, rules and weights the full-window path (aggregate) uses.

- Owner resolution, impossible samples (gaps) and the replaced-template rule are aggregate's own
  (recommender.model.aggregate, recommender.model.recency): a series of a template left out adds to the
  history counts only (samples, first seen), a partly weighed one adds with its factor; its pod's OOM
  kills are left out.
- Every kept series' CPU and memory samples go into the histograms, decayed by `recency.half_life_s`
  from their timestamps; the percentiles then equal aggregate()'s weighted percentiles within the
  buckets' resolution (tests/unit/recommender/test_usage_state.py).
- GPUs: per (workload, container), each GPU's activity from the best signal every GPU of its pod
  exports (aggregate's choice) and its framebuffer use, sample by sample.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from recommender.model.aggregate import (
    Resolver,
    _activity,
    _by_template,
    _ContainerGroup,
    _masked,
    _memo,
    _pick_signal,
    _Resolution,
    largest_allocatable,
    owner_graph,
)
from recommender.model.raw import GpuSamples, RawDataset
from recommender.model.recency import DEFAULT as DEFAULT_RECENCY
from recommender.model.recency import Recency
from recommender.model.usage_state import StateKey, UsageState


def _groups(raw: RawDataset, res: _Resolution, recency: Recency) -> dict[StateKey, _ContainerGroup]:
    """aggregate's container groups: series masked and split by the template rule."""
    pods = {(p.namespace, p.name): p for p in raw.pods}
    top = largest_allocatable(raw)
    groups: dict[StateKey, _ContainerGroup] = {}
    for s in raw.containers:
        workload = res.workload(s.namespace, s.pod)
        if workload is None:
            continue
        key = StateKey(workload, s.container)
        group = groups.setdefault(key, _ContainerGroup(workload, s.container, []))
        group.series.append(_masked(s, top, group.rejected))
    for group in groups.values():
        _by_template(group, pods, recency)
    return groups


def _state(group: _ContainerGroup, half_life_s: float | None) -> UsageState:
    state = UsageState.empty(half_life_s)
    for s, factor in zip(group.series, group.weights or [1.0] * len(group.series), strict=True):
        state.add_samples(s.timestamps, s.cpu_cores, s.memory_bytes, weight=factor, samples=s.samples)
    for s in group.replaced:
        seen = np.isfinite(s.cpu_cores) | np.isfinite(s.memory_bytes)
        n = int(np.count_nonzero(seen))
        if n:
            state.count(s.timestamps[seen], n if s.samples is None else s.samples)
    return state


def _add_gpus(
    states: dict[StateKey, UsageState], gpus: tuple[GpuSamples, ...], res: _Resolution, half: float | None
) -> None:
    by_pod: dict[tuple[StateKey, str], list[GpuSamples]] = defaultdict(list)
    for g in gpus:
        workload = res.workload(g.namespace, g.pod) if g.pod else None
        if workload is not None:
            by_pod[(StateKey(workload, g.container), g.pod)].append(g)
    for (key, _), members in sorted(by_pod.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        signal = _pick_signal(members)
        if signal is None:
            continue
        state = states.setdefault(key, UsageState.empty(half))
        for g in members:
            activity = _activity(g, signal)
            if activity is not None:
                state.add_gpu(g.timestamps, activity, g.fb_used_mib)


def build_states(
    raw: RawDataset, *, recency: Recency = DEFAULT_RECENCY, resolve: Resolver | None = None
) -> dict[StateKey, UsageState]:
    """Every (workload, container)'s UsageState from the dataset's samples and OOM kills."""
    res = _Resolution(_memo(resolve or owner_graph(raw).resolve), {s.subject: s for s in raw.skipped})
    half = recency.half_life_s or None
    groups = _groups(raw, res, recency)
    states = {key: _state(groups[key], half) for key in sorted(groups)}
    replaced = {(s.namespace, s.pod, g.container) for g in groups.values() for s in g.replaced}
    for o in raw.ooms:
        workload = res.workload(o.namespace, o.pod)
        if (
            workload is None
            or not math.isfinite(o.memory_bytes)
            or (o.namespace, o.pod, o.container) in replaced
        ):
            continue
        state = states.get(StateKey(workload, o.container))
        if state is not None:
            state.add_oom(o.at.timestamp(), o.memory_bytes)
    _add_gpus(states, raw.gpus, res, half)
    return states
