"""The progress wait of the e2e tests: it waits while the key changes, fails after a stall or the ceiling,
and records each wait (on a fake clock: no real sleeps)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.support.progress import (
    CEILING_S,
    DEFAULT_STALL_S,
    RECORDS,
    WaitStalled,
    pod_states,
    status_progress,
    wait_progressing,
)


class FakeTime:
    """A clock that moves only when the wait sleeps."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def fake() -> Iterator[FakeTime]:
    before = len(RECORDS)
    yield FakeTime()
    del RECORDS[before:]


def _wait(
    fake: FakeTime,
    look: Callable[[], Any],
    done: Callable[[Any], Any],
    stall_s: float = DEFAULT_STALL_S,
    ceiling_s: float = CEILING_S,
    context: Callable[[], object] | None = None,
) -> object:
    return wait_progressing(
        look,
        done,
        lambda seen: seen,
        "the thing",
        stall_s=stall_s,
        ceiling_s=ceiling_s,
        interval_s=1.0,
        context=context,
        now=fake.now,
        sleep=fake.sleep,
    )


def test_a_wait_that_keeps_progressing_outlasts_many_stall_windows(fake: FakeTime) -> None:
    """One step every 50 s, 15 steps: 750 s in all, far beyond the 60 s stall limit, is waited for."""
    result = _wait(fake, lambda: int(fake.t // 50), lambda step: step if step >= 15 else None)
    assert result == 15
    assert fake.t == pytest.approx(750.0)
    record = RECORDS[-1]
    assert (record.outcome, record.steps, record.what) == ("done", 14, "the thing")
    assert record.longest_stall_s == pytest.approx(50.0)


def test_a_stall_fails_after_the_stall_limit_naming_the_last_progress(fake: FakeTime) -> None:
    with pytest.raises(WaitStalled) as raised:
        _wait(fake, lambda: min(int(fake.t // 10), 3), lambda _: None, 60.0, context=lambda: {"skips": 7})
    message = str(raised.value)
    assert message.startswith("waiting for the thing: no progress for 60 s (stall limit 60 s)")
    assert "90 s in all, 3 step(s), last progress 60 s ago: 3 (last error: None); {'skips': 7}" in message
    assert fake.t == pytest.approx(90.0)
    assert RECORDS[-1].outcome == "stalled"


def test_a_livelock_ends_at_the_ceiling(fake: FakeTime) -> None:
    with pytest.raises(WaitStalled, match="still not done after the ceiling of 300 s"):
        _wait(fake, lambda: fake.t, lambda _: None, ceiling_s=300.0)
    assert fake.t == pytest.approx(300.0)
    assert RECORDS[-1].outcome == "ceiling"


def test_api_errors_are_no_progress_and_are_reported(fake: FakeTime) -> None:
    def look() -> int:
        raise client.ApiException(status=503, reason="Service Unavailable")

    with pytest.raises(WaitStalled, match=r"nothing observed \(last error: HTTP 503: Service Unavailable\)"):
        _wait(fake, look, lambda _: None, stall_s=5.0)


def test_done_is_checked_before_any_wait(fake: FakeTime) -> None:
    assert _wait(fake, lambda: "ready", lambda seen: seen) == "ready"
    assert fake.t == 0.0
    assert RECORDS[-1].took_s == 0.0


def _pod(name: str, uid: str, **status: object) -> dict[str, object]:
    return {"metadata": {"name": name, "uid": uid}, "spec": {"containers": []}, "status": status}


def test_pod_states_change_with_each_step_of_a_pod_and_not_with_order() -> None:
    created = _pod("a", "1")
    running = _pod("a", "1", phase="Running", conditions=[{"type": "Ready", "status": "True"}])
    assert pod_states([created]) != pod_states([running])
    assert pod_states([running, _pod("b", "2")]) == pod_states([_pod("b", "2"), running])


def test_status_progress_ignores_condition_timestamps_only() -> None:
    def rollout(step: int, at: str) -> dict[str, object]:
        condition = {"type": "Progressing", "status": "True", "lastUpdateTime": at}
        return {
            "metadata": {"generation": 2},
            "status": {"currentStepIndex": step, "conditions": [condition]},
        }

    assert status_progress(rollout(1, "12:00")) == status_progress(rollout(1, "12:01"))
    assert status_progress(rollout(1, "12:00")) != status_progress(rollout(2, "12:00"))
