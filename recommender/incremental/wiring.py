"""The incremental path built from the settings: which checkpoint store, and the source `podsizer run` and
`podsizer recommend --from-checkpoint` use (a persistent IncrementalSource per cluster)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from podsizer.settings import RecommenderSettings, env_name, setting_error
from recommender.checkpoints.base import CheckpointStore
from recommender.incremental.source import IncrementalSource
from recommender.input.prometheus.source import PrometheusSource
from recommender.metrics import RecommenderMetrics
from recommender.model import MetricsSource, Progress, UsageSnapshot

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

log = logging.getLogger("podsizer.incremental")


def checkpoint_store(
    settings: RecommenderSettings, cluster: str, api_client: Callable[[], ApiClient]
) -> CheckpointStore | None:
    """The store checkpoint_store names for `cluster` (auto: crd with store=crd, else the file when set);
    UsageCheckpoints only for the recommender's own cluster (another cluster's namespaces are not here)."""
    kind = settings.checkpoint_store
    if kind == "auto":
        kind = "crd" if settings.store == "crd" else ("file" if settings.checkpoint_file else "none")
    if kind == "none":
        return None
    if kind == "file":
        if settings.checkpoint_file is None:
            raise setting_error("checkpoint_file", f"required when {env_name('checkpoint_store')}=file")
        from recommender.checkpoints.filestore import FileCheckpointStore

        return FileCheckpointStore(_for_cluster(settings.checkpoint_file, cluster))
    if cluster != settings.cluster_name:
        log.warning(
            "cluster %s: its usage model is kept in memory only (UsageCheckpoints are written for this "
            "cluster, %s=%r, only)", cluster, env_name("cluster_name"), settings.cluster_name,
        )  # fmt: skip
        return None
    from recommender.checkpoints.crdstore import CrdCheckpointStore

    return CrdCheckpointStore(api_client(), cluster)


def _for_cluster(path: Path, cluster: str) -> Path:
    """One file per cluster: usage.ckpt -> usage.east.ckpt (the path itself without a cluster)."""
    return path if not cluster else path.with_name(f"{path.stem}.{cluster}{path.suffix}")


def fingerprint(settings: RecommenderSettings) -> str:
    """The settings besides the source's own that decide what the model holds (the namespaces read)."""
    return f"namespaces={','.join(settings.namespaces)}|exclude={','.join(settings.exclude_namespaces)}"


class IncrementalClusters:
    """A PrometheusSource whose clusters each keep an IncrementalSource between cycles (made on first
    use): a MultiClusterSource for recommender.clusters, so every cluster of a run is incremental."""

    def __init__(
        self, inner: PrometheusSource, make: Callable[[PrometheusSource], IncrementalSource]
    ) -> None:
        self.source = inner
        self.make = make
        self.name = inner.name
        self.cluster_label = inner.cluster_label
        self.client = inner.client  # what preflight and the rejection counter read
        self.by_cluster: dict[str, IncrementalSource] = {}

    def clusters(self, start: datetime, end: datetime) -> list[str]:
        return self.source.clusters(start, end)

    def for_cluster(self, cluster: str) -> IncrementalSource:
        found = self.by_cluster.get(cluster)
        if found is None:
            found = self.by_cluster[cluster] = self.make(self.source.for_cluster(cluster))
        return found

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        return self.for_cluster(self.source.cluster).collect(start, end, progress)

    def forget(self) -> None:
        """Every cluster's model dropped: the next cycle restores the checkpoints (a new leader's)."""
        for source in self.by_cluster.values():
            source.forget()

    def flush(self) -> None:
        """Waits for every cluster's checkpoint write in progress."""
        for source in self.by_cluster.values():
            source.flush()


def incremental(
    settings: RecommenderSettings,
    source: MetricsSource,
    api_client: Callable[[], ApiClient],
    metrics: RecommenderMetrics | None,
    *,
    save: bool = True,
) -> MetricsSource:
    """`source` with its PrometheusSource (possibly inside a scope wrapper) made incremental; any other
    source as it is (the demo, file and dcgm sources hold their whole window already). save False: the
    checkpoint is read, never written (`recommend --from-checkpoint`)."""
    from recommender.clusters import Wrapper, rewrapped

    inner: MetricsSource = source
    while isinstance(inner, Wrapper) and not isinstance(inner, PrometheusSource):
        inner = inner.inner
    if not isinstance(inner, PrometheusSource):
        return source
    window = timedelta(days=settings.window_days)
    chunk = timedelta(seconds=settings.cold_start_chunk)
    extra = fingerprint(settings)

    def make(one: PrometheusSource) -> IncrementalSource:
        store = checkpoint_store(settings, one.cluster, api_client)
        return IncrementalSource(
            one, window=window, store=store, chunk=chunk, metrics=metrics, fingerprint=extra, save=save
        )

    return rewrapped(source, IncrementalClusters(inner, make))


def _incremental_in(source: MetricsSource) -> IncrementalClusters | IncrementalSource | None:
    from recommender.clusters import Wrapper

    while isinstance(source, Wrapper) and not isinstance(source, IncrementalClusters):
        source = source.inner
    return source if isinstance(source, IncrementalClusters | IncrementalSource) else None


def forget(source: MetricsSource) -> None:
    """Drops the in-memory models inside `source` (if it is incremental): see IncrementalSource.forget."""
    found = _incremental_in(source)
    if found is not None:
        found.forget()


def flush(source: MetricsSource) -> None:
    """Waits for the checkpoint writes of `source` (if it is incremental) before the process ends."""
    found = _incremental_in(source)
    if found is not None:
        found.flush()
