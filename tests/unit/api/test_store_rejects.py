"""Stores skip an item the codec rejects, log a reason naming it and its field, and keep the rest."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.listdoc import list_document
from podsizer.api.resource import (
    ContainerPolicy,
    ContainerRecommendation,
    Recommendation,
    Window,
    recommendation_to_resource,
)
from recommender.output.store import JsonFileStore
from webhook.file_store import FileStoreLoader
from webhook.store import SnapshotHolder

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
