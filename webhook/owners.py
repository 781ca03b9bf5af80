"""Pod -> workload at admission: the pod's JSON and the watched owner cache, fed to podsizer.owners."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from podsizer.api import WorkloadRef
from podsizer.owners import ControllerLookup, PodFacts, controller_of, resolve
from webhook.store import RecommendationSnapshot

OwnerLookup = ControllerLookup
"""The webhook's name for the resolver's lookup; `webhook.cluster.OwnerCache` implements it."""


def _str_map(raw: object) -> Mapping[str, str]:
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def _exists(snapshot: RecommendationSnapshot | None) -> Callable[[WorkloadRef], bool] | None:
    if snapshot is None:
        return None
    return lambda ref: snapshot.get(ref) is not None


def resolve_workload(
    pod: Mapping[str, Any], namespace: str, owners: OwnerLookup, snapshot: RecommendationSnapshot | None
) -> WorkloadRef | None:
    """The workload a pod belongs to, or None for every pod the resolver skips (bare, deployer/hook,
    mirror, Experiment, unknown controller; a Job the cache does not know, without a Recommendation for
    its CronJob or itself). In memory only: `owners` is the watched cache."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name") or meta.get("generateName")
    facts = PodFacts(
        namespace,
        name if isinstance(name, str) else None,
        controller_of(pod),
        _str_map(meta.get("labels")),
        _str_map(meta.get("annotations")),
    )
    found = resolve(facts, owners, _exists(snapshot))
    return found if isinstance(found, WorkloadRef) else None
