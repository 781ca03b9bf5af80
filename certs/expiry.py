"""Serving-certificate expiry: notAfter of a PEM file; a warning (log line, Event) when near."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography import x509

log = logging.getLogger("podsizer.certs")

WARN_BEFORE = dt.timedelta(days=30)
WARN_EVERY = dt.timedelta(days=1)
EVENT_REASON = "CertificateExpiringSoon"


def not_after(cert_pem: bytes) -> dt.datetime:
    """The notAfter (UTC) of the first certificate in a PEM chain; ValueError when there is none."""
    return x509.load_pem_x509_certificate(cert_pem).not_valid_after_utc


def file_not_after(cert_file: Path) -> dt.datetime:
    """notAfter of the certificate in `cert_file` (OSError, ValueError when unreadable)."""
    return not_after(cert_file.read_bytes())


def seconds_left(expires: dt.datetime, now: dt.datetime) -> float:
    """notAfter - now in seconds; negative once expired."""
    return (expires - now).total_seconds()


class EventSink(Protocol):
    """Where an expiry warning goes besides the log (a Kubernetes Event on the webhook's pod)."""

    def warn(self, reason: str, message: str) -> None: ...


@dataclass(frozen=True)
class PodRef:
    """The pod an Event is about, from the downward API (POD_NAMESPACE, POD_NAME)."""

    namespace: str
    name: str


class ExpiryWarner:
    """Warns when the served certificate expires within `warn_before`: at the first check, then at most once
    per `every`; each warning is a log line and, with a sink, an Event. A sink failure is only logged."""

    def __init__(
        self,
        expires: Callable[[], dt.datetime | None],
        clock: Callable[[], dt.datetime],
        sink: EventSink | None = None,
        warn_before: dt.timedelta = WARN_BEFORE,
        every: dt.timedelta = WARN_EVERY,
    ) -> None:
        self._expires = expires
        self._clock = clock
        self._sink = sink
        self.warn_before = warn_before
        self.every = every
        self._last: dt.datetime | None = None
        self.warnings = 0

    def check(self) -> bool:
        """Warn if due; True when a warning was given now."""
        expires, now = self._expires(), self._clock()
        if expires is None or expires - now > self.warn_before:
            return False
        if self._last is not None and now - self._last < self.every:
            return False
        self._last = now
        self.warnings += 1
        left = seconds_left(expires, now)
        if left <= 0:
            message = (
                f"the webhook's serving certificate expired at {expires.isoformat()}; mutation has stopped"
            )
        else:
            message = (
                f"the webhook's serving certificate expires at {expires.isoformat()} "
                f"(in {left / 86400:.1f} days); renew it or the webhook stops mutating pods"
            )
        log.warning("tls: %s", message)
        if self._sink is not None:
            try:
                self._sink.warn(EVENT_REASON, message)
            except Exception as exc:  # an Event is a courtesy: never let it break the webhook
                log.warning("tls: cannot post the %s event: %s", EVENT_REASON, exc)
        return True

    def run(self, stop: threading.Event, poll_seconds: float = 3600.0) -> None:
        """check() now and then every `poll_seconds` until `stop` is set (a daemon thread's target)."""
        while True:
            try:
                self.check()
            except Exception:
                log.exception("tls: the certificate expiry check failed")
            if stop.wait(poll_seconds):
                return
