"""The in-memory Recommendation snapshot the webhook answers from, swapped atomically by loaders."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Protocol

from podsizer.api import (
    Recommendation,
    RecommendationError,
    WorkloadRef,
    recommendation_from_resource,
)
from podsizer.api.listdoc import ListDocumentError, list_items
from podsizer.api.resource import object_name

log = logging.getLogger("podsizer.webhook.store")


@dataclass(frozen=True)
class RecommendationSnapshot:
    """Immutable: Recommendations indexed by (namespace, kind, name) of their target workload."""

    by_target: Mapping[WorkloadRef, Recommendation]
    loaded_at: datetime
    source: str = ""
    skipped: tuple[str, ...] = ()

    @staticmethod
    def of(
        recs: Iterable[Recommendation], loaded_at: datetime, source: str = "", skipped: Iterable[str] = ()
    ) -> RecommendationSnapshot:
        return RecommendationSnapshot(
            MappingProxyType({r.target: r for r in recs}), loaded_at, source, tuple(skipped)
        )

    def get(self, ref: WorkloadRef) -> Recommendation | None:
        return self.by_target.get(ref)

    def __len__(self) -> int:
        return len(self.by_target)


class SnapshotProvider(Protocol):
    """What the admission path reads: the current snapshot (None until the first load)."""

    def current(self) -> RecommendationSnapshot | None: ...

    def refreshed_at(self) -> datetime | None: ...


@dataclass
class SnapshotHolder:
    """The one mutable cell: loaders `swap` a whole snapshot in; readers take a reference, no lock needed."""

    _snapshot: RecommendationSnapshot | None = None
    _refreshed_at: datetime | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def current(self) -> RecommendationSnapshot | None:
        return self._snapshot

    def refreshed_at(self) -> datetime | None:
        """When a loader last confirmed the store (a load, an unchanged poll, a watch event)."""
        return self._refreshed_at

    def swap(self, snapshot: RecommendationSnapshot) -> None:
        with self._lock:
            self._snapshot = snapshot
            self._refreshed_at = snapshot.loaded_at

    def touch(self, when: datetime) -> None:
        with self._lock:
            if self._snapshot is not None:
                self._refreshed_at = when


def parse_items(items: Iterable[Any], where: str) -> tuple[list[Recommendation], list[str]]:
    """Decode Recommendation objects; a bad one is skipped with the reason (and logged), the rest kept."""
    recs: list[Recommendation] = []
    skipped: list[str] = []
    for i, item in enumerate(items):
        try:
            recs.append(recommendation_from_resource(item))
        except (RecommendationError, ValueError, TypeError, KeyError) as exc:
            reason = f"{where}[{i}] ({object_name(item)}): {exc}"
            # A Recommendation is created first and its status written next: no status yet is normal.
            pending = isinstance(item, dict) and item.get("status") is None
            level = logging.DEBUG if pending else logging.WARNING
            log.log(level, "store: skipping recommendation %s", reason)
            skipped.append(reason)
    return recs, skipped


def parse_store_document(doc: Any, source: str, now: Callable[[], datetime]) -> RecommendationSnapshot:
    """The JSON file store: a RecommendationList; raises ValueError when the document itself is wrong."""
    try:
        items = list_items(doc)
    except ListDocumentError as exc:
        raise ValueError(f"{source}: {exc}") from exc
    recs, skipped = parse_items(items, "items")
    return RecommendationSnapshot.of(recs, now(), source, skipped)
