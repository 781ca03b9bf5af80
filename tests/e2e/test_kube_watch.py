"""podsizer.kube.watch on the real apiserver: the list comes page by page and the watch follows it from
the list's resourceVersion (ADDED, MODIFIED, DELETED), a resourceVersion too old re-lists, and the webhook's
cluster cache and the console's store, both fed by this one reader, agree on what is stored."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
from kubernetes import client, watch

from console.crdwatch import WatchedCrdStore
from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import ContainerRecommendation, Recommendation, Window, recommendation_to_resource
from podsizer.cluster import CrdWatchLoader
from podsizer.kube.objects import CustomObjectClient
from podsizer.kube.resources import RECOMMENDATIONS
from podsizer.kube.watch import Informer, custom_object_lister
from podsizer.snapshot import SnapshotHolder
from recommender.output.store.crd import CrdStore
from tests.support.progress import TEST_TIMEOUT_S, wait_progressing

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]
T = TypeVar("T")

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _rec(namespace: str, workload: str, cpu: str = "250m") -> Recommendation:
    return Recommendation(
        target=WorkloadRef(namespace, "Deployment", workload),
        generated_at=NOW,
        window=Window(NOW - timedelta(days=7), NOW, 2016),
        sizing_mode="static",
        containers=(ContainerRecommendation("main", {"cpu": cpu}, {}, 0.9, "p99"),),
    )


def _body(namespace: str, workload: str) -> dict[str, Any]:
    body = recommendation_to_resource(_rec(namespace, workload))
    body["metadata"].pop("resourceVersion", None)
    return body


def _until(look: Callable[[], T], done: Callable[[T], bool], what: str) -> None:
    """Until done(look()); progress: any change of what look() sees (each event delivered)."""
    wait_progressing(look, done, repr, what, interval_s=0.05)


class Recorder:
    """The informer's handler: the last list's names and every event as (type, name)."""

    def __init__(self) -> None:
        self.listed: list[str] = []
        self.events: list[tuple[str, str]] = []

    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        self.listed = sorted(i["metadata"]["name"] for i in items)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        self.events.append((kind, obj["metadata"]["name"]))


@pytest.fixture
def recs(admin_client: client.ApiClient, podsizer_crds: list[dict[str, Any]]) -> CustomObjectClient:
    return CustomObjectClient.of(admin_client, RECOMMENDATIONS)


def test_the_list_is_paged_and_the_watch_follows_every_change(
    admin_client: client.ApiClient, recs: CustomObjectClient, namespace: str, stop: threading.Event
) -> None:
    for name in ("a", "b", "c"):
        recs.create(namespace, _body(namespace, name))
    handler = Recorder()
    lister = custom_object_lister(admin_client, RECOMMENDATIONS, namespace)
    informer = Informer("recs", lister, handler, watch.Watch, stop, timeout_seconds=5, page_size=2)
    informer.start()
    assert informer.synced.wait(20)
    assert handler.listed == ["deployment-a", "deployment-b", "deployment-c"]
    assert informer.pages == 2 and informer.resource_version

    made = recs.create(namespace, _body(namespace, "d"))
    recs.replace(namespace, "deployment-d", made | {"metadata": made["metadata"] | {"labels": {"x": "y"}}})
    recs.delete(namespace, "deployment-a")
    wanted = [("ADDED", "deployment-d"), ("MODIFIED", "deployment-d"), ("DELETED", "deployment-a")]
    _until(lambda: list(handler.events), lambda events: events == wanted, f"the watch to deliver {wanted}")
    assert informer.relists == 1  # all of it from the one list's resourceVersion


def test_a_resource_version_too_old_makes_the_watch_ask_for_a_new_list(
    admin_client: client.ApiClient, recs: CustomObjectClient, namespace: str, stop: threading.Event
) -> None:
    recs.create(namespace, _body(namespace, "a"))
    handler = Recorder()
    lister = custom_object_lister(admin_client, RECOMMENDATIONS, namespace)
    informer = Informer("recs", lister, handler, watch.Watch, stop, timeout_seconds=5)
    informer.list()
    informer.resource_version = "1"  # long compacted out of the apiserver's watch cache
    assert informer.watch_once() is False


def test_the_webhook_cache_and_the_console_store_agree_on_what_is_stored(
    admin_client: client.ApiClient, podsizer_crds: list[dict[str, Any]], namespace: str, stop: threading.Event
) -> None:
    writer = CrdStore(admin_client, namespace)  # the recommender's: spec, then status
    writer.put(_rec(namespace, "web", "300m"))
    lister = custom_object_lister(admin_client, RECOMMENDATIONS, namespace)
    holder = SnapshotHolder()
    loader = CrdWatchLoader(holder, lambda: datetime.now(UTC), debounce=0)
    webhook = Informer("recs", lister, loader, watch.Watch, stop, timeout_seconds=5)
    webhook.start()
    console = WatchedCrdStore(lister, watch.Watch, stop, where=f"namespace {namespace}", timeout_seconds=5)
    console.start()
    writer.put(_rec(namespace, "api", "500m"))

    def both() -> tuple[dict[WorkloadRef, Recommendation], dict[WorkloadRef, Recommendation]]:
        snapshot = holder.current()
        seen = dict(snapshot.by_target) if snapshot is not None else {}
        return seen, {r.target: r for r in console.list()}

    _until(both, lambda seen: len(seen[0]) == 2 and seen[0] == seen[1], "both caches to hold web and api")
    cpus = {c.requests["cpu"] for r in both()[1].values() for c in r.containers}
    assert cpus == {"300m", "500m"}
