"""Metrics sources: each turns a time window into a UsageSnapshot (Prometheus, demo, file, DCGM scrape)."""
