"""UsageStates from a RawDataset: the same series, owner resolution and sample rules the full-window path
of every source and command, one state per (workload, container, pod template): a one-shot read, each
chunk of a streamed cold start and each incremental cycle alike.

- Owner resolution and impossible samples (gaps, counted by rule) are recommender.model.samples'; the
  pods that resolve to Skipped are collected in `skipped` when given. The replaced-template rule is
  applied when the states are read (recommender.model.usage_model), which is why every template keeps
  its own state.
- Only samples after `fresh_after` (or the workload's own time in `fresh_after_of`) feed histograms,
  counts, peaks, facts and OOM kills (a cycle's read may start earlier, at the hour's start); demand is
  set for every hour the dataset covers (a later read of an hour holds all of its pods and replaces the
  earlier one).
- Every kept series' CPU and memory samples go into the histograms, decayed by `recency.half_life_s`
  from their timestamps, and its CPU samples into the undecayed histogram of their day; once the build's
  samples are in, every state's days before its newest are closed (UsageState.close_days).
- GPUs: per state, each GPU's activity from the best signal every GPU of its pod exports
  (samples.pick_signal) and its framebuffer use.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

import numpy as np

from podsizer.api.identity import WorkloadRef
from podsizer.owners import Skipped
from podsizer.subject import Subject
from recommender.model.raw import ContainerSamples, GpuSamples, PodInfo, RawDataset
from recommender.model.recency import DEFAULT as DEFAULT_RECENCY
from recommender.model.recency import Recency, template_of
from recommender.model.samples import (
    Allocatable,
    Resolution,
    Resolver,
    SampleCeilings,
    gpu_activity,
    hourly_means,
    masked,
    memo,
    owner_graph,
    pick_signal,
)
from recommender.model.state_batch import add_rows
from recommender.model.timegrid import bucket_count, present_sums
from recommender.model.usage_state import HOUR_S, StateKey, UsageState, state_order

_Pods = dict[tuple[str, str], PodInfo]


def _key(res: Resolution, pods: _Pods, namespace: str, pod: str, container: str) -> StateKey | None:
    workload = res.workload(namespace, pod)
    if workload is None:
        return None
    info = pods.get((namespace, pod))
    template = template_of(info.owner_kind, info.owner_name) if info is not None else None
    return StateKey(workload, container, template or "")


def _fresh(s: ContainerSamples, after: float) -> ContainerSamples | None:
    """The part of `s` after `after` (None: nothing). A pre-reduced series' raw-sample count (of working
    set samples) covers the closed span of its points: the part keeps its working-set points' share
    (chunks sharing an edge point count its samples once)."""
    keep = s.timestamps > after
    kept = int(np.count_nonzero(keep))
    if kept == keep.size:
        return s
    if not kept:
        return None
    seen = np.isfinite(s.memory_bytes)
    if not seen.any():
        seen = np.isfinite(s.cpu_cores)
    points = int(np.count_nonzero(seen))
    share = int(np.count_nonzero(seen & keep)) / points if points else 0.0
    return ContainerSamples(
        s.namespace,
        s.pod,
        s.container,
        s.timestamps[keep],
        s.cpu_cores[keep],
        s.memory_bytes[keep],
        None if s.samples is None else round(s.samples * share),
        round(s.cpu_resets * share),
    )


_Batches = dict[tuple[float, float, int], list[tuple[UsageState, ContainerSamples]]]


def _add_series(
    state: UsageState,
    s: ContainerSamples,
    info: PodInfo | None,
    top: SampleCeilings,
    batches: _Batches,
    plausible: bool,
) -> None:
    """The series' facts now; its samples queued in `batches` by time grid (added by _add_batches);
    `plausible`: masked() is known to find nothing to reject in it."""
    rejected: dict[tuple[str, str], int] = {}
    m = s if plausible else masked(s, top, rejected)
    state.facts.reject(rejected)
    spec = None
    if info is not None:
        spec = (
            info.requests.get(s.container, {}),
            info.limits.get(s.container, {}),
            info.labels,
            s.container in info.init_containers,
            info.annotations,
        )
    seen = np.isfinite(m.cpu_cores) | np.isfinite(m.memory_bytes)
    ts = m.timestamps
    if not seen.any():  # every sample rejected: the workload's pod template is known all the same
        if ts.size:
            state.facts.see_spec(float(ts.max()), spec)
        return
    batches[(float(ts[0]), float(ts[-1]), ts.size)].append((state, m))
    job = info.owner_name if info is not None and info.owner_kind == "Job" else None
    state.facts.see_pod(s.pod, job, float(ts[seen].max()), spec)


def _add_batches(batches: _Batches) -> None:
    """Each time grid's series into their states at once (state_batch.add_rows); a grid of one series
    as add_samples adds it."""
    for members in batches.values():
        if len(members) == 1:
            state, m = members[0]
            state.add_samples(
                m.timestamps, m.cpu_cores, m.memory_bytes, samples=m.samples, resets=m.cpu_resets
            )
            continue
        add_rows(
            [state for state, _ in members],
            members[0][1].timestamps,
            np.stack([m.cpu_cores for _, m in members]),
            np.stack([m.memory_bytes for _, m in members]),
            [m.samples for _, m in members],
            [m.cpu_resets for _, m in members],
        )


def _set_demand(
    states: dict[StateKey, UsageState], keyed: Iterable[tuple[StateKey, ContainerSamples]], raw: RawDataset
) -> None:
    """Each state's hourly demand over the dataset: per series (masked already) the mean within each
    hour, summed."""
    pairs = list(keyed)
    if not pairs:
        return
    first_hour = math.floor(raw.start.timestamp() / HOUR_S)
    hours = bucket_count(first_hour * HOUR_S, raw.end.timestamp(), HOUR_S)
    means = hourly_means([s for _, s in pairs], first_hour * HOUR_S, HOUR_S, hours)
    ranks = [state_order(k) for k, _ in pairs]
    order = sorted(range(len(pairs)), key=ranks.__getitem__)  # each state's series together
    keys = [pairs[i][0] for i in order]
    starts = np.array(
        [j for j, i in enumerate(order) if j == 0 or ranks[i] != ranks[order[j - 1]]], dtype=np.int64
    )
    cpu = present_sums(np.stack([means[i][0] for i in order]), starts)
    mem = present_sums(np.stack([means[i][1] for i in order]), starts)
    for g, at in enumerate(starts.tolist()):
        states[keys[at]].set_demand(first_hour, cpu[g], mem[g])


def _add_gpus(
    states: dict[StateKey, UsageState],
    gpus: tuple[GpuSamples, ...],
    res: Resolution,
    pods: _Pods,
    fresh: tuple[float, Mapping[WorkloadRef, float]],
    half: float | None,
) -> None:
    by_pod: dict[tuple[StateKey, str], list[GpuSamples]] = defaultdict(list)
    for g in gpus:
        key = _key(res, pods, g.namespace, g.pod, g.container) if g.pod else None
        if key is not None:
            by_pod[(key, g.pod)].append(g)
    for (key, _), members in sorted(by_pod.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        signal = pick_signal(members)
        if signal is None:
            continue
        state = states.setdefault(key, UsageState.empty(half))
        for g in members:
            activity = gpu_activity(g, signal)
            keep = g.timestamps > fresh[1].get(key.workload, fresh[0])
            if activity is not None and keep.any():
                state.add_gpu(g.timestamps[keep], activity[keep], g.fb_used_mib[keep])


def build_states(
    raw: RawDataset,
    *,
    recency: Recency = DEFAULT_RECENCY,
    resolve: Resolver | None = None,
    fresh_after: float = -math.inf,
    fresh_after_of: Mapping[WorkloadRef, float] | None = None,
    into: dict[StateKey, UsageState] | None = None,
    skipped: dict[Subject, Skipped] | None = None,
) -> dict[StateKey, UsageState]:
    """Every (workload, container, template)'s UsageState from the dataset (module docstring);
    `fresh_after_of`: the workloads whose samples are fresh after another time than `fresh_after`;
    `into`: states to add to (a model's, from samples before these), returned; else new ones; `skipped`:
    where the dataset's skipped pods and source skips are collected."""
    own = fresh_after_of or {}
    res = Resolution(memo(resolve or owner_graph(raw).resolve), {} if skipped is None else skipped)
    for found in raw.skipped:
        res.skipped.setdefault(found.subject, found)
    for p in raw.pods:
        res.workload(p.namespace, p.name)
    pods: _Pods = {(p.namespace, p.name): p for p in raw.pods}
    half = recency.half_life_s or None
    allocatable = Allocatable.of(raw)
    states: dict[StateKey, UsageState] = {} if into is None else into
    demand: list[tuple[StateKey, ContainerSamples]] = []
    batches: _Batches = defaultdict(list)
    for s in raw.containers:
        key = _key(res, pods, s.namespace, s.pod, s.container)
        if key is None:
            continue
        state = states.get(key)
        if state is None:
            state = states[key] = UsageState.empty(half)
        info = pods.get((s.namespace, s.pod))
        top = allocatable.ceilings(info, s.container)
        whole = masked(s, top, {})  # implausible samples counted for the fresh part only, below
        if info is None or s.container not in info.init_containers:
            demand.append((key, whole))
        fresh = _fresh(s, own.get(key.workload, fresh_after))
        if fresh is not None:
            _add_series(state, fresh, info, top, batches, plausible=whole is s)
    _add_batches(batches)
    _set_demand(states, demand, raw)
    for o in raw.ooms:
        key = _key(res, pods, o.namespace, o.pod, o.container)
        if key is None or key not in states or not math.isfinite(o.memory_bytes):
            continue
        if o.at.timestamp() > own.get(key.workload, fresh_after):
            ceiling = allocatable.ceilings(pods.get((o.namespace, o.pod)), o.container).memory
            states[key].add_oom(o.at.timestamp(), min(o.memory_bytes, ceiling))
    _add_gpus(states, raw.gpus, res, pods, (fresh_after, own), half)
    for state in states.values():
        state.close_days()  # every pod of this build is in: the days before each state's newest are whole
    return states
