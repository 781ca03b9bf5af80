"""JsonFileStore on real temporary files: round trip, user-owned resourcePolicy, atomic writes, bad files."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.listdoc import DEFAULT_MAX_FILE_BYTES
from podsizer.api.resource import (
    ContainerPolicy,
    ContainerRecommendation,
    Recommendation,
    Window,
    recommendation_to_resource,
)
from podsizer.settings import RecommenderSettings
from recommender.output.store import JsonFileStore, StoreError
from recommender.wiring import build_store

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def rec(name: str = "web", ns: str = "shop", cpu: str = "250m", kind: str = "Deployment") -> Recommendation:
    return Recommendation(
        target=WorkloadRef(ns, kind, name),
        generated_at=NOW,
        window=Window(NOW - timedelta(days=7), NOW, 2016),
        sizing_mode="static",
        containers=(
            ContainerRecommendation("main", {"cpu": cpu, "memory": "512Mi"}, {"memory": "640Mi"}, 0.9, "p99"),
        ),
        reason="static: no horizontal autoscaler",
    )


def test_put_then_list_round_trips_and_writes_a_recommendation_list(tmp_path: Path) -> None:
    path = tmp_path / "recs.json"
    store = JsonFileStore(path)
    a, b = rec("web"), rec("db", kind="StatefulSet")
    store.put(a)
    store.put(b)
    assert store.list() == [a, b]  # sorted by namespace, then object name
    assert store.get(a.target) == a
    assert store.get(WorkloadRef("shop", "Deployment", "absent")) is None
    doc = json.loads(path.read_text())
    assert doc["apiVersion"] == "podsizer.io/v1alpha1"
    assert doc["kind"] == "RecommendationList"
    assert sorted(i["metadata"]["name"] for i in doc["items"]) == ["deployment-web", "statefulset-db"]
    assert recommendation_to_resource(a) in doc["items"]


def test_update_replaces_status_but_keeps_the_users_resource_policy(tmp_path: Path) -> None:
    path = tmp_path / "recs.json"
    store = JsonFileStore(path)
    store.put(rec(cpu="250m"))
    doc = json.loads(path.read_text())
    doc["items"][0]["spec"]["resourcePolicy"] = {
        "containers": [{"containerName": "main", "minAllowed": {"cpu": "300m"}}]
    }
    doc["items"][0]["metadata"]["labels"] = {"team": "shop"}
    path.write_text(json.dumps(doc))

    store.put(rec(cpu="400m"))
    item = json.loads(path.read_text())["items"][0]
    assert item["status"]["containers"][0]["requests"]["cpu"] == "400m"
    assert item["spec"]["resourcePolicy"]["containers"][0]["minAllowed"] == {"cpu": "300m"}
    assert item["metadata"]["labels"] == {"team": "shop"}
    ref = WorkloadRef("shop", "Deployment", "web")
    assert store.bounds() == {ref: (ContainerPolicy("main", {"cpu": 0.3}, {}),)}


def test_update_does_not_add_a_policy_the_user_removed(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path / "recs.json")
    store.put(rec())
    with_policy = Recommendation(**{**rec().__dict__, "policy": (ContainerPolicy("*", {"cpu": 0.5}),)})
    store.put(with_policy)
    assert store.bounds() == {}


def test_put_many_writes_the_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = JsonFileStore(tmp_path / "recs.json")
    calls: list[str] = []
    real = os.replace

    def counting_replace(src: str, dst: str) -> None:
        calls.append(dst)
        real(src, dst)

    monkeypatch.setattr(os, "replace", counting_replace)
    assert store.put_many([rec(f"w{i}") for i in range(20)]) == []
    assert len(calls) == 1
    assert len(store.list()) == 20


def test_an_empty_run_leaves_a_valid_empty_store_for_the_webhook(tmp_path: Path) -> None:
    path = tmp_path / "recs.json"
    assert JsonFileStore(path).put_many([]) == []
    assert json.loads(path.read_text()) == {
        "apiVersion": "podsizer.io/v1alpha1",
        "kind": "RecommendationList",
        "items": [],
    }


def test_missing_file_is_empty_and_put_creates_parent_directories(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path / "a" / "b" / "recs.json")
    assert store.list() == []
    assert store.bounds() == {}
    store.put(rec())
    assert len(store.list()) == 1


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "invalid JSON"),
        ('{"kind": "ConfigMap", "apiVersion": "podsizer.io/v1alpha1", "items": []}', "kind"),
        ('{"kind": "RecommendationList", "apiVersion": "v1", "items": []}', "apiVersion"),
        ('{"kind": "RecommendationList", "apiVersion": "podsizer.io/v1alpha1", "items": {}}', "items"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_corrupt_file_is_a_clear_error_and_is_never_overwritten(
    tmp_path: Path, content: str, needle: str
) -> None:
    path = tmp_path / "recs.json"
    path.write_text(content)
    store = JsonFileStore(path)
    with pytest.raises(StoreError, match=needle) as err:
        store.list()
    assert str(path) in str(err.value)
    with pytest.raises(StoreError, match=needle):
        store.put(rec())
    with pytest.raises(StoreError):
        store.put_many([rec()])
    assert path.read_text() == content


def test_invalid_item_is_skipped_on_read_and_kept_on_write(tmp_path: Path) -> None:
    path = tmp_path / "recs.json"
    bad = {
        "metadata": {"name": "deployment-odd", "namespace": "shop"},
        "spec": {"targetRef": {"kind": "Job"}},
    }
    path.write_text(
        json.dumps({"apiVersion": "podsizer.io/v1alpha1", "kind": "RecommendationList", "items": [bad]})
    )
    store = JsonFileStore(path)
    assert store.list() == []
    store.put(rec())
    items = json.loads(path.read_text())["items"]
    assert bad in items
    assert len(store.list()) == 1


def test_failed_write_leaves_the_old_file_and_no_temporary_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "recs.json"
    store = JsonFileStore(path)
    store.put(rec(cpu="250m"))
    before = path.read_bytes()

    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(StoreError, match="No space left on device"):
        store.put(rec(cpu="999m"))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["recs.json"]


def test_readers_never_see_a_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "recs.json"
    store = JsonFileStore(path)
    store.put_many([rec(f"w{i}") for i in range(200)])
    stop = threading.Event()
    bad: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            try:
                doc = json.loads(path.read_bytes())
                if len(doc["items"]) != 200:
                    bad.append(f"{len(doc['items'])} items")
            except ValueError as exc:
                bad.append(str(exc))

    t = threading.Thread(target=reader)
    t.start()
    try:
        for n in range(15):
            store.put_many([rec(f"w{i}", cpu=f"{100 + n}m") for i in range(200)])
    finally:
        stop.set()
        t.join()
    assert bad == []


def test_the_webhook_reads_what_the_store_writes(tmp_path: Path) -> None:
    from podsizer.snapshot import parse_store_document

    path = tmp_path / "recs.json"
    JsonFileStore(path).put_many([rec("web"), rec("db", kind="StatefulSet")])
    snapshot = parse_store_document(json.loads(path.read_text()), str(path), lambda: NOW)
    assert len(snapshot) == 2


def _store_error(store: JsonFileStore) -> str:
    """The StoreError of list(), and put_many() refusing alike."""
    with pytest.raises(StoreError) as err:
        store.list()
    with pytest.raises(StoreError):
        store.put_many([rec()])
    return str(err.value)


def test_a_file_over_the_cap_is_refused_unread_naming_file_and_cap_and_never_overwritten(
    tmp_path: Path,
) -> None:
    path = tmp_path / "recs.json"
    with path.open("wb") as f:  # sparse: one byte over the default cap costs no disk
        f.truncate(DEFAULT_MAX_FILE_BYTES + 1)
    error = _store_error(JsonFileStore(path))
    assert error.startswith(
        f"{path}: {DEFAULT_MAX_FILE_BYTES + 1} bytes, more than the store file's cap of 64Mi"
    )
    assert "PODSIZER_STORE_FILE_MAX_BYTES" in error
    assert path.stat().st_size == DEFAULT_MAX_FILE_BYTES + 1


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["character device", "directory", "FIFO"])
def test_a_store_path_that_is_not_a_regular_file_is_refused_unread(tmp_path: Path, kind: str) -> None:
    """/dev/zero once read 8 GB in 20 s; a FIFO blocked the read for ever."""
    path = tmp_path / "recs.json"
    if kind == "character device":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    else:
        os.mkfifo(path)
    error = _store_error(JsonFileStore(path))
    assert error.startswith(f"{path}: a {kind}, not a regular file")
    assert path.is_symlink() if kind == "character device" else not path.is_file()


def test_a_write_that_would_pass_the_cap_is_refused_and_the_old_file_kept(tmp_path: Path) -> None:
    path = tmp_path / "recs.json"
    JsonFileStore(path).put(rec())
    before = path.read_bytes()
    store = JsonFileStore(path, max_bytes=len(before) + 100)
    store.put(rec(cpu="300m"))  # the same workload, within the cap
    before = path.read_bytes()
    assert "300m" in before.decode()
    with pytest.raises(StoreError, match=r"not written: \d+ bytes, more than the store file's cap of \d+ "):
        store.put_many([rec(f"w{i}") for i in range(3)])
    assert path.read_bytes() == before


def test_the_recommenders_store_reads_with_the_configured_cap(tmp_path: Path) -> None:
    settings = RecommenderSettings(store_file=tmp_path / "recs.json", store_file_max_bytes=2**20)
    store = build_store(settings)
    assert isinstance(store, JsonFileStore) and store.max_bytes == 2**20


def test_a_refused_items_forged_name_is_logged_on_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "recs.json"
    forged = {"metadata": {"name": "web\n2026-01-01 ERROR forged\x1b[31m", "namespace": "shop"}}
    path.write_text(
        json.dumps({"apiVersion": "podsizer.io/v1alpha1", "kind": "RecommendationList", "items": [forged]})
    )
    with caplog.at_level("WARNING", logger="podsizer.store"):
        assert JsonFileStore(path).list() == []
    (message,) = [r.getMessage() for r in caplog.records]
    assert "(shop/web\\n2026-01-01 ERROR forged\\x1b[31m) skipped" in message
    assert "\n" not in message and "\x1b" not in message
