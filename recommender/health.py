"""Liveness and readiness of the recommender loop: a heartbeat the loop updates, read by /livez and /readyz.

Live: the loop has started or finished a cycle (or polled the Lease as a standby) recently enough: each
beat sets a deadline (the wait before the next cycle + one interval for that cycle + a grace), so a loop
stuck in a source call or a store write fails the probe once it is past it (about 2 x interval + grace
after the last cycle started). Ready: after the first successful cycle, or when the store already held
recommendations at start (restored state), or as a standby replica; not ready while the metrics source
has been failing for longer than `source_failure_seconds`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Probe:
    """A probe's answer: ok and why (the response body)."""

    ok: bool
    reason: str


class Heartbeat:
    """Thread-safe: the loop writes, the probe server reads. `clock` is monotonic seconds."""

    def __init__(
        self,
        interval_seconds: float,
        grace_seconds: float = 300.0,
        source_failure_seconds: float = 1800.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval_seconds
        self.grace = grace_seconds
        self.source_failure = source_failure_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._deadline = clock() + interval_seconds + grace_seconds  # the first cycle's budget
        self._state = "starting"
        self._ready_reason: str | None = None
        self._source_failing_since: float | None = None

    def _beat(self, wait: float, state: str) -> None:
        self._deadline = self._clock() + max(0.0, wait) + self.interval + self.grace
        self._state = state

    def cycle_started(self) -> None:
        """A cycle begins: it has one interval plus the grace to finish."""
        with self._lock:
            self._beat(0.0, "in a cycle")

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
            late = self._clock() - self._deadline
            if late > 0:
                return Probe(
                    False, f"loop stuck: no cycle started or finished for {late:.0f}s past its deadline"
                )
            return Probe(True, f"ok ({self._state})")

    def ready(self) -> Probe:
        with self._lock:
            since = self._source_failing_since
            if since is not None and self._clock() - since > self.source_failure:
                return Probe(False, f"metrics source failing for {self._clock() - since:.0f}s")
            if self._ready_reason is None:
                return Probe(False, "no successful cycle yet")
            return Probe(True, f"ok ({self._ready_reason})")
