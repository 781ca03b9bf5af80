"""The podsizer updater in the test process, against the real apiserver: the shipped watches, decision and
API calls (updater.cli's wiring without its CLI), passes in a background thread, metrics on a registry."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from kubernetes import client
from prometheus_client import CollectorRegistry

from podsizer.cluster import MetadataCache, OwnerCache, start_cluster_watches
from podsizer.kube.watch import Informer
from podsizer.snapshot import SnapshotHolder
from tests.controlplane.kube import wait_for
from updater.budget import Budgets
from updater.cli import start_pdb_watch, start_pod_watch, watches_synced
from updater.kube import KubeApi
from updater.loop import Updater, UpdaterConfig
from updater.metrics import UpdaterMetrics
from updater.pdb import PdbCache
from updater.pods import PodCache
from updater.record import Recorder

# Budgets that let a test's pods be acted on at once (no minimum age, a second of cooldown).
FAST_BUDGETS = Budgets(min_pod_age_seconds=0, workload_cooldown_seconds=1, evictions_per_minute=60)


def _utcnow() -> datetime:
    return datetime.now(UTC)


class UpdaterRun:
    """Watches started, then a pass every `interval_s` until stop(); `registry` holds its metrics."""

    def __init__(self, api_client: client.ApiClient, config: UpdaterConfig, interval_s: float = 0.5) -> None:
        self.api_client = api_client
        self.config = config
        self.interval_s = interval_s
        self.registry = CollectorRegistry()
        self.stop_event = threading.Event()
        self.informers: list[Informer] = []
        self.passes = 0
        self.errors: list[str] = []
        self._thread: threading.Thread | None = None
        holder, owners, cache, pods = SnapshotHolder(), OwnerCache(), MetadataCache(), PodCache()
        self._watch = (holder, owners, cache, pods)
        self.pdbs = PdbCache()
        api = KubeApi(api_client, instance="e2e")
        recorder = Recorder(api, UpdaterMetrics(self.registry), config.dry_run)
        self.updater = Updater(config, pods.pods, owners, cache, holder, api, recorder, _utcnow, self.pdbs)

    def _allowed(self, subresource: str, verb: str) -> bool:
        """SelfSubjectAccessReview: RBAC objects just created take a moment to reach the authorizer."""
        attrs = client.V1ResourceAttributes(group="", resource="pods", subresource=subresource, verb=verb)
        review = client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attrs)
        )
        answer = client.AuthorizationV1Api(self.api_client).create_self_subject_access_review(review)
        return bool(answer.status and answer.status.allowed)

    def start(self, timeout_s: float = 60.0) -> UpdaterRun:
        wait_for(
            lambda: self._allowed("resize", "patch") and self._allowed("eviction", "create"),
            "the updater's RBAC to reach the authorizer",
            timeout_s,
        )
        holder, owners, cache, pods = self._watch
        self.informers = start_cluster_watches(
            self.api_client, holder, owners, cache, _utcnow, self.stop_event
        )
        self.informers.append(start_pod_watch(self.api_client, pods, self.stop_event))
        self.informers.append(start_pdb_watch(self.api_client, self.pdbs, self.stop_event))
        wait_for(
            lambda: watches_synced(self.informers),
            "the updater's watches to sync",
            timeout_s,
        )
        self._thread = threading.Thread(target=self._loop, name="e2e-updater", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self.stop_event.is_set():
            try:
                self.updater.run_once()
            except Exception as exc:  # reported by the test through `errors`
                self.errors.append(repr(exc))
            self.passes += 1
            self.stop_event.wait(self.interval_s)

    def stop(self) -> None:
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def summary(self) -> dict[tuple[str, str, str], float]:
        """Every (action, reason, dry_run) counted so far: for failure messages."""
        return {
            (s.labels["action"], s.labels["reason"], s.labels["dry_run"]): s.value
            for family in self.registry.collect()
            for s in family.samples
            if s.name == "podsizer_updater_actions_total"
        }

    def count(self, action: str, reason: str | None = None, dry_run: bool = False) -> float:
        """podsizer_updater_actions_total for `action` (and `reason`; any when None)."""
        total = 0.0
        for family in self.registry.collect():
            for s in family.samples:
                if s.name != "podsizer_updater_actions_total":
                    continue
                labels = s.labels
                wanted = labels["action"] == action and labels["dry_run"] == ("true" if dry_run else "false")
                if wanted and (reason is None or labels["reason"] == reason):
                    total += s.value
        return total
