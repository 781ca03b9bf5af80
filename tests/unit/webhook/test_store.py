"""The JSON file store: bad items skipped with a reason, a bad file keeps the last snapshot, reloads."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from podsizer.api import WorkloadRef, recommendation_to_resource
from podsizer.snapshot import SnapshotHolder
from tests.unit.webhook.builders import recommendation
from webhook.file_store import FileStoreLoader


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 2, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _doc(*items: Any) -> bytes:
    return orjson.dumps(
        {"apiVersion": "podsizer.io/v1alpha1", "kind": "RecommendationList", "items": list(items)}
    )


def _write(path: Path, data: bytes, bump: int) -> None:
    path.write_bytes(data)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + bump * 1_000_000_000))


def test_loads_and_skips_bad_items_with_a_reason(tmp_path: Path) -> None:
    bad = recommendation_to_resource(recommendation("Deployment", "broken"))
    bad["status"]["sizingMode"] = "turbo"
    path = tmp_path / "recs.json"
    _write(path, _doc(recommendation_to_resource(recommendation()), bad, "not an object"), 0)
    holder = SnapshotHolder()
    assert FileStoreLoader(path, holder, Clock()).load_once()
    snap = holder.current()
    assert snap is not None
    assert list(snap.by_target) == [WorkloadRef("shop", "Deployment", "web")]
    assert len(snap.skipped) == 2
    assert "status.sizingMode" in snap.skipped[0] and "broken" in snap.skipped[0]


@pytest.mark.parametrize(
    "content",
    [
        b"{truncated",
        b"[]",
        orjson.dumps({"kind": "RecommendationList", "apiVersion": "v1", "items": []}),
        orjson.dumps({"kind": "Other", "apiVersion": "podsizer.io/v1alpha1"}),
        orjson.dumps({"kind": "RecommendationList", "apiVersion": "podsizer.io/v1alpha1", "items": {}}),
    ],
)
def test_bad_file_keeps_the_last_good_snapshot(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "recs.json"
    _write(path, _doc(recommendation_to_resource(recommendation())), 0)
    holder = SnapshotHolder()
    loader = FileStoreLoader(path, holder, Clock())
    loader.load_once()
    good = holder.current()
    _write(path, content, 5)
    assert not loader.load_once()
    assert holder.current() is good
    assert loader.last_error and str(path) in loader.last_error


def test_missing_file_is_not_ready(tmp_path: Path) -> None:
    holder = SnapshotHolder()
    assert not FileStoreLoader(tmp_path / "absent.json", holder, Clock()).load_once()
    assert holder.current() is None


def test_change_is_picked_up_and_unchanged_poll_only_refreshes(tmp_path: Path) -> None:
    path = tmp_path / "recs.json"
    clock = Clock()
    _write(path, _doc(recommendation_to_resource(recommendation())), 0)
    holder = SnapshotHolder()
    loader = FileStoreLoader(path, holder, clock)
    loader.load_once()
    first = holder.current()
    clock.now += timedelta(seconds=30)
    assert not loader.load_once()
    assert holder.current() is first
    assert holder.refreshed_at() == clock.now
    _write(path, _doc(recommendation_to_resource(recommendation("StatefulSet", "db"))), 60)
    assert loader.load_once()
    snap = holder.current()
    assert snap is not None and list(snap.by_target) == [WorkloadRef("shop", "StatefulSet", "db")]


def test_symlink_swap_like_a_configmap_volume(tmp_path: Path) -> None:
    """Kubelet swaps ..data; the path stays a symlink to a new file."""
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    (tmp_path / "v1" / "recs.json").write_bytes(_doc(recommendation_to_resource(recommendation())))
    (tmp_path / "v2" / "recs.json").write_bytes(_doc())
    link = tmp_path / "recs.json"
    link.symlink_to(tmp_path / "v1" / "recs.json")
    holder = SnapshotHolder()
    loader = FileStoreLoader(link, holder, Clock())
    loader.load_once()
    tmp = tmp_path / "tmp-link"
    tmp.symlink_to(tmp_path / "v2" / "recs.json")
    os.replace(tmp, link)
    assert loader.load_once()
    snap = holder.current()
    assert snap is not None and len(snap) == 0


@pytest.mark.timeout(30)
@pytest.mark.parametrize("bad", ["over the cap", "/dev/zero", "FIFO"])
def test_a_file_over_the_cap_or_not_regular_is_refused_unread_and_the_last_good_snapshot_kept(
    tmp_path: Path, bad: str
) -> None:
    path = tmp_path / "recs.json"
    _write(path, _doc(recommendation_to_resource(recommendation())), 0)
    holder = SnapshotHolder()
    loader = FileStoreLoader(path, holder, Clock(), max_bytes=2**20)
    assert loader.load_once()
    good = holder.current()
    path.unlink()
    if bad == "over the cap":
        with path.open("wb") as f:
            f.truncate(2**20 + 1)
    elif bad == "/dev/zero":
        path.symlink_to("/dev/zero")
    else:
        os.mkfifo(path)
    assert not loader.load_once()
    assert holder.current() is good
    assert loader.last_error is not None and str(path) in loader.last_error
    expected = "more than the store file's cap of 1Mi" if bad == "over the cap" else "not a regular file"
    assert expected in loader.last_error
