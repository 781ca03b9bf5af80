"""Workload -> real controller -> the apiserver calls the webhook -> stored pods carry the recommendation."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from podsizer.api import WorkloadRef
from podsizer.owners import ROLLOUT_TEMPLATE_HASH
from tests.controlplane.kube import Manifest, create_objects, to_dict, wait_for_pods
from tests.controlplane.nodes import wait_for_running_pods
from tests.controlplane.podsizer_webhook import WebhookProcess
from tests.controlplane.recommendations import put_recommendation, simple_recommendation
from tests.controlplane.rollouts import RolloutsController
from tests.controlplane.workloads import (
    controlled_replicaset,
    deployment_replicaset,
    pod_template,
    wait_until_webhook_acts,
    workload,
)
from tests.support.progress import TEST_TIMEOUT_S, status_progress, wait_progressing

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]

APPLIED = "podsizer.io/applied"
DRY_RUN = "podsizer.io/dry-run"
TEMPLATE_RESOURCES = {
    "requests": {"cpu": "100m", "memory": "64Mi"},
    "limits": {"cpu": "200m", "memory": "128Mi"},
}
RECOMMENDED = {"cpu": "250m", "memory": "96Mi"}
# The webhook's default limit policy, keep-ratio: the template's limits are twice its requests.
EXPECTED = {"requests": {"cpu": "250m", "memory": "96Mi"}, "limits": {"cpu": "500m", "memory": "192Mi"}}

NamespaceFactory = Callable[..., str]


def _workload(api_version: str, kind: str, name: str, replicas: int | None, **spec: Any) -> Manifest:
    return workload(api_version, kind, name, replicas, TEMPLATE_RESOURCES, **spec)


def _template(labels: dict[str, str], annotations: dict[str, str] | None = None) -> Manifest:
    return pod_template(labels, TEMPLATE_RESOURCES, annotations)


def _recommend(admin: client.ApiClient, namespace: str, kind: str, name: str) -> None:
    put_recommendation(
        admin, simple_recommendation(WorkloadRef(namespace, kind, name), {"main": RECOMMENDED})
    )


EXPECTED_CHANGES = {
    ("main", "requests", "cpu"): ("100m", "250m"),
    ("main", "requests", "memory"): ("64Mi", "96Mi"),
    ("main", "limits", "cpu"): ("200m", "500m"),
    ("main", "limits", "memory"): ("128Mi", "192Mi"),
}


def _changes(record: Manifest) -> dict[tuple[str, str, str], tuple[str, str]]:
    """The podsizer.io/applied or dry-run record's changes, keyed by (container, field, resource)."""
    return {(c["container"], c["field"], c["resource"]): (c["from"], c["to"]) for c in record["changes"]}


def _mutated(pod: Manifest) -> bool:
    return bool(pod["spec"]["containers"][0]["resources"] == EXPECTED)


def _has_dry_run(pod: Manifest) -> bool:
    return DRY_RUN in (pod["metadata"].get("annotations") or {})


def _wait_until_webhook_acts(
    admin: client.ApiClient, owner: Manifest, check: Callable[[Manifest], bool], what: str
) -> None:
    wait_until_webhook_acts(admin, owner, check, what)


def _assert_pods_record(pods: list[Manifest], recommendation: str, *, dry_run: bool = False) -> None:
    """Auto mode: recommended resources and the applied record; dry run: the template's resources and
    the dry-run record; the record names `recommendation` and the expected changes either way."""
    resources, record, absent = (
        (TEMPLATE_RESOURCES, DRY_RUN, APPLIED) if dry_run else (EXPECTED, APPLIED, DRY_RUN)
    )
    for pod in pods:
        assert pod["spec"]["containers"][0]["resources"] == resources
        annotations = pod["metadata"]["annotations"]
        assert absent not in annotations
        written = json.loads(annotations[record])
        assert written["recommendation"] == recommendation
        assert _changes(written) == EXPECTED_CHANGES


def _web_deployment_pods(
    admin: client.ApiClient, ns: str, check: Callable[[Manifest], bool], what: str
) -> list[Manifest]:
    """Deployment web with its recommendation, scaled to 2 once the webhook acts (`check`): its pods."""
    _recommend(admin, ns, "Deployment", "web")
    create_objects(admin, [_workload("apps/v1", "Deployment", "web", 0)], namespace=ns)
    apps = client.AppsV1Api(admin)
    rs = deployment_replicaset(admin, ns)
    _wait_until_webhook_acts(admin, rs, check, what)
    apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 2}})
    return wait_for_pods(admin, ns, "ReplicaSet", rs["metadata"]["name"], count=2)


def test_deployment_pods_get_recommended_resources_in_auto_mode(
    admin_client: client.ApiClient, podsizer_webhook: WebhookProcess, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(mode="auto")
    pods = _web_deployment_pods(admin_client, ns, _mutated, "the webhook to apply deployment-web")
    _assert_pods_record(pods, "deployment-web")


def test_deployment_pods_only_get_the_annotation_in_dry_run_mode(
    admin_client: client.ApiClient, podsizer_webhook: WebhookProcess, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(mode="dry-run")
    pods = _web_deployment_pods(admin_client, ns, _has_dry_run, "the webhook to annotate for deployment-web")
    _assert_pods_record(pods, "deployment-web", dry_run=True)


def test_statefulset_pod_gets_recommended_resources(
    admin_client: client.ApiClient, podsizer_webhook: WebhookProcess, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(mode="auto")
    _recommend(admin_client, ns, "StatefulSet", "db")
    create_objects(
        admin_client, [_workload("apps/v1", "StatefulSet", "db", 0, serviceName="db")], namespace=ns
    )
    apps = client.AppsV1Api(admin_client)
    sts = to_dict(admin_client, apps.read_namespaced_stateful_set("db", ns))
    _wait_until_webhook_acts(admin_client, sts, _mutated, "the webhook to apply statefulset-db")
    apps.patch_namespaced_stateful_set_scale("db", ns, {"spec": {"replicas": 1}})
    (pod,) = wait_for_pods(admin_client, ns, "StatefulSet", "db", count=1)
    assert pod["metadata"]["name"] == "db-0"
    _assert_pods_record([pod], "statefulset-db")


@pytest.fixture
def fake_node(admin_client: client.ApiClient) -> Iterator[str]:
    """A Node object without a kubelet: somewhere for the DaemonSet controller to put a pod; deleted after."""
    name = f"e2e-node-{uuid.uuid4().hex[:6]}"
    core = client.CoreV1Api(admin_client)
    core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_node(name)


def test_daemonset_pod_gets_recommended_resources(
    admin_client: client.ApiClient,
    podsizer_webhook: WebhookProcess,
    make_namespace: NamespaceFactory,
    fake_node: str,
) -> None:
    ns = make_namespace(mode="auto")
    _recommend(admin_client, ns, "DaemonSet", "agent")
    ds = _workload("apps/v1", "DaemonSet", "agent", None)
    ds["spec"]["template"]["spec"]["nodeSelector"] = {"podsizer.io/e2e-node": ns}  # no node matches yet
    create_objects(admin_client, [ds], namespace=ns)
    apps, core = client.AppsV1Api(admin_client), client.CoreV1Api(admin_client)
    stored = to_dict(admin_client, apps.read_namespaced_daemon_set("agent", ns))
    _wait_until_webhook_acts(admin_client, stored, _mutated, "the webhook to apply daemonset-agent")
    core.patch_node(fake_node, {"metadata": {"labels": {"podsizer.io/e2e-node": ns}}})
    (pod,) = wait_for_pods(admin_client, ns, "DaemonSet", "agent", count=1)
    _assert_pods_record([pod], "daemonset-agent")


CANARY_STEPS = [{"setWeight": 50}, {"pause": {"duration": "10s"}}, {"setWeight": 100}]


def test_canary_rollout_pods_from_the_argo_controller_get_recommended_resources(
    admin_client: client.ApiClient,
    podsizer_webhook: WebhookProcess,
    argo_rollouts: RolloutsController,
    make_namespace: NamespaceFactory,
) -> None:
    """The real Argo Rollouts controller makes the ReplicaSet; Pod -> ReplicaSet -> Rollout resolves."""
    ns = make_namespace(mode="auto")
    _recommend(admin_client, ns, "Rollout", "canary")
    canary = _workload(
        "argoproj.io/v1alpha1", "Rollout", "canary", 0, strategy={"canary": {"steps": CANARY_STEPS}}
    )
    (rollout,) = create_objects(admin_client, [canary], ns)
    rs = controlled_replicaset(admin_client, ns, "Rollout", "canary")
    (ref,) = [r for r in rs["metadata"]["ownerReferences"] if r.get("controller")]
    assert ref["uid"] == rollout["metadata"]["uid"]
    pod_hash = rs["metadata"]["labels"][ROLLOUT_TEMPLATE_HASH]
    assert rs["metadata"]["name"] == f"canary-{pod_hash}"
    assert rs["spec"]["template"]["metadata"]["labels"][ROLLOUT_TEMPLATE_HASH] == pod_hash
    _wait_until_webhook_acts(admin_client, rs, _mutated, "the webhook to apply rollout-canary")
    client.CustomObjectsApi(admin_client).patch_namespaced_custom_object(
        "argoproj.io", "v1alpha1", ns, "rollouts", "canary", {"spec": {"replicas": 2}}
    )
    pods = wait_for_pods(admin_client, ns, "ReplicaSet", rs["metadata"]["name"], count=2)
    _assert_pods_record(pods, "rollout-canary")
    assert {p["metadata"]["labels"][ROLLOUT_TEMPLATE_HASH] for p in pods} == {pod_hash}


def _rollout(admin: client.ApiClient, ns: str, name: str) -> Manifest:
    custom = client.CustomObjectsApi(admin)
    return to_dict(
        admin, custom.get_namespaced_custom_object("argoproj.io", "v1alpha1", ns, "rollouts", name)
    )


def _wait_for_rollout(
    admin: client.ApiClient, ns: str, name: str, check: Callable[[Manifest], bool], what: str
) -> Manifest:
    """The Rollout once `check` passes; progress: the Argo controller changing its status (a step, a weight,
    replica counts, the phase)."""
    return wait_progressing(
        lambda: _rollout(admin, ns, name),
        lambda rollout: rollout if check(rollout) else None,
        status_progress,
        f"Rollout {ns}/{name}: {what}",
    )


def _healthy_on(pod_hash: str) -> Callable[[Manifest], bool]:
    def check(rollout: Manifest) -> bool:
        status = rollout.get("status") or {}
        return bool(status.get("stableRS") == pod_hash and status.get("phase") == "Healthy")

    return check


def _paused_on_new_revision(old_hash: str) -> Callable[[Manifest], bool]:
    def check(rollout: Manifest) -> bool:
        status = rollout.get("status") or {}
        pauses = [c.get("reason") for c in status.get("pauseConditions") or []]
        return status.get("currentPodHash") not in (None, old_hash) and "CanaryPauseStep" in pauses

    return check


def test_canary_rollout_steps_to_promotion_with_running_mutated_pods(
    admin_client: client.ApiClient,
    podsizer_webhook: WebhookProcess,
    argo_rollouts: RolloutsController,
    kwok_nodes: list[str],
    make_namespace: NamespaceFactory,
) -> None:
    """Revision 1 runs on kwok nodes; revision 2 stops at the canary's pause with 1 canary and 1 stable pod;
    a promote (what `kubectl argo rollouts promote` patches) makes it stable. Every pod carries the
    recommendation."""
    ns = make_namespace(mode="auto")
    custom = client.CustomObjectsApi(admin_client)
    _recommend(admin_client, ns, "Rollout", "canary")
    steps = [{"setWeight": 50}, {"pause": {}}, {"setWeight": 100}]
    canary = _workload("argoproj.io/v1alpha1", "Rollout", "canary", 0, strategy={"canary": {"steps": steps}})
    create_objects(admin_client, [canary], ns)
    first = controlled_replicaset(admin_client, ns, "Rollout", "canary")
    first_hash = first["metadata"]["labels"][ROLLOUT_TEMPLATE_HASH]
    _wait_until_webhook_acts(admin_client, first, _mutated, "the webhook to apply rollout-canary")
    custom.patch_namespaced_custom_object(
        "argoproj.io", "v1alpha1", ns, "rollouts", "canary", {"spec": {"replicas": 2}}
    )
    _assert_pods_record(
        wait_for_running_pods(admin_client, ns, "ReplicaSet", f"canary-{first_hash}", 2), "rollout-canary"
    )
    _wait_for_rollout(admin_client, ns, "canary", _healthy_on(first_hash), "revision 1 stable")

    revision = {"spec": {"template": {"metadata": {"annotations": {"example.com/revision": "2"}}}}}
    custom.patch_namespaced_custom_object("argoproj.io", "v1alpha1", ns, "rollouts", "canary", revision)
    paused = _wait_for_rollout(
        admin_client, ns, "canary", _paused_on_new_revision(first_hash), "paused at the canary step"
    )
    second_hash = paused["status"]["currentPodHash"]
    canary_pods = wait_for_running_pods(admin_client, ns, "ReplicaSet", f"canary-{second_hash}", 1)
    stable_pods = wait_for_running_pods(admin_client, ns, "ReplicaSet", f"canary-{first_hash}", 1)
    _assert_pods_record(canary_pods + stable_pods, "rollout-canary")

    custom.patch_namespaced_custom_object_status(
        "argoproj.io", "v1alpha1", ns, "rollouts", "canary", {"status": {"pauseConditions": None}}
    )
    _wait_for_rollout(admin_client, ns, "canary", _healthy_on(second_hash), "revision 2 promoted")
    promoted = wait_for_running_pods(admin_client, ns, "ReplicaSet", f"canary-{second_hash}", 2)
    _assert_pods_record(promoted, "rollout-canary")
    assert wait_for_running_pods(admin_client, ns, "ReplicaSet", f"canary-{first_hash}", 0) == []


def _openshift_deployer_pod(rc: Manifest) -> Manifest:
    """The deployer pod openshift-controller-manager creates for revision `rc` (owner RC, not controller)."""
    rc_name, dc = rc["metadata"]["name"], rc["metadata"]["labels"]["openshift.io/deployment-config.name"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{rc_name}-deploy",
            "labels": {"openshift.io/deployer-pod-for.name": rc_name},
            "annotations": {
                "openshift.io/deployment.name": rc_name,
                "openshift.io/deployment-config.name": dc,
            },
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ReplicationController",
                    "name": rc_name,
                    "uid": rc["metadata"]["uid"],
                }
            ],
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "deployment", "image": "registry.example/origin-deployer:4", "resources": {}}
            ],
        },
    }


def _openshift_hook_pod(rc: Manifest) -> Manifest:
    """A pre hook pod: no ownerReference; it copies the app container (image and resources)."""
    rc_name = rc["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{rc_name}-hook-pre",
            "labels": {
                "openshift.io/deployer-pod-for.name": rc_name,
                "openshift.io/deployer-pod.type": "hook-pre",
            },
            "annotations": {"openshift.io/deployment.name": rc_name},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": copy.deepcopy(rc["spec"]["template"]["spec"]["containers"]),
        },
    }


def test_deploymentconfig_pods_mutated_and_deployer_and_hook_pods_untouched(
    admin_client: client.ApiClient, podsizer_webhook: WebhookProcess, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(mode="auto")
    _recommend(admin_client, ns, "DeploymentConfig", "shop")
    dc = _workload("apps.openshift.io/v1", "DeploymentConfig", "shop", 2)
    dc["spec"]["selector"] = {"deploymentconfig": "shop"}
    dc["spec"]["template"]["metadata"]["labels"] = {"deploymentconfig": "shop"}
    (stored_dc,) = create_objects(admin_client, [dc], namespace=ns)
    # Revision 1 as openshift-controller-manager makes it: RC shop-1 controlled by the DC.
    pod_labels = {"deploymentconfig": "shop", "deployment": "shop-1"}
    pod_annotations = {
        "openshift.io/deployment-config.latest-version": "1",
        "openshift.io/deployment-config.name": "shop",
        "openshift.io/deployment.name": "shop-1",
    }
    rc: Manifest = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {
            "name": "shop-1",
            "labels": {"openshift.io/deployment-config.name": "shop"},
            "annotations": {"openshift.io/deployment-config.name": "shop"},
            "ownerReferences": [
                {
                    "apiVersion": "apps.openshift.io/v1",
                    "kind": "DeploymentConfig",
                    "name": "shop",
                    "uid": stored_dc["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"replicas": 0, "selector": pod_labels, "template": _template(pod_labels, pod_annotations)},
    }
    (stored_rc,) = create_objects(admin_client, [rc], namespace=ns)
    _wait_until_webhook_acts(admin_client, stored_rc, _mutated, "the webhook to apply deploymentconfig-shop")
    skipped_before = podsizer_webhook.review_count("skipped", "deployer-or-hook-pod")

    core = client.CoreV1Api(admin_client)
    core.create_namespaced_pod(ns, _openshift_deployer_pod(stored_rc))  # type: ignore[arg-type]
    core.create_namespaced_pod(ns, _openshift_hook_pod(stored_rc))  # type: ignore[arg-type]
    core.patch_namespaced_replication_controller_scale("shop-1", ns, {"spec": {"replicas": 2}})
    pods = wait_for_pods(admin_client, ns, "ReplicationController", "shop-1", count=2)
    _assert_pods_record(pods, "deploymentconfig-shop")

    deployer = to_dict(admin_client, core.read_namespaced_pod("shop-1-deploy", ns))
    hook = to_dict(admin_client, core.read_namespaced_pod("shop-1-hook-pre", ns))
    assert deployer["spec"]["containers"][0].get("resources") in (None, {})
    assert hook["spec"]["containers"][0]["resources"] == TEMPLATE_RESOURCES
    for pod in (deployer, hook):
        annotations = pod["metadata"].get("annotations") or {}
        assert APPLIED not in annotations and DRY_RUN not in annotations
    assert podsizer_webhook.review_count("skipped", "deployer-or-hook-pod") == skipped_before + 2
