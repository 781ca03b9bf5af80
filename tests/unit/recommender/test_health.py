"""Recommender probes: /livez fails when the loop is stuck, /readyz follows cycles and source; else 404."""

from __future__ import annotations

import threading

import httpx
from prometheus_client import CollectorRegistry

from recommender.health import Heartbeat
from recommender.metrics import serve_metrics
from tests.unit.recommender.test_runner import FakeRecommend, FakeSource, FakeStore, make

INTERVAL, GRACE = 600.0, 60.0


class Ticks:
    """An injected monotonic clock."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _beat(clock: Ticks, source_failure: float = 1800.0) -> Heartbeat:
    return Heartbeat(INTERVAL, GRACE, source_failure, clock)


def test_live_until_the_first_cycle_is_overdue() -> None:
    clock = Ticks()
    beat = _beat(clock)
    clock.t += INTERVAL + GRACE
    assert beat.live().ok
    clock.t += 1
    assert not beat.live().ok and "stuck" in beat.live().reason


def test_a_cycle_stuck_in_the_source_fails_liveness_after_its_budget() -> None:
    clock = Ticks()
    beat = _beat(clock)
    beat.cycle_started()
    clock.t += INTERVAL + GRACE - 1
    assert beat.live().ok
    clock.t += 2
    assert not beat.live().ok


def test_waiting_for_the_next_cycle_is_alive_until_two_intervals_and_grace() -> None:
    clock = Ticks()
    beat = _beat(clock)
    beat.cycle_started()
    clock.t += 10
    beat.cycle_finished(ok=True, source_failed=False, next_in=INTERVAL - 10)
    clock.t += 2 * INTERVAL - 10 + GRACE - 1  # 2 x interval + grace after the cycle started, less 1 s
    assert beat.live().ok
    clock.t += 2
    assert not beat.live().ok


def test_a_long_backoff_is_not_a_stuck_loop() -> None:
    clock = Ticks()
    beat = _beat(clock)
    beat.cycle_finished(ok=False, source_failed=True, next_in=5 * INTERVAL)
    clock.t += 5 * INTERVAL + INTERVAL
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
