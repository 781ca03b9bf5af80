"""Leader election on a coordination.k8s.io/v1 Lease, so one replica of a role acts (recommender, updater).

Same rules as client-go's leaderelection: a candidate creates the Lease when it is absent, the
holder renews renewTime every retry period, and another candidate takes over only when the Lease
record has not changed for leaseDurationSeconds as measured by its own clock (so clock skew between
nodes does not matter) or when holderIdentity is empty (released). Every write carries the
resourceVersion just read; losing a write race (409) means someone else won. A leader that has not
renewed within renew_deadline stops calling itself leader. Standalone: AlwaysLeader.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from podsizer.apierrors import status_code
from podsizer.kube.times import format_micro, parse_time

log = logging.getLogger("podsizer.leader")

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


def _parse_time(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        return parse_time(value)
    raise ValueError(f"unexpected time value {value!r}")


class LeaseApi(Protocol):
    """The part of kubernetes.client.CoordinationV1Api leader election uses."""

    def read_namespaced_lease(self, name: str, namespace: str) -> Any: ...

    def create_namespaced_lease(self, namespace: str, body: Any) -> Any: ...

    def replace_namespaced_lease(self, name: str, namespace: str, body: Any) -> Any: ...


class Leadership(Protocol):
    """What the loop asks: am I the leader right now?"""

    def is_leader(self) -> bool: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


class AlwaysLeader:
    """No cluster, no election: this process is the only recommender."""

    def is_leader(self) -> bool:
        return True

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None


@dataclass(frozen=True)
class LeaseRecord:
    """The Lease fields election reads (from the client's V1Lease object or a plain dict)."""

    holder: str
    duration_seconds: int
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int
    resource_version: str | None


def _get(obj: Any, attr: str, key: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, attr, None)


def read_record(lease: Any) -> LeaseRecord:
    meta = _get(lease, "metadata", "metadata")
    spec = _get(lease, "spec", "spec")
    return LeaseRecord(
        holder=_get(spec, "holder_identity", "holderIdentity") or "",
        duration_seconds=int(_get(spec, "lease_duration_seconds", "leaseDurationSeconds") or 0),
        acquire_time=_parse_time(_get(spec, "acquire_time", "acquireTime")),
        renew_time=_parse_time(_get(spec, "renew_time", "renewTime")),
        transitions=int(_get(spec, "lease_transitions", "leaseTransitions") or 0),
        resource_version=_get(meta, "resource_version", "resourceVersion"),
    )


class LeaderElector:
    """One candidate for the Lease `namespace/name`; try_acquire_or_renew() is one election step."""

    def __init__(
        self,
        api: LeaseApi,
        name: str,
        namespace: str,
        identity: str,
        *,
        lease_duration_seconds: int = 15,
        renew_deadline_seconds: float = 10.0,
        retry_period_seconds: float = 2.0,
        clock: Clock = utcnow,
        wait: Callable[[float], bool] | None = None,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        if not identity:
            raise ValueError("leader election needs a non-empty identity")
        if renew_deadline_seconds >= lease_duration_seconds:
            raise ValueError(
                f"renew deadline ({renew_deadline_seconds}s) must be shorter than the lease duration"
                f" ({lease_duration_seconds}s)"
            )
        self.api = api
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration_seconds
        self.renew_deadline = renew_deadline_seconds
        self.retry_period = retry_period_seconds
        self.clock = clock
        self._stop = threading.Event()
        self._wait = wait or self._stop.wait
        self._on_change = on_change
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._observed: LeaseRecord | None = None
        self._observed_at: datetime | None = None
        self._last_renew: datetime | None = None
        self._leader = False

    # one step -------------------------------------------------------------------------------------

    def _body(self, acquire: datetime, renew: datetime, transitions: int, rv: str | None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if rv is not None:
            meta["resourceVersion"] = rv
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": meta,
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self.lease_duration,
                "acquireTime": format_micro(acquire),
                "renewTime": format_micro(renew),
                "leaseTransitions": transitions,
            },
        }

    def _observe(self, record: LeaseRecord, now: datetime) -> None:
        key = (record.holder, record.renew_time, record.transitions, record.duration_seconds)
        old = self._observed
        if old is None or key != (old.holder, old.renew_time, old.transitions, old.duration_seconds):
            self._observed_at = now
        self._observed = record

    def try_acquire_or_renew(self) -> bool:
        """Read the Lease and create, renew or take it over when allowed; True when this candidate
        holds it afterwards. API errors count as "not renewed" (logged), never raise."""
        now = self.clock()
        try:
            held = self._step(now)
        except Exception as exc:  # an unreachable apiserver must not kill the elector
            if status_code(exc) is None and not isinstance(exc, OSError):
                log.exception("lease %s/%s: unexpected error", self.namespace, self.name)
            else:
                log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
            held = False
        with self._lock:
            if held:
                self._last_renew = now
            was = self._leader
            self._leader = held or (was and self._within_deadline(now))
            changed = was != self._leader
        if changed:
            log.info(
                "lease %s/%s: %s",
                self.namespace,
                self.name,
                "became leader" if self._leader else "lost leadership",
            )
            if self._on_change is not None:
                self._on_change(self._leader)
        return held

    def _step(self, now: datetime) -> bool:
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace)
        except Exception as exc:
            if status_code(exc) != 404:
                raise
            try:
                self.api.create_namespaced_lease(self.namespace, self._body(now, now, 0, None))
            except Exception as create_exc:
                if status_code(create_exc) == 409:
                    return False
                raise
            self._observed, self._observed_at = None, now
            return True
        record = read_record(lease)
        self._observe(record, now)
        if record.holder == self.identity:
            acquire = record.acquire_time or now
            transitions = record.transitions
        else:
            duration = record.duration_seconds or self.lease_duration
            assert self._observed_at is not None
            expired = self._observed_at + timedelta(seconds=duration) <= now
            if record.holder and not expired:
                return False
            acquire = now
            transitions = record.transitions + 1
        try:
            self.api.replace_namespaced_lease(
                self.name, self.namespace, self._body(acquire, now, transitions, record.resource_version)
            )
        except Exception as exc:
            if status_code(exc) == 409:
                return False
            raise
        return True

    def _within_deadline(self, now: datetime) -> bool:
        return self._last_renew is not None and now - self._last_renew < timedelta(
            seconds=self.renew_deadline
        )

    def is_leader(self) -> bool:
        """True while this candidate won and renewed within the renew deadline."""
        with self._lock:
            return self._leader and self._within_deadline(self.clock())

    def release(self) -> None:
        """Give the Lease up (empty holder, 1 s duration) so a successor need not wait for expiry."""
        with self._lock:
            was = self._leader
            self._leader = False
        if not was:
            return
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace)
            record = read_record(lease)
            if record.holder != self.identity:
                return
            now = self.clock()
            body = self._body(record.acquire_time or now, now, record.transitions, record.resource_version)
            body["spec"]["holderIdentity"] = ""
            body["spec"]["leaseDurationSeconds"] = 1
            self.api.replace_namespaced_lease(self.name, self.namespace, body)
        except Exception as exc:
            log.warning("lease %s/%s: release failed: %s", self.namespace, self.name, exc)

    # background loop ------------------------------------------------------------------------------

    def run(self) -> None:
        """Try/renew every retry period until stop()."""
        while not self._stop.is_set():
            self.try_acquire_or_renew()
            if self._wait(self.retry_period):
                break

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="podsizer-leader", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.release()
