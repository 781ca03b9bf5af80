"""A pass over the watched pods: acts through the API, or in dry-run only records; budgets across a pass."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from prometheus_client import CollectorRegistry

from podsizer.api import Recommendation, WorkloadRef
from podsizer.limitrange import ClusterPolicy
from podsizer.modes import Meta, Metadata
from podsizer.owners import ControllerRef
from podsizer.podspec import CurrentResources
from podsizer.policy import PlanPolicy
from podsizer.snapshot import RecommendationSnapshot, SnapshotHolder
from tests.unit.updater.builders import NOW, WEB, FakeApi, pod, rec, template_of
from updater.decide import UpdaterPolicy
from updater.loop import Updater, UpdaterConfig
from updater.metrics import UpdaterMetrics
from updater.record import Recorder


@dataclass
class FakeCluster:
    """Owners and metadata as the watched caches would answer."""

    annotations: Mapping[str, str] = field(default_factory=dict)
    replicas_of: int | None = 3
    template_of: tuple[CurrentResources, ...] | None = None

    def get(self, namespace: str, kind: str, name: str) -> ControllerRef | None:
        return ControllerRef("apps/v1", "Deployment", "web") if kind == "ReplicaSet" else None

    def namespace(self, name: str) -> Metadata | None:
        return None

    def workload(self, ref: WorkloadRef) -> Metadata | None:
        return Meta({}, self.annotations) if ref == WEB else None

    def replicas(self, ref: WorkloadRef) -> int | None:
        return self.replicas_of

    def cluster_policy(self, namespace: str) -> ClusterPolicy | None:
        return None

    def largest_allocatable(self) -> Mapping[str, float]:
        return {}

    def template(self, ref: WorkloadRef) -> tuple[CurrentResources, ...] | None:
        return self.template_of if ref == WEB else None


def _updater(
    pods: Sequence[dict[str, Any]],
    mode: str,
    *,
    dry_run: bool = False,
    api: FakeApi | None = None,
    recommendation: Recommendation | None = None,
    limit_policy: str = "keep-ratio",
) -> tuple[Updater, FakeApi, CollectorRegistry]:
    api = api or FakeApi()
    registry = CollectorRegistry()
    holder = SnapshotHolder()
    holder.swap(RecommendationSnapshot.of([recommendation or rec()], NOW))
    plan = PlanPolicy(default_mode="auto", limit_policy=limit_policy)  # type: ignore[arg-type]
    config = UpdaterConfig(UpdaterPolicy(plan), dry_run=dry_run)
    cluster = FakeCluster(
        {"podsizer.io/update-mode": mode}, template_of=template_of(pods[0]) if pods else None
    )
    recorder = Recorder(api, UpdaterMetrics(registry), dry_run)
    return Updater(config, lambda: pods, cluster, cluster, holder, api, recorder, lambda: NOW), api, registry


def _count(registry: CollectorRegistry, action: str, reason: str, dry_run: str) -> float:
    labels = {"action": action, "reason": reason, "dry_run": dry_run}
    return registry.get_sample_value("podsizer_updater_actions_total", labels) or 0.0


def test_in_place_mode_patches_the_resize_subresource_and_records_it() -> None:
    updater, api, registry = _updater([pod()], "in-place-or-recreate")
    updater.run_once()
    assert [(ns, name) for ns, name, _ in api.resized] == [("shop", "web-abc-1")]
    assert api.evicted == []
    assert _count(registry, "resized", "in-place", "false") == 1
    reasons = [(s.kind, reason) for s, _, reason, _ in api.events]
    assert reasons == [("Pod", "PodsizerResized"), ("Deployment", "PodsizerResized")]


def test_dry_run_records_events_and_metrics_without_acting() -> None:
    updater, api, registry = _updater([pod("a"), pod("b")], "recreate", dry_run=True)
    updater.run_once()
    assert (api.resized, api.evicted) == ([], [])
    assert _count(registry, "evicted", "recreate", "true") == 1
    assert _count(registry, "skipped", "workload-cooldown", "true") == 1
    would = [m for s, _, r, m in api.events if r == "PodsizerWouldEvict" and s.kind == "Pod"]
    assert len(would) == 1 and would[0].startswith("dry-run: would evict (recreate)")


def test_recreate_evicts_one_pod_of_a_workload_per_pass() -> None:
    updater, api, _ = _updater([pod("a"), pod("b"), pod("c")], "recreate")
    updater.run_once()
    assert api.evicted == [("shop", "a")]


def test_a_pdb_refusal_is_recorded_as_a_skip() -> None:
    updater, api, registry = _updater(
        [pod("a"), pod("b")], "recreate", api=FakeApi(evict_outcome="pdb-blocked")
    )
    updater.run_once()
    assert len(api.evicted) == 1
    assert _count(registry, "skipped", "evict-pdb-blocked", "false") == 1


def test_a_refused_resize_is_recreated_on_the_next_pass() -> None:
    api = FakeApi(resize_outcome="rejected")
    updater, _, registry = _updater([pod("a"), pod("b")], "in-place-or-recreate", api=api)
    updater.run_once()
    assert len(api.resized) == 2 and api.evicted == []
    updater.run_once()
    assert api.evicted == [("shop", "a")]
    assert _count(registry, "evicted", "resize-rejected", "false") == 1


def test_the_same_skip_is_recorded_once_not_every_pass() -> None:
    updater, _api, registry = _updater([pod("a")], "recreate")  # replicas 3 but only a: evicted first
    updater.run_once()
    updater.run_once()
    updater.run_once()
    assert _count(registry, "skipped", "workload-cooldown", "false") == 1


def test_admission_only_workloads_are_neither_touched_nor_recorded() -> None:
    updater, api, _registry = _updater([pod()], "initial")
    assert updater.run_once() == []
    assert (api.resized, api.evicted, api.events) == ([], [], [])


def test_usage_is_asked_only_for_a_memory_limit_decrease() -> None:
    limited = pod(limits={"memory": "2Gi"})
    api = FakeApi(usage_of={"app": Decimal(2**28)})
    updater, _, _ = _updater([limited], "in-place-or-recreate", api=api)
    updater.run_once()
    assert (api.usage_calls, len(api.resized)) == (1, 1)
    api2 = FakeApi()
    updater2, _, _ = _updater([pod()], "in-place-or-recreate", api=api2)
    updater2.run_once()
    assert api2.usage_calls == 0


def test_pods_without_a_recommendation_or_not_running_are_not_candidates() -> None:
    other = pod("x", owner=("StatefulSet", "db"))
    updater, _, _ = _updater([other, pod("p", phase="Pending")], "recreate")
    assert updater.candidates() == []
