"""Prometheus metrics of the webhook, registered on a registry the caller owns."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from webhook.store import SnapshotProvider

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


class WebhookMetrics:
    """Reviews by outcome/reason, review latency, store age and size, rejected bodies by HTTP code."""

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
            "Requests refused before admission (400 not an AdmissionReview, 413 too large).",
            ["code"],
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
