"""Owner resolution for real pod shapes: watched cache first, then what the pod says, then the store."""

from __future__ import annotations

from typing import Any

import pytest

from podsizer.api import WorkloadRef
from podsizer.cluster import OwnerCache
from podsizer.owners import resolve_pod
from tests.unit.webhook.builders import (
    dc_pod,
    deployer_pod,
    holder_with,
    hook_pod,
    recommendation,
    replicaset_pod,
    rollout_pod,
    statefulset_pod,
)


def _rs_event(rs: str, owner_api: str, owner_kind: str, owner: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": rs,
            "namespace": "shop",
            "ownerReferences": [
                {"apiVersion": owner_api, "kind": owner_kind, "name": owner, "controller": True}
            ],
        }
    }


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(
            replicaset_pod("web", "7d4b9c8f5"), WorkloadRef("shop", "Deployment", "web"), id="replicaset"
        ),
        pytest.param(
            replicaset_pod("my-api-v2", "5f6d7c8b9"),
            WorkloadRef("shop", "Deployment", "my-api-v2"),
            id="dashes in the name",
        ),
        pytest.param(
            rollout_pod("canary-demo", "6b8d9f7c4"),
            WorkloadRef("shop", "Rollout", "canary-demo"),
            id="rollout",
        ),
        pytest.param(
            dc_pod("cart", 3), WorkloadRef("shop", "DeploymentConfig", "cart"), id="deploymentconfig"
        ),
        pytest.param(statefulset_pod("db"), WorkloadRef("shop", "StatefulSet", "db"), id="statefulset"),
        pytest.param(hook_pod(), None, id="hook pod has no owner"),
    ],
)
def test_standalone_derivation(pod: dict[str, Any], expected: WorkloadRef | None) -> None:
    assert resolve_pod(pod, "shop", OwnerCache()) == expected


def test_deployer_pod_has_no_workload_even_with_an_rc_owner() -> None:
    # The deployer pod is controlled by the app's RC and carries the DC annotation: the resolver skips it.
    assert resolve_pod(deployer_pod(), "shop", OwnerCache()) is None


def test_mirror_pod_has_no_workload() -> None:
    pod = statefulset_pod("etcd")
    pod["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "3f1c2a"}
    assert resolve_pod(pod, "shop", OwnerCache()) is None


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("apps/v1", "ReplicationController"),
        ("example.com/v1", "ReplicaSet"),
        ("example.com/v1", "StatefulSet"),
    ],
)
def test_pod_controller_in_another_api_group_is_not_a_workload(api_version: str, kind: str) -> None:
    pod = statefulset_pod("db")
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": api_version, "kind": kind, "name": "db", "controller": True}
    ]
    assert resolve_pod(pod, "shop", OwnerCache()) is None


def test_replicaset_owner_in_another_api_group_is_not_a_workload() -> None:
    cache = OwnerCache()
    cache.handler("ReplicaSet").replace([_rs_event("web-7d4b9c8f5", "example.com/v1", "Deployment", "web")])
    assert resolve_pod(replicaset_pod("web"), "shop", cache) is None


def test_cache_wins_over_labels() -> None:
    cache = OwnerCache()
    cache.handler("ReplicaSet").replace(
        [_rs_event("web-7d4b9c8f5", "argoproj.io/v1alpha1", "Rollout", "web")]
    )
    assert resolve_pod(replicaset_pod("web"), "shop", cache) == WorkloadRef("shop", "Rollout", "web")


def test_experiment_replicasets_are_not_workloads() -> None:
    cache = OwnerCache()
    cache.handler("ReplicaSet").event(
        "ADDED", _rs_event("web-7d4b9c8f5", "argoproj.io/v1alpha1", "Experiment", "x")
    )
    assert resolve_pod(replicaset_pod("web"), "shop", cache) is None


def test_rc_owned_by_dc_in_cache_and_plain_rc_is_not_a_workload() -> None:
    cache = OwnerCache()
    cache.handler("ReplicationController").replace(
        [_rs_event("cart-3", "apps.openshift.io/v1", "DeploymentConfig", "cart-dc")]
    )
    assert resolve_pod(dc_pod("cart", 3), "shop", cache) == WorkloadRef("shop", "DeploymentConfig", "cart-dc")
    plain = dc_pod("legacy", 1)
    plain["metadata"]["labels"] = {}
    plain["metadata"]["annotations"] = {}
    assert resolve_pod(plain, "shop", OwnerCache()) is None


def test_deleted_cache_entry_falls_back_to_derivation() -> None:
    cache = OwnerCache()
    handler = cache.handler("ReplicaSet")
    event = _rs_event("web-7d4b9c8f5", "argoproj.io/v1alpha1", "Rollout", "web")
    handler.event("ADDED", event)
    handler.event("DELETED", event)
    assert resolve_pod(replicaset_pod("web"), "shop", cache) == WorkloadRef("shop", "Deployment", "web")


@pytest.mark.parametrize("kind", ["Deployment", "Rollout"])
def test_ambiguous_replicaset_is_settled_by_the_store(kind: str) -> None:
    pod = replicaset_pod("web")
    pod["metadata"]["labels"] = {"app": "web"}  # neither hash label
    snapshot, empty = holder_with(recommendation(kind=kind, name="web")).current(), holder_with().current()
    assert snapshot is not None and empty is not None
    assert resolve_pod(pod, "shop", OwnerCache(), snapshot.has) == WorkloadRef("shop", kind, "web")
    assert resolve_pod(pod, "shop", OwnerCache(), empty.has) is None


def test_bare_pod_and_job_pod_have_no_workload() -> None:
    bare = replicaset_pod()
    del bare["metadata"]["ownerReferences"]
    assert resolve_pod(bare, "shop", OwnerCache()) is None
    job = replicaset_pod()
    job["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "x", "controller": True}
    ]
    assert resolve_pod(job, "shop", OwnerCache()) is None
    not_controller = replicaset_pod()
    not_controller["metadata"]["ownerReferences"][0]["controller"] = False
    assert resolve_pod(not_controller, "shop", OwnerCache()) is None
