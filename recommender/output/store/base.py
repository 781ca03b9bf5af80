"""The RecommendationStore interface every store implements, and the spec-ownership merge rule."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import ContainerPolicy, Recommendation
from podsizer.settings import setting_error


class StoreError(RuntimeError):
    """The store cannot be read or written; the message names the file or object and the cause."""


_Recs = list[Recommendation]
_Failures = list[tuple[Recommendation, Exception]]


class RecommendationStore(Protocol):
    """Where recommendations live: the recommender owns status, users own spec.resourcePolicy."""

    def list(self) -> _Recs: ...

    def get(self, ref: WorkloadRef) -> Recommendation | None: ...

    def put(self, rec: Recommendation) -> None: ...

    def put_many(self, recs: Sequence[Recommendation]) -> _Failures:
        """Store each; returns the ones that failed with their error (one failure never stops the rest)."""
        ...

    def bounds(self) -> Mapping[WorkloadRef, tuple[ContainerPolicy, ...]]: ...


def merge_for_update(existing: Mapping[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """The object to write: `new` (from recommendation_to_resource) with the user-owned parts of
    `existing` kept: spec.resourcePolicy (present or absent exactly as the user left it), and the
    labels/annotations the user set. On create (`existing` is None) `new` is written as it is."""
    if existing is None:
        return new
    out = copy.deepcopy(new)
    old_spec = existing.get("spec") or {}
    spec = out.setdefault("spec", {})
    if isinstance(old_spec, Mapping) and "resourcePolicy" in old_spec:
        spec["resourcePolicy"] = copy.deepcopy(old_spec["resourcePolicy"])
    else:
        spec.pop("resourcePolicy", None)
    old_meta = existing.get("metadata") or {}
    if isinstance(old_meta, Mapping):
        meta = out.setdefault("metadata", {})
        for key in ("labels", "annotations"):
            if old_meta.get(key):
                meta[key] = copy.deepcopy(old_meta[key])
    return out


def bounds_of(recs: Sequence[Recommendation]) -> dict[WorkloadRef, tuple[ContainerPolicy, ...]]:
    """User bounds per workload, from the recommendations that carry any."""
    return {r.target: r.policy for r in recs if r.policy}


@runtime_checkable
class ClusterScopedStore(Protocol):
    """A store in one cluster (the crd store): it holds only that cluster's Recommendations."""

    def own(self, recs: Sequence[Recommendation]) -> tuple[_Recs, int]:
        """The recommendations it writes, and how many others it leaves out (own_cluster)."""
        ...


def writable(store: RecommendationStore, recs: Sequence[Recommendation]) -> tuple[_Recs, int]:
    """What `store` writes of `recs` and how many it leaves out (all of them for a store of every cluster)."""
    return store.own(recs) if isinstance(store, ClusterScopedStore) else (list(recs), 0)


def own_cluster(recs: Sequence[Recommendation], cluster_name: str) -> tuple[list[Recommendation], int]:
    """The recommendations a store in cluster `cluster_name` holds, and how many others it leaves out.

    With a name: only that cluster's. Without one: all of them when they are of at most one cluster; the
    Recommendations of several clusters in one cluster's store is a SettingsError naming cluster_name.
    """
    if cluster_name:
        own = [r for r in recs if r.target.cluster == cluster_name]
        return own, len(recs) - len(own)
    clusters = sorted({r.target.cluster for r in recs})
    if len(clusters) > 1:
        raise setting_error(
            "cluster_name",
            f"the run sized {len(clusters)} clusters ({', '.join(c or '(none)' for c in clusters)}): "
            "set this cluster's name so that only its Recommendations are written here",
        )
    return list(recs), 0
