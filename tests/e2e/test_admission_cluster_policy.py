"""A LimitRange in place (the apiserver's LimitRanger plugin, on by default): the webhook's patched pod is
accepted, where the plain recommendation would be rejected."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from kubernetes import client

from podsizer.api import WorkloadRef
from tests.controlplane.kube import Manifest, create_objects, dry_run_pod_of, wait_for_pods
from tests.controlplane.podsizer_webhook import WebhookProcess
from tests.controlplane.recommendations import put_recommendation, simple_recommendation
from tests.controlplane.workloads import deployment_replicaset, wait_until_webhook_acts, workload
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]

NamespaceFactory = Callable[..., str]
TEMPLATE = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}
# keep-ratio would make the cpu limit 500m; the LimitRange's max is 400m: the limit is clamped to it.
RECOMMENDED = {"cpu": "250m", "memory": "96Mi"}
EXPECTED = {"requests": {"cpu": "250m", "memory": "96Mi"}, "limits": {"cpu": "400m", "memory": "192Mi"}}
LIMIT_RANGE: Manifest = {
    "apiVersion": "v1",
    "kind": "LimitRange",
    "metadata": {"name": "cpu-ceiling"},
    "spec": {"limits": [{"type": "Container", "max": {"cpu": "400m"}, "maxLimitRequestRatio": {"cpu": "2"}}]},
}


def test_a_patched_pod_is_accepted_with_a_limit_range_in_place(
    admin_client: client.ApiClient, podsizer_webhook: WebhookProcess, make_namespace: NamespaceFactory
) -> None:
    ns = make_namespace(mode="auto")
    core = client.CoreV1Api(admin_client)
    core.create_namespaced_limit_range(ns, LIMIT_RANGE)  # type: ignore[arg-type]
    put_recommendation(
        admin_client, simple_recommendation(WorkloadRef(ns, "Deployment", "web"), {"main": RECOMMENDED})
    )
    create_objects(admin_client, [workload("apps/v1", "Deployment", "web", 0, TEMPLATE)], namespace=ns)
    rs = deployment_replicaset(admin_client, ns)
    probe = dry_run_pod_of(admin_client, rs)  # before the webhook acts: the template's own values pass

    unfitted = json.loads(json.dumps(probe))
    unfitted["metadata"] = {"generateName": "unfitted-", "namespace": ns}
    unfitted["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "250m", "memory": "96Mi"},
        "limits": {"cpu": "500m", "memory": "192Mi"},
    }
    with pytest.raises(client.ApiException) as rejected:
        core.create_namespaced_pod(ns, unfitted, dry_run="All")
    assert rejected.value.status == 403 and "maximum cpu usage per Container is 400m" in str(
        rejected.value.body
    )

    wait_until_webhook_acts(
        admin_client,
        rs,
        lambda pod: pod["spec"]["containers"][0]["resources"] == EXPECTED,
        "the webhook to apply deployment-web within the LimitRange",
    )
    client.AppsV1Api(admin_client).patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 1}})
    (pod,) = wait_for_pods(admin_client, ns, "ReplicaSet", rs["metadata"]["name"], count=1)
    assert pod["spec"]["containers"][0]["resources"] == EXPECTED
    record = json.loads(pod["metadata"]["annotations"]["podsizer.io/applied"])
    limits = {(c["field"], c["resource"]): c["to"] for c in record["changes"]}
    assert limits[("limits", "cpu")] == "400m"
