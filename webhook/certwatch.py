"""The served certificate's expiry: the gauge; a warning (log line + Event) at start and daily when near."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime

from prometheus_client import CollectorRegistry

from certs.events import in_cluster_sink
from certs.expiry import EventSink, ExpiryWarner
from certs.reload import ReloadingTLS
from webhook.metrics import register_certificate_expiry

CHECK_EVERY_SECONDS = 3600.0


def watch_certificate(
    tls: ReloadingTLS,
    registry: CollectorRegistry,
    stop: threading.Event,
    clock: Callable[[], datetime],
    sink: EventSink | None = None,
    in_cluster: bool = True,
) -> ExpiryWarner:
    """Register the expiry gauge on `registry` and start the warner's daemon thread (until `stop`).

    `sink` defaults to a Warning Event on the webhook's pod when running in a cluster (`in_cluster`)."""
    register_certificate_expiry(registry, lambda: tls.not_after, clock)
    if sink is None and in_cluster:
        sink = in_cluster_sink(clock)
    warner = ExpiryWarner(lambda: tls.not_after, clock, sink)
    threading.Thread(
        target=warner.run, args=(stop, CHECK_EVERY_SECONDS), name="cert-expiry", daemon=True
    ).start()
    return warner
