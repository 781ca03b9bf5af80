"""Lease leader election with a fake CoordinationV1Api that checks resourceVersions like the apiserver."""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes.client import V1Lease, V1LeaseSpec, V1ObjectMeta
from kubernetes.client.exceptions import ApiException

from podsizer.kube.times import format_micro
from podsizer.leader import AlwaysLeader, LeaderElector

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class FakeLeases:
    """Stores the last written body; reads return V1Lease objects the way the real client does."""

    def __init__(self) -> None:
        self.body: dict[str, Any] | None = None
        self.rv = 0
        self.writes: list[dict[str, Any]] = []
        self.fail_reads = 0

    def read_namespaced_lease(self, name: str, namespace: str) -> V1Lease:
        if self.fail_reads:
            self.fail_reads -= 1
            raise ApiException(status=503, reason="Service Unavailable")
        if self.body is None:
            raise ApiException(status=404, reason="Not Found")
        spec = self.body["spec"]

        def t(key: str) -> datetime | None:
            v = spec.get(key)
            return datetime.fromisoformat(v.replace("Z", "+00:00")) if v else None

        return V1Lease(
            metadata=V1ObjectMeta(name=name, namespace=namespace, resource_version=str(self.rv)),
            spec=V1LeaseSpec(
                holder_identity=spec.get("holderIdentity"),
                lease_duration_seconds=spec.get("leaseDurationSeconds"),
                acquire_time=t("acquireTime"),
                renew_time=t("renewTime"),
                lease_transitions=spec.get("leaseTransitions"),
            ),
        )

    def create_namespaced_lease(self, namespace: str, body: dict[str, Any]) -> Any:
        if self.body is not None:
            raise ApiException(status=409, reason="AlreadyExists")
        return self._store(body)

    def replace_namespaced_lease(self, name: str, namespace: str, body: dict[str, Any]) -> Any:
        if body["metadata"].get("resourceVersion") != str(self.rv):
            raise ApiException(status=409, reason="Conflict")
        return self._store(body)

    def _store(self, body: dict[str, Any]) -> Any:
        self.rv += 1
        self.body = copy.deepcopy(body)
        self.writes.append(copy.deepcopy(body))
        return body


def elector(api: FakeLeases, identity: str, clock: Clock) -> LeaderElector:
    return LeaderElector(
        api,
        "podsizer-recommender",
        "podsizer",
        identity,
        lease_duration_seconds=15,
        renew_deadline_seconds=10,
        retry_period_seconds=2,
        clock=clock,
    )


def test_acquires_an_absent_lease_with_microsecond_rfc3339_times() -> None:
    api, clock = FakeLeases(), Clock()
    clock.now = T0.replace(microsecond=0)
    a = elector(api, "pod-a", clock)
    assert a.try_acquire_or_renew() is True
    assert a.is_leader()
    assert api.body is not None
    spec = api.body["spec"]
    assert spec["holderIdentity"] == "pod-a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert MICRO.match(spec["renewTime"]) and MICRO.match(spec["acquireTime"])
    assert spec["renewTime"] == "2026-12-01T12:00:00.000000Z"


def test_renew_moves_renew_time_and_keeps_acquire_time() -> None:
    api, clock = FakeLeases(), Clock()
    a = elector(api, "pod-a", clock)
    a.try_acquire_or_renew()
    clock.advance(2.5)
    assert a.try_acquire_or_renew() is True
    assert api.body is not None
    assert api.body["spec"]["acquireTime"] == format_micro(T0)
    assert api.body["spec"]["renewTime"] == format_micro(T0 + timedelta(seconds=2.5))
    assert api.body["spec"]["leaseTransitions"] == 0
    assert len(api.writes) == 2


def test_a_held_lease_is_not_taken_while_the_holder_renews() -> None:
    api, clock = FakeLeases(), Clock()
    a, b = elector(api, "pod-a", clock), elector(api, "pod-b", clock)
    assert a.try_acquire_or_renew()
    for _ in range(20):  # 40 s, far beyond the lease duration, but a keeps renewing
        assert b.try_acquire_or_renew() is False
        assert not b.is_leader()
        clock.advance(2)
        assert a.try_acquire_or_renew()
    assert api.body is not None and api.body["spec"]["holderIdentity"] == "pod-a"


def test_takes_over_when_the_record_stops_changing_for_the_lease_duration() -> None:
    api, clock = FakeLeases(), Clock()
    a, b = elector(api, "pod-a", clock), elector(api, "pod-b", clock)
    a.try_acquire_or_renew()
    assert b.try_acquire_or_renew() is False  # b first observes the record now
    clock.advance(14)
    assert b.try_acquire_or_renew() is False
    assert not a.is_leader()  # a has not renewed for 14 s > renew deadline 10 s
    clock.advance(1)
    assert b.try_acquire_or_renew() is True
    assert api.body is not None
    assert api.body["spec"]["holderIdentity"] == "pod-b"
    assert api.body["spec"]["leaseTransitions"] == 1
    assert api.body["spec"]["acquireTime"] == format_micro(clock.now)
    assert a.try_acquire_or_renew() is False


def test_losing_the_create_race_is_not_leadership() -> None:
    api, clock = FakeLeases(), Clock()
    a = elector(api, "pod-a", clock)
    real_read = api.read_namespaced_lease

    def read_then_someone_creates(name: str, namespace: str) -> V1Lease:
        lease = None
        try:
            lease = real_read(name, namespace)
        finally:
            if lease is None:
                api._store({"metadata": {}, "spec": {"holderIdentity": "pod-z", "leaseDurationSeconds": 15}})
        return lease

    api.read_namespaced_lease = read_then_someone_creates  # type: ignore[method-assign]
    assert a.try_acquire_or_renew() is False
    assert not a.is_leader()


def test_leader_steps_down_after_the_renew_deadline_when_the_api_fails() -> None:
    api, clock = FakeLeases(), Clock()
    changes: list[bool] = []
    a = LeaderElector(api, "l", "ns", "pod-a", clock=clock, on_change=changes.append)
    assert a.try_acquire_or_renew()
    api.fail_reads = 100
    clock.advance(5)
    assert a.try_acquire_or_renew() is False
    assert a.is_leader()  # still within the 10 s renew deadline
    clock.advance(6)
    a.try_acquire_or_renew()
    assert not a.is_leader()
    assert changes == [True, False]


def test_release_lets_a_successor_take_over_at_once() -> None:
    api, clock = FakeLeases(), Clock()
    a, b = elector(api, "pod-a", clock), elector(api, "pod-b", clock)
    a.try_acquire_or_renew()
    assert b.try_acquire_or_renew() is False
    a.release()
    assert not a.is_leader()
    assert api.body is not None and api.body["spec"]["holderIdentity"] == ""
    assert b.try_acquire_or_renew() is True


def test_standalone_is_always_leader() -> None:
    assert AlwaysLeader().is_leader()
