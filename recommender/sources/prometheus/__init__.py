"""Prometheus metrics source: cAdvisor, kube-state-metrics and dcgm-exporter series via the HTTP API."""

from recommender.sources.prometheus.client import PromClient, step_for
from recommender.sources.prometheus.source import PrometheusSource

__all__ = ["PromClient", "PrometheusSource", "step_for"]
