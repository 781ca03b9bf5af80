"""The in-memory Recommendation snapshot the webhook and the updater answer from, swapped atomically by
loaders."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Protocol

from podsizer.api import Recommendation, WorkloadRef
from podsizer.api.index import parse_items
from podsizer.api.listdoc import ListDocumentError, list_items
from podsizer.api.resource import of_cluster
from podsizer.settings import env_name

log = logging.getLogger("podsizer.snapshot")


@dataclass(frozen=True)
class RecommendationSnapshot:
    """Immutable: this cluster's Recommendations indexed by (namespace, kind, name) of their target
    workload (the key carries no cluster: a pod names none)."""

    by_target: Mapping[WorkloadRef, Recommendation]
    loaded_at: datetime
    source: str = ""
    skipped: tuple[str, ...] = ()

    @staticmethod
    def of(
        recs: Iterable[Recommendation],
        loaded_at: datetime,
        source: str = "",
        skipped: Iterable[str] = (),
        cluster_name: str = "",
    ) -> RecommendationSnapshot:
        """Only the Recommendations of cluster `cluster_name` (podsizer.api.resource.of_cluster); the
        others are counted in one `skipped` line."""
        recs = list(recs)
        own = of_cluster(recs, cluster_name)
        left_out = len(recs) - len(own)
        if left_out:
            this = f"this is {cluster_name}" if cluster_name else f"{env_name('cluster_name')} is empty"
            skipped = (*skipped, f"{left_out} recommendations of other clusters left out ({this})")
        return RecommendationSnapshot(
            MappingProxyType({r.target.in_cluster(""): r for r in own}), loaded_at, source, tuple(skipped)
        )

    def get(self, ref: WorkloadRef) -> Recommendation | None:
        return self.by_target.get(ref.in_cluster(""))

    def has(self, ref: WorkloadRef) -> bool:
        """Whether `ref` has a Recommendation: the store as the owner resolver asks it (resolve_pod)."""
        return self.get(ref) is not None

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
    cluster_name: str = ""
    """This cluster's name: loaders build snapshots of its Recommendations only (settings.cluster_name)."""

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


def parse_store_document(
    doc: Any, source: str, now: Callable[[], datetime], cluster_name: str = ""
) -> RecommendationSnapshot:
    """The JSON file store: a RecommendationList (several clusters' possibly: only `cluster_name`'s are
    kept); raises ValueError when the document itself is wrong."""
    try:
        items = list_items(doc)
    except ListDocumentError as exc:
        raise ValueError(f"{source}: {exc}") from exc
    recs, skipped = parse_items(items, "items")
    return RecommendationSnapshot.of(recs, now(), source, skipped, cluster_name)
