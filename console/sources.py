"""The console's inputs from its settings: the chosen source's RawDataset, the store's Recommendations (else a
run computed from the data; a crd store through a watch), and the builds of the console values from them."""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from console.build import build_console_data
from console.data import StaticConsoleData
from podsizer.api.resource import of_cluster
from podsizer.policy import PlanPolicy
from podsizer.settings import ConsoleSettings, RecommenderSettings, env_name, setting_error
from podsizer.sizing_policy import SizingPolicy
from recommender.model import UsageSnapshot
from recommender.model.aggregate import aggregate
from recommender.model.raw import RawDataset
from recommender.model.samples import clip
from recommender.output.store.base import RecommendationStore
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import RecommendationRun, recommend

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

DatasetFn = Callable[[datetime, datetime], tuple[RawDataset, UsageSnapshot]]  # (start, end) -> raw, usage
StoreFn = Callable[[RecommenderSettings, "ApiClient | None"], RecommendationStore]


class ChangeFeed(Protocol):
    """A store that says when its contents changed (the watched crd store)."""

    def version(self) -> int: ...

    def wait_for_change(self, seen: int, timeout: float) -> int: ...


@dataclass(frozen=True)
class ConsoleInputs:
    """What one build reads: the window's raw data, the store (None: not configured) and the policies;
    `changes` is the store again when it is watched (a build follows its changes without a fetch)."""

    source_label: str  # "prometheus (prom.example:9090)", "demo", "file:/data/x.json"
    dataset: DatasetFn
    store: RecommendationStore | None
    store_label: str
    window: timedelta
    sizing: SizingPolicy
    prices: PriceTable
    plan_policy: PlanPolicy
    changes: ChangeFeed | None = None
    cluster_name: str = ""  # this console's cluster ("": every cluster the store and data hold)


def recommender_view(settings: ConsoleSettings) -> RecommenderSettings:
    """The console's settings as the recommender reads them (source, store and plan fields; the rest at
    their defaults), so source and store are built by the recommender's own wiring."""
    shared = {
        n: getattr(settings, n) for n in ConsoleSettings.model_fields if n in RecommenderSettings.model_fields
    }
    return RecommenderSettings.model_validate(shared)


def url_host(url: str) -> str:
    """The host (and port) of a URL, never its credentials."""
    return urlsplit(url).netloc.rsplit("@", 1)[-1] or url


def _demo(settings: ConsoleSettings) -> DatasetFn:
    from recommender.input.demo_cluster import build_demo_dataset
    from recommender.wiring import recency_of

    days = max(1, math.ceil(settings.window_days))
    recency = recency_of(recommender_view(settings))

    def dataset(start: datetime, end: datetime) -> tuple[RawDataset, UsageSnapshot]:
        raw = clip(build_demo_dataset(end, days=days), start, end)
        return raw, aggregate(raw, source="demo", recency=recency)

    return dataset


def _file(settings: ConsoleSettings, field: str) -> tuple[DatasetFn, str]:
    if settings.source_file is None:
        raise setting_error("source_file", f"required when {env_name(field)}=file")
    from recommender.input.file import FileSource

    path: Path = settings.source_file
    if not path.is_file():
        raise setting_error("source_file", f"{path}: no such file")
    from recommender.wiring import recency_of

    source = FileSource(path)
    recency = recency_of(recommender_view(settings))

    def dataset(start: datetime, end: datetime) -> tuple[RawDataset, UsageSnapshot]:
        raw = clip(source.dataset(), start, end)
        return raw, aggregate(raw, source=f"file:{path}", recency=recency)

    return dataset, f"file:{path}"


def _prometheus(settings: ConsoleSettings) -> tuple[DatasetFn, str]:
    from recommender.input.prometheus import PrometheusSource
    from recommender.wiring import build_prometheus_source

    source = build_prometheus_source(recommender_view(settings))
    if not isinstance(source, PrometheusSource):  # pragma: no cover - the wiring builds one
        raise TypeError(f"expected a PrometheusSource, got {type(source).__name__}")
    prom = source
    from recommender.input.prometheus.preflight import CheckedSource, check_connection

    # the connectivity check before the first build (the client is the recommender's: one factory)
    first = CheckedSource(prom, lambda: check_connection(prom.client, settings))

    def dataset(start: datetime, end: datetime) -> tuple[RawDataset, UsageSnapshot]:
        first.ensure_checked()
        raw = prom.dataset(start, end)
        return raw, prom.usage(raw)

    return dataset, f"prometheus ({url_host(settings.prometheus_url)})"


def source_dataset(settings: ConsoleSettings) -> tuple[DatasetFn, str]:
    """The chosen source's dataset function and its label; SettingsError naming the setting when the
    source is not one the console reads or lacks its settings. Never a silent fallback to the demo."""
    name, field = settings.chosen_source()
    if name == "demo":
        return _demo(settings), "demo"
    if name == "file":
        return _file(settings, field)
    if name == "prometheus":
        return _prometheus(settings)
    raise setting_error(
        field,
        f"the console cannot read source {name!r} (demo, file or prometheus); set "
        f"{env_name('console_source')} to one of them",
    )


def _watched_crd(settings: ConsoleSettings, stop: threading.Event) -> RecommendationStore:
    """The crd store through a watch: listed here (StoreError when that fails), then watched."""
    from kubernetes import watch

    from console.crdwatch import WatchedCrdStore
    from podsizer.kube.client import kube_api_client
    from podsizer.kube.objects import where
    from podsizer.kube.resources import RECOMMENDATIONS
    from podsizer.kube.watch import custom_object_lister

    ns = settings.store_namespace
    lister = custom_object_lister(kube_api_client(settings.kubeconfig), RECOMMENDATIONS, ns)
    store = WatchedCrdStore(lister, watch.Watch, stop, where=where(ns))
    store.start()
    return store


def store_of(
    settings: ConsoleSettings, store_fn: StoreFn | None = None, stop: threading.Event | None = None
) -> tuple[RecommendationStore | None, str]:
    """The store in force: crd (listed once, then watched until `stop` is set; `store_fn` replaces it in
    tests), or the json file when it exists (else None: the console computes a run from the source's data).
    """
    from recommender.wiring import build_store, store_in_force, store_label

    view = recommender_view(settings)
    label = f"{settings.store} {store_label(view)}"
    if not store_in_force(view):
        return None, f"json {settings.store_file} (absent)"
    if settings.store == "crd" and store_fn is None:
        return _watched_crd(settings, stop or threading.Event()), label + " (watched)"
    return (store_fn or build_store)(view, None), label


def _changes(store: RecommendationStore | None) -> ChangeFeed | None:
    from console.crdwatch import WatchedCrdStore

    return store if isinstance(store, WatchedCrdStore) else None


def build_inputs(
    settings: ConsoleSettings, store_fn: StoreFn | None = None, stop: threading.Event | None = None
) -> ConsoleInputs:
    """Inputs from the settings; SettingsError (naming the setting) when the source or store is unusable,
    StoreError when the crd store cannot be listed. `stop` ends the crd store's watch."""
    dataset, label = source_dataset(settings)
    store, store_label = store_of(settings, store_fn, stop)
    sizing = recommender_view(settings).to_sizing_policy()
    return ConsoleInputs(
        source_label=label,
        dataset=dataset,
        store=store,
        store_label=store_label,
        window=timedelta(days=settings.window_days),
        sizing=sizing,
        prices=PriceTable.load(None, sizing.default_gpu_hourly_price, sizing.spot_discount),
        plan_policy=settings.plan_policy(),
        changes=_changes(store),
        cluster_name=settings.cluster_name,
    )


@dataclass(frozen=True)
class _Fetched:
    """One window's data and the run computed from it."""

    now: datetime
    raw: RawDataset
    snapshot: UsageSnapshot
    run: RecommendationRun


class ConsoleBuilder:
    """Builds over one ConsoleInputs: `build(now)` fetches [now - window, now] and composes; `recompose()`
    composes the last fetched window again with the store's current Recommendations (a watched store
    changed), without fetching. Calls must not overlap (RefreshingConsoleData serialises them)."""

    def __init__(self, inputs: ConsoleInputs) -> None:
        self.inputs = inputs
        self._last: _Fetched | None = None

    def build(self, now: datetime) -> StaticConsoleData:
        """SourceError/StoreError raise (the caller keeps its last build)."""
        i = self.inputs
        raw, snapshot = i.dataset(now - i.window, now)
        bounds = i.store.bounds() if i.store is not None else {}
        run = recommend(snapshot, i.sizing, i.prices, now, bounds)
        self._last = _Fetched(now, raw, snapshot, run)
        return self._compose(self._last)

    def recompose(self) -> StaticConsoleData:
        """The last fetched window with the store as it is now (RuntimeError before the first build)."""
        if self._last is None:
            raise RuntimeError("recompose before the first build")
        return self._compose(self._last)

    def _compose(self, f: _Fetched) -> StaticConsoleData:
        """The store's Recommendations when it holds any, else the run computed from the data (waste and
        GPU costs always come from the data)."""
        i = self.inputs
        stored = i.store.list() if i.store is not None else []
        if i.cluster_name:  # this cluster's, and the unlabelled ones it has none of its own for
            stored = of_cluster(stored, i.cluster_name)
        run = f.run
        if stored:
            run = dataclasses.replace(run, recommendations=tuple(sorted(stored, key=lambda r: r.target)))
            origin = f"{len(stored)} from the store"
        else:
            origin = "computed from the source's data (store " + (
                "empty)" if i.store is not None else "absent)"
            )
        data = build_console_data(f.raw, f.snapshot, run, f.now, policy=i.plan_policy, prices=i.prices)
        info = dataclasses.replace(
            data.info, source=i.source_label, store=i.store_label, origin=origin, cluster_name=i.cluster_name
        )
        return dataclasses.replace(data, info=info)


def build(inputs: ConsoleInputs, now: datetime) -> StaticConsoleData:
    """One build over [now - window, now] (ConsoleBuilder.build). SourceError/StoreError raise."""
    return ConsoleBuilder(inputs).build(now)
