"""Workload identity (cluster, namespace, kind, name) and the OpenShift deployer/hook pod rule (DESIGN.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

SUPPORTED_KINDS: Mapping[str, str] = {
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Rollout": "argoproj.io/v1alpha1",
    "DeploymentConfig": "apps.openshift.io/v1",
    "CronJob": "batch/v1",
    "Job": "batch/v1",
}

DEPLOYER_FOR_LABEL = "openshift.io/deployer-pod-for.name"
DEPLOYER_TYPE_LABEL = "openshift.io/deployer-pod.type"

# <dc>-<revision>-deploy and <dc>-<revision>-hook-<pre|mid|post>[-suffix]
_DEPLOYER_NAME = re.compile(r"^.+-\d+-deploy$")
_HOOK_NAME = re.compile(r"^.+-\d+-hook-(pre|mid|post)(-.*)?$")


def recommendation_name(kind: str, name: str) -> str:
    """The name of a workload's Recommendation object: <kind-lowercase>-<workload-name>."""
    return f"{kind.lower()}-{name}"


@dataclass(frozen=True, order=True)
class WorkloadRef:
    """A workload: the thing a Recommendation targets. `cluster` is empty in a single-cluster setup; it is
    last so positional constructions stay (namespace, kind, name), and sorting orders by namespace first."""

    namespace: str
    kind: str
    name: str
    cluster: str = ""

    def __post_init__(self) -> None:
        if self.kind not in SUPPORTED_KINDS:
            raise ValueError(
                f"unsupported workload kind {self.kind!r}; expected one of {', '.join(SUPPORTED_KINDS)}"
            )

    @property
    def api_version(self) -> str:
        return SUPPORTED_KINDS[self.kind]

    @property
    def recommendation_name(self) -> str:
        """Name of this workload's Recommendation object (recommendation_name)."""
        return recommendation_name(self.kind, self.name)

    def __str__(self) -> str:
        where = f"{self.cluster}:" if self.cluster else ""
        return f"{where}{self.namespace}/{self.kind}/{self.name}"

    def in_cluster(self, cluster: str) -> WorkloadRef:
        """The same workload in `cluster` (self when it is there already)."""
        return self if self.cluster == cluster else WorkloadRef(self.namespace, self.kind, self.name, cluster)


def is_deployer_or_hook_pod(
    name: str | None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> bool:
    """True for OpenShift DeploymentConfig deployer and lifecycle-hook pods, which are never workloads."""
    labels = labels or {}
    annotations = annotations or {}
    if DEPLOYER_FOR_LABEL in labels or DEPLOYER_TYPE_LABEL in labels:
        return True
    if DEPLOYER_TYPE_LABEL in annotations:
        return True
    if name:
        return bool(_DEPLOYER_NAME.match(name) or _HOOK_NAME.match(name))
    return False
