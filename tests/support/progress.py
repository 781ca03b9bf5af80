"""Waits that follow progress: a process of several steps (pods replaced one by one, a rollout, a controller
reconciling) may take as long as it keeps moving, and fails only after a stall.

`wait_progressing(look, done, progress, what)` observes with `look()` every `interval_s`; it returns as soon
as `done(observed)` gives a result (anything but None or False); each change of `progress(observed)` is a
step. It raises WaitStalled when no step came for `stall_s` seconds, or when the whole wait passed
`ceiling_s` (far above any plausible run, so a livelock still ends), naming what was awaited, the last
progress seen and how long ago, and `context()` if given (what else explains a stall). An ApiException
from `look` counts as "no observation" (reported if it stalls). A single-step wait (one object appears)
keeps a budget: tests/controlplane/kube.py `wait_for`.

    pods = wait_progressing(
        lambda: pods_owned_by(api, ns, "StatefulSet", "db"),
        lambda pods: pods if len(pods) == 3 and all(map(is_running, pods)) else None,
        pod_states,
        f"3 Running pods of {ns}/db",
    )

Every wait's wall time, steps and longest stall go to RECORDS (tests/e2e/conftest.py reports them per
test and lists the slowest at the end of the session) and to the `tests.progress` logger.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from kubernetes import client

S = TypeVar("S")
T = TypeVar("T")

# One step of a process (a controller's reaction, a pod scheduled and Running, an updater pass) takes a
# second or two on a quiet machine; a minute without any change means it is stuck even on a loaded one.
DEFAULT_STALL_S = 60.0
# Far above any plausible wait: the slowest measured took 6 s at load 10 on 2 cores (docs/testing.md); the
# worst legitimate one, a StatefulSet's three evictions each held 2 min by its PDB, about 7 min.
CEILING_S = 900.0
# pytest-timeout of an e2e test: the backstop for a hang outside any wait (session fixtures count too).
TEST_TIMEOUT_S = 1200.0

Outcome = Literal["done", "stalled", "ceiling", "timed out"]
log = logging.getLogger("tests.progress")


@dataclass(frozen=True)
class WaitRecord:
    """One finished wait: its test, what it awaited, wall time, steps seen, the longest stall and its limit
    ("stall 60 s" for a progress wait, "budget 60 s" for tests/controlplane/kube.py `wait_for`)."""

    test: str
    what: str
    took_s: float
    steps: int
    longest_stall_s: float
    outcome: Outcome
    limit: str

    def line(self) -> str:
        return (
            f"{self.took_s:7.1f} s  {self.steps:3d} steps  longest stall {self.longest_stall_s:5.1f} s  "
            f"({self.limit})  {self.outcome:9s} {self.what}"
        )


def _current_test() -> str:
    return os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]


def _keep(entry: WaitRecord) -> WaitRecord:
    RECORDS.append(entry)
    log.info("wait %s", entry.line())
    return entry


def record_budget_wait(what: str, took_s: float, budget_s: float, outcome: Outcome) -> WaitRecord:
    """Records a single-step wait with a wall-clock budget (tests/controlplane/kube.py `wait_for`)."""
    return _keep(WaitRecord(_current_test(), what, took_s, 0, took_s, outcome, f"budget {budget_s:.0f} s"))


RECORDS: list[WaitRecord] = []


class WaitStalled(TimeoutError):
    """A progress wait that stalled, or passed its ceiling."""


@dataclass
class _Clock:
    """The progress of one wait: when it started, its steps, the last key seen and when it changed."""

    what: str
    stall_s: float
    ceiling_s: float
    now: Callable[[], float]
    context: Callable[[], object] | None = None
    started: float = 0.0
    changed: float = 0.0
    steps: int = 0
    longest_stall_s: float = 0.0
    key: object = None
    seen: bool = False
    error: str | None = None

    def __post_init__(self) -> None:
        self.started = self.changed = self.now()

    def observe(self, key: object) -> None:
        if self.seen and key == self.key:
            return
        at = self.now()
        if self.seen:
            self.steps += 1
        self.longest_stall_s = max(self.longest_stall_s, at - self.changed)
        self.key, self.seen, self.changed = key, True, at

    def failure(self) -> tuple[Outcome, str] | None:
        """("stalled" or "ceiling", the message) once the wait must end, else None."""
        at = self.now()
        since, elapsed = at - self.changed, at - self.started
        if since >= self.stall_s:
            head = f"no progress for {since:.0f} s (stall limit {self.stall_s:.0f} s)"
            return "stalled", self._message(head, elapsed)
        if elapsed >= self.ceiling_s:
            head = f"still not done after the ceiling of {self.ceiling_s:.0f} s, although progressing"
            return "ceiling", self._message(head, elapsed)
        return None

    def _message(self, head: str, elapsed: float) -> str:
        last = _shorten(self.key) if self.seen else "nothing observed"
        context = f"; {_shorten(self.context())}" if self.context is not None else ""
        return (
            f"waiting for {self.what}: {head}; {elapsed:.0f} s in all, {self.steps} step(s), "
            f"last progress {self.now() - self.changed:.0f} s ago: {last} (last error: {self.error}){context}"
        )

    def record(self, outcome: Outcome) -> WaitRecord:
        took = self.now() - self.started
        stalls = max(self.longest_stall_s, self.now() - self.changed)
        limit = f"stall {self.stall_s:.0f} s"
        return _keep(WaitRecord(_current_test(), self.what, took, self.steps, stalls, outcome, limit))


def wait_progressing(
    look: Callable[[], S],
    done: Callable[[S], T | None],
    progress: Callable[[S], object],
    what: str,
    *,
    stall_s: float = DEFAULT_STALL_S,
    ceiling_s: float = CEILING_S,
    interval_s: float = 0.5,
    context: Callable[[], object] | None = None,
    now: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """done(look()) once it is neither None nor False; WaitStalled after `stall_s` without a change of
    progress(look()), or after `ceiling_s` in all (module docstring)."""
    clock = _Clock(what, stall_s, ceiling_s, now, context)
    while True:
        try:
            observed = look()
        except client.ApiException as e:
            clock.error = f"HTTP {e.status}: {e.reason}"
        else:
            result = done(observed)
            if result is not None and result is not False:
                clock.record("done")
                return result
            clock.observe(progress(observed))
        ended = clock.failure()
        if ended is not None:
            clock.record(ended[0])
            raise WaitStalled(ended[1])
        sleep(interval_s)


def _shorten(key: object, limit: int = 1500) -> str:
    text = repr(key)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _ready(obj: Mapping[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pod_states(pods: Iterable[Mapping[str, Any]]) -> tuple[tuple[str, ...], ...]:
    """Each pod's name, uid, node, phase, readiness and deletion: a pod created, bound, started, made
    Ready, resized (its resources) or marked for deletion changes it."""
    states = []
    for pod in pods:
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        resources = [c.get("resources") for c in spec.get("containers") or []]
        states.append(
            (
                str(meta.get("name")),
                str(meta.get("uid")),
                str(spec.get("nodeName") or ""),
                str(status.get("phase") or ""),
                "Ready" if _ready(pod) else "",
                "deleting" if meta.get("deletionTimestamp") else "",
                json.dumps(resources, sort_keys=True),
            )
        )
    return tuple(sorted(states))


_TIMES = frozenset({"lastUpdateTime", "lastTransitionTime", "lastHeartbeatTime", "lastProbeTime"})


def status_progress(obj: Mapping[str, Any]) -> str:
    """An object's metadata.generation and status without its conditions' timestamps: a controller that
    reconciles it (observedGeneration, replica counts, phase, a step, a condition's status) changes it."""
    status = dict(obj.get("status") or {})
    status["conditions"] = [
        {k: v for k, v in c.items() if k not in _TIMES} for c in status.get("conditions") or []
    ]
    generation = (obj.get("metadata") or {}).get("generation")
    return json.dumps({"generation": generation, "status": status}, sort_keys=True, default=str)


def slowest(records: Iterable[WaitRecord], count: int = 10) -> list[WaitRecord]:
    """The `count` longest waits, longest first."""
    return sorted(records, key=lambda r: r.took_s, reverse=True)[:count]
