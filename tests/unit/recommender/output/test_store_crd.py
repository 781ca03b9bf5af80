"""CrdStore against a fake CustomObjectsApi that keeps the apiserver's status-subresource rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import ContainerPolicy, ContainerRecommendation, Recommendation, Window
from recommender.output.store import CrdStore, StoreError
from tests.support.custom_objects import fake_recommendations

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def rec(name: str = "web", ns: str = "shop", cpu: str = "250m") -> Recommendation:
    return Recommendation(
        target=WorkloadRef(ns, "Deployment", name),
        generated_at=NOW,
        window=Window(NOW - timedelta(days=7), NOW, 2016),
        sizing_mode="static",
        containers=(ContainerRecommendation("main", {"cpu": cpu}, {}, 0.9, "p99"),),
    )


def test_put_creates_the_object_then_writes_status_through_the_subresource() -> None:
    api = fake_recommendations()
    store = CrdStore(custom_objects=api)
    store.put(rec())
    obj = api.objects[("shop", "deployment-web")]
    assert obj["spec"]["targetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    assert obj["status"]["containers"][0]["requests"] == {"cpu": "250m"}
    assert api.calls == ["get", "create", "replace_status"]
    assert store.get(WorkloadRef("shop", "Deployment", "web")) == Recommendation(
        **{**rec().__dict__, "resource_version": obj["metadata"]["resourceVersion"]}
    )


def test_update_keeps_the_users_resource_policy_and_only_replaces_status() -> None:
    api = fake_recommendations()
    store = CrdStore(custom_objects=api)
    store.put(rec(cpu="250m"))
    obj = api.objects[("shop", "deployment-web")]
    obj["spec"]["resourcePolicy"] = {"containers": [{"containerName": "main", "maxAllowed": {"cpu": "1"}}]}
    api.calls.clear()

    store.put(rec(cpu="400m"))
    obj = api.objects[("shop", "deployment-web")]
    assert obj["status"]["containers"][0]["requests"] == {"cpu": "400m"}
    assert obj["spec"]["resourcePolicy"]["containers"][0]["maxAllowed"] == {"cpu": "1"}
    assert api.calls == ["get", "replace_status"]
    assert store.bounds() == {
        WorkloadRef("shop", "Deployment", "web"): (ContainerPolicy("main", {}, {"cpu": 1.0}),)
    }


def test_a_conflict_rereads_and_retries() -> None:
    api = fake_recommendations()
    store = CrdStore(custom_objects=api)
    store.put(rec(cpu="250m"))
    api.fail_next["replace_status"] = [409]
    api.calls.clear()
    store.put(rec(cpu="300m"))
    assert api.calls == ["get", "replace_status", "get", "replace_status"]
    assert api.objects[("shop", "deployment-web")]["status"]["containers"][0]["requests"] == {"cpu": "300m"}


def test_create_race_already_exists_becomes_an_update() -> None:
    api = fake_recommendations()
    store = CrdStore(custom_objects=api)
    api.fail_next["create"] = [409]
    api.objects[("shop", "deployment-web")] = {
        "apiVersion": "podsizer.io/v1alpha1",
        "kind": "Recommendation",
        "metadata": {"name": "deployment-web", "namespace": "shop", "resourceVersion": "7"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
    }
    # first get sees nothing (the other writer is not visible yet)
    real_get = api.get_namespaced_custom_object
    first = [True]

    def get(*args: Any) -> Any:
        if first[0]:
            first[0] = False
            api.calls.append("get")
            raise ApiException(status=404, reason="Not Found")
        return real_get(*args)

    api.get_namespaced_custom_object = get  # type: ignore[method-assign, assignment]
    store.put(rec())
    assert api.objects[("shop", "deployment-web")]["status"]["sizingMode"] == "static"


def test_endless_conflicts_give_up_with_a_store_error() -> None:
    api = fake_recommendations()
    store = CrdStore(custom_objects=api, max_attempts=3)
    store.put(rec())
    api.fail_next["replace_status"] = [409, 409, 409]
    with pytest.raises(StoreError, match="still conflicting after 3 attempts"):
        store.put(rec(cpu="1"))


def test_api_errors_become_store_errors_naming_the_object() -> None:
    api = fake_recommendations()
    store = CrdStore(custom_objects=api)
    api.fail_next["get"] = [403]
    with pytest.raises(StoreError, match=r"shop/deployment-web: HTTP 403"):
        store.put(rec())
    api.fail_next["list"] = [500]
    with pytest.raises(StoreError, match=r"cannot list recommendations\.podsizer\.io in all namespaces"):
        store.list()


def test_put_many_reports_failures_and_writes_the_rest() -> None:
    api = fake_recommendations()
    store = CrdStore(custom_objects=api)
    api.fail_next["create"] = [422]
    failed = store.put_many([rec("a"), rec("b")])
    assert [r.target.name for r, _ in failed] == ["a"]
    assert ("shop", "deployment-b") in api.objects


def test_namespace_scope_lists_one_namespace_and_refuses_others() -> None:
    api = fake_recommendations()
    CrdStore(custom_objects=api).put_many([rec("a", ns="shop"), rec("b", ns="ml")])
    scoped = CrdStore(custom_objects=api, namespace="ml")
    assert [r.target.name for r in scoped.list()] == ["b"]
    assert api.calls[-1] == "list_namespaced"
    with pytest.raises(StoreError, match="outside this store's namespace ml"):
        scoped.put(rec("c", ns="shop"))


def test_invalid_objects_are_skipped_by_list() -> None:
    api = fake_recommendations()
    store = CrdStore(custom_objects=api)
    store.put(rec("a"))
    api.objects[("shop", "odd")] = {"metadata": {"name": "odd", "namespace": "shop"}, "spec": {}}
    assert [r.target.name for r in store.list()] == ["a"]
