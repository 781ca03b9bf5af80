"""Certificate expiry: the gauge follows the served certificate; warnings at start, then daily, as Events."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from certs.events import PodEventSink, event_body, pod_from_env
from certs.expiry import EVENT_REASON, ExpiryWarner, PodRef, file_not_after
from certs.generate import generate_bundle, write_bundle
from certs.reload import ReloadingTLS
from webhook.certwatch import watch_certificate
from webhook.metrics import register_certificate_expiry

T0 = dt.datetime(2027, 1, 1, tzinfo=dt.UTC)


class Clock:
    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now


class Sink:
    def __init__(self, fail: bool = False) -> None:
        self.events: list[tuple[str, str]] = []
        self.fail = fail

    def warn(self, reason: str, message: str) -> None:
        if self.fail:
            raise RuntimeError("apiserver says no")
        self.events.append((reason, message))


def _gauge(registry: CollectorRegistry) -> float | None:
    return registry.get_sample_value("podsizer_webhook_certificate_expiry_seconds")


def test_gauge_is_not_after_minus_now_of_the_served_certificate_and_follows_reloads(tmp_path: Path) -> None:
    write_bundle(generate_bundle("s", "n", days=10), tmp_path)
    tls = ReloadingTLS(tmp_path / "tls.crt", tmp_path / "tls.key", check_interval=0.0)
    first = file_not_after(tmp_path / "tls.crt")
    assert tls.not_after == first
    registry = CollectorRegistry()
    clock = Clock(first - dt.timedelta(days=2))
    register_certificate_expiry(registry, lambda: tls.not_after, clock)
    assert _gauge(registry) == pytest.approx(2 * 86400)
    write_bundle(generate_bundle("s", "n", days=100), tmp_path)
    assert tls.reload_if_changed()
    assert tls.not_after is not None and tls.not_after > first + dt.timedelta(days=80)
    assert _gauge(registry) == pytest.approx((tls.not_after - clock.now).total_seconds())


def test_gauge_is_nan_when_the_expiry_is_unknown() -> None:
    registry = CollectorRegistry()
    register_certificate_expiry(registry, lambda: None, Clock(T0))
    value = _gauge(registry)
    assert value is not None and value != value


def test_warning_at_start_then_at_most_daily_under_thirty_days(caplog: pytest.LogCaptureFixture) -> None:
    clock, sink = Clock(T0), Sink()
    warner = ExpiryWarner(lambda: T0 + dt.timedelta(days=20), clock, sink)
    assert warner.check()
    assert "expires at 2027-01-21" in caplog.text
    clock.now += dt.timedelta(hours=23)
    assert not warner.check()
    clock.now += dt.timedelta(hours=1)
    assert warner.check()
    assert [r for r, _ in sink.events] == [EVENT_REASON, EVENT_REASON]


def test_no_warning_with_more_than_thirty_days_left() -> None:
    sink = Sink()
    warner = ExpiryWarner(lambda: T0 + dt.timedelta(days=31), Clock(T0), sink)
    assert not warner.check() and sink.events == []


def test_expired_certificate_says_mutation_stopped() -> None:
    sink = Sink()
    ExpiryWarner(lambda: T0 - dt.timedelta(days=1), Clock(T0), sink).check()
    assert "expired" in sink.events[0][1] and "stopped" in sink.events[0][1]


def test_event_failure_is_only_logged(caplog: pytest.LogCaptureFixture) -> None:
    warner = ExpiryWarner(lambda: T0 + dt.timedelta(days=1), Clock(T0), Sink(fail=True))
    assert warner.check()
    assert "cannot post the CertificateExpiringSoon event" in caplog.text


def test_event_is_a_warning_on_the_webhooks_own_pod() -> None:
    posted: list[tuple[str, dict[str, object]]] = []
    pod = pod_from_env({"POD_NAMESPACE": "podsizer", "POD_NAME": "podsizer-webhook-7c9-abcde"})
    assert pod == PodRef("podsizer", "podsizer-webhook-7c9-abcde")
    sink = PodEventSink(pod, lambda ns, body: posted.append((ns, body)), Clock(T0))
    sink.warn(EVENT_REASON, "soon")
    ((namespace, body),) = posted
    assert namespace == "podsizer"
    assert body["type"] == "Warning" and body["reason"] == EVENT_REASON and body["message"] == "soon"
    assert body["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "podsizer",
        "name": "podsizer-webhook-7c9-abcde",
    }
    assert event_body(pod, "r", "m" * 5000, T0)["message"] == "m" * 1024


def test_no_pod_outside_a_cluster() -> None:
    assert pod_from_env({}) is None
    assert pod_from_env({"POD_NAMESPACE": "x"}) is None


def test_watch_certificate_registers_the_gauge_and_warns_at_start(tmp_path: Path) -> None:
    write_bundle(generate_bundle("s", "n", days=5), tmp_path)
    tls = ReloadingTLS(tmp_path / "tls.crt", tmp_path / "tls.key")
    registry, stop, sink = CollectorRegistry(), threading.Event(), Sink()
    try:
        warner = watch_certificate(tls, registry, stop, lambda: dt.datetime.now(dt.UTC), sink)
        for _ in range(200):
            if sink.events:
                break
            stop.wait(0.01)
    finally:
        stop.set()
    assert warner.warnings == 1 and len(sink.events) == 1
    value = _gauge(registry)
    assert value is not None and 4 * 86400 < value <= 5 * 86400
