"""Informer list+watch (resourceVersion, re-list on 410) and the caches it feeds, with fake list/watch."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from podsizer.api import WorkloadRef, recommendation_to_resource
from podsizer.cluster import CrdWatchLoader, MetadataCache, OwnerCache
from podsizer.kube.watch import Informer
from podsizer.snapshot import SnapshotHolder
from tests.support.watch import FakeApi, FakeResponse, FakeWatch
from tests.unit.webhook.builders import recommendation


def _rs(name: str, owner: str, rv: str, kind: str = "Deployment", api: str = "apps/v1") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "shop",
            "resourceVersion": rv,
            "ownerReferences": [{"apiVersion": api, "kind": kind, "name": owner, "controller": True}],
        }
    }


def _list(items: list[dict[str, Any]], rv: str) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rv}, "items": items}


def test_list_then_watch_from_the_lists_resource_version_and_relist_on_410() -> None:
    api = FakeApi(
        lists=[_list([_rs("web-1", "web", "5")], "10"), _list([_rs("api-1", "api", "30")], "31")],
        streams=[
            [
                {"type": "ADDED", "raw_object": _rs("db-1", "db", "11")},
                {"type": "BOOKMARK", "raw_object": {"metadata": {"resourceVersion": "12"}}},
            ],
            [{"type": "DELETED", "raw_object": _rs("web-1", "web", "13")}, ApiException(status=410)],
        ],
    )
    cache = OwnerCache()
    stop = threading.Event()
    inf = Informer(
        "replicasets", api.list_fn, cache.handler("ReplicaSet"), api.watch_factory, stop, backoff=0
    )
    inf.list()
    assert cache.get("shop", "ReplicaSet", "web-1") is not None
    assert inf.watch_once() is True
    assert cache.get("shop", "ReplicaSet", "db-1") is not None
    assert inf.resource_version == "12"
    assert inf.watch_once() is False  # 410: the caller must re-list
    assert cache.get("shop", "ReplicaSet", "web-1") is None
    inf.list()
    assert api.watch_rvs == ["10", "12"]
    assert cache.get("shop", "ReplicaSet", "api-1") is not None
    assert cache.get("shop", "ReplicaSet", "db-1") is None, "a re-list replaces the whole cache"


def test_run_loop_relists_after_error_event_and_stops() -> None:
    stop = threading.Event()
    api = FakeApi(
        lists=[_list([], "1"), _list([_rs("web-1", "web", "3")], "4")],
        streams=[[{"type": "ERROR", "raw_object": {"code": 410, "message": "too old resource version"}}]],
    )

    cache = OwnerCache()
    handler = cache.handler("ReplicaSet")

    class Wrapped:
        def replace(self, items: Iterable[dict[str, Any]]) -> None:
            handler.replace(items)
            if api.list_calls >= 2:
                stop.set()

        def event(self, kind: str, obj: dict[str, Any]) -> None:
            handler.event(kind, obj)

    inf = Informer("replicasets", api.list_fn, Wrapped(), api.watch_factory, stop, backoff=0)
    t = inf.start()
    t.join(timeout=5)
    assert not t.is_alive()
    assert api.list_calls == 2
    assert cache.get("shop", "ReplicaSet", "web-1") is not None


def test_crd_loader_swaps_snapshots_on_events_and_drops_invalid_updates() -> None:
    holder = SnapshotHolder()
    loader = CrdWatchLoader(holder, lambda: datetime(2026, 12, 2, tzinfo=UTC), debounce=0)
    web = recommendation_to_resource(recommendation("Deployment", "web"))
    loader.replace([web])
    first = holder.current()
    assert first is not None and first.get(WorkloadRef("shop", "Deployment", "web")) is not None
    loader.event("ADDED", recommendation_to_resource(recommendation("StatefulSet", "db")))
    second = holder.current()
    assert second is not None and len(second) == 2 and len(first) == 1, "snapshots are immutable"
    broken = json.loads(json.dumps(web))
    broken["status"]["sizingMode"] = "turbo"
    loader.event("MODIFIED", broken)
    third = holder.current()
    assert third is not None and third.get(WorkloadRef("shop", "Deployment", "web")) is None
    assert third.skipped and "status.sizingMode" in third.skipped[0]
    loader.event("DELETED", recommendation_to_resource(recommendation("StatefulSet", "db")))
    fourth = holder.current()
    assert fourth is not None and len(fourth) == 0


ANNOTATIONS = {"podsizer.io/gpu": "keep", "kubectl.kubernetes.io/last-applied-configuration": "{}"}


def test_metadata_cache_tracks_namespaces_and_workloads() -> None:
    meta = MetadataCache()
    meta.handler("Namespace").replace(
        [{"metadata": {"name": "shop", "labels": {"podsizer.io/mode": "auto"}}}]
    )
    meta.handler("Rollout").event(
        "ADDED",
        {"metadata": {"name": "r", "namespace": "shop", "annotations": ANNOTATIONS}},
    )
    ns = meta.namespace("shop")
    assert ns is not None and ns.labels["podsizer.io/mode"] == "auto"
    wl = meta.workload(WorkloadRef("shop", "Rollout", "r"))
    assert wl is not None and wl.annotations == {"podsizer.io/gpu": "keep"}, "only podsizer.io/ keys kept"
    meta.handler("Namespace").event("DELETED", {"metadata": {"name": "shop"}})
    assert meta.namespace("shop") is None


def test_failing_list_backs_off_and_the_loop_keeps_going() -> None:
    stop = threading.Event()
    calls: list[float] = []

    def failing_list(**kwargs: Any) -> FakeResponse:
        calls.append(time.monotonic())
        if len(calls) >= 3:
            stop.set()
        raise ApiException(status=404, reason="the server could not find the requested resource")

    inf = Informer(
        "rollouts",
        failing_list,
        OwnerCache().handler("ReplicaSet"),
        lambda: FakeWatch(FakeApi([], [])),
        stop,
        backoff=0.05,
        max_backoff=1.0,
    )
    t = inf.start()
    t.join(timeout=5)
    assert not t.is_alive() and len(calls) == 3
    assert calls[1] - calls[0] >= 0.05 and calls[2] - calls[1] >= 0.1, "waits 0.05 s, then doubles"
    assert not inf.synced.is_set()
