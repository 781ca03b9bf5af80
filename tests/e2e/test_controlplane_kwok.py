"""kwok nodes on the real control plane: what they offer the scheduler, what they report on resize."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from tests.controlplane.kube import Manifest, create_from_yaml, to_dict, wait_for
from tests.controlplane.nodes import GPU, NodeShape, wait_for_pod_running
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]

NodeFactory = Callable[..., list[str]]


def _pod(name: str, resources: str, node_selector: str = "") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  {node_selector}
  containers:
    - name: main
      image: registry.example/app:1
      resources: {resources}
"""


def test_kwok_nodes_report_allocatable_cpu_memory_and_gpus(
    admin_client: client.ApiClient, kwok_nodes: list[str]
) -> None:
    core = client.CoreV1Api(admin_client)
    nodes = [to_dict(admin_client, core.read_node(name)) for name in kwok_nodes]
    assert len(nodes) == 3
    for node in nodes:
        allocatable = node["status"]["allocatable"]
        assert (allocatable["cpu"], allocatable["memory"], allocatable[GPU]) == ("32", "128Gi", "8")
        ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"]
        assert ready == "True"


def test_gpu_pod_is_scheduled_only_where_gpus_fit(
    admin_client: client.ApiClient, namespace: str, make_kwok_nodes: NodeFactory
) -> None:
    (small,) = make_kwok_nodes(1, NodeShape(cpu="4", memory="8Gi", gpus=2, labels={"pool": namespace}))
    selector = f"nodeSelector: {{pool: {namespace}}}"
    fits = f"{{requests: {{cpu: '1', memory: 1Gi}}, limits: {{{GPU}: '2'}}}}"
    create_from_yaml(admin_client, _pod("fits", fits, selector), namespace=namespace)
    pod = wait_for_pod_running(admin_client, namespace, "fits")
    assert pod["spec"]["nodeName"] == small

    create_from_yaml(admin_client, _pod("too-big", fits, selector), namespace=namespace)
    core = client.CoreV1Api(admin_client)

    def unschedulable() -> Manifest | None:
        stored = to_dict(admin_client, core.read_namespaced_pod("too-big", namespace))
        conditions = {c["type"]: c for c in stored["status"].get("conditions") or []}
        scheduled = conditions.get("PodScheduled", {})
        return stored if scheduled.get("reason") == "Unschedulable" else None

    stored = wait_for(unschedulable, "the scheduler to report too-big Unschedulable")
    assert stored["status"]["phase"] == "Pending"
    assert "nodeName" not in stored["spec"]


def test_in_place_resize_is_accepted_and_reported_by_the_kwok_kubelet_stand_in(
    admin_client: client.ApiClient, namespace: str, kwok_nodes: list[str]
) -> None:
    """kube-apiserver 1.35 accepts pods/resize only for running containers whose status reports resources
    (our pod-ready stage does, as a kubelet would); our pod-resize stage then reports the new resources and
    the observed generation at once. No PodResizePending/PodResizeInProgress condition ever appears."""
    resources = "{requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 200m, memory: 128Mi}}"
    create_from_yaml(admin_client, _pod("web", resources), namespace=namespace)
    pod = wait_for_pod_running(admin_client, namespace, "web")
    assert pod["spec"]["nodeName"] in kwok_nodes
    (running,) = pod["status"]["containerStatuses"]
    assert running["resources"] == pod["spec"]["containers"][0]["resources"]
    assert pod["status"]["observedGeneration"] == pod["metadata"]["generation"] == 1

    core = client.CoreV1Api(admin_client)
    patch = {"spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "150m"}}}]}}
    answer = to_dict(
        admin_client,
        core.patch_namespaced_pod_resize(
            "web", namespace, patch, _content_type="application/strategic-merge-patch+json"
        ),
    )
    resized = {"requests": {"cpu": "150m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}
    assert answer["spec"]["containers"][0]["resources"] == resized
    assert answer["metadata"]["generation"] == 2

    def actuated() -> Manifest | None:
        stored = to_dict(admin_client, core.read_namespaced_pod("web", namespace))
        return stored if stored["status"].get("observedGeneration") == 2 else None

    stored = wait_for(actuated, "kwok to report the resize of web")
    (status,) = stored["status"]["containerStatuses"]
    assert status["resources"] == resized
    assert status["ready"] is True and "running" in status["state"]
    conditions = {c["type"] for c in stored["status"]["conditions"]}
    assert not conditions & {"PodResizePending", "PodResizeInProgress"}
