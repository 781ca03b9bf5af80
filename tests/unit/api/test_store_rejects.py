"""Stores skip an item the codec rejects, log a reason naming it and its field, and keep the rest."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.index import parse_items
from podsizer.api.listdoc import list_document
from podsizer.api.resource import (
    ContainerPolicy,
    ContainerRecommendation,
    Recommendation,
    Window,
    recommendation_to_resource,
)
from podsizer.snapshot import RecommendationSnapshot, SnapshotHolder
from recommender.output.store import JsonFileStore
from webhook.file_store import FileStoreLoader

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _rec(name: str) -> Recommendation:
    return Recommendation(
        target=WorkloadRef("shop", "Deployment", name),
        generated_at=NOW,
        window=Window(NOW - timedelta(days=7), NOW, 2016),
        sizing_mode="static",
        containers=(ContainerRecommendation("main", {"cpu": "250m"}, {"memory": "640Mi"}, 0.9, "p99"),),
        policy=(ContainerPolicy("main", {"cpu": 0.1}, {"cpu": 1.0}),),
    )


def _broken(name: str, path: tuple[str | int, ...], value: object) -> dict[str, Any]:
    obj = recommendation_to_resource(_rec(name))
    node: Any = obj
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return obj


# (workload name, where the item is broken, the bad value, the field the reason must name)
BROKEN = [
    ("nan", ("status", "containers", 0, "requests", "cpu"), "NaN", "status.containers[0].requests.cpu"),
    ("huge", ("status", "containers", 0, "limits", "memory"), "1e400", "status.containers[0].limits.memory"),
    (
        "inverted",
        ("spec", "resourcePolicy", "containers", 0, "minAllowed", "cpu"),
        "2",
        "spec.resourcePolicy.containers[0].minAllowed.cpu",
    ),
    ("stringly", ("status", "containers", 0, "lowConfidence"), "false", "status.containers[0].lowConfidence"),
    ("badname", ("status", "containers", 0, "limits"), {"GPU!": "1"}, "status.containers[0].limits.GPU!"),
    ("longname", ("status", "containers", 0, "name"), "c" * 500_004, "status.containers[0].name"),
    ("slashed", ("status", "containers", 0, "name"), "main/../x", "status.containers[0].name"),
    ("target", ("spec", "targetRef", "name"), "web/1", "spec.targetRef.name"),
    ("policy", ("spec", "resourcePolicy", "containers", 0, "containerName"), "Main", "containerName"),
]


def _write_store(path: Path) -> list[Recommendation]:
    good = [_rec("a-good"), _rec("z-good")]
    bad = [_broken(name, where, value) for name, where, value, _ in BROKEN]
    items = [recommendation_to_resource(good[0]), *bad, recommendation_to_resource(good[1])]
    path.write_bytes(orjson.dumps(list_document(items)))
    return good


def _assert_each_reason_logged(messages: list[str]) -> None:
    assert len(messages) == len(BROKEN)
    for (name, _, _, field), message in zip(BROKEN, messages, strict=True):
        assert f"shop/deployment-{name}" in message
        assert f"{field}: " in message


def test_json_file_store_skips_rejected_items_and_keeps_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "recs.json"
    good = _write_store(path)
    with caplog.at_level(logging.WARNING, logger="podsizer.store"):
        assert JsonFileStore(path).list() == good
    _assert_each_reason_logged([r.getMessage() for r in caplog.records if "skipped" in r.getMessage()])


def test_json_file_store_write_keeps_rejected_items_untouched(tmp_path: Path) -> None:
    path = tmp_path / "recs.json"
    _write_store(path)
    before = orjson.loads(path.read_bytes())["items"]
    store = JsonFileStore(path)
    store.put(_rec("m-new"))
    after = orjson.loads(path.read_bytes())["items"]
    assert [i for i in before if i in after] == before
    assert [r.target.name for r in store.list()] == ["a-good", "m-new", "z-good"]


def test_webhook_file_store_skips_rejected_items_and_keeps_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "recs.json"
    good = _write_store(path)
    holder = SnapshotHolder()
    with caplog.at_level(logging.WARNING, logger="podsizer.webhook.store"):
        assert FileStoreLoader(path, holder, lambda: NOW).load_once()
    snapshot = holder.current()
    assert snapshot is not None
    assert dict(snapshot.by_target) == {r.target: r for r in good}
    _assert_each_reason_logged(list(snapshot.skipped))
    _assert_each_reason_logged([r.getMessage() for r in caplog.records if "skipping" in r.getMessage()])


def test_a_name_that_is_not_a_kubernetes_name_is_refused_on_write_naming_the_field(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path / "recs.json")
    long_name = replace(
        _rec("web"), containers=(ContainerRecommendation("c" * 500_004, {"cpu": "1"}, {}, 0.9, ""),)
    )
    (failed,) = store.put_many([long_name, _rec("ok")])
    assert failed[0] is long_name
    message = str(failed[1]).removeprefix(str(tmp_path))  # the path is the test's, its length too
    assert "status.containers[0].name" in message and "500004 characters" in message and len(message) < 300
    assert [r.target.name for r in store.list()] == ["ok"]


def test_a_second_recommendation_object_for_a_workload_never_shadows_its_own() -> None:
    """Recommendation objects are named <kind>-<name>: another object targeting the same workload is
    skipped with the reason, in whatever order the two are read."""
    own = recommendation_to_resource(_rec("web"))
    other = recommendation_to_resource(
        replace(_rec("web"), containers=(ContainerRecommendation("main", {"cpu": "64"}, {}, 1.0, "forged"),))
    )
    other["metadata"]["name"] = "web-override"
    for items in ([own, other], [other, own]):
        recs, skipped = parse_items(items, "items")
        snapshot = RecommendationSnapshot.of(recs, NOW, skipped=skipped)
        found = snapshot.get(WorkloadRef("shop", "Deployment", "web"))
        assert found is not None and found.containers[0].requests == {"cpu": "250m"}
        (why,) = snapshot.skipped
        assert "metadata.name: 'web-override' is not the Recommendation of Deployment web" in why
