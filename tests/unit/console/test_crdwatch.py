"""The console's crd store through a watch (one list, then watch events; re-list on 410; StoreError when the
first list fails) and the console following it: a changed Recommendation is shown without a fetch."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from console.crdwatch import WatchedCrdStore
from console.refresh import RefreshingConsoleData
from console.sources import ConsoleBuilder, ConsoleInputs, build_inputs
from podsizer.api import Recommendation, recommendation_to_resource
from podsizer.api.resource import ContainerRecommendation
from podsizer.cli import main
from podsizer.settings import ConsoleSettings, load
from recommender.model import UsageSnapshot
from recommender.model.raw import RawDataset
from recommender.output.store.base import StoreError
from recommender.sizing.engine import recommend
from tests.support.watch import FakeApi, FakeWatch

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def _obj(rec: Recommendation, rv: str) -> dict[str, Any]:
    obj = recommendation_to_resource(rec)
    obj["metadata"]["resourceVersion"] = rv
    return obj


def _list(objs: list[dict[str, Any]], rv: str) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rv}, "items": objs}


def _cpu(rec: Recommendation, cpu: str) -> Recommendation:
    first = rec.containers[0]
    changed = ContainerRecommendation(
        first.name, {**first.requests, "cpu": cpu}, first.limits, first.confidence, first.reason
    )
    return dataclasses.replace(rec, containers=(changed, *rec.containers[1:]))


def _until(check: Callable[[], bool], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def demo_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ConsoleInputs:
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    env = {"PODSIZER_STORE_FILE": str(tmp_path / "absent.json"), "PODSIZER_WINDOW_DAYS": "1"}
    return build_inputs(load(ConsoleSettings, env=env))


@pytest.fixture
def recs(demo_inputs: ConsoleInputs) -> list[Recommendation]:
    _, snapshot = demo_inputs.dataset(NOW - demo_inputs.window, NOW)
    chosen = [
        r
        for r in recommend(snapshot, demo_inputs.sizing, demo_inputs.prices, NOW).recommendations
        if r.containers
    ]
    assert len(chosen) >= 2
    return chosen[:2]


def test_the_first_list_fills_the_store_and_watch_events_follow_from_its_resource_version(
    recs: list[Recommendation], stop: threading.Event
) -> None:
    a, b = recs
    api = FakeApi(
        [_list([_obj(a, "5")], "10")],
        [
            [
                {"type": "ADDED", "raw_object": _obj(b, "11")},
                {"type": "MODIFIED", "raw_object": _obj(_cpu(a, "123m"), "12")},
            ]
        ],
        stop,
    )
    store = WatchedCrdStore(api.list_fn, api.watch_factory, stop)
    store.start()
    assert api.list_calls == 1 and store.version() >= 1  # listed in the caller's thread

    def followed() -> bool:
        got = store.get(a.target)
        return len(store.list()) == 2 and got is not None and got.containers[0].requests["cpu"] == "123m"

    assert _until(followed)
    assert api.list_calls == 1
    assert api.watch_kwargs[0]["resource_version"] == "10"
    assert api.watch_kwargs[0]["allow_watch_bookmarks"] is True


def test_a_deleted_recommendation_leaves_the_store(recs: list[Recommendation], stop: threading.Event) -> None:
    a, b = recs
    api = FakeApi(
        [_list([_obj(a, "5"), _obj(b, "6")], "10")],
        [[{"type": "DELETED", "raw_object": _obj(b, "11")}]],
        stop,
    )
    store = WatchedCrdStore(api.list_fn, api.watch_factory, stop)
    store.start()
    assert _until(lambda: [r.target for r in store.list()] == [a.target])


def test_a_410_gone_relists_and_the_watch_resumes_from_the_new_list_and_bookmarks(
    recs: list[Recommendation], stop: threading.Event
) -> None:
    a, b = recs
    api = FakeApi(
        [_list([_obj(a, "5")], "10"), _list([_obj(b, "40")], "41")],
        [
            [ApiException(status=410, reason="Gone")],
            [{"type": "BOOKMARK", "raw_object": {"metadata": {"resourceVersion": "50"}}}],
        ],
        stop,
    )
    store = WatchedCrdStore(api.list_fn, api.watch_factory, stop)
    store.start()
    assert _until(lambda: len(api.watch_kwargs) >= 3)
    assert [r.target for r in store.list()] == [b.target]
    assert api.list_calls == 2
    assert [k["resource_version"] for k in api.watch_kwargs[:3]] == ["10", "41", "50"]


def test_a_failing_watch_is_retried_after_a_back_off_and_the_store_keeps_its_contents(
    recs: list[Recommendation], stop: threading.Event
) -> None:
    a, _ = recs
    api = FakeApi(
        [_list([_obj(a, "5")], "10")], [[ApiException(status=500, reason="Internal Server Error")]], stop
    )
    store = WatchedCrdStore(api.list_fn, api.watch_factory, stop, backoff=0.05)
    store.start()
    assert _until(lambda: api.list_calls == 2 and len(api.watch_kwargs) == 2)
    assert [r.target for r in store.list()] == [a.target]


def test_an_unlistable_store_fails_at_start_with_a_store_error_naming_the_resource(
    stop: threading.Event,
) -> None:
    api = FakeApi([ApiException(status=404, reason="Not Found")], [], stop)
    store = WatchedCrdStore(api.list_fn, api.watch_factory, stop, where="namespace shop")
    with pytest.raises(
        StoreError, match=r"recommendations\.podsizer\.io in namespace shop: HTTP 404 Not Found"
    ):
        store.start()


def test_an_unreachable_apiserver_fails_at_start_with_a_store_error(stop: threading.Event) -> None:
    api = FakeApi([urllib3.exceptions.ProtocolError("connection refused")], [], stop)
    store = WatchedCrdStore(api.list_fn, api.watch_factory, stop)
    with pytest.raises(
        StoreError, match=r"recommendations\.podsizer\.io in all namespaces: .*connection refused"
    ):
        store.start()


def test_the_store_is_read_only(recs: list[Recommendation], stop: threading.Event) -> None:
    store = WatchedCrdStore(FakeApi([], [], stop).list_fn, lambda: FakeWatch(FakeApi([], [], stop)), stop)
    with pytest.raises(StoreError, match="read-only"):
        store.put(recs[0])
    assert [r for r, _ in store.put_many(recs)] == recs


def test_wait_for_change_returns_the_new_version_once_an_event_arrives(recs: list[Recommendation]) -> None:
    store = WatchedCrdStore(
        lambda **_: None, lambda: FakeWatch(FakeApi([], [], threading.Event())), threading.Event()
    )
    store.replace([_obj(recs[0], "1")])
    seen = store.version()
    assert store.wait_for_change(seen, timeout=0.01) == seen
    threading.Timer(0.05, lambda: store.event("ADDED", _obj(recs[1], "2"))).start()
    assert store.wait_for_change(seen, timeout=5) == seen + 1


class CountingDataset:
    def __init__(self, inner: Callable[[datetime, datetime], tuple[RawDataset, UsageSnapshot]]) -> None:
        self.inner, self.calls = inner, 0

    def __call__(self, start: datetime, end: datetime) -> tuple[RawDataset, UsageSnapshot]:
        self.calls += 1
        return self.inner(start, end)


def _planned_cpu(data: RefreshingConsoleData, rec: Recommendation) -> dict[str, float]:
    row = next(r for r in data.workloads() if r.workload == rec.target)
    return {c.name: c.recommended_requests["cpu"] for c in row.containers}


def test_a_changed_recommendation_is_shown_after_a_recompose_without_fetching_the_data_again(
    demo_inputs: ConsoleInputs, recs: list[Recommendation]
) -> None:
    a, b = recs
    store = WatchedCrdStore(
        lambda **_: None, lambda: FakeWatch(FakeApi([], [], threading.Event())), threading.Event()
    )
    store.replace([_obj(a, "1"), _obj(b, "2")])
    dataset = CountingDataset(demo_inputs.dataset)
    inputs = dataclasses.replace(demo_inputs, dataset=dataset, store=store, changes=store)
    builder = ConsoleBuilder(inputs)
    data = RefreshingConsoleData(builder.build, lambda: NOW, builder.recompose)
    assert data.meta().origin == "2 from the store"
    store.event("MODIFIED", _obj(_cpu(a, "777m"), "3"))
    assert data.recompose() is True
    assert _planned_cpu(data, a)[a.containers[0].name] == pytest.approx(0.777)
    store.event("DELETED", _obj(b, "4"))
    assert data.recompose() is True
    assert [r.workload for r in data.workloads()] == [a.target]
    assert data.meta().origin == "1 from the store"
    assert dataset.calls == 1


def test_the_console_follows_the_watched_store_in_the_background(
    demo_inputs: ConsoleInputs, recs: list[Recommendation], stop: threading.Event
) -> None:
    a, b = recs
    store = WatchedCrdStore(lambda **_: None, lambda: FakeWatch(FakeApi([], [], stop)), stop)
    store.replace([_obj(a, "1")])
    builder = ConsoleBuilder(dataclasses.replace(demo_inputs, store=store, changes=store))
    data = RefreshingConsoleData(builder.build, lambda: NOW, builder.recompose)
    data.start(3600, store, stop)
    store.event("ADDED", _obj(b, "2"))
    store.event("MODIFIED", _obj(_cpu(a, "321m"), "3"))
    assert _until(lambda: len(data.workloads()) == 2)
    assert _until(lambda: _planned_cpu(data, a)[a.containers[0].name] == pytest.approx(0.321))
    assert data.recompositions >= 1


def test_a_console_with_a_cluster_name_shows_that_clusters_recommendations_only(
    demo_inputs: ConsoleInputs, recs: list[Recommendation]
) -> None:
    a, b = recs
    east = dataclasses.replace(a, target=a.target.in_cluster("east"))
    west = dataclasses.replace(b, target=b.target.in_cluster("west"))
    store = WatchedCrdStore(
        lambda **_: None, lambda: FakeWatch(FakeApi([], [], threading.Event())), threading.Event()
    )
    store.replace([_obj(east, "1"), _obj(west, "2")])
    inputs = dataclasses.replace(demo_inputs, store=store, changes=store, cluster_name="east")
    data = ConsoleBuilder(inputs).build(NOW)
    assert [r.workload for r in data.workloads()] == [east.target]
    assert data.meta().cluster_name == "east"
    everyone = ConsoleBuilder(dataclasses.replace(inputs, cluster_name="")).build(NOW)
    assert {r.workload for r in everyone.workloads()} == {east.target, west.target}


def test_the_console_command_with_an_unreachable_crd_store_fails_at_start_naming_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: x}}]\n"
    )
    argv = ["console", "--window-days", "1", "--store", "crd", "--kubeconfig", str(kubeconfig)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "podsizer console: cannot read the store crd (PODSIZER_STORE (--store)): cannot list "
    )
    assert "recommendations.podsizer.io in all namespaces" in err
