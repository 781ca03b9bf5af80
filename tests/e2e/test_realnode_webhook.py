"""Scenario 2 on the real node: in auto mode the webhook's resources reach the container's cgroup.

The session's webhook (python -m webhook, the chart's webhook identity) mutates the pod the real ReplicaSet
controller creates; the real scheduler binds it to the real node; the kubelet has containerd and runc create
the container, and the kernel's cgroup v1 files show what it got: cpu.shares from the CPU request,
cpu.cfs_quota_us from the CPU limit, memory.limit_in_bytes from the memory limit.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from kubernetes import client

from podsizer.api import WorkloadRef
from tests.controlplane.kube import create_objects, wait_for, wait_for_pods
from tests.controlplane.node import cgroups
from tests.controlplane.node.fixtures import Load, load_deployment
from tests.controlplane.node.kubelet import NODE_NAME
from tests.controlplane.node.node import RealNode
from tests.controlplane.nodes import is_running
from tests.controlplane.podsizer_webhook import WebhookProcess
from tests.controlplane.recommendations import put_recommendation, simple_recommendation
from tests.controlplane.workloads import container_resources, deployment_replicaset, wait_until_webhook_acts
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.realnode, pytest.mark.timeout(TEST_TIMEOUT_S)]

SMALL = Load(
    "sized",
    ("--profile=steady", "--cpu=20m", "--memory=24Mi"),
    {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "100m", "memory": "128Mi"}},
)
RECOMMENDED = {"cpu": "200m", "memory": "96Mi"}
# keep-ratio (the default limit policy): the template's limit/request ratio (2) on the recommendation
EXPECTED_LIMITS = {"cpu": "400m", "memory": "192Mi"}
MI = 1024 * 1024


def test_auto_mode_resources_are_what_the_containers_cgroup_enforces(
    real_node: RealNode,
    podsizer_webhook: WebhookProcess,
    make_namespace: Callable[..., str],
    admin_client: client.ApiClient,
) -> None:
    ns = make_namespace(mode="auto")
    create_objects(
        admin_client, [load_deployment(SMALL, real_node.parts.refs["load"], replicas=0)], namespace=ns
    )
    put_recommendation(
        admin_client, simple_recommendation(WorkloadRef(ns, "Deployment", "sized"), {"main": RECOMMENDED})
    )
    rs = deployment_replicaset(admin_client, ns, "sized")
    wait_until_webhook_acts(
        admin_client,
        rs,
        lambda p: container_resources(p)["requests"] == RECOMMENDED,
        "the webhook to serve it",
    )
    client.AppsV1Api(admin_client).patch_namespaced_deployment_scale("sized", ns, {"spec": {"replicas": 1}})
    (pod,) = wait_for_pods(admin_client, ns, "ReplicaSet", rs["metadata"]["name"], 1, 120, running=is_running)

    assert pod["spec"]["nodeName"] == NODE_NAME
    assert container_resources(pod) == {"requests": RECOMMENDED, "limits": EXPECTED_LIMITS}
    applied = json.loads(pod["metadata"]["annotations"]["podsizer.io/applied"])
    assert applied["recommendation"] == "deployment-sized"
    cg = wait_for(lambda: _cgroup(pod), "the container's cgroup", 30)
    # the kubelet's conversions (pkg/kubelet/cm helpers_linux.go): shares = milliCPU * 1024 / 1000,
    # quota = milliCPU * period / 1000 with the 100 ms period
    assert cg.cpu_shares == 200 * 1024 // 1000
    assert (cg.cfs_quota_us, cg.cfs_period_us) == (400 * 100_000 // 1000, 100_000)
    assert cg.memory_limit_bytes == 192 * MI
    assert cg.pids, "no process in the container's cgroup"
    # what the kubelet reports it applied
    status = pod["status"]["containerStatuses"][0]
    assert status["resources"] == {"requests": RECOMMENDED, "limits": EXPECTED_LIMITS}


def _cgroup(pod: dict[str, object]) -> cgroups.ContainerCgroup | None:
    try:
        return cgroups.of(pod, "main")
    except (LookupError, FileNotFoundError):
        return None
