"""Recommender probes: /livez fails when the loop is stuck or a cycle overruns, /readyz follows cycles and
source; else 404."""

from __future__ import annotations

import threading
from datetime import datetime

import httpx
import pytest
from prometheus_client import CollectorRegistry

from recommender.health import Heartbeat
from recommender.metrics import serve_metrics
from recommender.model import Progress, UsageSnapshot
from tests.unit.recommender.test_runner import FakeRecommend, FakeSource, FakeStore, make

INTERVAL, GRACE = 600.0, 60.0


class Ticks:
    """An injected monotonic clock."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _beat(clock: Ticks, source_failure: float = 1800.0) -> Heartbeat:
    return Heartbeat(GRACE, source_failure, clock)


def test_live_until_the_first_cycle_is_overdue() -> None:
    clock = Ticks()
    beat = _beat(clock)
    clock.t += GRACE
    assert beat.live().ok
    clock.t += 1
    assert not beat.live().ok and "stuck" in beat.live().reason


def test_a_cycle_without_progress_for_longer_than_the_grace_is_an_overrun_named_as_such() -> None:
    clock = Ticks()
    beat = _beat(clock)
    beat.cycle_started()
    clock.t += 5
    beat.progress(1, 4, "found 3 namespaces")
    clock.t += GRACE
    assert beat.live().ok
    clock.t += 2
    probe = beat.live()
    assert not probe.ok
    assert probe.reason.startswith(
        "cycle overran: no progress for 62s, more than PODSIZER_LIVENESS_GRACE_SECONDS"
    )
    assert "started 67s ago" in probe.reason and "last progress: [1/4] found 3 namespaces" in probe.reason


def test_a_long_cycle_stays_live_while_it_reports_progress() -> None:
    """A cold start of a big cluster: 40 steps of most of the grace each, far longer than an interval."""
    clock = Ticks()
    beat = _beat(clock)
    beat.cycle_started()
    for step in range(40):
        clock.t += GRACE - 1
        assert beat.live().ok, (step, beat.live().reason)
        beat.progress(step + 1, 40, f"cold start chunk {step + 1}")
    assert clock.t - 1000.0 > 3 * INTERVAL
    beat.progressed("an answer to /api/v1/query_range")
    clock.t += GRACE + 1
    assert "last progress: an answer to /api/v1/query_range" in beat.live().reason


def test_progress_outside_a_cycle_does_not_extend_the_wait() -> None:
    clock = Ticks()
    beat = _beat(clock)
    beat.cycle_finished(ok=True, source_failed=False, next_in=10)
    clock.t += 10 + GRACE - 1
    beat.progressed("a late answer of a cycle already ended")
    clock.t += 2
    assert not beat.live().ok and "stuck" in beat.live().reason


def test_waiting_for_the_next_cycle_is_alive_until_the_wait_and_grace() -> None:
    clock = Ticks()
    beat = _beat(clock)
    beat.cycle_started()
    clock.t += 10
    beat.cycle_finished(ok=True, source_failed=False, next_in=INTERVAL - 10)
    clock.t += INTERVAL - 10 + GRACE - 1
    assert beat.live().ok
    clock.t += 2
    assert not beat.live().ok and beat.live().reason.startswith("loop stuck: no cycle started for 1s")


def test_a_long_backoff_is_not_a_stuck_loop() -> None:
    clock = Ticks()
    beat = _beat(clock)
    beat.cycle_finished(ok=False, source_failed=True, next_in=5 * INTERVAL)
    clock.t += 5 * INTERVAL + GRACE
    assert beat.live().ok


def test_not_ready_before_the_first_successful_cycle_then_ready() -> None:
    clock = Ticks()
    beat = _beat(clock)
    assert not beat.ready().ok and beat.ready().reason == "no successful cycle yet"
    beat.cycle_finished(ok=False, source_failed=False, next_in=10)
    assert not beat.ready().ok
    beat.cycle_finished(ok=True, source_failed=False, next_in=INTERVAL)
    assert beat.ready().ok


def test_restored_recommendations_or_standby_are_ready() -> None:
    restored, standby = _beat(Ticks()), _beat(Ticks())
    restored.restored()
    standby.standby(1.0)
    assert restored.ready().ok and "restored" in restored.ready().reason
    assert standby.ready().ok and "standby" in standby.ready().reason


def test_source_failing_longer_than_the_threshold_is_not_ready_until_it_recovers() -> None:
    clock = Ticks()
    beat = _beat(clock, source_failure=300)
    beat.cycle_finished(ok=True, source_failed=False, next_in=60)
    beat.cycle_finished(ok=False, source_failed=True, next_in=60)
    clock.t += 300
    assert beat.ready().ok
    beat.cycle_finished(ok=False, source_failed=True, next_in=60)  # the failure keeps its first time
    clock.t += 1
    assert not beat.ready().ok and "failing for 301s" in beat.ready().reason
    beat.cycle_finished(ok=True, source_failed=False, next_in=60)
    assert beat.ready().ok


def test_the_runner_loop_drives_the_heartbeat() -> None:
    clock = Ticks()
    beat = _beat(clock, source_failure=1)
    source = FakeSource(fail=2)
    runner, _ = make(source, FakeStore(), FakeRecommend(["web"]), heartbeat=beat, monotonic=clock)
    stop = threading.Event()
    seen: list[tuple[bool, bool]] = []

    def wait(seconds: float) -> bool:
        clock.t += seconds
        seen.append((beat.live().ok, beat.ready().ok))
        if len(seen) == 3:
            stop.set()
        return stop.is_set()

    runner.run_forever(stop, wait)
    # two source failures (not ready: never succeeded, then failing past 1 s), then a success
    assert seen == [(True, False), (True, False), (True, True)]


class SlowSteps(FakeSource):
    """A source whose collect takes `steps` steps of most of the grace each, reporting each (or not)."""

    def __init__(self, clock: Ticks, steps: int, report: bool) -> None:
        super().__init__()
        self.clock, self.steps, self.report = clock, steps, report
        self.live: list[bool] = []
        self.beat: Heartbeat | None = None

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        assert self.beat is not None
        for step in range(self.steps):
            self.clock.t += GRACE * 0.75
            self.live.append(self.beat.live().ok)
            if self.report and progress is not None:
                progress(step + 1, self.steps, f"chunk {step + 1}")
        return super().collect(start, end, progress)


@pytest.mark.parametrize("report", [True, False])
def test_the_runner_passes_the_sources_progress_to_the_heartbeat(report: bool) -> None:
    clock = Ticks()
    beat = _beat(clock)
    source = SlowSteps(clock, steps=6, report=report)
    source.beat = beat
    shown: list[str] = []
    runner, _ = make(
        source, FakeStore(), FakeRecommend(["web"]), heartbeat=beat, monotonic=clock,
        progress=lambda done, total, what: shown.append(what),
    )  # fmt: skip
    beat.cycle_started()
    runner.run_once()
    assert source.live == ([True] * 6 if report else [True, False, False, False, False, False])
    assert shown == ([f"chunk {k}" for k in range(1, 7)] if report else [])


def _get(port: int, path: str) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5)


def test_server_answers_probes_from_the_heartbeat_and_404_elsewhere() -> None:
    clock = Ticks()
    beat = _beat(clock)
    server = serve_metrics(CollectorRegistry(), 0, "127.0.0.1", beat)
    try:
        assert _get(server.port, "/livez").status_code == 200
        assert _get(server.port, "/healthz").status_code == 200
        ready = _get(server.port, "/readyz")
        assert ready.status_code == 503 and "no successful cycle" in ready.text
        assert _get(server.port, "/nope").status_code == 404
        assert _get(server.port, "/").status_code == 404
        assert _get(server.port, "/metrics").status_code == 200
        beat.cycle_finished(ok=True, source_failed=False, next_in=INTERVAL)
        assert _get(server.port, "/readyz").status_code == 200
        clock.t += 10 * INTERVAL
        stuck = _get(server.port, "/livez")
        assert stuck.status_code == 503 and "stuck" in stuck.text
    finally:
        server.stop()
