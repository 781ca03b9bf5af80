"""Typed wiring of the recommender: source, store, prices, sizing and clock built from the settings.

Commands take a `Wiring` (its factories) so tests inject fakes instead of patching modules.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from podsizer.api.identity import WorkloadRef
from podsizer.kube.client import kube_api_client
from podsizer.owners import OwnerGraph, Skipped
from podsizer.scope import KeyAlias, Scope, scope_of
from podsizer.settings import RecommenderSettings, SettingsError, env_name, setting_error
from podsizer.sizing_policy import SizingPolicy
from recommender.model import MetricsSource, Progress, SourceError, UsageSnapshot
from recommender.output.store.base import RecommendationStore
from recommender.runner import Bounds, RunOutput

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from recommender.input.dcgm_scrape import DcgmScrapeSource, ScrapeResult
    from recommender.input.prometheus.client import SampleRejections
    from recommender.model.recency import Recency
    from recommender.sizing.cost import PriceTable

log = logging.getLogger("podsizer")

SizingFn = Callable[[UsageSnapshot, SizingPolicy, "PriceTable", datetime, Bounds], RunOutput]


def utcnow() -> datetime:
    return datetime.now(UTC)


class ScopedSource:
    """Another source's snapshots cut to the run's scope (podsizer.scope.Scope); what in the scope matched
    no workload is logged as a warning on every collect and named in the snapshot's unmatched_scope."""

    def __init__(self, inner: MetricsSource, scope: Scope, key_alias: KeyAlias | None = None) -> None:
        self.inner = inner
        self.scope = scope
        self.key_alias = key_alias
        self.name = inner.name

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        from recommender.scope import apply_scope

        snap = apply_scope(self.inner.collect(start, end, progress), self.scope, self.key_alias)
        for line in snap.unmatched_scope:
            log.warning("scope: %s", line)
        return snap


def ksm_key_alias(key: str) -> str:
    """A label key as kube-state-metrics spells it on kube_pod_labels (app.kubernetes.io/part-of ->
    app_kubernetes_io_part_of): the Prometheus source keeps that spelling for labels it does not know."""
    from recommender.input.prometheus.labels import ksm_label_name

    return ksm_label_name(key, prefix="")


def scoped(settings: RecommenderSettings, source: MetricsSource) -> MetricsSource:
    """`source` cut to the settings' scope (the source itself when the scope takes everything)."""
    scope = scope_of(settings)
    if scope.everything:
        return source
    return ScopedSource(source, scope, ksm_key_alias if settings.source == "prometheus" else None)


def build_source(settings: RecommenderSettings, now: datetime) -> MetricsSource:
    """The metrics source the settings name (modules imported only when chosen), cut to their scope;
    `now` is the window's end (as_of when set: the demo data ends there)."""
    source: MetricsSource
    if settings.source == "demo":
        from recommender.input.demo_cluster import DemoSource

        source = DemoSource(now, days=max(1, math.ceil(settings.window_days)), recency=recency_of(settings))
    elif settings.source == "file":
        if settings.source_file is None:
            raise setting_error("source_file", f"required when {env_name('source')}=file")
        from recommender.input.file import FileSource

        source = FileSource(settings.source_file, recency=recency_of(settings))
    elif settings.source == "dcgm":
        if settings.as_of is not None:
            raise setting_error(
                "as_of", f"{env_name('source')}=dcgm scrapes live and keeps one window: it cannot look back"
            )
        source = build_dcgm_source(settings)
    else:
        source = build_prometheus_source(settings)
    return scoped(settings, source)


def recency_of(settings: RecommenderSettings) -> Recency:
    """How samples weigh by age (PODSIZER_RECENCY_HALF_LIFE; 0: no decay) and template."""
    from recommender.model.recency import Recency

    return Recency(half_life_s=settings.recency_half_life or None)


def build_prometheus_source(settings: RecommenderSettings) -> MetricsSource:
    """Prometheus (or Thanos, Mimir, VictoriaMetrics, AMP) at prometheus_url, through the one client factory
    (TLS, auth, headers and presets of the connection settings: docs/connections.md)."""
    from recommender.input.prometheus import PrometheusSource
    from recommender.input.prometheus.connection import build_prom_client
    from recommender.input.prometheus.kubeapi import ApiIdentity

    client = build_prom_client(settings)
    scope = scope_of(settings)  # namespaces: read as named, else discovered and filtered by the globs
    return PrometheusSource(
        client,
        namespaces=scope.listed_namespaces(),
        namespace_filter=scope.matches_namespace,
        cluster_label=settings.cluster_label,
        # used as it is by a reader of one cluster (the console); a run picks each cluster (for_cluster)
        cluster=settings.cluster_name or (settings.clusters[0] if len(settings.clusters) == 1 else ""),
        resolution_s=settings.query_step,
        rate_s=settings.cpu_rate_window,
        read=settings.prometheus_read,
        max_samples_per_cycle=settings.prometheus_max_samples_per_cycle,
        chunk_s=settings.cold_start_chunk,
        recency=recency_of(settings),
        # one cluster's API cannot speak for the others of a multi-cluster store
        api_identity=None if settings.cluster_label else ApiIdentity(lambda: _optional_api(settings)),
    )


def _optional_api(settings: RecommenderSettings) -> ApiClient | None:
    """The cluster's API for namespaces without kube-state-metrics series; None (logged) without one."""
    try:
        return kube_api_client(settings.kubeconfig)
    except SettingsError as exc:
        log.warning("no kube-state-metrics series and no cluster to read pods from: skipped (%s)", exc)
        return None


def sample_rejections(source: MetricsSource) -> SampleRejections | None:
    """Where the source counts the samples it left out (Prometheus only; None for the others)."""
    from recommender.input.prometheus.preflight import client_of

    client = client_of(source)
    return client.rejections if client is not None else None


class KubeResolver:
    """(namespace, pod) -> workload through the cluster's owner chain, re-read at most every max_age s."""

    def __init__(
        self, api_client: ApiClient, max_age: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.api_client = api_client
        self.max_age = max_age
        self.clock = clock
        self._graph: OwnerGraph | None = None
        self._loaded = -math.inf

    def __call__(self, namespace: str, pod: str) -> WorkloadRef | Skipped:
        if self._graph is None or self.clock() - self._loaded > self.max_age:
            from recommender.input.kube import load_inventory

            try:
                self._graph = load_inventory(self.api_client).graph
            except Exception as exc:
                if self._graph is None:
                    raise SourceError(f"cannot list pods to resolve GPU pods to workloads: {exc}") from exc
                log.warning("keeping the previous pod inventory: %s", exc)
            self._loaded = self.clock()
        return self._graph.resolve(namespace, pod)


class LockedDcgmSource:
    """The dcgm scrape source behind one lock: its series store is not thread-safe, and `run`
    scrapes from a background thread while the loop collects."""

    def __init__(self, inner: DcgmScrapeSource) -> None:
        self.inner = inner
        self.name: str = inner.name
        self._lock = threading.Lock()

    def scrape_once(self, strict: bool = False) -> ScrapeResult:
        """One scrape of every endpoint; `strict`: SourceError when none of them answered."""
        with self._lock:
            try:
                result = self.inner.scrape_once()
            except OSError as exc:
                raise SourceError(f"cannot store scraped DCGM samples: {exc}") from exc
        if strict and result.endpoints_ok == 0 and result.errors:
            raise SourceError(
                "no dcgm-exporter endpoint answered: " + "; ".join(str(e) for e in result.errors)
            )
        for err in result.errors:
            log.warning("dcgm scrape: %s", err)
        return result

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        with self._lock:
            return self.inner.collect(start, end, progress)

    def scrape_forever(self, stop: threading.Event, interval: float) -> None:
        while not stop.is_set():
            try:
                self.scrape_once()
            except Exception:
                log.exception("dcgm scrape failed")
            if stop.wait(interval):
                return


def dcgm_of(source: MetricsSource) -> LockedDcgmSource | None:
    """The dcgm scrape source inside `source`, if that is what it is."""
    inner = source.inner if isinstance(source, ScopedSource) else source
    return inner if isinstance(inner, LockedDcgmSource) else None


def build_dcgm_source(settings: RecommenderSettings) -> LockedDcgmSource:
    """dcgm-exporter endpoints scraped into a local series store (journaled at dcgm_store_path); GPU
    pods are resolved to workloads through the cluster's owner chain when a cluster is reachable."""
    if not settings.dcgm_urls:
        raise setting_error("dcgm_urls", f"required when {env_name('source')}=dcgm")
    from recommender.input.dcgm_scrape import DcgmScrapeSource
    from recommender.input.local_store import SeriesStore

    resolver = None
    try:
        resolver = KubeResolver(kube_api_client(settings.kubeconfig))
    except SettingsError as exc:
        log.warning("no cluster to resolve GPU pods to workloads; they will be skipped (%s)", exc)
    try:
        store = SeriesStore(settings.window_days * 86400.0, settings.dcgm_store_path)
    except (OSError, ValueError) as exc:
        raise setting_error("dcgm_store_path", f"{settings.dcgm_store_path}: {exc}") from exc
    return LockedDcgmSource(DcgmScrapeSource(list(settings.dcgm_urls), store, utcnow, resolver=resolver))


def build_store(settings: RecommenderSettings, api_client: ApiClient | None = None) -> RecommendationStore:
    """The store the settings name: Recommendation objects (crd) or one JSON file."""
    if settings.store == "crd":
        from recommender.output.store.crd import CrdStore

        api = api_client or kube_api_client(settings.kubeconfig)
        return CrdStore(api, settings.store_namespace, settings.cluster_name)
    from recommender.output.store.jsonfile import JsonFileStore

    return JsonFileStore(settings.store_file, max_bytes=settings.store_file_max_bytes)


def store_in_force(settings: RecommenderSettings) -> bool:
    """Whether the configured store holds anything to read: the crd store always, a json file once it
    exists. Every command reads the users' bounds (spec.resourcePolicy) from it alike (recommend, explain,
    the console), so what they show is planned with the bounds the webhook applies."""
    return settings.store == "crd" or settings.store_file.is_file()


def build_prices(settings: RecommenderSettings) -> PriceTable:
    """The shipped price table with price_file merged over it."""
    from recommender.sizing.cost import PriceTable, PriceTableError

    policy = settings.to_sizing_policy()
    try:
        return PriceTable.load(settings.price_file, policy.default_gpu_hourly_price, policy.spot_discount)
    except (PriceTableError, ValueError) as exc:
        raise setting_error("price_file", str(exc)) from exc


def size(
    snapshot: UsageSnapshot, policy: SizingPolicy, prices: PriceTable, now: datetime, bounds: Bounds
) -> RunOutput:
    """The sizing engine (imported when first used, so `--help` stays fast)."""
    from recommender.sizing.engine import recommend

    return recommend(snapshot, policy, prices, now, bounds)


def store_label(settings: RecommenderSettings) -> str:
    """Where recommendations went, for the `wrote N recommendations to ...` line."""
    if settings.store == "json":
        return str(settings.store_file)
    return "Recommendation resources" + (
        f" in {settings.store_namespace}" if settings.store_namespace else ""
    )


@dataclass(frozen=True)
class Wiring:
    """The factories the recommender's commands build their parts with (defaults: the real ones)."""

    source: Callable[[RecommenderSettings, datetime], MetricsSource] = build_source
    store: Callable[[RecommenderSettings, ApiClient | None], RecommendationStore] = build_store
    prices: Callable[[RecommenderSettings], PriceTable] = build_prices
    api_client: Callable[[Path | None], ApiClient] = kube_api_client
    sizing: SizingFn = size
    registry: Callable[[], CollectorRegistry] = CollectorRegistry
    clock: Callable[[], datetime] = utcnow
