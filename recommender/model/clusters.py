"""A snapshot's workloads placed in one cluster: the one rule that puts a cluster name on usage data."""

from __future__ import annotations

from dataclasses import replace

from podsizer.owners import Skipped
from recommender.model import UsageSnapshot


def skipped_in(skipped: Skipped, cluster: str) -> Skipped:
    """The skipped subject in `cluster` (shown `cluster:...`); unchanged without a cluster."""
    if not cluster:
        return skipped
    return replace(skipped, subject=skipped.subject.in_cluster(cluster))


def snapshot_in(snapshot: UsageSnapshot, cluster: str) -> UsageSnapshot:
    """Every workload of the snapshot (usage, GPUs, autoscalers, demand, pod labels) in `cluster`; the
    snapshot itself when cluster is empty (a single-cluster setup). Skipped subjects are put in the
    cluster by the run (skipped_in)."""
    if not cluster:
        return snapshot
    return replace(
        snapshot,
        containers=tuple(replace(c, workload=c.workload.in_cluster(cluster)) for c in snapshot.containers),
        gpus=tuple(replace(g, workload=g.workload.in_cluster(cluster)) for g in snapshot.gpus),
        autoscalers=tuple(replace(a, workload=a.workload.in_cluster(cluster)) for a in snapshot.autoscalers),
        demand=tuple(replace(d, workload=d.workload.in_cluster(cluster)) for d in snapshot.demand),
        pod_labels={w.in_cluster(cluster): labels for w, labels in snapshot.pod_labels.items()},
        pod_annotations={w.in_cluster(cluster): a for w, a in snapshot.pod_annotations.items()},
    )
