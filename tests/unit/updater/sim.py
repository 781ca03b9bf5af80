"""A simulated workload for the updater over many passes: a resize writes its body into the pod, an eviction
replaces the pod by a new one from the template, admitted by the real webhook decision (webhook.admission)
and patched as the apiserver would store it. One updater lives over every call of `passes` (its damping
memory with it); `recommend` swaps the Recommendation. Used by the convergence and damping tests and
bench/bench_hostile.py."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
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
from tests.unit.updater.builders import NOW, WEB, stamp
from tests.unit.webhook import builders as wb
from updater.budget import Budgets
from updater.decide import UpdaterPolicy
from updater.kube import EventType, Outcome, Subject
from updater.loop import Updater, UpdaterConfig
from updater.metrics import UpdaterMetrics
from updater.record import Recorder

PASS_INTERVAL = timedelta(minutes=15)  # past every budget between two passes
REPLACED_AFTER = timedelta(seconds=2)  # the controller's replacement is created after the eviction
EAGER = Budgets(min_pod_age_seconds=0, workload_cooldown_seconds=0, evictions_per_minute=1000)

Resources = Mapping[str, Mapping[str, str]]  # {"requests": {...}, "limits": {...}}


@dataclass
class SimCluster:
    """Deployment shop/web from `template` (one container `main`), its running pods and what was done."""

    template: Resources
    rec: Recommendation
    update_mode: str = "recreate"
    policy: PlanPolicy = field(default_factory=lambda: PlanPolicy(default_mode="auto"))
    now: datetime = NOW
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    actions: list[tuple[str, str]] = field(default_factory=list)  # (resized | evicted, pod name)
    webhook: bool = True  # False: admission does not size new pods (the webhook down, failing open)
    settling_seconds: float = UpdaterPolicy().settling_seconds
    dry_run: bool = False
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)  # the updater's metrics
    timeline: list[Acted] = field(default_factory=list)  # what the updater did, when, following what
    decisions: list[tuple[datetime, str, str]] = field(default_factory=list)  # (pass time, pod, reason)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (object, reason, message)
    _names: itertools.count[int] = field(default_factory=itertools.count)
    _updater: Updater | None = None

    def __post_init__(self) -> None:
        self.holder = SnapshotHolder()
        self.recommend(self.rec)

    def recommend(self, rec: Recommendation) -> None:
        """A new Recommendation for the workload: what the updater and admission read from now on."""
        self.rec = rec
        self.admitter = wb.admitter(rec, default_mode=self.policy.default_mode, policy=self.policy)
        self.holder.swap(RecommendationSnapshot.of([rec], self.now))

    # ---- the workload's pods
    def template_pod(self) -> dict[str, Any]:
        t = copy.deepcopy(dict(self.template))
        return wb.replicaset_pod(containers=[wb.container("main", t.get("requests"), t.get("limits"))])

    def admit(self, later: timedelta = timedelta(0)) -> dict[str, Any]:
        """A new pod from the template, through the webhook (unless it is down), running `later` from now."""
        created = self.template_pod()
        if self.webhook:
            reply, _ = self.admitter.review(wb.review(created))
            created = wb.apply_reply(created, reply)
        return self.run(created, later)

    def run(self, pod: dict[str, Any], later: timedelta = timedelta(0)) -> dict[str, Any]:
        """The pod as the apiserver and kubelet have it: named, running, ready, old enough."""
        name = f"web-7d4b9c8f5-{next(self._names)}"
        at = stamp(self.now + later)
        pod["metadata"].update(name=name, uid=f"uid-{name}", creationTimestamp=at)
        pod["status"] = {"phase": "Running", "startTime": at,
                         "conditions": [{"type": "Ready", "status": "True"}]}  # fmt: skip
        self.pods[name] = pod
        return pod

    def main(self, name: str) -> Resources:
        return self.pods[name]["spec"]["containers"][0]["resources"]  # type: ignore[no-any-return]

    # ---- the updater, over passes
    def updater(self) -> Updater:
        """The one updater of this cluster (its memory lasts over every call of `passes`)."""
        if self._updater is None:
            policy = UpdaterPolicy(self.policy, budgets=EAGER, settling_seconds=self.settling_seconds)
            api = SimApi(self)
            recorder = Recorder(api, UpdaterMetrics(self.registry), self.dry_run)
            view = SimView(self)
            self._updater = Updater(
                UpdaterConfig(policy, dry_run=self.dry_run), lambda: list(self.pods.values()), view, view,
                self.holder, api, recorder, self.clock,
            )  # fmt: skip
        return self._updater

    def clock(self) -> datetime:
        return self.now

    def passes(self, count: int, every: timedelta = PASS_INTERVAL) -> list[tuple[str, str]]:
        """Run `count` updater passes, `every` apart; the actions taken."""
        updater = self.updater()
        for _ in range(count):
            self.now += every
            for c, action in updater.run_once():
                name = c.pod["metadata"]["name"]
                self.decisions.append((self.now, name, action.reason))
                if action.kind != "skipped":
                    touched = frozenset((ch.container, ch.resource) for ch in action.changes)
                    self.timeline.append(Acted(self.now, action.kind, name, self.rec, touched))
        return self.actions


@dataclass(frozen=True)
class Acted:
    """One resize or eviction: when, which pod, the Recommendation it followed, the (container, resource)
    pairs it changed."""

    at: datetime
    kind: str
    pod: str
    rec: Recommendation
    touched: frozenset[tuple[str, str]]


@dataclass
class SimView:
    """Owners, metadata and the workload's template as the updater's watched caches would answer."""

    sim: SimCluster

    def get(self, namespace: str, kind: str, name: str) -> ControllerRef | None:
        return ControllerRef("apps/v1", "Deployment", "web") if kind == "ReplicaSet" else None

    def namespace(self, name: str) -> Metadata | None:
        return None

    def workload(self, ref: WorkloadRef) -> Metadata | None:
        return Meta({}, {"podsizer.io/update-mode": self.sim.update_mode}) if ref == WEB else None

    def replicas(self, ref: WorkloadRef) -> int | None:
        return len(self.sim.pods) if ref == WEB else None

    def cluster_policy(self, namespace: str) -> ClusterPolicy | None:
        return None

    def largest_allocatable(self) -> Mapping[str, float]:
        return {}

    def template(self, ref: WorkloadRef) -> tuple[CurrentResources, ...] | None:
        t = self.sim.template
        return (CurrentResources("main", dict(t.get("requests", {})), dict(t.get("limits", {}))),)


@dataclass
class SimApi:
    """The API the updater calls: a resize is applied to the pod, an eviction replaces it."""

    sim: SimCluster

    def resize(self, namespace: str, name: str, body: Mapping[str, Any]) -> tuple[Outcome, str]:
        self.sim.actions.append(("resized", name))
        for patch in body["spec"].get("containers", []):
            target = next(c for c in self.sim.pods[name]["spec"]["containers"] if c["name"] == patch["name"])
            resources = target.setdefault("resources", {})
            for field_, values in patch["resources"].items():
                resources.setdefault(field_, {}).update(values)
        return "done", ""

    def evict(self, namespace: str, name: str) -> tuple[Outcome, str]:
        self.sim.actions.append(("evicted", name))
        del self.sim.pods[name]
        self.sim.admit(REPLACED_AFTER)
        return "done", ""

    def event(self, subject: Subject, type_: EventType, reason: str, message: str) -> None:
        self.sim.events.append((subject.name, reason, message))

    def usage(self, namespace: str, name: str) -> Mapping[str, Decimal] | None:
        return {}  # no usage: a lowered memory limit is refused in place (the updater then recreates)


def simple_rec(requests: Mapping[str, str], limits: Mapping[str, str] | None = None) -> Recommendation:
    """Deployment web's Recommendation for container `main` (confident)."""
    return wb.recommendation(containers=[wb.crec("main", dict(requests), dict(limits or {}))])


def created(sim: SimCluster, replicas: int, resources: Sequence[Resources] | None = None) -> SimCluster:
    """`replicas` pods admitted from the template, or running with the given `resources` (pods created
    before podsizer, or resized since)."""
    for i in range(replicas):
        if resources is None:
            sim.admit()
        else:
            pod = sim.template_pod()
            pod["spec"]["containers"][0]["resources"] = copy.deepcopy(dict(resources[i % len(resources)]))
            sim.run(pod)
    return sim
