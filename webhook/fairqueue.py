"""Large reviews decided a few at a time, smallest first: a legitimate large review waits at most for those
already being decided, never behind a queue of bigger (hostile) ones."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio


@dataclass(order=True)
class _Waiter:
    size: int
    seq: int
    event: anyio.Event = field(compare=False)
    gone: bool = field(default=False, compare=False)


class SmallestFirst:
    """`capacity` slots; a request that finds none free waits in order of size (then arrival). Event loop
    only: every method runs on the one loop thread, so no lock is needed."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        self.capacity = capacity
        self._running = 0
        self._waiting: list[_Waiter] = []
        self._seq = itertools.count()

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiting if not w.gone)

    @asynccontextmanager
    async def slot(self, size: int) -> AsyncIterator[None]:
        """Hold a slot for the body of the `with`; a cancelled waiter leaves the queue (or passes on the
        slot it was just given)."""
        if self._running < self.capacity and not self.waiting:
            self._running += 1
        else:
            waiter = _Waiter(size, next(self._seq), anyio.Event())
            heapq.heappush(self._waiting, waiter)
            try:
                await waiter.event.wait()
            except BaseException:
                if waiter.event.is_set():
                    self._release()  # granted as it was cancelled: the next one gets it
                else:
                    waiter.gone = True
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        """Hand the slot to the smallest waiter, or free it."""
        while self._waiting:
            waiter = heapq.heappop(self._waiting)
            if not waiter.gone:
                waiter.event.set()  # the slot passes on: `_running` stays
                return
        self._running -= 1
