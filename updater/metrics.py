"""The updater's Prometheus metrics: every action (resized, evicted, skipped, with reason and dry-run)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge


class UpdaterMetrics:
    """Registered on the caller's registry (nothing global)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.actions = Counter(
            "podsizer_updater_actions",
            "Pods resized, evicted or skipped (dry_run: recorded, not done), by reason",
            ("action", "reason", "dry_run"),
            registry=registry,
        )
        self.passes = Counter("podsizer_updater_passes", "Passes over the running pods", registry=registry)
        self.pods = Gauge(
            "podsizer_updater_pods", "Running pods whose update mode lets the updater act", registry=registry
        )
        self.leader = Gauge(
            "podsizer_updater_leader", "1 while this replica is the leader", registry=registry
        )

    def action(self, action: str, reason: str, dry_run: bool) -> None:
        self.actions.labels(action, reason, "true" if dry_run else "false").inc()
