"""Scenario 3 on the real node: the updater resizes running containers in place, and the kubelet refuses a
memory limit below what the container uses.

The updater (in the test process, the chart's podsizer-updater ServiceAccount, `in-place-or-recreate`)
patches `pods/resize`; the real kubelet 1.35 changes the running containers' cgroups through containerd and
runc (no restart: same pod uid, same container id, restartCount 0) and reports what it applied in
status.containerStatuses[].resources. A memory limit lowered below the container's current usage is refused
by the kubelet (pkg/kubelet/kuberuntime validateMemoryResizeAction: "attempting to set container ... memory
limit (...) below current usage (...)"): condition PodResizeInProgress with reason Error, the cgroup and the
reported resources unchanged, the container still running. (The updater's own guard, `memory-below-usage`,
needs metrics.k8s.io, which this cluster has not: without it the updater never lowers a memory limit in
place, docs/updater.md; the refusal shown here is the kubelet's, for a resize asked through the same API.)
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from podsizer.api import WorkloadRef
from tests.controlplane.kube import Manifest, create_objects, pods_owned_by, to_dict, wait_for, wait_for_pods
from tests.controlplane.node import cgroups
from tests.controlplane.node.fixtures import Load, load_deployment
from tests.controlplane.node.node import RealNode
from tests.controlplane.nodes import is_running
from tests.controlplane.podsizer_updater import UpdaterRun
from tests.controlplane.recommendations import put_recommendation, simple_recommendation
from tests.controlplane.workloads import deployment_replicaset
from tests.support.progress import TEST_TIMEOUT_S, pod_states, status_progress, wait_progressing

pytestmark = [pytest.mark.realnode, pytest.mark.timeout(TEST_TIMEOUT_S)]

MI = 1024 * 1024
WORKER = Load(
    "resized",
    ("--profile=steady", "--cpu=30m", "--memory=48Mi"),
    {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}},
)
RECOMMENDED = {"cpu": "250m", "memory": "96Mi"}
# keep-ratio: every value goes up, so the updater resizes in place
EXPECTED = {"requests": {"cpu": "250m", "memory": "96Mi"}, "limits": {"cpu": "500m", "memory": "192Mi"}}


def _container_status(pod: Manifest) -> Manifest:
    status: Manifest = pod["status"]["containerStatuses"][0]
    return status


def _pods(admin: client.ApiClient, ns: str, rs: str) -> list[Manifest]:
    return pods_owned_by(admin, ns, "ReplicaSet", rs)


def test_updater_resizes_running_containers_in_place_and_the_kubelet_refuses_memory_below_usage(
    real_node: RealNode,
    start_updater: Callable[..., UpdaterRun],
    make_namespace: Callable[..., str],
    admin_client: client.ApiClient,
) -> None:
    ns = make_namespace(mode="auto", webhook=False)
    body = load_deployment(
        WORKER,
        real_node.parts.refs["load"],
        replicas=2,
        annotations={"podsizer.io/update-mode": "in-place-or-recreate"},
    )
    create_objects(admin_client, [body], namespace=ns)
    rs = deployment_replicaset(admin_client, ns, "resized")["metadata"]["name"]
    before = wait_for_pods(admin_client, ns, "ReplicaSet", rs, 2, 120, running=is_running)
    cg_before = {p["metadata"]["uid"]: cgroups.of(p, "main") for p in before}
    assert {c.memory_limit_bytes for c in cg_before.values()} == {128 * MI}
    ids_before = {p["metadata"]["uid"]: _container_status(p)["containerID"] for p in before}

    put_recommendation(
        admin_client, simple_recommendation(WorkloadRef(ns, "Deployment", "resized"), {"main": RECOMMENDED})
    )
    run = start_updater()

    def resized(pods: list[Manifest]) -> list[Manifest] | None:
        done = [p for p in pods if _container_status(p).get("resources") == EXPECTED]
        return pods if len(pods) == 2 and len(done) == 2 else None

    # Progress: each pod's spec (the updater's resize) and status (the kubelet's conditions, what it runs);
    # a real kubelet may leave a pending resize to its periodic sync (a minute and more).
    after = wait_progressing(
        lambda: _pods(admin_client, ns, rs),
        resized,
        lambda pods: (pod_states(pods), [status_progress(p) for p in pods]),
        "both pods resized and reported by the kubelet",
        stall_s=180,
        interval_s=1,
    )
    run.stop()
    assert run.count("resized", "in-place") == 2, run.summary()
    assert run.count("evicted") == 0, run.summary()
    for pod in after:
        uid = pod["metadata"]["uid"]
        assert uid in cg_before, "a pod was replaced, not resized"
        status = _container_status(pod)
        assert status["containerID"] == ids_before[uid] and status["restartCount"] == 0
        assert pod["spec"]["containers"][0]["resources"] == EXPECTED
        cg = cgroups.of(pod, "main")
        assert cg.cpu_shares == 250 * 1024 // 1000
        assert cg.cfs_quota_us == 500 * 100_000 // 1000
        assert cg.memory_limit_bytes == 192 * MI
        assert cg.pids, "the container is not running"

    # A memory limit below the container's usage (48 MiB held): refused by the kubelet.
    pod = after[0]
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    usage = cgroups.of(pod, "main").memory_usage_bytes
    assert usage > 32 * MI, usage
    shrink = {"cpu": "250m", "memory": "32Mi"}
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "resources": {"requests": shrink, "limits": {"cpu": "500m", "memory": "32Mi"}},
                }
            ]
        }
    }
    client.CoreV1Api(admin_client).patch_namespaced_pod_resize(name, ns, patch)

    def refused() -> Manifest | None:
        p = to_dict(admin_client, client.CoreV1Api(admin_client).read_namespaced_pod(name, ns))
        cond = next(
            (c for c in p["status"].get("conditions", []) if c["type"] == "PodResizeInProgress"), None
        )
        return p if cond is not None and cond.get("reason") == "Error" else None

    stuck = wait_for(refused, "the kubelet to refuse the memory decrease", 90, interval_s=1)
    cond = next(c for c in stuck["status"]["conditions"] if c["type"] == "PodResizeInProgress")
    assert "below current usage" in cond["message"], cond
    assert stuck["metadata"]["uid"] == uid
    assert _container_status(stuck)["resources"] == EXPECTED  # what runs is unchanged
    assert _container_status(stuck)["restartCount"] == 0
    cg = cgroups.of(stuck, "main")
    assert cg.memory_limit_bytes == 192 * MI and cg.pids
