"""Prometheus metrics of the webhook, registered on a registry the caller owns."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from podsizer.snapshot import SnapshotProvider

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


class WebhookMetrics:
    """Reviews by outcome/reason, review latency, store age and size, rejected bodies by HTTP code, large
    reviews waiting to be decided."""

    def __init__(
        self, registry: CollectorRegistry, snapshots: SnapshotProvider, clock: Callable[[], datetime]
    ) -> None:
        self.reviews = Counter(
            "podsizer_webhook_reviews",
            "AdmissionReviews answered, by outcome (applied, dry-run, skipped, error) and reason.",
            ["outcome", "reason"],
            registry=registry,
        )
        self.latency = Histogram(
            "podsizer_webhook_review_duration_seconds",
            "Time to answer one /mutate request, body read to reply.",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.rejected = Counter(
            "podsizer_webhook_rejected_requests",
            "Requests refused before admission (400 not an AdmissionReview, 401 no client certificate, "
            "403 a client certificate not allowed, 408 too slow, 413 too large).",
            ["code"],
            registry=registry,
        )
        self.plausibility = Counter(
            "podsizer_webhook_plausibility",
            "Values the plausibility guard refused (invalid) or clamped (ceiling, max-change), by resource.",
            ["resource", "rule"],
            registry=registry,
        )
        self.large_waiting = Gauge(
            "podsizer_webhook_large_reviews_waiting",
            "Large reviews (over PODSIZER_OFFLOAD_BODY_BYTES) read and waiting for a slot to be decided.",
            registry=registry,
        )
        self._review_counts: dict[tuple[str, str], Counter] = {}
        age = Gauge(
            "podsizer_webhook_store_age_seconds",
            "Seconds since the Recommendation store was last confirmed (NaN before the first load).",
            registry=registry,
        )
        size = Gauge(
            "podsizer_webhook_store_recommendations",
            "Recommendations in the current snapshot.",
            registry=registry,
        )

        def store_age() -> float:
            at = snapshots.refreshed_at()
            return math.nan if at is None else max(0.0, (clock() - at).total_seconds())

        def store_size() -> float:
            snap = snapshots.current()
            return 0.0 if snap is None else float(len(snap))

        age.set_function(store_age)
        size.set_function(store_size)

    def reviewed(self, outcome: str, reason: str) -> None:
        """Count one review; the labelled child is looked up once per (outcome, reason), not per request."""
        child = self._review_counts.get((outcome, reason))
        if child is None:
            child = self._review_counts.setdefault((outcome, reason), self.reviews.labels(outcome, reason))
        child.inc()

    def guarded(self, resource: str, rule: str) -> None:
        """Count one value the pod plan's plausibility guard refused or clamped (Admitter.on_guard)."""
        self.plausibility.labels(resource, rule).inc()


def register_certificate_expiry(
    registry: CollectorRegistry, not_after: Callable[[], datetime | None], clock: Callable[[], datetime]
) -> Gauge:
    """`podsizer_webhook_certificate_expiry_seconds`: notAfter - now of the certificate served now (it
    follows reloads: `not_after` is read at each scrape); NaN when the certificate could not be parsed."""
    gauge = Gauge(
        "podsizer_webhook_certificate_expiry_seconds",
        "Seconds until the serving certificate the webhook presents now expires (negative once expired).",
        registry=registry,
    )

    def left() -> float:
        at = not_after()
        return math.nan if at is None else (at - clock()).total_seconds()

    gauge.set_function(left)
    return gauge
