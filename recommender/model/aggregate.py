"""A dataset's UsageSnapshot: its samples folded into usage states (recommender.model.state_build) and
read back by the one reading of the model (recommender.model.usage_model.view), as an incremental cold
start without a checkpoint reads them; its GPUs, autoscalers, nodes and skipped pods beside them.

- Every source produces a RawDataset (or a stream of them, recommender.model.stream) and this is where it
  becomes a UsageSnapshot; the containers' rules (quantiles, per-replica steady state, first seen,
  samples, OOM kills, requests of the newest pod, runs, the recency notes, demand, pod templates) are the
  reading's, written once.
- Pods that resolve to `Skipped` (DeploymentConfig deployer/hook pods, bare pods, unsupported owners,
  pods without PodInfo) are left out and listed once in `snapshot.skipped`; a namespace the source found
  without series is listed only when the model holds nothing of it.
- GPUs: one GpuUsage per (workload, container, pod) - the sizing engine takes the largest need over a
  container's pods and prices each pod. Activity is the mean over the pod's GPUs per timestamp, from
  the best signal every GPU of the pod exports (recommender.model.samples.pick_signal); its series is
  the peak of each activity step, buckets [start + i*step, start + (i+1)*step) (timegrid).
- A dataset of one cluster of several (RawDataset.cluster) puts every workload in that cluster
  (recommender.model.clusters).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import numpy as np

from podsizer.api.identity import WorkloadRef
from podsizer.owners import Skipped
from podsizer.subject import Subject
from recommender.model import NO_SERIES, FloatArray, GpuUsage, Quantiles, TimeSeries, UsageSnapshot
from recommender.model.clusters import snapshot_in
from recommender.model.raw import GpuSamples, RawDataset
from recommender.model.recency import DEFAULT as DEFAULT_RECENCY
from recommender.model.recency import Recency
from recommender.model.samples import (
    Resolution,
    Resolver,
    gpu_activity,
    has_values,
    memo,
    owner_graph,
    pick_signal,
)
from recommender.model.state_build import build_states
from recommender.model.timegrid import bucket_count, bucket_max
from recommender.model.usage_model import UsageModel, view

ACTIVITY_STEP_SECONDS = 300.0


def _dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def _finite(a: FloatArray) -> FloatArray:
    mask = np.isfinite(a)
    return a if mask.all() else a[mask]


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
        if len(dram) == len(gpus) and all(has_values(d) for d in dram)
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


def snapshot(
    model: UsageModel,
    raw: RawDataset,
    *,
    source: str,
    window: tuple[datetime, datetime],
    resolve: Resolver | None = None,
    activity_step: float = ACTIVITY_STEP_SECONDS,
    recency: Recency = DEFAULT_RECENCY,
    skipped: Iterable[Skipped] = (),
) -> UsageSnapshot:
    """The window's UsageSnapshot: containers, demand and pod templates as the model reads (view); GPUs,
    autoscalers, nodes and skipped pods from `raw` (the window's pods and cluster-wide series), with
    `skipped` met while the model was built (module docstring)."""
    start, end = window
    res = Resolution(memo(resolve or owner_graph(raw).resolve), {s.subject: s for s in skipped})
    for s in raw.skipped:
        res.skipped.setdefault(s.subject, s)
    for p in raw.pods:
        res.workload(p.namespace, p.name)
    for c in raw.containers:
        res.workload(c.namespace, c.pod)
    nodes_of_pods = {(p.namespace, p.name): p.node for p in raw.pods if p.node}
    gpus = _gpu_usages(raw.gpus, res, start.timestamp(), end.timestamp(), activity_step, nodes_of_pods)
    seen = view(model, start, end, recency)
    namespaces = {c.workload.namespace for c in seen.containers}
    kept = [
        s for s in res.skipped.values()
        if not (s.reason == NO_SERIES and s.subject.is_namespace and s.subject.namespace in namespaces)
    ]  # fmt: skip
    snap = UsageSnapshot(
        window_start=start,
        window_end=end,
        containers=seen.containers,
        gpus=tuple(gpus),
        autoscalers=raw.autoscalers,
        nodes=raw.nodes,
        demand=seen.demand,
        skipped=(*kept, *seen.skipped),
        source=source,
        pod_labels=seen.pod_labels,
        pod_annotations=seen.pod_annotations,
    )
    return snapshot_in(snap, raw.cluster)  # every workload in the dataset's cluster


def aggregate(
    raw: RawDataset,
    *,
    source: str,
    resolve: Resolver | None = None,
    activity_step: float = ACTIVITY_STEP_SECONDS,
    recency: Recency = DEFAULT_RECENCY,
) -> UsageSnapshot:
    """The UsageSnapshot of a RawDataset: a cold start of the usage model from its samples, read for its
    window (module docstring).

    resolve: owner resolution to use instead of the OwnerGraph of raw's pods and owner links (a source
    that carries no pods, like the DCGM scraper, brings the cluster's); recency: how samples weigh by
    age and template (recommender.model.recency; the default: the settings' defaults)."""
    resolver = memo(resolve or owner_graph(raw).resolve)
    skipped: dict[Subject, Skipped] = {}
    model = UsageModel(built_at=raw.end.timestamp())
    build_states(raw, recency=recency, resolve=resolver, into=model.states, skipped=skipped)
    return snapshot(
        model,
        raw,
        source=source,
        window=(raw.start, raw.end),
        resolve=resolver,
        activity_step=activity_step,
        recency=recency,
        skipped=skipped.values(),
    )
