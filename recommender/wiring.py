"""Typed wiring of the recommender: source, store, prices, sizing and clock built from the settings.

Commands take a `Wiring` (its factories) so tests inject fakes instead of patching modules.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from podsizer.api.identity import WorkloadRef
from podsizer.owners import OwnerGraph, Skipped
from podsizer.settings import RecommenderSettings, SettingsError, env_name, setting_error
from podsizer.sizing_policy import SizingPolicy
from recommender.model import MetricsSource, Progress, SourceError, UsageSnapshot
from recommender.output.store.base import RecommendationStore
from recommender.runner import Bounds, RunOutput

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from recommender.input.dcgm_scrape import DcgmScrapeSource, ScrapeResult
    from recommender.input.prometheus.client import SampleRejections
    from recommender.sizing.cost import PriceTable

log = logging.getLogger("podsizer")

SizingFn = Callable[[UsageSnapshot, SizingPolicy, "PriceTable", datetime, Bounds], RunOutput]


def utcnow() -> datetime:
    return datetime.now(UTC)


class NamespaceFilter:
    """Keeps only the given namespaces of another source's snapshot (for sources without a filter)."""

    def __init__(self, inner: MetricsSource, namespaces: frozenset[str]) -> None:
        self.inner = inner
        self.namespaces = namespaces
        self.name = inner.name

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        snap = self.inner.collect(start, end, progress)
        keep = self.namespaces
        return dataclasses.replace(
            snap,
            containers=tuple(c for c in snap.containers if c.workload.namespace in keep),
            gpus=tuple(g for g in snap.gpus if g.workload.namespace in keep),
            autoscalers=tuple(a for a in snap.autoscalers if a.workload.namespace in keep),
            demand=tuple(d for d in snap.demand if d.workload.namespace in keep),
            # Skipped subjects start with their namespace ("shop/pod/x"); node-level ones are dropped.
            skipped=tuple(s for s in snap.skipped if s.subject.split("/", 1)[0] in keep),
        )


def build_source(settings: RecommenderSettings, now: datetime) -> MetricsSource:
    """The metrics source the settings name (modules imported only when chosen)."""
    source: MetricsSource
    if settings.source == "demo":
        from recommender.input.demo import DemoSource

        source = DemoSource(now, days=max(1, math.ceil(settings.window_days)))
    elif settings.source == "file":
        if settings.source_file is None:
            raise setting_error("source_file", f"required when {env_name('source')}=file")
        from recommender.input.file import FileSource

        source = FileSource(settings.source_file)
    elif settings.source == "dcgm":
        source = build_dcgm_source(settings)
    else:
        return build_prometheus_source(settings)
    if settings.namespaces:
        return NamespaceFilter(source, frozenset(settings.namespaces))
    return source


def build_prometheus_source(settings: RecommenderSettings) -> MetricsSource:
    """Prometheus (or Thanos) at prometheus_url, with the bearer token file's token (re-read when the file
    changes) when one is set."""
    from recommender.input.prometheus import PromClient, PrometheusSource
    from recommender.input.prometheus.auth import BearerTokenFile

    auth = None
    if settings.prometheus_bearer_token_file is not None:
        auth = BearerTokenFile(settings.prometheus_bearer_token_file)
        try:
            auth.token()
        except SourceError as exc:
            raise setting_error("prometheus_bearer_token_file", str(exc)) from exc
    client = PromClient(
        settings.prometheus_url,
        timeout=settings.prometheus_timeout_seconds,
        auth=auth,
        max_response_bytes=settings.prometheus_max_response_bytes,
    )
    return PrometheusSource(client, namespaces=list(settings.namespaces) or None)


def sample_rejections(source: MetricsSource) -> SampleRejections | None:
    """Where the source counts the samples it left out (Prometheus only; None for the others)."""
    from recommender.input.prometheus import PrometheusSource

    inner = source.inner if isinstance(source, NamespaceFilter) else source
    return inner.client.rejections if isinstance(inner, PrometheusSource) else None


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
    inner = source.inner if isinstance(source, NamespaceFilter) else source
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


def kube_api_client(kubeconfig: Path | None) -> ApiClient:
    """A kubernetes ApiClient: the kubeconfig given, else in-cluster, else ~/.kube/config."""
    from kubernetes import client, config

    try:
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            cfg = client.Configuration()
            config.load_incluster_config(client_configuration=cfg)
            return client.ApiClient(cfg)
        api: ApiClient = config.new_client_from_config(config_file=str(kubeconfig) if kubeconfig else None)
        return api
    except (config.ConfigException, OSError) as exc:
        raise setting_error("kubeconfig", f"no usable Kubernetes configuration: {exc}") from exc


def build_store(settings: RecommenderSettings, api_client: ApiClient | None = None) -> RecommendationStore:
    """The store the settings name: Recommendation objects (crd) or one JSON file."""
    if settings.store == "crd":
        from recommender.output.store.crd import CrdStore

        return CrdStore(api_client or kube_api_client(settings.kubeconfig), settings.store_namespace)
    from recommender.output.store.jsonfile import JsonFileStore

    return JsonFileStore(settings.store_file)


def build_prices(settings: RecommenderSettings) -> PriceTable:
    """The shipped price table with price_file merged over it."""
    from recommender.sizing.cost import PriceTable, PriceTableError

    try:
        return PriceTable.load(settings.price_file, settings.default_gpu_hourly_price, settings.spot_discount)
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
