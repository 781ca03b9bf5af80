"""Workload manifests for e2e tests, and waits for what controllers and the webhook do with them."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes import client

from tests.controlplane.kube import Manifest, dry_run_pod_of, to_dict, wait_for, wait_for_pods


def pod_template(
    labels: Mapping[str, str],
    resources: Mapping[str, Any],
    annotations: Mapping[str, str] | None = None,
    container: str = "main",
) -> Manifest:
    """A pod template with one container `container` and the given resources."""
    return {
        "metadata": {"labels": dict(labels), "annotations": dict(annotations or {})},
        "spec": {
            "containers": [
                {
                    "name": container,
                    "image": "registry.example/app:1",
                    "resources": copy.deepcopy(dict(resources)),
                }
            ]
        },
    }


def workload(
    api_version: str, kind: str, name: str, replicas: int | None, resources: Mapping[str, Any], **spec: Any
) -> Manifest:
    """A Deployment-shaped workload (selector app=<name>, one-container template); `spec` adds fields."""
    labels = {"app": name}
    body: Manifest = {
        "selector": {"matchLabels": labels},
        "template": pod_template(labels, resources),
        **spec,
    }
    if replicas is not None:
        body["replicas"] = replicas
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": body}


def deployment_replicaset(admin: client.ApiClient, namespace: str, deployment: str | None = None) -> Manifest:
    """Waits for the ReplicaSet the Deployment controller creates for `deployment` (or for the only
    Deployment of `namespace`), and returns it read by itself."""
    return controlled_replicaset(admin, namespace, "Deployment", deployment)


def controlled_replicaset(admin: client.ApiClient, namespace: str, kind: str, name: str | None) -> Manifest:
    """Waits for a ReplicaSet whose controller is the `kind` named `name` (any of that kind when None), as
    a Deployment's or an Argo Rollout's controller creates it. Returns it read by itself."""
    apps = client.AppsV1Api(admin)

    def owned(rs: Manifest) -> bool:
        refs = rs["metadata"].get("ownerReferences") or []
        return any(r["kind"] == kind and r.get("controller") and name in (None, r["name"]) for r in refs)

    def first() -> Manifest | None:
        items = [
            rs for rs in to_dict(admin, apps.list_namespaced_replica_set(namespace))["items"] if owned(rs)
        ]
        if not items:
            return None
        return to_dict(admin, apps.read_namespaced_replica_set(items[0]["metadata"]["name"], namespace))

    return wait_for(first, f"the ReplicaSet of {kind} {namespace}/{name or '*'}")


def wait_until_webhook_acts(
    admin: client.ApiClient,
    owner: Mapping[str, Any],
    check: Callable[[Manifest], bool],
    what: str,
    timeout_s: float = 30.0,
) -> Manifest:
    """Waits until a dry-run pod of `owner` comes back as `check` wants: the webhook's watches caught up.

    Controllers create pods within milliseconds of a change; the webhook learns of Recommendations and
    namespace labels through watches. Scaling up only after this keeps the tests free of sleeps and races.
    """

    def probe() -> Manifest | None:
        pod = dry_run_pod_of(admin, owner)
        return pod if check(pod) else None

    return wait_for(probe, what, timeout_s)


def container_resources(pod: Mapping[str, Any], index: int = 0) -> Any:
    """spec.containers[index].resources of a stored pod dict."""
    return pod["spec"]["containers"][index].get("resources")


def deployment(name: str, container: str, resources: Mapping[str, Any], replicas: int = 0) -> Manifest:
    """apps/v1 Deployment `name` (selector app=<name>) with one container named `container`."""
    manifest = workload("apps/v1", "Deployment", name, replicas, resources)
    manifest["spec"]["template"]["spec"]["containers"][0]["name"] = container
    return manifest


def first_pod_once_webhook_applies(
    admin: client.ApiClient, namespace: str, name: str, requests: Mapping[str, str]
) -> Manifest:
    """For Deployment namespace/name created with 0 replicas: waits until the webhook would set `requests`,
    scales to 1 and returns the stored pod."""
    rs = deployment_replicaset(admin, namespace, name)

    def applied(pod: Manifest) -> bool:
        return bool((container_resources(pod) or {}).get("requests") == dict(requests))

    wait_until_webhook_acts(admin, rs, applied, f"the webhook to serve {namespace}/{name}")
    client.AppsV1Api(admin).patch_namespaced_deployment_scale(name, namespace, {"spec": {"replicas": 1}})
    (pod,) = wait_for_pods(admin, namespace, "ReplicaSet", rs["metadata"]["name"], count=1)
    return pod
