"""Two clusters through one VictoriaMetrics endpoint: `podsizer recommend` with PODSIZER_CLUSTER_LABEL=cluster
sizes each cluster from its own series, every item names its cluster, and a JSON store keeps them apart."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from podsizer.api import Recommendation
from podsizer.api.quantity import parse
from podsizer.api.resource import recommendation_from_resource
from podsizer.settings import RecommenderSettings, run_reporting_errors
from recommender.commands import add_recommend_arguments, run_recommend
from recommender.output.store.base import RecommendationStore
from recommender.output.store.crd import CrdStore
from recommender.output.store.jsonfile import JsonFileStore
from recommender.wiring import Wiring, build_store
from tests.integration.prometheus.history import CLUSTER_CPU_SCALE, CLUSTER_LABEL, GI, MI
from tests.support.custom_objects import FakeCustomObjects, fake_recommendations

from .conftest import Loaded, workloads

pytestmark = pytest.mark.integration

Key = tuple[str, str, str]


def _cluster_environment(monkeypatch: pytest.MonkeyPatch, clusters: str) -> None:
    """Only the variables under test: PODSIZER_CLUSTER_LABEL=cluster and PODSIZER_CLUSTERS=clusters."""
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PODSIZER_CLUSTER_LABEL", CLUSTER_LABEL)
    monkeypatch.setenv("PODSIZER_CLUSTERS", clusters)


def _run(loaded: Loaded, store: Path, *more: str, wiring: Wiring | None = None) -> tuple[int, str, str]:
    """One `podsizer recommend -o json` (store file `store`): exit status, stdout, stderr."""
    parser = argparse.ArgumentParser(prog="podsizer recommend")
    add_recommend_arguments(parser)
    argv = ["--source", "prometheus", "--prometheus-url", loaded.server.url, "--no-progress", "-o", "json"]
    args = parser.parse_args([*argv, "--store-file", str(store), *more])
    wired = wiring or Wiring(clock=lambda: loaded.end)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run_reporting_errors("recommend", lambda a: run_recommend(a, wired), args)
    return rc, out.getvalue(), err.getvalue()


def _recommend(loaded: Loaded, store: Path, *more: str, wiring: Wiring | None = None) -> list[Recommendation]:
    """One `podsizer recommend -o json` that must succeed; its items, decoded."""
    rc, out, err = _run(loaded, store, *more, wiring=wiring)
    assert rc == 0, err
    doc: dict[str, Any] = json.loads(out)
    return [recommendation_from_resource(item) for item in doc["items"]]


def _fake_crd(api: FakeCustomObjects) -> Callable[[RecommenderSettings, object], RecommendationStore]:
    """Wiring.store: the real crd store the settings build (build_store), on an in-memory API server."""

    def store(settings: RecommenderSettings, _: object) -> RecommendationStore:
        crd = build_store(settings, ApiClient())
        assert isinstance(crd, CrdStore)
        crd.objects.api = api
        return crd

    return store


def _by_cluster(recs: list[Recommendation]) -> dict[str, dict[Key, Recommendation]]:
    out: dict[str, dict[Key, Recommendation]] = {}
    for r in recs:
        out.setdefault(r.target.cluster, {})[(r.target.namespace, r.target.kind, r.target.name)] = r
    return out


def _request(rec: Recommendation, container: str, resource: str) -> float:
    c = rec.container(container)
    assert c is not None, f"{rec.target} has no container {container}"
    return parse(c.requests[resource])


@pytest.fixture(scope="module")
def all_clusters(vm_clusters: Loaded, tmp_path_factory: pytest.TempPathFactory) -> list[Recommendation]:
    mp = pytest.MonkeyPatch()
    _cluster_environment(mp, "all")
    try:
        return _recommend(vm_clusters, tmp_path_factory.mktemp("mc") / "absent.json")
    finally:
        mp.undo()


def test_one_run_with_clusters_all_sizes_every_workload_of_both_clusters(
    all_clusters: list[Recommendation], vm_clusters: Loaded
) -> None:
    per = _by_cluster(all_clusters)
    assert sorted(per) == sorted(CLUSTER_CPU_SCALE)
    for cluster in CLUSTER_CPU_SCALE:
        assert workloads(vm_clusters.histories[cluster]) <= set(per[cluster]), cluster
    assert set(per["east"]) == set(per["west"])


def test_every_item_carries_its_cluster(all_clusters: list[Recommendation]) -> None:
    assert all_clusters
    assert {r.cluster for r in all_clusters} == set(CLUSTER_CPU_SCALE)
    assert all(r.target.cluster == r.cluster for r in all_clusters)


def test_each_cluster_is_sized_from_its_own_cpu_usage(all_clusters: list[Recommendation]) -> None:
    per = _by_cluster(all_clusters)
    east, west = CLUSTER_CPU_SCALE["east"], CLUSTER_CPU_SCALE["west"]
    # the Prometheus tests' figures (p99 of a steady 100m + 15%; 200m per HPA replica / 0.7), scaled
    for cluster, scale in (("east", east), ("west", west)):
        cart = per[cluster][("legacy", "DeploymentConfig", "cart")]
        assert 0.110 * scale <= _request(cart, "cart", "cpu") <= 0.135 * scale, cluster
        web = per[cluster][("shop", "Deployment", "web")]
        assert 0.27 * scale <= _request(web, "app", "cpu") <= 0.30 * scale, cluster


def test_memory_is_sized_alike_in_both_clusters_as_their_memory_use_is(
    all_clusters: list[Recommendation],
) -> None:
    per = _by_cluster(all_clusters)
    for cluster in CLUSTER_CPU_SCALE:
        cart = _request(per[cluster][("legacy", "DeploymentConfig", "cart")], "cart", "memory")
        assert 128 * MI * 1.15 <= cart <= 150 * MI * 1.15, cluster
        db = _request(per[cluster][("shop", "StatefulSet", "db")], "postgres", "memory")
        assert db >= max(2.5 * GI * 1.2, 2.5 * GI + 100 * MI), cluster
    assert _request(per["east"][("shop", "StatefulSet", "db")], "postgres", "memory") == _request(
        per["west"][("shop", "StatefulSet", "db")], "postgres", "memory"
    )


def test_a_named_cluster_sizes_only_that_cluster_as_the_all_run_did(
    vm_clusters: Loaded, all_clusters: list[Recommendation], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cluster_environment(monkeypatch, "west")
    west = _by_cluster(_recommend(vm_clusters, tmp_path / "absent.json"))
    assert list(west) == ["west"]
    expected = _by_cluster(all_clusters)["west"]
    got = {k: r.containers for k, r in west["west"].items()}
    assert got == {k: r.containers for k, r in expected.items()}


def test_write_into_a_json_store_keeps_both_clusters_same_named_workloads_apart(
    vm_clusters: Loaded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "recs.json"
    _cluster_environment(monkeypatch, "all")
    _recommend(vm_clusters, store, "--write")
    _cluster_environment(monkeypatch, "east")
    _recommend(vm_clusters, store, "--write")  # a later run of one cluster leaves the other's items alone
    per = _by_cluster(JsonFileStore(store).list())
    assert sorted(per) == sorted(CLUSTER_CPU_SCALE)
    assert set(per["east"]) == set(per["west"])
    web = ("shop", "Deployment", "web")
    east_cpu, west_cpu = _request(per["east"][web], "app", "cpu"), _request(per["west"][web], "app", "cpu")
    assert west_cpu == pytest.approx(east_cpu * CLUSTER_CPU_SCALE["west"], rel=0.1)
    assert per["east"][web].target.recommendation_name == per["west"][web].target.recommendation_name


def test_with_store_crd_and_a_cluster_name_only_that_clusters_recommendations_are_written(
    vm_clusters: Loaded, all_clusters: list[Recommendation], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cluster_environment(monkeypatch, "all")
    monkeypatch.setenv("PODSIZER_STORE", "crd")
    monkeypatch.setenv("PODSIZER_CLUSTER_NAME", "west")
    api = fake_recommendations()
    wiring = Wiring(clock=lambda: vm_clusters.end, store=_fake_crd(api))
    printed = _by_cluster(_recommend(vm_clusters, tmp_path / "absent.json", "--write", wiring=wiring))
    assert sorted(printed) == sorted(CLUSTER_CPU_SCALE)  # the run sizes and prints both clusters
    written = _by_cluster(CrdStore(custom_objects=api).list())
    assert list(written) == ["west"]
    west = _by_cluster(all_clusters)["west"]
    assert {k: r.containers for k, r in written["west"].items()} == {k: r.containers for k, r in west.items()}


def test_with_store_crd_two_clusters_and_no_cluster_name_nothing_is_written_and_the_error_names_it(
    vm_clusters: Loaded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cluster_environment(monkeypatch, "all")
    monkeypatch.setenv("PODSIZER_STORE", "crd")
    api = fake_recommendations()
    wiring = Wiring(clock=lambda: vm_clusters.end, store=_fake_crd(api))
    rc, _, err = _run(vm_clusters, tmp_path / "absent.json", "--write", wiring=wiring)
    assert rc != 0
    assert "PODSIZER_CLUSTER_NAME" in err
    assert api.objects == {}
