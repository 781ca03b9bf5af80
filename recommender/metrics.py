"""The recommender's own Prometheus metrics (on a registry passed in) and the /metrics + probes server."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from recommender.health import Probe

LOOP_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


class RecommenderMetrics:
    """Loop duration, workloads processed, errors by kind, last success, leadership, rejected samples."""

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
        self.rejected_samples = Counter(
            "podsizer_recommender_rejected_samples_total",
            "Samples from the metrics source left out, by reason (non-finite: NaN or +-Inf).",
            ["reason"],
            registry=registry,
        )
        self.rejected_samples.labels(reason="non-finite")
        self.usage_cycles = Counter(
            "podsizer_recommender_usage_cycles_total",
            "Incremental usage-model cycles by kind (cold: read the whole window; delta: only new samples; "
            "restored: a delta after restoring the checkpoint) and why a cold one was needed.",
            ["kind", "reason"],
            registry=registry,
        )
        self.usage_state_bytes = Gauge(
            "podsizer_recommender_usage_state_bytes",
            "Bytes of the usage model's arrays in memory (histograms, daily peaks, hourly demand).",
            registry=registry,
        )
        self.usage_states = Gauge(
            "podsizer_recommender_usage_states",
            "Usage-model states (one per workload, container and pod template).",
            registry=registry,
        )
        self.checkpoint_bytes = Gauge(
            "podsizer_recommender_checkpoint_bytes",
            "Bytes of the last checkpoint written.",
            registry=registry,
        )
        self.checkpoint_errors = Counter(
            "podsizer_recommender_checkpoint_errors_total",
            "Checkpoint failures: read (the store could not be read), discarded (corrupt, incompatible or "
            "stale: rebuilt), write (an object or the file could not be written).",
            ["kind"],
            registry=registry,
        )
        for kind in ("read", "discarded", "write"):
            self.checkpoint_errors.labels(kind=kind)
        for kind in ("source", "sizing", "store"):
            self.errors.labels(kind=kind)
        for outcome in ("recommended", "skipped", "failed"):
            self.workloads_processed.labels(outcome=outcome)
        for outcome in ("ok", "source_error", "store_error", "sizing_error", "not_leader"):
            self.loop_duration.labels(outcome=outcome)

    def count_rejected(self, reason: str, count: int) -> None:
        """A SampleRejections sink: count samples the source left out."""
        self.rejected_samples.labels(reason=reason).inc(count)


class ProbeSource(Protocol):
    """What /livez and /readyz read (recommender.health.Heartbeat)."""

    def live(self) -> Probe: ...

    def ready(self) -> Probe: ...


class _Handler(BaseHTTPRequestHandler):
    """GET /metrics, /livez (/healthz), /readyz; anything else 404. No access log."""

    registry: CollectorRegistry
    health: ProbeSource | None

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._send(200, generate_latest(self.registry), CONTENT_TYPE_LATEST)
        elif path in ("/livez", "/healthz", "/readyz"):
            probe = self._probe(path)
            self._send(200 if probe.ok else 503, probe.reason.encode() + b"\n", "text/plain; charset=utf-8")
        else:
            self._send(404, b"not found\n", "text/plain; charset=utf-8")

    def _probe(self, path: str) -> Probe:
        if self.health is None:
            return Probe(True, "ok (no loop)")
        return self.health.ready() if path == "/readyz" else self.health.live()

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


@dataclass
class MetricsServer:
    """A running /metrics + probes HTTP server; stop() shuts it down and frees the port."""

    server: ThreadingHTTPServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(
    registry: CollectorRegistry, port: int, host: str = "0.0.0.0", health: ProbeSource | None = None
) -> MetricsServer:
    """Serve `registry` on http://host:port/metrics and the probes /livez, /readyz (/healthz = /livez)
    from `health`; other paths 404 (port 0: any free port; see .port)."""
    handler = type("Handler", (_Handler,), {"registry": registry, "health": health})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)
    thread.start()
    return MetricsServer(server, thread)
