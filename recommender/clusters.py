"""The clusters one run sizes and the source of each: the per-cluster plan of `recommend` and `run`.

Without a cluster label there is one cluster, named by cluster_name (empty in a single-cluster setup).
With one (a multi-cluster store, Prometheus source only), the clusters are those named by `clusters`
or every value of the label on container series in the window; each is collected and sized on its own,
one after the other, so memory holds one cluster's data at a time.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar, runtime_checkable

from podsizer.api.identity import WorkloadRef
from podsizer.settings import env_name, setting_error
from recommender.model import MetricsSource, Progress, UsageSnapshot
from recommender.model.clusters import snapshot_in

log = logging.getLogger("podsizer")

V = TypeVar("V")


class ClusterSettings(Protocol):
    """The settings the plan reads (MetricsSourceSettings and SharedSettings fields)."""

    @property
    def source(self) -> str: ...

    @property
    def cluster_label(self) -> str: ...

    @property
    def clusters(self) -> tuple[str, ...]: ...

    @property
    def cluster_name(self) -> str: ...


@runtime_checkable
class MultiClusterSource(Protocol):
    """A source that reads one cluster of many (PrometheusSource)."""

    name: str
    cluster_label: str

    def clusters(self, start: datetime, end: datetime) -> list[str]: ...

    def for_cluster(self, cluster: str) -> MetricsSource: ...

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot: ...


@dataclass(frozen=True)
class ClusterSource:
    """One cluster of a run and the source that reads only it."""

    name: str
    source: MetricsSource


class InCluster:
    """A source that knows no cluster (demo, file, dcgm) whose workloads are all in `cluster`."""

    def __init__(self, inner: MetricsSource, cluster: str) -> None:
        self.inner = inner
        self.cluster = cluster
        self.name = inner.name

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        return snapshot_in(self.inner.collect(start, end, progress), self.cluster)


def cluster_sources(
    source: MetricsSource, settings: ClusterSettings, start: datetime, end: datetime
) -> list[ClusterSource]:
    """The clusters to size in [start, end), in name order, each with its own source. A named cluster
    without series is a warning naming the clusters that have some."""
    if settings.clusters and not settings.cluster_label:
        raise setting_error("clusters", f"names clusters but {env_name('cluster_label')} is empty")
    own = settings.cluster_name
    multi = _multi(source)
    if multi is None:
        if settings.cluster_label:
            raise setting_error(
                "cluster_label", f"only the prometheus source reads a cluster label, not {settings.source}"
            )
        return [ClusterSource(own, InCluster(source, own) if own else source)]
    if not settings.cluster_label:
        return [ClusterSource(own, rewrapped(source, multi.for_cluster(own)))]
    found = multi.clusters(start, end)
    if not found:
        log.warning("no container series carries the label %s in the window: no cluster to size",
                    settings.cluster_label)  # fmt: skip
    wanted = sorted(set(settings.clusters)) if settings.clusters else found
    missing = [c for c in wanted if c not in found]
    for name in missing:
        log.warning(
            "cluster %s: no container series with %s=%r in the window; clusters found: %s",
            name, settings.cluster_label, name, ", ".join(found) or "none",
        )  # fmt: skip
    return [ClusterSource(c, rewrapped(source, multi.for_cluster(c))) for c in wanted if c not in missing]


@runtime_checkable
class Wrapper(Protocol):
    """A source around another (e.g. wiring.ScopedSource, which cuts snapshots to the run's scope)."""

    inner: MetricsSource


def _multi(source: MetricsSource) -> MultiClusterSource | None:
    """The multi-cluster source `source` is or wraps (through any number of wrappers), if any."""
    while not isinstance(source, MultiClusterSource):
        if not isinstance(source, Wrapper):
            return None
        source = source.inner
    return source


def rewrapped(source: MetricsSource, inner: MetricsSource) -> MetricsSource:
    """`inner` (one cluster's source) inside copies of the wrappers around `source`'s own (if any)."""
    if isinstance(source, MultiClusterSource) or not isinstance(source, Wrapper):
        return inner
    out = copy.copy(source)
    out.inner = rewrapped(source.inner, inner)
    return out


def progress_in(progress: Progress | None, cluster: str) -> Progress | None:
    """The progress callback with each step prefixed by the cluster (unchanged without one)."""
    if progress is None or not cluster:
        return progress
    report = progress

    def in_cluster(done: int, total: int, what: str) -> None:
        report(done, total, f"cluster {cluster}: {what}")

    return in_cluster


def bounds_in(bounds: Mapping[WorkloadRef, V], cluster: str) -> dict[WorkloadRef, V]:
    """User bounds for the workloads of `cluster`: its own, and those of a Recommendation without a
    cluster (a single-cluster setup's, or a user's object in this cluster) where it has none."""
    own = {ref: v for ref, v in bounds.items() if ref.cluster == cluster}
    if cluster:
        for ref, v in bounds.items():
            if not ref.cluster:
                own.setdefault(ref.in_cluster(cluster), v)
    return own
