"""Maps pods to workloads through their controller owner chain, excluding deployer/hook and unowned pods."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from podsizer.api.identity import SUPPORTED_KINDS, WorkloadRef, is_deployer_or_hook_pod


@dataclass(frozen=True)
class Skipped:
    """Something a source or policy left out, with a reason a person can read."""

    subject: str
    reason: str


# Intermediate controllers whose own controller is the workload.
_INTERMEDIATE = {"ReplicaSet", "ReplicationController"}
# What may own each intermediate controller, as a workload of ours.
_ALLOWED_PARENTS = {
    "ReplicaSet": {"Deployment", "Rollout"},
    "ReplicationController": {"DeploymentConfig"},
}
_DIRECT = {"StatefulSet", "DaemonSet"}


@dataclass(frozen=True)
class PodOwner:
    """What a pod says about itself: its controller owner reference, labels and annotations."""

    namespace: str
    pod: str
    owner_kind: str | None
    owner_name: str | None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class OwnerGraph:
    """Pod and controller owner links of one cluster snapshot; immutable once built."""

    pods: Mapping[tuple[str, str], PodOwner]
    links: Mapping[tuple[str, str, str], tuple[str, str]]

    @staticmethod
    def build(
        pods: list[PodOwner],
        links: list[tuple[str, str, str, str, str]],
    ) -> OwnerGraph:
        """links: (namespace, kind, name, owner_kind, owner_name) of ReplicaSets and RCs."""
        return OwnerGraph(
            pods={(p.namespace, p.pod): p for p in pods},
            links={(ns, kind, name): (ok, on) for ns, kind, name, ok, on in links},
        )

    def resolve(self, namespace: str, pod: str) -> WorkloadRef | Skipped:
        """The pod's workload, or a Skipped saying why it is not one of ours."""
        subject = f"{namespace}/pod/{pod}"
        info = self.pods.get((namespace, pod))
        if info is None:
            if is_deployer_or_hook_pod(pod):
                return Skipped(subject, "OpenShift deployer or hook pod")
            return Skipped(subject, "no owner information for this pod")
        if is_deployer_or_hook_pod(pod, info.labels, info.annotations):
            return Skipped(subject, "OpenShift deployer or hook pod")
        kind, name = info.owner_kind, info.owner_name
        if not kind or not name:
            return Skipped(subject, "pod has no controller (bare or static pod)")
        if kind in _DIRECT:
            return WorkloadRef(namespace, kind, name)
        if kind in _INTERMEDIATE:
            parent = self.links.get((namespace, kind, name))
            if parent is None:
                return Skipped(subject, f"owner {kind}/{name} has no known controller")
            parent_kind, parent_name = parent
            if parent_kind not in _ALLOWED_PARENTS[kind]:
                return Skipped(
                    subject, f"owner {kind}/{name} is controlled by unsupported kind {parent_kind}"
                )
            return WorkloadRef(namespace, parent_kind, parent_name)
        if kind in SUPPORTED_KINDS:
            return WorkloadRef(namespace, kind, name)
        return Skipped(subject, f"unsupported owner kind {kind}")
