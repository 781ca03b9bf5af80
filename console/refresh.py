"""ConsoleData rebuilt in the background: requests read the last good build; a failed rebuild keeps it and
shows the error in the header (Meta.error) until a rebuild succeeds."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime

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


class RefreshingConsoleData:
    """The latest good build of `build(now)`; `refresh()` rebuilds (the first build happens at creation,
    so a source that fails at start raises there). Reads never wait for a rebuild: the state (build, last
    error) is one tuple swapped by one assignment, and `current()` takes it once, so a request that reads
    `current()` sees one build throughout (create_console_app(data.current))."""

    def __init__(self, build: BuildFn, clock: Callable[[], datetime]) -> None:
        self._build = build
        self._clock = clock
        self._state: tuple[StaticConsoleData, str | None] = (build(clock()), None)

    def refresh(self) -> bool:
        """One rebuild; False (and the error kept for the header) when it failed."""
        last = self._state[0]
        try:
            data = self._build(self._clock())
        except Exception as exc:  # any failure of source or store keeps the last data
            log.warning("console refresh failed, keeping the data of %s: %s", last.info.generated_at, exc)
            self._state = (last, f"{type(exc).__name__}: {exc}")
            return False
        self._state = (data, None)
        return True

    def refresh_forever(self, stop: threading.Event, interval: float) -> None:
        """Rebuild every `interval` seconds until `stop` is set (run in a daemon thread)."""
        while not stop.wait(interval):
            self.refresh()

    def start(self, interval: float) -> threading.Event:
        """Start the background rebuilds; set the returned event to stop them."""
        stop = threading.Event()
        threading.Thread(
            target=self.refresh_forever, args=(stop, interval), name="console-refresh", daemon=True
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
