"""Cluster policy in the webhook: watched LimitRanges/quotas reach the plan (not the decision cache),
the CRD snapshot is rebuilt per burst not per event, lists are paginated, records stay under 256 KiB."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson

from podsizer.api import WorkloadRef, recommendation_to_resource
from podsizer.cluster import CrdWatchLoader, MetadataCache, OwnerCache
from podsizer.keys import DRY_RUN_KEY
from podsizer.kube.watch import Informer
from podsizer.snapshot import SnapshotHolder
from tests.unit.webhook.builders import (
    admitter,
    apply_reply,
    container,
    crec,
    recommendation,
    replicaset_pod,
    resources_of,
    review,
)
from webhook.writer import ANNOTATIONS_LIMIT

NOW = datetime(2026, 12, 2, tzinfo=UTC)


def _limit_range(name: str, min_cpu: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "shop", "resourceVersion": "7"},
        "spec": {"limits": [{"type": "Container", "min": {"cpu": min_cpu}}]},
    }


def test_a_limit_range_event_changes_the_next_decision_not_served_from_the_cache() -> None:
    meta = MetadataCache()
    adm = admitter(
        recommendation(containers=[crec("main", {"cpu": "250m", "memory": "512Mi"})]), metadata=meta
    )
    pod = replicaset_pod()
    first = resources_of(apply_reply(pod, adm.review(review(pod))[0]), "main")
    assert first["requests"]["cpu"] == "250m"
    assert adm.cache is not None and len(adm.cache) == 1
    again = resources_of(apply_reply(pod, adm.review(review(pod))[0]), "main")
    assert again == first and len(adm.cache) == 1, "the same pod is answered from the cache"
    meta.policies.handler("LimitRange").event("ADDED", _limit_range("floor", "400m"))
    reply, decision = adm.review(review(pod))
    assert resources_of(apply_reply(pod, reply), "main")["requests"]["cpu"] == "400m"
    assert decision.outcome == "applied" and len(adm.cache) == 2, "a new ClusterPolicy, a new cache key"
    meta.policies.handler("LimitRange").event("DELETED", _limit_range("floor", "400m"))
    assert meta.cluster_policy("shop") is None
    assert resources_of(apply_reply(pod, adm.review(review(pod))[0]), "main")["requests"]["cpu"] == "250m"


def test_a_quota_relist_replaces_the_namespaces_headroom() -> None:
    meta = MetadataCache()
    handler = meta.policies.handler("ResourceQuota")
    quota = {
        "metadata": {"name": "q", "namespace": "shop"},
        "status": {"hard": {"requests.cpu": "2"}, "used": {"requests.cpu": "1500m"}},
    }
    handler.replace([quota])
    before = meta.cluster_policy("shop")
    assert before is not None and before.quota_headroom["requests.cpu"] == Decimal("0.5")
    adm = admitter(recommendation(containers=[crec("main", {"cpu": "2", "memory": "1Gi"})]), metadata=meta)
    pod = replicaset_pod()  # 500m today: +1.5 cores does not fit 500m of headroom
    assert resources_of(apply_reply(pod, adm.review(review(pod))[0]), "main")["requests"]["cpu"] == "500m"
    handler.replace([])
    assert meta.cluster_policy("shop") is None
    assert resources_of(apply_reply(pod, adm.review(review(pod))[0]), "main")["requests"]["cpu"] == "2000m"


class ManualSchedule:
    """Collects scheduled calls instead of starting timers."""

    def __init__(self) -> None:
        self.calls: list[Callable[[], None]] = []

    def __call__(self, delay: float, fn: Callable[[], None]) -> None:
        self.calls.append(fn)


def _rec(i: int) -> dict[str, Any]:
    return recommendation_to_resource(recommendation("Deployment", f"web-{i}"))


def test_crd_events_cost_one_snapshot_rebuild_per_burst_not_one_per_event() -> None:
    holder = SnapshotHolder()
    schedule = ManualSchedule()
    loader = CrdWatchLoader(holder, lambda: NOW, debounce=0.2, schedule=schedule)
    loader.replace([_rec(i) for i in range(1000)])
    assert loader.rebuilds == 1
    for i in range(1000, 9000):  # 8,000 events
        loader.event("ADDED", _rec(i))
    assert loader.rebuilds == 1 and len(schedule.calls) == 1, "one publish scheduled for the burst"
    schedule.calls.pop()()
    snapshot = holder.current()
    assert loader.rebuilds == 2 and snapshot is not None and len(snapshot) == 9000
    assert snapshot.get(WorkloadRef("shop", "Deployment", "web-8999")) is not None
    loader.event("DELETED", _rec(0))
    assert len(schedule.calls) == 1, "the next event schedules the next publish"


def test_a_watch_event_keeps_the_skipped_reasons_of_other_objects() -> None:
    holder = SnapshotHolder()
    loader = CrdWatchLoader(holder, lambda: NOW, debounce=0)
    bad = _rec(1)
    bad["status"]["sizingMode"] = "turbo"
    loader.replace([_rec(0), bad])
    first = holder.current()
    assert first is not None and len(first.skipped) == 1
    loader.event("ADDED", _rec(2))
    second = holder.current()
    assert second is not None and second.skipped == first.skipped, "web-1 is still skipped"
    loader.event("MODIFIED", _rec(1))
    third = holder.current()
    assert third is not None and third.skipped == () and len(third) == 3


class NoWatch:
    """The informer's watch side, unused by a list."""

    def stream(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        return iter(())

    def stop(self) -> None:
        pass


class PagedApi:
    """A list call answering `limit`-sized pages with `continue` tokens, as the apiserver does."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items
        self.calls: list[dict[str, Any]] = []

    def list_fn(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        start = int(kwargs.get("_continue") or 0)
        end = start + kwargs["limit"]
        meta: dict[str, Any] = {"resourceVersion": "99"}
        if end < len(self.items):
            meta["continue"] = str(end)

        class Response:
            data = json.dumps({"metadata": meta, "items": self.items[start:end]}).encode()

        return Response()


def test_the_informer_lists_in_pages_and_consumes_every_continue_token() -> None:
    rs = [
        {
            "metadata": {
                "name": f"web-{i}",
                "namespace": "shop",
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "controller": True}
                ],
            }
        }
        for i in range(1234)
    ]
    api = PagedApi(rs)
    seen: list[int] = []
    cache = OwnerCache()
    handler = cache.handler("ReplicaSet")

    class Counting:
        def replace(self, items: Iterable[dict[str, Any]]) -> None:
            handler.replace(_counted(items, seen))

        def event(self, kind: str, obj: dict[str, Any]) -> None:
            handler.event(kind, obj)

    inf = Informer("replicasets", api.list_fn, Counting(), NoWatch, threading.Event(), page_size=500)
    inf.list()
    assert [c.get("_continue") for c in api.calls] == [None, "500", "1000"]
    assert all(c["limit"] == 500 for c in api.calls) and inf.pages == 3
    assert len(seen) == 1234 and inf.resource_version == "99" and inf.synced.is_set()
    assert cache.get("shop", "ReplicaSet", "web-1233") is not None


def _counted(items: Iterable[dict[str, Any]], seen: list[int]) -> Iterable[dict[str, Any]]:
    for i, item in enumerate(items):
        seen.append(i)
        yield item


def test_a_pod_with_250_kib_of_annotations_gets_a_summarised_record_under_the_limit() -> None:
    names = [f"c{i}" for i in range(60)]
    containers = [
        container(n, {"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "2Gi"}) for n in names
    ]
    pod = replicaset_pod(containers=containers, annotations={"big": "x" * (250 * 1024)})
    rec = recommendation(containers=[crec(n, {"cpu": "250m", "memory": "512Mi"}) for n in names])
    reply, decision = admitter(rec, default_mode="dry-run").review(review(pod))
    assert decision.outcome == "dry-run" and len(decision.changes) == 240
    annotations = apply_reply(pod, reply)["metadata"]["annotations"]
    total = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    assert total <= ANNOTATIONS_LIMIT
    record = orjson.loads(annotations[DRY_RUN_KEY])
    assert record["truncated"] is True and record["changeCount"] == 240
    assert record["counts"] == {
        "requests.cpu": 60,
        "limits.cpu": 60,
        "requests.memory": 60,
        "limits.memory": 60,
    }
    assert 0 < len(record["changes"]) < 240 and record["recommendation"] == rec.name


def test_no_record_at_all_when_not_even_a_summary_fits() -> None:
    pod = replicaset_pod(annotations={"big": "x" * (ANNOTATIONS_LIMIT - 200)})
    reply, decision = admitter(recommendation(), default_mode="auto").review(review(pod))
    patched = apply_reply(pod, reply)
    assert decision.outcome == "applied" and resources_of(patched, "main")["requests"]["cpu"] == "250m"
    assert set(patched["metadata"]["annotations"]) == {"big"}


def test_a_small_pod_gets_the_whole_record() -> None:
    pod = replicaset_pod()
    reply, _ = admitter(recommendation(), default_mode="dry-run").review(review(pod))
    record = orjson.loads(apply_reply(pod, reply)["metadata"]["annotations"][DRY_RUN_KEY])
    assert "truncated" not in record and len(record["changes"]) == 4
