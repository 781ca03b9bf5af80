"""FileCheckpointStore: one blob in one file, written atomically; missing, empty and unreadable files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from podsizer.api.identity import WorkloadRef
from recommender.checkpoints.base import CheckpointStore, CheckpointStoreError, ReadResult
from recommender.checkpoints.filestore import FileCheckpointStore

BLOB = bytes(range(256)) * 40


def test_round_trip_keeps_the_blob_byte_for_byte(tmp_path: Path) -> None:
    store: CheckpointStore = FileCheckpointStore(tmp_path / "usage.ckpt")
    result = store.write({None: BLOB})
    assert (result.written, result.deleted, result.bytes, result.failed) == (1, 0, len(BLOB), ())
    assert store.read() == ReadResult(blobs={None: BLOB})
    assert store.per_workload is False


def test_a_second_write_replaces_the_first(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path / "usage.ckpt")
    store.write({None: b"first"})
    store.write({None: b"second"})
    assert store.read().blobs == {None: b"second"}


def test_atomic_write_leaves_no_temp_file_and_creates_the_directory(tmp_path: Path) -> None:
    path = tmp_path / "state" / "deeper" / "usage.ckpt"
    FileCheckpointStore(path).write({None: BLOB})
    assert sorted(os.listdir(path.parent)) == ["usage.ckpt"]
    assert path.read_bytes() == BLOB


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "usage.ckpt"
    store = FileCheckpointStore(path)
    store.write({None: b"old"})

    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(
        CheckpointStoreError, match=r"usage\.ckpt: cannot write the checkpoint: No space left"
    ):
        store.write({None: b"new"})
    assert sorted(os.listdir(tmp_path)) == ["usage.ckpt"]
    assert path.read_bytes() == b"old"


def test_missing_file_reads_as_empty(tmp_path: Path) -> None:
    result = FileCheckpointStore(tmp_path / "absent" / "usage.ckpt").read()
    assert result == ReadResult(blobs={})


def test_writing_no_blob_deletes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "usage.ckpt"
    store = FileCheckpointStore(path)
    store.write({None: BLOB})
    result = store.write({})
    assert (result.written, result.deleted) == (0, 1)
    assert not path.exists()
    assert store.write({}).deleted == 0  # nothing left to delete
    assert store.read().blobs == {}


def test_a_workload_key_is_a_value_error(tmp_path: Path) -> None:
    store = FileCheckpointStore(tmp_path / "usage.ckpt")
    with pytest.raises(ValueError, match="one blob"):
        store.write({WorkloadRef("shop", "Deployment", "web"): b"x"})
    assert not (tmp_path / "usage.ckpt").exists()


def test_a_directory_in_place_of_the_file_names_the_path_and_cause(tmp_path: Path) -> None:
    path = tmp_path / "usage.ckpt"
    path.mkdir()
    with pytest.raises(CheckpointStoreError) as raised:
        FileCheckpointStore(path).read()
    assert str(path) in str(raised.value) and "a directory, not a regular file" in str(raised.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file_names_the_path_and_cause(tmp_path: Path) -> None:
    path = tmp_path / "usage.ckpt"
    path.write_bytes(BLOB)
    path.chmod(0)
    with pytest.raises(CheckpointStoreError) as raised:
        FileCheckpointStore(path).read()
    assert str(path) in str(raised.value) and "Permission denied" in str(raised.value)


def test_a_stale_temp_file_of_a_killed_writer_is_removed_at_start(tmp_path: Path) -> None:
    path = tmp_path / "usage.ckpt"
    orphan = tmp_path / ".usage.ckpt.abc123.tmp"
    orphan.write_bytes(b"half")
    os.utime(orphan, (1.0, 1.0))
    FileCheckpointStore(path)
    assert not orphan.exists()


def test_a_device_named_as_the_checkpoint_is_refused_without_reading_it() -> None:
    """/dev/zero would be read forever (the probe's store file read 8 GB in 20 s)."""
    with pytest.raises(CheckpointStoreError, match="/dev/zero: a character device, not a regular file"):
        FileCheckpointStore("/dev/zero", clean_temp_files=False).read()


def test_a_fifo_named_as_the_checkpoint_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "checkpoint"
    os.mkfifo(fifo)
    with pytest.raises(CheckpointStoreError, match="a FIFO, not a regular file"):
        FileCheckpointStore(fifo).read()


def test_a_file_larger_than_any_checkpoint_is_refused_without_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "checkpoint"
    path.write_bytes(b"\0" * 4096)
    monkeypatch.setattr("recommender.checkpoints.filestore.MAX_BYTES", 1024)
    with pytest.raises(CheckpointStoreError, match="4096 bytes, more than the 1024 bytes a checkpoint"):
        FileCheckpointStore(path).read()
