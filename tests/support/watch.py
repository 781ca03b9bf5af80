"""A scripted list+watch API for the informer's unit tests (the webhook's caches, the console's store):
lists and watch streams in order, exceptions raised where the script has them; and the `stop` fixture."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    """The stop event of a test's informers and watches, set when it ends (shared by tests/conftest.py)."""
    event = threading.Event()
    yield event
    event.set()


class FakeResponse:
    """What a list call returns with _preload_content=False: the JSON bytes in `data`."""

    def __init__(self, payload: Any) -> None:
        self.data = json.dumps(payload).encode()


class FakeApi:
    """Scripted lists (the last one repeats) and watch streams (one per watch call). A watch with no
    script left ends at once, or, given `stop`, blocks until it is set, as a quiet apiserver's would."""

    def __init__(
        self, lists: list[Any], streams: list[list[Any]], stop: threading.Event | None = None
    ) -> None:
        self.lists, self.streams, self.stop_event = lists, streams, stop
        self.list_calls = 0
        self.watch_kwargs: list[dict[str, Any]] = []

    @property
    def watch_rvs(self) -> list[str | None]:
        """The resourceVersion each watch started from."""
        return [kwargs.get("resource_version") for kwargs in self.watch_kwargs]

    def list_fn(self, **kwargs: Any) -> FakeResponse:
        self.list_calls += 1
        item = self.lists[min(self.list_calls - 1, len(self.lists) - 1)]
        if isinstance(item, Exception):
            raise item
        return FakeResponse(item)

    def watch_factory(self) -> FakeWatch:
        return FakeWatch(self)


class FakeWatch:
    def __init__(self, api: FakeApi) -> None:
        self.api = api

    def stream(self, func: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        self.api.watch_kwargs.append(kwargs)
        if not self.api.streams:
            if self.api.stop_event is not None:
                self.api.stop_event.wait(10)
            return
        for item in self.api.streams.pop(0):
            if isinstance(item, Exception):
                raise item
            yield item

    def stop(self) -> None:
        pass
