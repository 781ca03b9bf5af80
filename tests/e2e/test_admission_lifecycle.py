"""The webhook over time: a changed Recommendation reaches the next pod; a dead webhook never blocks pods."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from podsizer.api import API_GROUP, API_VERSION, PLURAL, WorkloadRef
from tests.controlplane.kube import create_objects, wait_for_pods
from tests.controlplane.podsizer_webhook import WebhookProcess, register_webhook
from tests.controlplane.recommendations import put_recommendation, simple_recommendation
from tests.controlplane.workloads import (
    container_resources,
    deployment_replicaset,
    wait_until_webhook_acts,
    workload,
)
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]

NamespaceFactory = Callable[..., str]
TEMPLATE = {"requests": {"cpu": "100m", "memory": "64Mi"}}
FAIL_OPEN_LABEL = "podsizer.io/e2e-fail-open"
FAIL_OPEN_CONFIGURATION = "podsizer-e2e-fail-open"


def _requests(pod: dict[str, object]) -> object:
    resources = container_resources(pod)
    return resources.get("requests") if isinstance(resources, dict) else None


def test_changed_recommendation_reaches_the_next_pod(
    admin_client: client.ApiClient, podsizer_webhook: WebhookProcess, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(mode="auto")
    target = WorkloadRef(ns, "Deployment", "api")
    put_recommendation(
        admin_client, simple_recommendation(target, {"main": {"cpu": "250m", "memory": "96Mi"}})
    )
    create_objects(admin_client, [workload("apps/v1", "Deployment", "api", 0, TEMPLATE)], namespace=ns)
    apps = client.AppsV1Api(admin_client)
    rs = deployment_replicaset(admin_client, ns)
    first = {"cpu": "250m", "memory": "96Mi"}
    wait_until_webhook_acts(admin_client, rs, lambda p: _requests(p) == first, "the first recommendation")
    apps.patch_namespaced_deployment_scale("api", ns, {"spec": {"replicas": 1}})
    (old_pod,) = wait_for_pods(admin_client, ns, "ReplicaSet", rs["metadata"]["name"], count=1)
    assert _requests(old_pod) == first

    # The recommender's next run: only status changes, through the status subresource.
    client.CustomObjectsApi(admin_client).patch_namespaced_custom_object_status(
        API_GROUP,
        API_VERSION,
        ns,
        PLURAL,
        target.recommendation_name,
        {
            "status": {
                "containers": [
                    {
                        "name": "main",
                        "requests": {"cpu": "400m", "memory": "128Mi"},
                        "limits": {},
                        "confidence": 0.9,
                        "reason": "updated",
                    }
                ]
            }
        },
        _content_type="application/merge-patch+json",
    )
    second = {"cpu": "400m", "memory": "128Mi"}
    wait_until_webhook_acts(admin_client, rs, lambda p: _requests(p) == second, "the updated recommendation")
    apps.patch_namespaced_deployment_scale("api", ns, {"spec": {"replicas": 2}})
    pods = wait_for_pods(admin_client, ns, "ReplicaSet", rs["metadata"]["name"], count=2)
    (new_pod,) = [p for p in pods if p["metadata"]["name"] != old_pod["metadata"]["name"]]
    assert _requests(new_pod) == second


@pytest.fixture
def own_webhook(
    admin_client: client.ApiClient,
    podsizer_crds: list[dict[str, object]],
    webhook_kubeconfig: Path,
    tmp_path: Path,
) -> Iterator[WebhookProcess]:
    """A webhook process of this test's own (it gets killed), registered for FAIL_OPEN_LABEL namespaces."""
    hook = WebhookProcess(tmp_path, webhook_kubeconfig)
    hook.start()
    register_webhook(admin_client, FAIL_OPEN_CONFIGURATION, hook, {FAIL_OPEN_LABEL: "true"})
    yield hook
    client.AdmissionregistrationV1Api(admin_client).delete_mutating_webhook_configuration(
        FAIL_OPEN_CONFIGURATION
    )
    hook.stop()


def test_killed_webhook_fails_open_and_mutation_resumes_after_restart(
    admin_client: client.ApiClient, own_webhook: WebhookProcess, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(mode="auto", labels={FAIL_OPEN_LABEL: "true"}, webhook=False)
    recommended = {"cpu": "300m", "memory": "80Mi"}
    target = WorkloadRef(ns, "Deployment", "web")
    put_recommendation(admin_client, simple_recommendation(target, {"main": recommended}))
    create_objects(admin_client, [workload("apps/v1", "Deployment", "web", 0, TEMPLATE)], namespace=ns)
    apps = client.AppsV1Api(admin_client)
    rs = deployment_replicaset(admin_client, ns)
    rs_name = rs["metadata"]["name"]
    wait_until_webhook_acts(admin_client, rs, lambda p: _requests(p) == recommended, "the webhook to apply")

    own_webhook.kill()
    started = time.monotonic()
    apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 2}})
    pods = wait_for_pods(admin_client, ns, "ReplicaSet", rs_name, count=2)
    # failurePolicy Ignore: created unchanged, and without waiting out timeoutSeconds per pod.
    assert time.monotonic() - started < 30
    assert all(_requests(p) == TEMPLATE["requests"] for p in pods)
    assert all("podsizer.io/applied" not in (p["metadata"].get("annotations") or {}) for p in pods)

    own_webhook.start()
    wait_until_webhook_acts(admin_client, rs, lambda p: _requests(p) == recommended, "the restarted webhook")
    before = {p["metadata"]["name"] for p in pods}
    apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 3}})
    after = wait_for_pods(admin_client, ns, "ReplicaSet", rs_name, count=3)
    (new_pod,) = [p for p in after if p["metadata"]["name"] not in before]
    assert _requests(new_pod) == recommended
