"""The one list+watch reader over the kubernetes client: paginated lists, resourceVersion bookkeeping,
bookmarks, re-list on 410 Gone, back-off on errors (webhook, updater, console)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from podsizer.apierrors import status_code
from podsizer.kube.objects import CustomObjectClient
from podsizer.kube.pages import items, pages, resource_version
from podsizer.kube.resources import CustomResource

log = logging.getLogger("podsizer.informer")

ListFn = Callable[..., Any]


class WatchLike(Protocol):
    def stream(self, func: ListFn, *args: Any, **kwargs: Any) -> Any: ...

    def stop(self) -> None: ...


class Handler(Protocol):
    """Receives plain JSON objects (dicts), never client models."""

    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        """The whole list, page by page: iterate it once (only one page is in memory at a time)."""

    def event(self, kind: str, obj: dict[str, Any]) -> None: ...


class Informer:
    """One resource: list (full replace, `page_size` objects per call), then watch from the list's
    resourceVersion until stopped.

    A 410 (resourceVersion too old) or an ERROR event re-lists at once; a failing call (e.g. a CRD that is
    not installed: Rollouts, DeploymentConfigs) is retried with exponential backoff up to `max_backoff`.
    """

    def __init__(
        self,
        name: str,
        list_fn: ListFn,
        handler: Handler,
        watch_factory: Callable[[], WatchLike],
        stop: threading.Event,
        list_kwargs: Mapping[str, Any] | None = None,
        timeout_seconds: int = 300,
        backoff: float = 5.0,
        max_backoff: float = 120.0,
        page_size: int = 500,
    ) -> None:
        self.name = name
        self.list_fn = list_fn
        self.handler = handler
        self.watch_factory = watch_factory
        self.stop_event = stop
        self.list_kwargs = dict(list_kwargs or {})
        self.timeout_seconds = timeout_seconds
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.page_size = page_size
        self.pages = 0
        self.resource_version: str | None = None
        self.synced = threading.Event()
        self.relists = 0

    def _fetch(self, paging: dict[str, Any]) -> Mapping[str, Any]:
        data = json.loads(self.list_fn(_preload_content=False, **paging, **self.list_kwargs).data)
        self.pages += 1
        return data if isinstance(data, Mapping) else {}

    def _pages(self, rv: list[str | None]) -> Iterator[dict[str, Any]]:
        """Every item over `limit` + `continue` pages; `rv` gets the list's resourceVersion."""
        for page in pages(self._fetch, self.page_size):
            rv[:] = [resource_version(page)]
            yield from items(page)

    def list(self) -> None:
        """A full list, streamed into the handler a page at a time; a 410 (an expired `continue` token)
        starts the list again once."""
        for attempt in (0, 1):
            rv: list[str | None] = [None]
            try:
                self.handler.replace(self._pages(rv))
            except Exception as exc:
                if status_code(exc) != 410 or attempt:
                    raise
                log.info("informer %s: list continue token expired; listing again", self.name)
                continue
            self.resource_version = rv[0]
            break
        self.relists += 1
        self.synced.set()

    def watch_once(self) -> bool:
        """Follow the stream until it ends; False when the caller must re-list (410 or ERROR event)."""
        w = self.watch_factory()
        try:
            for event in w.stream(
                self.list_fn,
                resource_version=self.resource_version,
                timeout_seconds=self.timeout_seconds,
                allow_watch_bookmarks=True,
                **self.list_kwargs,
            ):
                if self.stop_event.is_set():
                    w.stop()
                    return True
                etype = event.get("type")
                raw = event.get("raw_object")
                if not isinstance(raw, dict):
                    continue
                if etype == "ERROR":
                    log.info("informer %s: watch error %s; re-listing", self.name, raw.get("message"))
                    return False
                rv = (raw.get("metadata") or {}).get("resourceVersion")
                if rv:
                    self.resource_version = rv
                if etype in ("ADDED", "MODIFIED", "DELETED"):
                    self.handler.event(etype, raw)
        except Exception as exc:
            if status_code(exc) == 410:
                log.info("informer %s: resourceVersion %s gone; re-listing", self.name, self.resource_version)
                return False
            raise
        return True

    def run(self, listed: bool = False) -> None:
        """List (unless `listed`: the caller just did), then watch, until stopped."""
        need_list = not listed
        failures = 0
        while not self.stop_event.is_set():
            try:
                if need_list:
                    self.list()
                need_list = not self.watch_once()
                failures = 0
            except Exception as exc:  # the cache keeps serving what it has; retry later, backing off
                delay = min(self.backoff * 2**failures, self.max_backoff)
                failures = min(failures + 1, 16)
                log.warning("informer %s: %s; retrying in %.0fs", self.name, exc, delay)
                need_list = True
                self.stop_event.wait(delay)

    def start(self, listed: bool = False) -> threading.Thread:
        t = threading.Thread(
            target=self.run, args=(listed,), name=f"podsizer-informer-{self.name}", daemon=True
        )
        t.start()
        return t


def custom_object_lister(api_client: Any, resource: CustomResource, namespace: str | None = None) -> ListFn:
    """The list call of `resource` (all namespaces, or one), which the watch also follows."""
    return CustomObjectClient.of(api_client, resource).lister(namespace)
