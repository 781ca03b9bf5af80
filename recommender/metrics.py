"""The recommender's own Prometheus metrics (on a registry passed in) and the /metrics server."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

LOOP_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


class RecommenderMetrics:
    """Loop duration, workloads processed, errors by kind, last success, leadership."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.loop_duration = Histogram(
            "podsizer_recommender_loop_duration_seconds",
            "Duration of one recommender run (collect, size, store).",
            ["outcome"],
            buckets=LOOP_BUCKETS,
            registry=registry,
        )
        self.workloads_processed = Counter(
            "podsizer_recommender_workloads_processed_total",
            "Workloads handled by the recommender, by outcome (recommended, skipped, failed).",
            ["outcome"],
            registry=registry,
        )
        self.errors = Counter(
            "podsizer_recommender_errors_total",
            "Recommender errors by kind (source, sizing, store).",
            ["kind"],
            registry=registry,
        )
        self.last_success = Gauge(
            "podsizer_recommender_last_success_timestamp_seconds",
            "Unix time of the end of the last run that stored its recommendations.",
            registry=registry,
        )
        self.recommendations = Gauge(
            "podsizer_recommender_recommendations",
            "Recommendations written by the last successful run.",
            registry=registry,
        )
        self.leader = Gauge(
            "podsizer_recommender_leader",
            "1 while this replica holds the leader Lease (always 1 without leader election).",
            registry=registry,
        )
        for kind in ("source", "sizing", "store"):
            self.errors.labels(kind=kind)
        for outcome in ("recommended", "skipped", "failed"):
            self.workloads_processed.labels(outcome=outcome)
        for outcome in ("ok", "source_error", "store_error", "sizing_error", "not_leader"):
            self.loop_duration.labels(outcome=outcome)


@dataclass
class MetricsServer:
    """A running /metrics HTTP server; stop() shuts it down and frees the port."""

    server: Any
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(registry: CollectorRegistry, port: int, host: str = "0.0.0.0") -> MetricsServer:
    """Serve `registry` on http://host:port/metrics (port 0: any free port; see .port)."""
    server, thread = start_http_server(port, addr=host, registry=registry)
    return MetricsServer(server, thread)
