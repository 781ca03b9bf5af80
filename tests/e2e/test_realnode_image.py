"""Scenario 5 on the real node: the podsizer image, built from the project's Dockerfile, runs as the
webhook under the chart's securityContext, and the apiserver calls it for pods of the kwok nodes.

The chart's webhook objects (`helm template`: ServiceAccount, RBAC, Deployment, Service, TLS Secret,
MutatingWebhookConfiguration with clientConfig.service) are created as rendered, with the image imported
into containerd and the Deployment pinned to the real node. What OpenShift's restricted-v2 SCC admission adds
to a pod is added by hand (no SCC admission here): a uid from the namespace's range, the fsGroup. The kernel's
view of the running process is the proof: uid 1000680000, gid 0, a read-only root filesystem. The apiserver
reaches the webhook at its Service's endpoint (--enable-aggregator-routing: the pod IP on the node's bridge),
verifying the chart's certificate for the Service's name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import httpx
import pytest
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from podsizer.api import WorkloadRef
from tests.controlplane.chart import find_helm, render
from tests.controlplane.cluster import ADMISSION_CLIENT, ControlPlane
from tests.controlplane.kube import Manifest, create_namespace, create_objects, load_manifests, wait_for_pods
from tests.controlplane.node import cgroups
from tests.controlplane.node.fixtures import on_real_node
from tests.controlplane.node.kubelet import NODE_NAME
from tests.controlplane.node.node import RealNode
from tests.controlplane.nodes import TYPE_LABEL, TYPE_VALUE, is_running
from tests.controlplane.recommendations import put_recommendation, simple_recommendation
from tests.controlplane.workloads import (
    container_resources,
    deployment,
    deployment_replicaset,
    wait_until_webhook_acts,
)
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.realnode, pytest.mark.timeout(TEST_TIMEOUT_S)]

RELEASE, NAMESPACE = "node", "podsizer-node"
TEMPLATES = (
    "templates/serviceaccounts.yaml",
    "templates/rbac-webhook.yaml",
    "templates/webhook-deployment.yaml",
    "templates/webhook-admission.yaml",
)
SCC_UID = (
    1000680000  # restricted-v2 picks the first uid of the namespace's range (openshift.io/sa.scc.uid-range)
)
RECOMMENDED = {"cpu": "150m", "memory": "80Mi"}
CLIENT_CA_CONFIGMAP = "apiserver-client-ca"
"""The CA of the client certificate the test apiserver presents to webhooks (its AdmissionConfiguration), as
an administrator gives it to the chart (webhook.clientAuth.caConfigMap): admission stays authenticated."""


def _values(node: RealNode) -> list[str]:
    repository, tag = node.parts.refs["podsizer"].rsplit(":", 1)
    return [
        f"image.repository={repository}",
        f"image.tag={tag}",
        "image.pullPolicy=Never",
        "webhook.replicas=1",
        "webhook.podDisruptionBudget.enabled=false",
        "recommender.enabled=false",
        "certs.renewal.enabled=false",
        f"webhook.clientAuth.caConfigMap={CLIENT_CA_CONFIGMAP}",
        f"webhook.clientAuth.allowedNames[0]={ADMISSION_CLIENT}",
    ]


def _as_openshift_admits(objs: list[Manifest]) -> list[Manifest]:
    """The Deployment on the real node, with what restricted-v2's admission sets: runAsUser and fsGroup."""
    for obj in objs:
        if obj["kind"] == "Deployment":
            spec = on_real_node(obj["spec"]["template"]["spec"])
            spec["securityContext"] = {
                **spec.get("securityContext", {}),
                "runAsUser": SCC_UID,
                "fsGroup": SCC_UID,
            }
    return objs


@pytest.fixture
def chart_webhook(
    real_node: RealNode,
    control_plane: ControlPlane,
    admin_client: client.ApiClient,
    podsizer_crds: list[Manifest],
) -> Iterator[Manifest]:
    """The chart's webhook running the podsizer image on the real node, Ready; removed afterwards (its
    MutatingWebhookConfiguration is cluster-wide)."""
    helm = find_helm()
    if helm is None:
        pytest.skip("helm is not built (scripts/build_tools.py tools)")
    real_node.import_podsizer_image()
    objs = _as_openshift_admits(
        load_manifests(
            render(helm, TEMPLATES, control_plane.binaries.version, NAMESPACE, RELEASE, _values(real_node))
        )
    )
    create_namespace(admin_client, NAMESPACE)
    ca = control_plane.admission_client_ca_file.read_text()
    create_objects(
        admin_client,
        [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": CLIENT_CA_CONFIGMAP, "namespace": NAMESPACE},
                "data": {"ca.crt": ca},
            }
        ],
    )
    create_objects(admin_client, objs)
    configs = [o["metadata"]["name"] for o in objs if o["kind"] == "MutatingWebhookConfiguration"]
    try:
        (dep,) = [o for o in objs if o["kind"] == "Deployment"]
        rs = deployment_replicaset(admin_client, NAMESPACE, dep["metadata"]["name"])
        (pod,) = wait_for_pods(
            admin_client, NAMESPACE, "ReplicaSet", rs["metadata"]["name"], 1, 180, running=is_running
        )
        yield pod
    finally:
        for name in configs:
            client.AdmissionregistrationV1Api(admin_client).delete_mutating_webhook_configuration(name)
        client.CoreV1Api(admin_client).delete_namespace(NAMESPACE)


def _reviews(pod: Manifest, outcome: str) -> float:
    """podsizer_webhook_reviews_total{outcome} summed, from the webhook pod's /metrics at its pod IP."""
    text = httpx.get(f"https://{pod['status']['podIP']}:8443/metrics", verify=False, timeout=10).text
    return sum(
        s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "podsizer_webhook_reviews_total" and s.labels.get("outcome") == outcome
    )


def test_the_image_runs_as_the_charts_webhook_and_mutates_kwok_pods(
    chart_webhook: Manifest, admin_client: client.ApiClient, make_namespace: Callable[..., str]
) -> None:
    pod = chart_webhook
    assert pod["spec"]["nodeName"] == NODE_NAME
    (container,) = pod["spec"]["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    # the kernel's view of the running webhook process
    cg = cgroups.of(pod, container["name"])
    assert cg.pids
    ids = cgroups.process_ids(cg.pids[0])
    assert ids["Uid"].split() == [str(SCC_UID)] * 4, ids
    assert ids["Gid"].split() == ["0"] * 4, ids
    assert "ro" in cgroups.root_mount_options(cg.pids[0])

    # a pod for a kwok node, in a namespace only the chart's webhook serves (not the session's)
    ns = make_namespace(mode="auto", webhook=False)
    body = deployment("shop", "main", {"requests": {"cpu": "50m", "memory": "32Mi"}})
    body["spec"]["template"]["spec"]["nodeSelector"] = {TYPE_LABEL: TYPE_VALUE}
    create_objects(admin_client, [body], namespace=ns)
    put_recommendation(
        admin_client, simple_recommendation(WorkloadRef(ns, "Deployment", "shop"), {"main": RECOMMENDED})
    )
    rs = deployment_replicaset(admin_client, ns, "shop")
    applied_before = _reviews(pod, "applied")
    wait_until_webhook_acts(
        admin_client,
        rs,
        lambda p: container_resources(p)["requests"] == RECOMMENDED,
        "the chart's webhook on the real node to serve it",
        timeout_s=60,
    )
    client.AppsV1Api(admin_client).patch_namespaced_deployment_scale("shop", ns, {"spec": {"replicas": 1}})
    (mutated,) = wait_for_pods(
        admin_client, ns, "ReplicaSet", rs["metadata"]["name"], 1, 60, running=is_running
    )
    assert mutated["spec"]["nodeName"] != NODE_NAME
    assert container_resources(mutated)["requests"] == RECOMMENDED
    assert (
        json.loads(mutated["metadata"]["annotations"]["podsizer.io/applied"])["recommendation"]
        == "deployment-shop"
    )
    assert _reviews(pod, "applied") > applied_before
