"""Stale temp files of a killed writer: the JSON store and DCGM journal remove only their own orphans."""

from __future__ import annotations

import fcntl
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from recommender import tempfiles
from recommender.checkpoints.filestore import FileCheckpointStore
from recommender.input.local_store import SeriesStore
from recommender.output.store import JsonFileStore
from recommender.tempfiles import remove_stale_temp_files


def _orphan(path: Path, age_seconds: float, size: int = 1024) -> Path:
    """A file as a writer killed `age_seconds` ago left it."""
    path.write_bytes(b"x" * size)
    then = time.time() - age_seconds
    os.utime(path, (then, then))
    return path


def test_json_store_removes_its_own_stale_temp_files_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store_file = tmp_path / "recs.json"
    killed = [_orphan(tmp_path / f".recs.json.{i}abc.tmp", 3600) for i in range(5)]
    in_progress = _orphan(tmp_path / ".recs.json.fresh.tmp", 1)
    other_store = _orphan(tmp_path / ".other.json.x1.tmp", 3600)
    unrelated = _orphan(tmp_path / "notes.tmp", 3600)
    with caplog.at_level(logging.WARNING, logger="podsizer.tempfiles"):
        JsonFileStore(store_file)
    assert not any(p.exists() for p in killed)
    assert in_progress.exists() and other_store.exists() and unrelated.exists()
    assert "removed 5 stale temporary file(s)" in caplog.text and "5120 bytes" in caplog.text


def test_json_store_still_writes_after_cleaning(tmp_path: Path) -> None:
    _orphan(tmp_path / ".recs.json.zz.tmp", 600)
    store = JsonFileStore(tmp_path / "recs.json")
    store.put_many([])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["recs.json"]


def test_dcgm_journal_removes_the_stale_rewrite_file_at_start(tmp_path: Path) -> None:
    journal = tmp_path / "dcgm.jsonl"
    journal.write_bytes(b'{"t": 1.0, "s": [["m", {"gpu": "0"}, 1.0]]}\n')
    stale = _orphan(tmp_path / "dcgm.jsonl.tmp", 600)
    other = _orphan(tmp_path / "other.jsonl.tmp", 600)
    store = SeriesStore(3600.0, journal)
    assert not stale.exists() and other.exists()
    assert store.live_samples() == 1


def test_a_locked_temp_file_is_a_write_in_progress_and_kept_however_old(tmp_path: Path) -> None:
    writing = _orphan(tmp_path / ".recs.json.live.tmp", 3600)
    fd = os.open(writing, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert remove_stale_temp_files(tmp_path, ".recs.json.*.tmp") == ()
    finally:
        os.close(fd)
    assert remove_stale_temp_files(tmp_path, ".recs.json.*.tmp") == (writing,)


def test_an_unlocked_orphan_goes_at_once_after_the_settle_time(tmp_path: Path) -> None:
    just_created = _orphan(tmp_path / "a.tmp", 0.5)
    killed = _orphan(tmp_path / "b.tmp", 5)
    (tmp_path / "d.tmp").mkdir()
    assert remove_stale_temp_files(tmp_path, "*.tmp") == (killed,)
    assert just_created.exists() and (tmp_path / "d.tmp").is_dir()


def test_without_locks_age_decides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfiles, "_unlocked", lambda path: None)
    f = _orphan(tmp_path / "c.tmp", 0)
    assert remove_stale_temp_files(tmp_path, "*.tmp", now=lambda: f.stat().st_mtime + 59) == ()
    assert remove_stale_temp_files(tmp_path, "*.tmp", now=lambda: f.stat().st_mtime + 61) == (f,)


def test_a_missing_directory_is_not_an_error(tmp_path: Path) -> None:
    assert remove_stale_temp_files(tmp_path / "nope", "*.tmp") == ()


def test_orphans_of_writers_killed_mid_write_are_removed_on_the_next_start(tmp_path: Path) -> None:
    """kill -9 a process while it writes a large store, five times; the next start removes what they left."""
    store_file = tmp_path / "recs.json"
    script = (
        "import os, sys, tempfile\n"
        "from recommender.tempfiles import hold_lock\n"
        "fd, _ = tempfile.mkstemp(dir=sys.argv[1], prefix='.recs.json.', suffix='.tmp')\n"
        "hold_lock(fd)\n"
        "os.write(fd, b'x' * 4_000_000)\n"
        "print('writing', flush=True)\n"
        "sys.stdin.read()\n"
    )
    for _ in range(5):
        proc = subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert proc.stdout is not None and proc.stdout.readline() == b"writing\n"
        proc.kill()
        proc.wait()
    orphans = list(tmp_path.glob(".recs.json.*.tmp"))
    assert len(orphans) == 5
    for p in orphans:
        os.utime(p, (time.time() - 3, time.time() - 3))  # a restart comes seconds later
    JsonFileStore(store_file)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("store", [JsonFileStore, FileCheckpointStore])
def test_both_file_stores_remove_the_stale_writes_next_to_the_linked_file(
    tmp_path: Path, store: Callable[[Path], object]
) -> None:
    """One rule (tempfiles.remove_stale_writes): where a link points, the writes land and are cleaned."""
    real = tmp_path / "data"
    real.mkdir()
    (tmp_path / "state.json").symlink_to(real / "state.json")
    killed = _orphan(real / ".state.json.k1.tmp", 3600)
    beside_link = _orphan(tmp_path / ".state.json.k2.tmp", 3600)
    store(tmp_path / "state.json")
    assert not killed.exists() and beside_link.exists()
