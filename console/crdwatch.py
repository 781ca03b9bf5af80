"""The console's CRD store through a watch: one list, then a watch from its resourceVersion (bookmarks,
re-list on 410 Gone, back-off on errors: podsizer.kube.watch), into an in-memory index that builds read.
Every change bumps a version, so the console re-composes its pages without a restart or a re-list."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from podsizer.api.identity import WorkloadRef
from podsizer.api.index import RecommendationIndex
from podsizer.api.resource import PLURAL, ContainerPolicy, Recommendation
from podsizer.apierrors import KubeApiError, failing_as
from podsizer.kube.resources import RECOMMENDATIONS
from podsizer.kube.watch import Informer, ListFn, WatchLike
from recommender.output.store.base import StoreError, bounds_of

log = logging.getLogger("podsizer.console.crdwatch")

_Recs = list[Recommendation]  # `list` is a method name below
_Failures = list[tuple[Recommendation, Exception]]


class WatchedCrdStore:
    """A read-only RecommendationStore over the Recommendation CRD, kept current by one informer.

    `start()` lists once in the caller's thread (an unreachable apiserver or a missing CRD raises
    StoreError there, as a plain list would), then watches in a daemon thread; reads never call the API.
    `version()` changes with every list and event; `wait_for_change(seen, timeout)` blocks until it does.
    """

    def __init__(
        self,
        list_fn: ListFn,
        watch_factory: Callable[[], WatchLike],
        stop: threading.Event,
        *,
        where: str = "all namespaces",
        timeout_seconds: int = 300,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
    ) -> None:
        self.where = where
        self._index = RecommendationIndex()
        self._changed = threading.Condition()
        self._version = 0
        self.informer = Informer(
            PLURAL,
            list_fn,
            self,
            watch_factory,
            stop,
            timeout_seconds=timeout_seconds,
            backoff=backoff,
            max_backoff=max_backoff,
        )

    # the informer's handler
    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        fresh = RecommendationIndex()
        fresh.replace(items)  # decoded outside the lock: reads keep the old index meanwhile
        with self._changed:
            self._index = fresh
            self._bump()

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        with self._changed:
            self._index.apply(kind, obj)
            self._bump()

    def _bump(self) -> None:
        self._version += 1
        self._changed.notify_all()

    # change notification
    def version(self) -> int:
        return self._version

    def wait_for_change(self, seen: int, timeout: float) -> int:
        """The version once it differs from `seen`, or after `timeout` seconds (then possibly `seen`)."""
        with self._changed:
            self._changed.wait_for(lambda: self._version != seen, timeout)
            return self._version

    # lifecycle
    def start(self) -> threading.Thread:
        """The first list here (StoreError when it fails), then the watch in a daemon thread."""
        what = f"cannot list {RECOMMENDATIONS.name} in {self.where}"
        try:
            with failing_as(what):
                self.informer.list()
        except KubeApiError as exc:
            raise StoreError(str(exc)) from exc
        except ValueError as exc:  # an answer that is not JSON
            raise StoreError(f"{what}: {exc}") from exc
        return self.informer.start(listed=True)

    # the store's read side
    def list(self) -> _Recs:
        with self._changed:
            recs = self._index.recommendations()
        return sorted(recs, key=lambda r: (r.namespace, r.name, r.target.cluster))

    def skipped(self) -> tuple[str, ...]:
        with self._changed:
            return tuple(self._index.skipped())

    def get(self, ref: WorkloadRef) -> Recommendation | None:
        return next((r for r in self.list() if r.target == ref), None)

    def bounds(self) -> Mapping[WorkloadRef, tuple[ContainerPolicy, ...]]:
        return bounds_of(self.list())

    def put(self, rec: Recommendation) -> None:
        raise StoreError(f"the console's store is read-only (Recommendation {rec.namespace}/{rec.name})")

    def put_many(self, recs: Sequence[Recommendation]) -> _Failures:
        return [(r, StoreError("the console's store is read-only")) for r in recs]
