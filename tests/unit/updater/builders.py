"""Running pods, Recommendations and fakes for the updater's unit tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from podsizer.api import ContainerRecommendation, GpuRecommendation, Recommendation, Window, WorkloadRef
from podsizer.limitrange import ClusterPolicy
from podsizer.modes import Meta, UpdatePermission, resolve, resolve_update
from podsizer.podspec import CurrentResources
from podsizer.policy import PlanPolicy
from updater.decide import PodFacts
from updater.kube import EventType, Outcome, Subject

NOW = datetime(2026, 12, 3, 3, 0, tzinfo=UTC)
WEB = WorkloadRef("shop", "Deployment", "web")
AUTO = PlanPolicy(default_mode="auto")


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    name: str = "web-abc-1",
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    *,
    age: timedelta = timedelta(hours=2),
    ready: bool = True,
    phase: str = "Running",
    annotations: Mapping[str, str] | None = None,
    resize_policy: Sequence[Mapping[str, str]] = (),
    restart_policy: str = "Always",
    conditions: Sequence[Mapping[str, str]] = (),
    uid: str | None = None,
    owner: tuple[str, str] = ("ReplicaSet", "web-abc"),
) -> dict[str, Any]:
    """A running pod of Deployment web (ReplicaSet web-abc) with one container `app`."""
    resources: dict[str, Any] = {"requests": dict(requests or {"cpu": "1", "memory": "1Gi"})}
    resources["limits"] = dict(limits or {})
    app: dict[str, Any] = {"name": "app", "image": "shop/web:1", "resources": resources}
    if resize_policy:
        app["resizePolicy"] = [dict(p) for p in resize_policy]
    kind, owner_name = owner
    api = "apps/v1" if kind in ("ReplicaSet", "StatefulSet", "DaemonSet") else "v1"
    ready_cond = {"type": "Ready", "status": "True" if ready else "False"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": uid or f"uid-{name}",
            "labels": {"app": "web", "pod-template-hash": "abc"},
            "annotations": dict(annotations or {}),
            "creationTimestamp": stamp(NOW - age),
            "ownerReferences": [{"apiVersion": api, "kind": kind, "name": owner_name, "controller": True}],
        },
        "spec": {"restartPolicy": restart_policy, "containers": [app]},
        "status": {
            "phase": phase,
            "startTime": stamp(NOW - age),
            "conditions": [ready_cond, *(dict(c) for c in conditions)],
        },
    }


def template_of(the_pod: Mapping[str, Any]) -> tuple[CurrentResources, ...]:
    """The pod template `the_pod` was created from (its containers' requests and limits as they are)."""
    return tuple(
        CurrentResources(
            c["name"],
            dict(c.get("resources", {}).get("requests") or {}),
            dict(c.get("resources", {}).get("limits") or {}),
        )
        for c in the_pod["spec"]["containers"]
    )


def rec(
    cpu: str = "250m",
    memory: str = "512Mi",
    *,
    gpu: str | None = None,
    target: WorkloadRef = WEB,
    mem_limit: str | None = None,
) -> Recommendation:
    requests = {"cpu": cpu, "memory": memory}
    limits: dict[str, str] = {}
    if mem_limit:
        limits["memory"] = mem_limit
    gpu_rec = None
    if gpu is not None:
        requests["nvidia.com/gpu"] = gpu
        limits["nvidia.com/gpu"] = gpu
        gpu_rec = GpuRecommendation("A100", 2, 0.1, 10**9)
    container = ContainerRecommendation("app", requests, limits, 0.9, "test")
    window = Window(NOW - timedelta(days=7), NOW, 1000)
    return Recommendation(target, NOW, window, "static", (container,), gpu=gpu_rec)


def facts(
    the_pod: Mapping[str, Any],
    the_rec: Recommendation,
    update_mode: str = "in-place-or-recreate",
    *,
    policy: PlanPolicy = AUTO,
    workload_annotations: Mapping[str, str] | None = None,
    siblings: Sequence[Mapping[str, Any]] | None = None,
    replicas: int | None = 3,
    usage: Mapping[str, Decimal] | None = None,
    cluster: ClusterPolicy | None = None,
    rejected: bool = False,
    template: tuple[CurrentResources, ...] | None = None,
    template_known: bool = True,
) -> PodFacts:
    """The decision's input, with the update mode resolved by the core rule (podsizer.modes); the
    workload's template is the one the pod was created from unless given (or unknown: template_known)."""
    wl = Meta({}, {"podsizer.io/update-mode": update_mode, **(workload_annotations or {})})
    own = Meta({}, dict(the_pod["metadata"].get("annotations") or {}))
    resolved = resolve(policy, own, wl, None)
    permission: UpdatePermission = resolve_update("initial", resolved, own, wl, None)
    return PodFacts(
        the_pod,
        the_rec.target,
        the_rec,
        resolved,
        permission,
        tuple(siblings) if siblings is not None else (the_pod,),
        replicas,
        usage,
        cluster,
        in_place_rejected=rejected,
        template=(template or template_of(the_pod)) if template_known else None,
    )


@dataclass
class FakeApi:
    """Records every call; answers with the configured outcomes."""

    resize_outcome: Outcome = "done"
    evict_outcome: Outcome = "done"
    usage_of: Mapping[str, Decimal] | None = None
    resized: list[tuple[str, str, Mapping[str, Any]]] = field(default_factory=list)
    evicted: list[tuple[str, str]] = field(default_factory=list)
    events: list[tuple[Subject, EventType, str, str]] = field(default_factory=list)
    usage_calls: int = 0

    def resize(self, namespace: str, name: str, body: Mapping[str, Any]) -> tuple[Outcome, str]:
        self.resized.append((namespace, name, body))
        return self.resize_outcome, "refused" if self.resize_outcome != "done" else ""

    def evict(self, namespace: str, name: str) -> tuple[Outcome, str]:
        self.evicted.append((namespace, name))
        return self.evict_outcome, "Cannot evict pod as it would violate the pod's disruption budget."

    def event(self, subject: Subject, type_: EventType, reason: str, message: str) -> None:
        self.events.append((subject, type_, reason, message))

    def usage(self, namespace: str, name: str) -> Mapping[str, Decimal] | None:
        self.usage_calls += 1
        return self.usage_of
