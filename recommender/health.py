"""Liveness and readiness of the recommender loop: a heartbeat the loop updates, read by /livez and /readyz.

Live: the loop is making progress. A cycle may go `grace_seconds` without progress (a step of the source
reported, a Prometheus answer received, the sizing or the store's writes begun); each progress report gives
it the grace again, so a long cold start stays live while a stall (a request that outlasts the grace, a
store write that hangs) fails the probe with a reason naming the overrun. Between cycles the next one must
start within its wait plus the grace. Ready: after the first successful cycle, or when the store already
held recommendations at start (restored state), or as a standby replica; not ready while the metrics source
has been failing for longer than `source_failure_seconds`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from podsizer.settings import env_name


@dataclass(frozen=True)
class Probe:
    """A probe's answer: ok and why (the response body)."""

    ok: bool
    reason: str


class Heartbeat:
    """Thread-safe: the loop writes, the probe server reads. `clock` is monotonic seconds."""

    def __init__(
        self,
        grace_seconds: float = 300.0,
        source_failure_seconds: float = 1800.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.grace = grace_seconds
        self.source_failure = source_failure_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._deadline = clock() + grace_seconds  # the first cycle starts within the grace
        self._state = "starting"
        self._cycle_started: float | None = None
        self._progress_at = 0.0
        self._last_progress = ""
        self._ready_reason: str | None = None
        self._source_failing_since: float | None = None

    def _beat(self, wait: float, state: str) -> None:
        self._deadline = self._clock() + max(0.0, wait) + self.grace
        self._state = state
        self._cycle_started = None

    def cycle_started(self) -> None:
        """A cycle begins: it has the grace until its first progress, and again after each."""
        with self._lock:
            self._beat(0.0, "in a cycle")
            self._cycle_started = self._progress_at = self._clock()
            self._last_progress = "the cycle started"

    def progressed(self, what: str) -> None:
        """The cycle in progress did something (`what`, for the probe's reason): the grace starts again."""
        with self._lock:
            if self._cycle_started is not None:
                self._progress_at = self._clock()
                self._deadline = self._progress_at + self.grace
                self._last_progress = what

    def progress(self, done: int, total: int, what: str) -> None:
        """A Progress callback (recommender.model.Progress) for the cycle's source."""
        self.progressed(f"[{done}/{total}] {what}")

    def cycle_finished(self, ok: bool, source_failed: bool, next_in: float) -> None:
        """A cycle ended (ok: it stored its recommendations); the next one starts in `next_in` seconds."""
        with self._lock:
            now = self._clock()
            if ok:
                self._ready_reason = "a cycle succeeded"
            if source_failed:
                if self._source_failing_since is None:
                    self._source_failing_since = now
            else:
                self._source_failing_since = None
            self._beat(next_in, "waiting for the next cycle")

    def standby(self, next_in: float) -> None:
        """Not the leader: alive and ready, polling the Lease again in `next_in` seconds."""
        with self._lock:
            if self._ready_reason is None:
                self._ready_reason = "standby (not the leader)"
            self._beat(next_in, "standby")

    def restored(self) -> None:
        """The store already holds recommendations: they stay in force, so serve as ready."""
        with self._lock:
            if self._ready_reason is None:
                self._ready_reason = "recommendations restored from the store"

    def live(self) -> Probe:
        with self._lock:
            now = self._clock()
            late = now - self._deadline
            if late <= 0:
                return Probe(True, f"ok ({self._state})")
            if self._cycle_started is None:
                return Probe(False, f"loop stuck: no cycle started for {late:.0f}s past its deadline")
            return Probe(False, self._overrun(now, self._cycle_started))

    def _overrun(self, now: float, started: float) -> str:
        return (
            f"cycle overran: no progress for {now - self._progress_at:.0f}s, more than "
            f"{env_name('liveness_grace_seconds')} ({self.grace:g}s) allows; the cycle started "
            f"{now - started:.0f}s ago, last progress: {self._last_progress[:200]}"
        )

    def ready(self) -> Probe:
        with self._lock:
            since = self._source_failing_since
            if since is not None and self._clock() - since > self.source_failure:
                return Probe(False, f"metrics source failing for {self._clock() - since:.0f}s")
            if self._ready_reason is None:
                return Probe(False, "no successful cycle yet")
            return Probe(True, f"ok ({self._ready_reason})")
