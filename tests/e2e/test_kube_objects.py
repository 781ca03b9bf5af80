"""podsizer.kube.objects on the real apiserver: lists follow `continue` pages and label selectors, get is
None for a missing object, write retries a real 409 Conflict from what it re-reads, delete honours its
resourceVersion precondition, and every failure is a KubeApiError naming the object and the HTTP status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from kubernetes import client

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import ContainerRecommendation, Recommendation, Window, recommendation_to_resource
from podsizer.apierrors import KubeApiError
from podsizer.kube.objects import CustomObjectClient, CustomObjects, StillConflicting
from podsizer.kube.resources import RECOMMENDATIONS, CustomResource
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _body(namespace: str, workload: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    rec = Recommendation(
        target=WorkloadRef(namespace, "Deployment", workload),
        generated_at=NOW,
        window=Window(NOW - timedelta(days=7), NOW, 2016),
        sizing_mode="static",
        containers=(ContainerRecommendation("main", {"cpu": "250m"}, {}, 0.9, "p99"),),
    )
    body = recommendation_to_resource(rec)
    body["metadata"].pop("resourceVersion", None)
    body.pop("status", None)
    if labels:
        body["metadata"]["labels"] = labels
    return body


def _labelled(obj: dict[str, Any]) -> dict[str, Any]:
    """The object with one more label: replacing it changes the stored object (a no-op would not)."""
    return obj | {"metadata": obj["metadata"] | {"labels": {"changed": "yes"}}}


class Counting:
    """The real CustomObjectsApi, counting the list calls and the `limit` each asked for."""

    def __init__(self, api: client.CustomObjectsApi) -> None:
        self.api = api
        self.limits: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)

    def list_namespaced_custom_object(self, *args: Any, **kwargs: Any) -> Any:
        self.limits.append(kwargs["limit"])
        return self.api.list_namespaced_custom_object(*args, **kwargs)

    def list_cluster_custom_object(self, *args: Any, **kwargs: Any) -> Any:
        self.limits.append(kwargs["limit"])
        return self.api.list_cluster_custom_object(*args, **kwargs)


@pytest.fixture
def recs(
    admin_client: client.ApiClient, podsizer_crds: list[dict[str, Any]], namespace: str
) -> CustomObjectClient:
    return CustomObjectClient.of(admin_client, RECOMMENDATIONS)


def test_a_list_reads_every_page_and_keeps_to_its_namespace_and_selector(
    admin_client: client.ApiClient, recs: CustomObjectClient, namespace: str
) -> None:
    for i in range(5):
        recs.create(namespace, _body(namespace, f"w{i}", {"tier": "a" if i % 2 else "b"}))
    counting = Counting(client.CustomObjectsApi(admin_client))
    paged = CustomObjectClient(counting, RECOMMENDATIONS, page_size=2)
    names = sorted(o["metadata"]["name"] for o in paged.list(namespace))
    assert names == [f"deployment-w{i}" for i in range(5)]
    assert counting.limits == [2, 2, 2]  # 2 + 2 + 1: the apiserver's continue tokens were followed
    selected = sorted(o["metadata"]["name"] for o in paged.list(namespace, label_selector="tier=a"))
    assert selected == ["deployment-w1", "deployment-w3"]
    everywhere = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in paged.list()}
    assert {(namespace, n) for n in names} <= everywhere


def test_get_is_none_for_a_missing_object_and_the_object_otherwise(
    recs: CustomObjectClient, namespace: str
) -> None:
    assert recs.get(namespace, "deployment-nothing") is None
    made = recs.create(namespace, _body(namespace, "web"))
    found = recs.get(namespace, "deployment-web")
    assert found is not None and found["metadata"]["uid"] == made["metadata"]["uid"]


def test_write_re_reads_after_a_conflict_and_writes_from_the_current_object(
    recs: CustomObjectClient, namespace: str
) -> None:
    stale = recs.create(namespace, _body(namespace, "web"))
    newer = dict(stale, spec={**stale["spec"], "resourcePolicy": {"containers": []}})
    recs.replace(namespace, "deployment-web", newer)  # another writer: `stale` is now out of date
    seen: list[str] = []

    def step(current: dict[str, Any] | None) -> str:
        assert current is not None
        seen.append(current["metadata"]["resourceVersion"])
        body = dict(current, metadata={**current["metadata"], "labels": {"written": "yes"}})
        return str(recs.replace(namespace, "deployment-web", body)["metadata"]["resourceVersion"])

    version = recs.write(namespace, "deployment-web", step, current=stale)
    assert seen[0] == stale["metadata"]["resourceVersion"] and len(seen) == 2  # the 409, then the re-read
    stored = recs.get(namespace, "deployment-web")
    assert stored is not None and stored["metadata"]["labels"] == {"written": "yes"}
    assert stored["metadata"]["resourceVersion"] == version
    assert stored["spec"]["resourcePolicy"] == {"containers": []}  # the other writer's change is kept


def test_write_creates_when_nothing_is_stored(recs: CustomObjectClient, namespace: str) -> None:
    made = recs.write(
        namespace, "deployment-new", lambda current: recs.create(namespace, _body(namespace, "new"))
    )
    assert made["metadata"]["name"] == "deployment-new"


def test_a_write_that_keeps_conflicting_gives_up_naming_the_attempts(
    recs: CustomObjectClient, namespace: str
) -> None:
    stale = recs.create(namespace, _body(namespace, "web"))
    recs.replace(namespace, "deployment-web", _labelled(stale))  # `stale` conflicts from now on

    def step(current: dict[str, Any] | None) -> None:
        recs.replace(namespace, "deployment-web", stale)

    with pytest.raises(
        StillConflicting,
        match=r"cannot write Recommendation .*/deployment-web: still conflicting "
        r"after 3 attempts \(HTTP 409 Conflict\)",
    ):
        recs.write(namespace, "deployment-web", step, attempts=3)


def test_delete_keeps_to_its_precondition_and_reports_a_missing_object(
    recs: CustomObjectClient, namespace: str
) -> None:
    made = recs.create(namespace, _body(namespace, "web"))
    recs.replace(namespace, "deployment-web", _labelled(made))  # a new resourceVersion
    with pytest.raises(
        KubeApiError, match=r"cannot delete Recommendation .*/deployment-web: HTTP 409"
    ) as err:
        recs.delete(namespace, "deployment-web", made["metadata"]["resourceVersion"])
    assert err.value.status == 409
    assert recs.delete(namespace, "deployment-web") is True
    assert recs.delete(namespace, "deployment-web") is False
    assert recs.get(namespace, "deployment-web") is None


def test_api_failures_name_the_resource_or_object_and_the_status(
    admin_client: client.ApiClient, recs: CustomObjectClient, namespace: str
) -> None:
    unknown = CustomObjectClient.of(
        admin_client, CustomResource("nothing.example", "v1", "widgets", "Widget")
    )
    with pytest.raises(
        KubeApiError,
        match=rf"cannot list widgets\.nothing\.example in namespace {namespace}: "
        r"HTTP 404 Not Found",
    ):
        unknown.list(namespace)
    with pytest.raises(KubeApiError, match=r"cannot write Recommendation no-such-ns/deployment-x: HTTP 404"):
        recs.write(
            "no-such-ns", "deployment-x", lambda _: recs.create("no-such-ns", _body("no-such-ns", "x"))
        )


def test_a_connection_failure_is_a_kube_api_error_without_a_status() -> None:
    config = client.Configuration()
    config.host = "http://127.0.0.1:1"
    config.retries = 0
    api = cast(CustomObjects, client.CustomObjectsApi(client.ApiClient(config)))
    with pytest.raises(
        KubeApiError, match=r"cannot list recommendations\.podsizer\.io in all namespaces: "
    ) as err:
        CustomObjectClient(api, RECOMMENDATIONS).list()
    assert err.value.status is None
