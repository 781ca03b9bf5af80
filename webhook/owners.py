"""Pod -> workload at admission: the pod's JSON and the watched owner cache, fed to podsizer.owners."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from podsizer.api import WorkloadRef
from podsizer.owners import ControllerLookup, resolve_pod
from podsizer.snapshot import RecommendationSnapshot

OwnerLookup = ControllerLookup
"""The webhook's name for the resolver's lookup; `podsizer.cluster.OwnerCache` implements it."""


def _exists(snapshot: RecommendationSnapshot | None) -> Callable[[WorkloadRef], bool] | None:
    if snapshot is None:
        return None
    return lambda ref: snapshot.get(ref) is not None


def resolve_workload(
    pod: Mapping[str, Any], namespace: str, owners: OwnerLookup, snapshot: RecommendationSnapshot | None
) -> WorkloadRef | None:
    """The workload a pod belongs to, or None for every pod the resolver skips (bare, deployer/hook,
    mirror, Experiment, unknown controller; a Job the cache does not know, without a Recommendation for
    its CronJob or itself). In memory only: `owners` is the watched cache (podsizer.owners.resolve_pod)."""
    return resolve_pod(pod, namespace, owners, _exists(snapshot))
