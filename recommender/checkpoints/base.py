"""The CheckpointStore interface: opaque checkpoint blobs (recommender.model.checkpoint's bytes) by key.

The incremental recommender (recommender.incremental) decides what a blob holds: with a store whose
`per_workload` is True one blob per workload (key: the workload's `WorkloadRef`), else one blob of the
whole model (key: None). A store never parses a blob; a blob it cannot read back (a damaged object)
is reported in `ReadResult.unreadable`, never raised, so the caller rebuilds only what is lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from podsizer.api.identity import WorkloadRef

BlobKey = WorkloadRef | None
"""A blob's key: its workload, or None for the single blob of a store that is not per workload."""


class CheckpointStoreError(RuntimeError):
    """The store cannot be read or written at all; the message names the file or API and the cause."""


@dataclass(frozen=True)
class ReadResult:
    """What a store holds: the blobs it could read, and a line per object it could not."""

    blobs: Mapping[BlobKey, bytes]
    unreadable: tuple[str, ...] = ()


@dataclass(frozen=True)
class WriteResult:
    """What a write did: blobs written (created or replaced), objects deleted, their bytes, and a line per
    failure. A blob already stored as it is counts as neither written nor failed."""

    written: int = 0
    deleted: int = 0
    bytes: int = 0
    failed: tuple[str, ...] = field(default_factory=tuple)


class CheckpointStore(Protocol):
    """Keeps the newest checkpoint blobs; `write` replaces the whole set (keys absent are deleted)."""

    name: str
    per_workload: bool

    def read(self) -> ReadResult:
        """Every blob stored (CheckpointStoreError when the store cannot be read at all)."""
        ...

    def write(self, blobs: Mapping[BlobKey, bytes]) -> WriteResult:
        """Stores `blobs` and deletes every stored key not among them; one failure never stops the rest
        (CheckpointStoreError only when nothing can be written)."""
        ...
