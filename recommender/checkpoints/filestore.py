"""Standalone checkpoint store: the one blob of the whole model in one file, replaced atomically."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from podsizer.cappedfile import FileRefused, read_capped
from recommender.checkpoints.base import BlobKey, CheckpointStoreError, ReadResult, WriteResult
from recommender.model.checkpoint import MAX_BYTES, MAX_STATES
from recommender.tempfiles import atomic_write, remove_stale_writes


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


class FileCheckpointStore:
    """A CheckpointStore of one blob (key None) in the file `path`.

    A write goes to a temporary file in the same directory (created when missing), is fsynced and renamed
    over the old file, so a reader sees the old blob or the new one, never half of one. Writing no blob
    deletes the file. A file that cannot be read (no permission, a directory) raises CheckpointStoreError.
    """

    per_workload = False

    def __init__(self, path: str | Path, clean_temp_files: bool = True) -> None:
        """`clean_temp_files`: remove stale temp files of an interrupted write (remove_stale_writes)."""
        self.path = Path(path)
        self.name = f"file {self.path}"
        if clean_temp_files:
            remove_stale_writes(self.path)

    def __repr__(self) -> str:
        return f"FileCheckpointStore({str(self.path)!r})"

    def read(self) -> ReadResult:
        """The blob; a file that is not a regular one or is larger than any checkpoint (MAX_BYTES) is not
        read (CheckpointStoreError)."""
        cap = f"the {MAX_BYTES} bytes a checkpoint of {MAX_STATES} states may take"
        try:
            data = read_capped(self.path, MAX_BYTES, cap, "a checkpoint")
        except FileNotFoundError:
            return ReadResult(blobs={})
        except FileRefused as exc:
            raise CheckpointStoreError(f"cannot read the checkpoint: {exc}") from exc
        except OSError as exc:
            raise CheckpointStoreError(f"{self.path}: cannot read the checkpoint: {_why(exc)}") from exc
        return ReadResult(blobs={None: data})

    def write(self, blobs: Mapping[BlobKey, bytes]) -> WriteResult:
        """Stores the blob of key None; an empty mapping deletes the file. ValueError for any other key."""
        others = [key for key in blobs if key is not None]
        if others:
            raise ValueError(f"{self.name} holds one blob (key None), not per workload: got {others[0]}")
        target = Path(os.path.realpath(self.path))
        if None not in blobs:
            return self._delete(target)
        data = blobs[None]
        try:
            atomic_write(target, data)
        except OSError as exc:
            raise CheckpointStoreError(f"{self.path}: cannot write the checkpoint: {_why(exc)}") from exc
        return WriteResult(written=1, bytes=len(data))

    def _delete(self, target: Path) -> WriteResult:
        try:
            target.unlink()
        except FileNotFoundError:
            return WriteResult()
        except OSError as exc:
            raise CheckpointStoreError(f"{self.path}: cannot delete the checkpoint: {_why(exc)}") from exc
        return WriteResult(deleted=1)
