"""The console's inputs from its settings: the chosen source's RawDataset, the store's Recommendations (else a
run computed from the data), and one build of the console values from them."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from console.build import build_console_data
from console.data import StaticConsoleData
from podsizer.policy import PlanPolicy
from podsizer.settings import ConsoleSettings, RecommenderSettings, env_name, setting_error
from recommender.model import UsageSnapshot
from recommender.model.aggregate import aggregate, clip
from recommender.model.raw import RawDataset
from recommender.output.store.base import RecommendationStore
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import recommend
from recommender.sizing.policy import SizingPolicy

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

DatasetFn = Callable[[datetime, datetime], tuple[RawDataset, UsageSnapshot]]  # (start, end) -> raw, usage
StoreFn = Callable[[RecommenderSettings, "ApiClient | None"], RecommendationStore]


@dataclass(frozen=True)
class ConsoleInputs:
    """What one build reads: the window's raw data, the store (None: not configured) and the policies."""

    source_label: str  # "prometheus (prom.example:9090)", "demo", "file:/data/x.json"
    dataset: DatasetFn
    store: RecommendationStore | None
    store_label: str
    window: timedelta
    sizing: SizingPolicy
    prices: PriceTable
    plan_policy: PlanPolicy


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
    from recommender.input.demo import build_demo_dataset

    days = max(1, math.ceil(settings.window_days))

    def dataset(start: datetime, end: datetime) -> tuple[RawDataset, UsageSnapshot]:
        raw = clip(build_demo_dataset(end, days=days), start, end)
        return raw, aggregate(raw, source="demo")

    return dataset


def _file(settings: ConsoleSettings, field: str) -> tuple[DatasetFn, str]:
    if settings.source_file is None:
        raise setting_error("source_file", f"required when {env_name(field)}=file")
    from recommender.input.file import FileSource

    path: Path = settings.source_file
    if not path.is_file():
        raise setting_error("source_file", f"{path}: no such file")
    source = FileSource(path)

    def dataset(start: datetime, end: datetime) -> tuple[RawDataset, UsageSnapshot]:
        raw = clip(source.dataset(), start, end)
        return raw, aggregate(raw, source=f"file:{path}")

    return dataset, f"file:{path}"


def _prometheus(settings: ConsoleSettings) -> tuple[DatasetFn, str]:
    from recommender.input.prometheus import PrometheusSource
    from recommender.wiring import build_prometheus_source

    source = build_prometheus_source(recommender_view(settings))
    if not isinstance(source, PrometheusSource):  # pragma: no cover - the wiring builds one
        raise TypeError(f"expected a PrometheusSource, got {type(source).__name__}")
    prom = source

    def dataset(start: datetime, end: datetime) -> tuple[RawDataset, UsageSnapshot]:
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


def store_of(
    settings: ConsoleSettings, store_fn: StoreFn | None = None
) -> tuple[RecommendationStore | None, str]:
    """The store in force: crd (a kubernetes client), or the json file when it exists (else None: the
    console computes a run from the source's data)."""
    from recommender.wiring import build_store, store_label

    view = recommender_view(settings)
    label = f"{settings.store} {store_label(view)}"
    if settings.store == "json" and not settings.store_file.is_file():
        return None, f"json {settings.store_file} (absent)"
    return (store_fn or build_store)(view, None), label


def build_inputs(settings: ConsoleSettings, store_fn: StoreFn | None = None) -> ConsoleInputs:
    """Inputs from the settings; SettingsError (naming the setting) when the source or store is unusable."""
    dataset, label = source_dataset(settings)
    store, store_label = store_of(settings, store_fn)
    view = recommender_view(settings)
    return ConsoleInputs(
        source_label=label,
        dataset=dataset,
        store=store,
        store_label=store_label,
        window=timedelta(days=settings.window_days),
        sizing=view.to_sizing_policy(),
        prices=PriceTable.load(None, view.default_gpu_hourly_price, view.spot_discount),
        plan_policy=settings.plan_policy(),
    )


def build(inputs: ConsoleInputs, now: datetime) -> StaticConsoleData:
    """One build over [now - window, now]: the store's Recommendations when it holds any, else the run
    computed from the data (waste and GPU costs always come from the data). SourceError/StoreError raise."""
    raw, snapshot = inputs.dataset(now - inputs.window, now)
    stored = inputs.store.list() if inputs.store is not None else []
    bounds = inputs.store.bounds() if inputs.store is not None else {}
    run = recommend(snapshot, inputs.sizing, inputs.prices, now, bounds)
    if stored:
        run = dataclasses.replace(run, recommendations=tuple(sorted(stored, key=lambda r: r.target)))
        origin = f"{len(stored)} from the store"
    else:
        origin = "computed from the source's data (store " + (
            "empty)" if inputs.store is not None else "absent)"
        )
    data = build_console_data(raw, snapshot, run, now, policy=inputs.plan_policy, prices=inputs.prices)
    info = dataclasses.replace(data.info, source=inputs.source_label, store=inputs.store_label, origin=origin)
    return dataclasses.replace(data, info=info)
