"""Typed builders for AdmissionReviews, pods of real controller shapes and Recommendations (webhook tests)."""

from __future__ import annotations

import base64
import copy
import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import jsonpatch
import orjson

from podsizer.api import (
    ContainerPolicy,
    ContainerRecommendation,
    GpuRecommendation,
    Recommendation,
    SizingMode,
    Window,
    WorkloadRef,
)
from podsizer.cluster import OwnerCache
from podsizer.modes import MetadataLookup, NoMetadata
from podsizer.policy import Mode, PlanPolicy
from podsizer.snapshot import RecommendationSnapshot, SnapshotHolder
from webhook.admission import AdmissionConfig, Admitter
from webhook.wire import AdmissionRequest, AdmissionReview

T0 = datetime(2026, 11, 25, tzinfo=UTC)
T1 = datetime(2026, 12, 2, 6, 0, tzinfo=UTC)


def review(
    pod: Mapping[str, Any] | None,
    namespace: str = "shop",
    operation: str = "CREATE",
    kind: str = "Pod",
    dry_run: bool = False,
    uid: str | None = None,
) -> AdmissionReview:
    """An AdmissionReview v1 request the way kube-apiserver sends it for a pod create."""
    request: AdmissionRequest = {
        "uid": uid or str(uuid.uuid4()),
        "kind": {"group": "", "version": "v1", "kind": kind},
        "resource": {"group": "", "version": "v1", "resource": kind.lower() + "s"},
        "requestKind": {"group": "", "version": "v1", "kind": kind},
        "requestResource": {"group": "", "version": "v1", "resource": kind.lower() + "s"},
        "namespace": namespace,
        "operation": operation,  # type: ignore[typeddict-item]
        "userInfo": {
            "username": "system:serviceaccount:kube-system:replicaset-controller",
            "groups": ["system:serviceaccounts", "system:authenticated"],
        },
        "object": copy.deepcopy(dict(pod)) if pod is not None else None,
        "oldObject": None,
        "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def container(
    name: str,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    image: str = "registry.example.com/shop/app:1.4.2",
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "env": [{"name": "JAVA_OPTS", "value": "-XX:MaxRAMPercentage=75"}],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": [
            {
                "name": "kube-api-access-x7k2p",
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "readOnly": True,
            }
        ],
    }
    res: dict[str, Any] = {}
    if requests is not None:
        res["requests"] = dict(requests)
    if limits is not None:
        res["limits"] = dict(limits)
    c["resources"] = res
    return c


def _spec(
    containers: Sequence[dict[str, Any]], init: Sequence[dict[str, Any]] = (), restart: str = "Always"
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": list(containers),
        "restartPolicy": restart,
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
        "volumes": [
            {
                "name": "kube-api-access-x7k2p",
                "projected": {
                    "defaultMode": 420,
                    "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}],
                },
            }
        ],
    }
    if init:
        spec["initContainers"] = list(init)
    return spec


def _owner(api_version: str, kind: str, name: str, controller: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def default_containers() -> list[dict[str, Any]]:
    return [container("main", {"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "2Gi"})]


def _pod(
    metadata: dict[str, Any],
    containers: Sequence[dict[str, Any]] | None,
    init: Sequence[dict[str, Any]] = (),
    restart: str = "Always",
) -> dict[str, Any]:
    """A v1 Pod with `metadata`; containers None: default_containers()."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": _spec(containers if containers is not None else default_containers(), init, restart),
    }


def replicaset_pod(
    deployment: str = "web",
    template_hash: str = "7d4b9c8f5",
    containers: Sequence[dict[str, Any]] | None = None,
    init: Sequence[dict[str, Any]] = (),
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A pod as the ReplicaSet controller creates it: generateName, no name, controller ownerReference."""
    rs = f"{deployment}-{template_hash}"
    return _pod(
        {
            "generateName": f"{rs}-",
            "namespace": "shop",
            "labels": {"app": deployment, "pod-template-hash": template_hash, **(labels or {})},
            "annotations": dict(annotations or {}),
            "ownerReferences": [_owner("apps/v1", "ReplicaSet", rs)],
        },
        containers,
        init,
    )


def rollout_pod(
    rollout: str = "canary-demo",
    template_hash: str = "6b8d9f7c4",
    containers: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A pod of an Argo Rollout's ReplicaSet: label rollouts-pod-template-hash, no pod-template-hash."""
    rs = f"{rollout}-{template_hash}"
    return _pod(
        {
            "generateName": f"{rs}-",
            "namespace": "shop",
            "labels": {"app": rollout, "rollouts-pod-template-hash": template_hash},
            "ownerReferences": [_owner("apps/v1", "ReplicaSet", rs)],
        },
        containers,
    )


def statefulset_pod(
    name: str = "db", ordinal: int = 0, containers: Sequence[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return _pod(
        {
            "name": f"{name}-{ordinal}",
            "namespace": "shop",
            "labels": {
                "app": name,
                "statefulset.kubernetes.io/pod-name": f"{name}-{ordinal}",
                "controller-revision-hash": f"{name}-5d9c7b6f8d",
            },
            "ownerReferences": [_owner("apps/v1", "StatefulSet", name)],
        },
        containers,
    )


def dc_pod(
    dc: str = "cart", revision: int = 3, containers: Sequence[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """An app pod of an OpenShift DeploymentConfig revision (owned by RC <dc>-<rev>)."""
    rc = f"{dc}-{revision}"
    return _pod(
        {
            "generateName": f"{rc}-",
            "namespace": "shop",
            "labels": {"deployment": rc, "deploymentconfig": dc, "app": dc},
            "annotations": {
                "openshift.io/deployment-config.latest-version": str(revision),
                "openshift.io/deployment-config.name": dc,
                "openshift.io/deployment.name": rc,
                "openshift.io/scc": "restricted-v2",
            },
            "ownerReferences": [_owner("v1", "ReplicationController", rc)],
        },
        containers,
    )


def deployer_pod(dc: str = "cart", revision: int = 3) -> dict[str, Any]:
    """The DC deployer pod <rc>-deploy: label deployer-pod-for.name, container `deployment`, restart Never."""
    rc = f"{dc}-{revision}"
    return _pod(
        {
            "name": f"{rc}-deploy",
            "namespace": "shop",
            "labels": {"openshift.io/deployer-pod-for.name": rc},
            "annotations": {"openshift.io/deployment.name": rc, "openshift.io/deployment-config.name": dc},
            "ownerReferences": [_owner("v1", "ReplicationController", rc)],
        },
        [
            container(
                "deployment",
                {"cpu": "100m", "memory": "256Mi"},
                {"memory": "256Mi"},
                image="quay.io/openshift/origin-deployer:4.14",
            )
        ],
        restart="Never",
    )


def hook_pod(dc: str = "cart", revision: int = 3, hook: str = "pre") -> dict[str, Any]:
    """A DC lifecycle hook pod: no ownerReference; copies the app container's resources, GPUs included."""
    rc = f"{dc}-{revision}"
    app = container(
        "main",
        {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"},
        {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"},
    )
    return _pod(
        {
            "name": f"{rc}-hook-{hook}",
            "namespace": "shop",
            "labels": {
                "openshift.io/deployer-pod-for.name": rc,
                "openshift.io/deployer-pod.type": f"hook-{hook}",
                "deploymentconfig": dc,
            },
            "annotations": {"openshift.io/deployment.name": rc, "openshift.io/deployment-config.name": dc},
        },
        [app],
        restart="Never",
    )


def crec(
    name: str = "main",
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    confidence: float = 0.9,
    low_confidence: bool = False,
) -> ContainerRecommendation:
    return ContainerRecommendation(
        name,
        dict(requests if requests is not None else {"cpu": "250m", "memory": "512Mi"}),
        dict(limits or {}),
        confidence,
        "p99 over 7d + 15%",
        low_confidence,
    )


def recommendation(
    kind: str = "Deployment",
    name: str = "web",
    namespace: str = "shop",
    containers: Sequence[ContainerRecommendation] | None = None,
    gpu: GpuRecommendation | None = None,
    policy: Sequence[ContainerPolicy] = (),
    sizing_mode: SizingMode = "static",
) -> Recommendation:
    return Recommendation(
        target=WorkloadRef(namespace, kind, name),
        generated_at=T1,
        window=Window(T0, T1, 20160),
        sizing_mode=sizing_mode,
        containers=tuple(containers if containers is not None else [crec()]),
        gpu=gpu,
        policy=tuple(policy),
    )


def holder_with(*recs: Recommendation) -> SnapshotHolder:
    holder = SnapshotHolder()
    holder.swap(RecommendationSnapshot.of(recs, T1, "test"))
    return holder


def admitter(
    *recs: Recommendation,
    default_mode: Mode = "auto",
    policy: PlanPolicy | None = None,
    owners: OwnerCache | None = None,
    metadata: MetadataLookup | None = None,
    excluded: frozenset[str] = frozenset({"kube-system", "podsizer"}),
) -> Admitter:
    """An Admitter over `recs`; `default_mode` overrides the policy's."""
    config = AdmissionConfig(dataclasses.replace(policy or PlanPolicy(), default_mode=default_mode), excluded)
    return Admitter(config, holder_with(*recs), owners or OwnerCache(), metadata or NoMetadata())


def decode_patch(reply: Mapping[str, Any]) -> list[dict[str, Any]]:
    response = reply["response"]
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = orjson.loads(base64.b64decode(response["patch"]))
    return ops


def apply_reply(pod: Mapping[str, Any], reply: Mapping[str, Any]) -> dict[str, Any]:
    """The pod as the apiserver would store it after our patch (jsonpatch, the reference implementation)."""
    result: dict[str, Any] = jsonpatch.apply_patch(copy.deepcopy(dict(pod)), decode_patch(reply))
    return result


def resources_of(pod: Mapping[str, Any], name: str, section: str = "containers") -> dict[str, Any]:
    for c in pod["spec"].get(section, []):
        if c["name"] == name:
            res: dict[str, Any] = c.get("resources", {})
            return res
    raise KeyError(name)
