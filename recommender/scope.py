"""A run's scope applied to a snapshot: only the workloads in scope, and what in the scope matched nothing."""

from __future__ import annotations

import dataclasses

from podsizer.api.identity import WorkloadRef
from podsizer.owners import Skipped
from podsizer.scope import KeyAlias, Scope
from recommender.model import NO_SERIES, UsageSnapshot


def skipped_in_scope(s: Skipped, scope: Scope) -> bool:
    """A skipped subject is in scope by its namespace (a GPU on no pod has none) and, where it names a
    workload, that workload's kind."""
    workload = s.subject.workload
    kind_ok = workload is None or not scope.kinds or workload.kind in scope.kinds
    return kind_ok and scope.matches_namespace(s.subject.namespace)


def apply_scope(snapshot: UsageSnapshot, scope: Scope, key_alias: KeyAlias | None = None) -> UsageSnapshot:
    """The snapshot's workloads in `scope` (containers, GPUs, autoscalers, demand, labels, annotations;
    skipped entries by their subject's namespace and kind), with `unmatched_scope` naming what matched
    none of the workloads the source saw."""
    if scope.everything:
        return snapshot
    # Every workload the source found: with usage, or only pods (all their samples were rejected).
    seen = (
        {c.workload for c in snapshot.containers}
        | {g.workload for g in snapshot.gpus}
        | set(snapshot.pod_labels)
    )
    labels = {w: snapshot.pod_labels.get(w, {}) for w in seen}
    keep: set[WorkloadRef] = {w for w in seen if scope.matches(w, labels[w], key_alias)}
    return dataclasses.replace(
        snapshot,
        containers=tuple(c for c in snapshot.containers if c.workload in keep),
        gpus=tuple(g for g in snapshot.gpus if g.workload in keep),
        autoscalers=tuple(a for a in snapshot.autoscalers if a.workload in keep),
        demand=tuple(d for d in snapshot.demand if d.workload in keep),
        skipped=tuple(s for s in snapshot.skipped if skipped_in_scope(s, scope)),
        pod_labels={w: v for w, v in snapshot.pod_labels.items() if w in keep},
        pod_annotations={w: v for w, v in snapshot.pod_annotations.items() if w in keep},
        unmatched_scope=scope.unmatched(
            labels,
            key_alias,
            {
                s.subject.namespace
                for s in snapshot.skipped
                if s.subject.is_namespace and s.reason != NO_SERIES
            },
        ),
    )
