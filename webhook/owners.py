"""Pod -> workload: the controller ownerReference, then the ReplicaSet/RC owner from a cache or the pod."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from podsizer.api import WorkloadRef
from webhook.cluster import ControllerRef, controller_of
from webhook.store import RecommendationSnapshot

POD_TEMPLATE_HASH = "pod-template-hash"
ROLLOUT_TEMPLATE_HASH = "rollouts-pod-template-hash"
DC_NAME_ANNOTATION = "openshift.io/deployment-config.name"
DC_LABEL = "deploymentconfig"

_RS_OWNERS = {"Deployment": "apps/", "Rollout": "argoproj.io/"}


class OwnerLookup(Protocol):
    def get(self, namespace: str, kind: str, name: str) -> ControllerRef | None: ...


def _strip_suffix(name: str, suffix: str | None) -> str | None:
    if suffix and name.endswith("-" + suffix) and len(name) > len(suffix) + 1:
        return name[: -(len(suffix) + 1)]
    return None


def _from_replicaset(
    namespace: str,
    rs: str,
    labels: Mapping[str, str],
    owners: OwnerLookup,
    snapshot: RecommendationSnapshot | None,
) -> WorkloadRef | None:
    owner = owners.get(namespace, "ReplicaSet", rs)
    if owner is not None:
        prefix = _RS_OWNERS.get(owner.kind)
        if prefix is not None and owner.api_version.startswith(prefix):
            return WorkloadRef(namespace, owner.kind, owner.name)
        return None  # e.g. an Argo Experiment's ReplicaSet: not a workload of ours
    rollout = _strip_suffix(rs, labels.get(ROLLOUT_TEMPLATE_HASH))
    deployment = _strip_suffix(rs, labels.get(POD_TEMPLATE_HASH))
    if rollout and not deployment:
        return WorkloadRef(namespace, "Rollout", rollout)
    if deployment and not rollout:
        return WorkloadRef(namespace, "Deployment", deployment)
    # Both or neither hash label: let the store say which workload exists.
    candidates = [c for c in (rollout, deployment) if c] or ([rs.rsplit("-", 1)[0]] if "-" in rs else [])
    for name in candidates:
        for kind in ("Deployment", "Rollout"):
            ref = WorkloadRef(namespace, kind, name)
            if snapshot is not None and snapshot.get(ref) is not None:
                return ref
    return None


def _from_rc(
    namespace: str, rc: str, labels: Mapping[str, str], annotations: Mapping[str, str], owners: OwnerLookup
) -> WorkloadRef | None:
    owner = owners.get(namespace, "ReplicationController", rc)
    if owner is not None:
        if owner.kind == "DeploymentConfig" and owner.api_version.startswith("apps.openshift.io/"):
            return WorkloadRef(namespace, "DeploymentConfig", owner.name)
        return None
    dc = annotations.get(DC_NAME_ANNOTATION) or labels.get(DC_LABEL)
    return WorkloadRef(namespace, "DeploymentConfig", dc) if dc else None


def resolve_workload(
    pod: Mapping[str, Any], namespace: str, owners: OwnerLookup, snapshot: RecommendationSnapshot | None
) -> WorkloadRef | None:
    """The workload a pod belongs to, or None (bare pod, Job, Experiment, unknown controller)."""
    ref = controller_of(pod)
    if ref is None or not ref.name:
        return None
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    raw_labels, raw_annotations = meta.get("labels"), meta.get("annotations")
    labels = {str(k): str(v) for k, v in raw_labels.items()} if isinstance(raw_labels, Mapping) else {}
    annotations = (
        {str(k): str(v) for k, v in raw_annotations.items()} if isinstance(raw_annotations, Mapping) else {}
    )
    group = ref.api_version.split("/")[0] if "/" in ref.api_version else ""
    if ref.kind in ("StatefulSet", "DaemonSet") and group == "apps":
        return WorkloadRef(namespace, ref.kind, ref.name)
    if ref.kind == "ReplicaSet" and group == "apps":
        return _from_replicaset(namespace, ref.name, labels, owners, snapshot)
    if ref.kind == "ReplicationController" and group == "":
        return _from_rc(namespace, ref.name, labels, annotations, owners)
    return None
