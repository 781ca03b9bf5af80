"""podsizer.kube.objects' retry rule, where the real apiserver cannot be timed: an object deleted between
the read and the write is written again from nothing, a 404 on a create is a failure, not a retry."""

from __future__ import annotations

from typing import Any

import pytest

from podsizer.apierrors import KubeApiError
from podsizer.kube.objects import CustomObjectClient
from podsizer.kube.resources import USAGE_CHECKPOINTS
from tests.support.custom_objects import FakeCustomObjects


def _body(name: str, version: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "shop"}
    if version:
        meta["resourceVersion"] = version
    return {"metadata": meta, "spec": {"data": ""}}


def _upsert(client: CustomObjectClient, seen: list[dict[str, Any] | None]) -> Any:
    def step(current: dict[str, Any] | None) -> dict[str, Any]:
        seen.append(current)
        if current is None:
            return client.create("shop", _body("web"))
        return client.replace("shop", "web", _body("web", current["metadata"]["resourceVersion"]))

    return step


def test_an_object_deleted_after_the_read_is_created_again() -> None:
    api = FakeCustomObjects()
    client = CustomObjectClient(api, USAGE_CHECKPOINTS)
    listed = client.create("shop", _body("web"))
    client.delete("shop", "web")  # another writer, between our read and our write
    seen: list[dict[str, Any] | None] = []
    client.write("shop", "web", _upsert(client, seen), current=listed)
    assert [s is None for s in seen] == [False, True]  # the replace's 404, then a create
    assert ("shop", "web") in api.objects


def test_a_404_on_a_create_fails_at_once_naming_the_object() -> None:
    api = FakeCustomObjects()
    api.namespaces = {"other"}  # the namespace `shop` does not exist
    client = CustomObjectClient(api, USAGE_CHECKPOINTS)
    seen: list[dict[str, Any] | None] = []
    with pytest.raises(KubeApiError, match=r"^cannot write UsageCheckpoint shop/web: HTTP 404 Not Found$"):
        client.write("shop", "web", _upsert(client, seen), current=None)
    assert seen == [None] and api.calls == ["create"]


def test_a_write_needs_at_least_one_attempt() -> None:
    client = CustomObjectClient(FakeCustomObjects(), USAGE_CHECKPOINTS)
    with pytest.raises(ValueError, match="at least 1 attempt, not 0"):
        client.write("shop", "web", lambda current: None, attempts=0)
