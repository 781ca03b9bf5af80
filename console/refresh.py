"""ConsoleData rebuilt in the background (every interval, and whenever a watched store changes): requests
read the last good build; a failed rebuild keeps it and shows the error in the header (Meta.error) until a
rebuild succeeds."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol

from console.data import (
    CostRollup,
    GpuNode,
    GpuPodRow,
    Meta,
    PodDetail,
    PodRow,
    SkippedRow,
    StaticConsoleData,
    WorkloadDetail,
    WorkloadRow,
)
from podsizer.api.identity import WorkloadRef
from recommender.sizing.waste import WasteFinding

log = logging.getLogger("podsizer.console")

BuildFn = Callable[[datetime], StaticConsoleData]
RecomposeFn = Callable[[], StaticConsoleData]
DEBOUNCE_SECONDS = 0.2  # a burst of store events costs one re-composition


class Changes(Protocol):
    """What changes the data without a fetch: a watched store's version."""

    def version(self) -> int: ...

    def wait_for_change(self, seen: int, timeout: float) -> int: ...


class RefreshingConsoleData:
    """The latest good build of `build(now)`; `refresh()` rebuilds (the first build happens at creation,
    so a source that fails at start raises there), `recompose()` rebuilds from the last fetched data (a
    watched store changed). Builds are serialised, so a slow fetch that read the store before a change
    cannot overwrite the re-composition made after it. Reads never wait for a rebuild: the state (build,
    last error) is one tuple swapped by one assignment, and `current()` takes it once, so a request that
    reads `current()` sees one build throughout (create_console_app(data.current))."""

    def __init__(
        self, build: BuildFn, clock: Callable[[], datetime], recompose: RecomposeFn | None = None
    ) -> None:
        self._build = build
        self._clock = clock
        self._recompose = recompose
        self._building = threading.Lock()
        self._state: tuple[StaticConsoleData, str | None] = (build(clock()), None)
        self.recompositions = 0

    def _run(self, what: str, make: RecomposeFn) -> bool:
        with self._building:
            last = self._state[0]
            try:
                data = make()
            except Exception as exc:  # any failure of source or store keeps the last data
                log.warning(
                    "console %s failed, keeping the data of %s: %s", what, last.info.generated_at, exc
                )
                self._state = (last, f"{type(exc).__name__}: {exc}")
                return False
            self._state = (data, None)
            return True

    def refresh(self) -> bool:
        """One rebuild; False (and the error kept for the header) when it failed."""
        return self._run("refresh", lambda: self._build(self._clock()))

    def recompose(self) -> bool:
        """The last fetched data with the store as it is now (a full rebuild when there is no recompose)."""
        if self._recompose is None:
            return self.refresh()
        self.recompositions += 1
        return self._run("update from the store", self._recompose)

    def refresh_forever(self, stop: threading.Event, interval: float) -> None:
        """Rebuild every `interval` seconds until `stop` is set (run in a daemon thread)."""
        while not stop.wait(interval):
            self.refresh()

    def follow(self, changes: Changes, stop: threading.Event, debounce: float = DEBOUNCE_SECONDS) -> None:
        """Re-compose after each change of `changes` (events within `debounce` seconds: once) until `stop`."""
        seen = changes.version()
        while not stop.is_set():
            if changes.wait_for_change(seen, timeout=1.0) == seen:
                continue
            stop.wait(debounce)
            seen = changes.version()
            self.recompose()

    def start(
        self, interval: float, changes: Changes | None = None, stop: threading.Event | None = None
    ) -> threading.Event:
        """Start the background rebuilds (and the re-compositions on `changes`); set the returned event
        (`stop` when given) to stop them."""
        stop = stop or threading.Event()
        threading.Thread(
            target=self.refresh_forever, args=(stop, interval), name="console-refresh", daemon=True
        ).start()
        if changes is not None:
            threading.Thread(
                target=self.follow, args=(changes, stop), name="console-store-changes", daemon=True
            ).start()
        return stop

    def current(self) -> StaticConsoleData:
        """The last good build, its Meta carrying the last refresh error (if the last refresh failed)."""
        data, error = self._state
        if error is None:
            return data
        return dataclasses.replace(data, info=dataclasses.replace(data.info, error=error))

    def meta(self) -> Meta:
        return self.current().meta()

    def workloads(self) -> Sequence[WorkloadRow]:
        return self.current().workloads()

    def skipped(self) -> Sequence[SkippedRow]:
        return self.current().skipped()

    def gpu_nodes(self) -> Sequence[GpuNode]:
        return self.current().gpu_nodes()

    def gpu_pods(self) -> Sequence[GpuPodRow]:
        return self.current().gpu_pods()

    def waste(self) -> Sequence[WasteFinding]:
        return self.current().waste()

    def costs(self) -> CostRollup:
        return self.current().costs()

    def pods(self) -> Sequence[PodRow]:
        return self.current().pods()

    def pod_detail(self, namespace: str, name: str) -> PodDetail | None:
        return self.current().pod_detail(namespace, name)

    def workload_detail(self, ref: WorkloadRef) -> WorkloadDetail | None:
        return self.current().workload_detail(ref)
