"""The incremental path built from the settings (recommender.incremental.wiring): which checkpoint store,
which sources become incremental, one IncrementalSource per cluster kept between cycles."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from podsizer.settings import RecommenderSettings, SettingsError, load
from recommender.checkpoints.crdstore import CrdCheckpointStore
from recommender.checkpoints.filestore import FileCheckpointStore
from recommender.clusters import cluster_sources
from recommender.incremental.source import IncrementalSource
from recommender.incremental.wiring import IncrementalClusters, checkpoint_store, incremental
from recommender.input.demo_cluster import DemoSource
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.wiring import ScopedSource, build_source

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def settings(**env: str) -> RecommenderSettings:
    return load(RecommenderSettings, None, {f"PODSIZER_{k.upper()}": v for k, v in env.items()})


def no_api() -> object:
    raise AssertionError("no Kubernetes client may be built")


class Api:
    """Stands in for a kubernetes ApiClient: the CRD store only keeps it."""


def test_auto_is_memory_only_with_a_json_store_and_no_file() -> None:
    assert checkpoint_store(settings(), "", no_api) is None  # type: ignore[arg-type]


def test_auto_is_the_file_when_one_is_set(tmp_path: Path) -> None:
    store = checkpoint_store(settings(checkpoint_file=str(tmp_path / "u.ckpt")), "", no_api)  # type: ignore[arg-type]
    assert isinstance(store, FileCheckpointStore) and store.path == tmp_path / "u.ckpt"


def test_each_cluster_gets_its_own_file(tmp_path: Path) -> None:
    store = checkpoint_store(settings(checkpoint_file=str(tmp_path / "u.ckpt")), "east", no_api)  # type: ignore[arg-type]
    assert isinstance(store, FileCheckpointStore) and store.path == tmp_path / "u.east.ckpt"


def test_auto_is_usage_checkpoints_with_the_crd_store() -> None:
    store = checkpoint_store(settings(store="crd", cluster_name="east"), "east", lambda: Api())  # type: ignore[arg-type,return-value]
    assert isinstance(store, CrdCheckpointStore) and store.per_workload


def test_another_clusters_model_is_not_written_as_usage_checkpoints(caplog: pytest.LogCaptureFixture) -> None:
    assert checkpoint_store(settings(store="crd", cluster_name="east"), "west", no_api) is None  # type: ignore[arg-type]
    assert "west: its usage model is kept in memory only" in caplog.text


def test_the_file_store_without_a_file_names_the_setting() -> None:
    with pytest.raises(SettingsError, match="PODSIZER_CHECKPOINT_FILE"):
        checkpoint_store(settings(checkpoint_store="file"), "", no_api)  # type: ignore[arg-type]


def test_none_keeps_the_model_in_memory_even_with_the_crd_store() -> None:
    assert checkpoint_store(settings(store="crd", checkpoint_store="none"), "", no_api) is None  # type: ignore[arg-type]


def test_a_scoped_prometheus_source_becomes_incremental_inside_its_scope() -> None:
    s = settings(prometheus_url="http://127.0.0.1:9", namespaces="shop")
    source = incremental(s, build_source(s, NOW), no_api, None)  # type: ignore[arg-type]
    assert isinstance(source, ScopedSource) and isinstance(source.inner, IncrementalClusters)
    assert isinstance(source.inner.client, PromClient)  # what the preflight check reads


def test_the_demo_source_stays_as_it_is() -> None:
    s = settings(source="demo")
    demo = build_source(s, NOW)
    assert incremental(s, demo, no_api, None) is demo  # type: ignore[arg-type]
    assert isinstance(demo, DemoSource)


def test_each_cluster_keeps_one_incremental_source_between_cycles() -> None:
    s = settings(prometheus_url="http://127.0.0.1:9", cluster_label="cluster", clusters="east,west")
    source = incremental(s, build_source(s, NOW), no_api, None)  # type: ignore[arg-type]
    assert isinstance(source, IncrementalClusters)
    source.source.clusters = lambda start, end: ["east", "west"]  # type: ignore[method-assign]
    first = cluster_sources(source, s, NOW - timedelta(days=7), NOW)
    again = cluster_sources(source, s, NOW - timedelta(days=7), NOW)
    assert [c.name for c in first] == ["east", "west"]
    assert all(isinstance(c.source, IncrementalSource) for c in first)
    assert [c.source for c in first] == [c.source for c in again]  # the same objects: the models live on
    assert [c.source.source.cluster for c in first] == ["east", "west"]  # type: ignore[attr-defined]
    assert isinstance(first[0].source.source, PrometheusSource)  # type: ignore[attr-defined]


def test_a_source_made_to_only_read_the_checkpoint_never_saves(tmp_path: Path) -> None:
    s = settings(prometheus_url="http://127.0.0.1:9", checkpoint_file=str(tmp_path / "u.ckpt"))
    reader = incremental(s, build_source(s, NOW), no_api, None, save=False)  # type: ignore[arg-type]
    writer = incremental(s, build_source(s, NOW), no_api, None)  # type: ignore[arg-type]
    assert isinstance(reader, IncrementalClusters) and isinstance(writer, IncrementalClusters)
    assert reader.for_cluster("").save is False
    assert writer.for_cluster("").save is True
