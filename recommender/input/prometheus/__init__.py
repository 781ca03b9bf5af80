"""Prometheus metrics source: cAdvisor, kube-state-metrics and dcgm-exporter series via the HTTP API."""

from recommender.input.prometheus.client import PromClient, step_for
from recommender.input.prometheus.source import PrometheusSource

__all__ = ["PromClient", "PrometheusSource", "step_for"]
