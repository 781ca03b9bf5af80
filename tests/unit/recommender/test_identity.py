"""Owner chains resolve to workloads; deployer/hook, bare and unknown-owner pods are skipped with a reason."""

import pytest

from podsizer.api import WorkloadRef
from podsizer.owners import OwnerGraph, PodOwner, Skipped

GRAPH = OwnerGraph.build(
    pods=[
        PodOwner("shop", "web-7d9f8c6b5-x2x9z", "ReplicaSet", "web-7d9f8c6b5"),
        PodOwner("shop", "canary-6b5-abcde", "ReplicaSet", "canary-6b5"),
        PodOwner("shop", "cart-3-q8w7e", "ReplicationController", "cart-3"),
        PodOwner(
            "shop",
            "cart-3-deploy",
            "ReplicationController",
            "cart-3",
            labels={"openshift.io/deployer-pod-for.name": "cart-3"},
        ),
        PodOwner(
            "shop",
            "cart-3-hook-pre",
            None,
            None,
            labels={"openshift.io/deployer-pod.type": "hook-pre"},
        ),
        PodOwner("shop", "db-0", "StatefulSet", "db"),
        PodOwner("kube-system", "node-exporter-abcde", "DaemonSet", "node-exporter"),
        PodOwner("shop", "bare", None, None),
        PodOwner("shop", "exp-1-abcde", "ReplicaSet", "exp-1"),
        PodOwner("shop", "job-abcde", "Job", "nightly"),
        PodOwner("shop", "report-29467800-abcde", "Job", "report-29467800"),
        PodOwner("shop", "train-fghij", "Job", "train"),
        PodOwner("shop", "orphan-abc", "ReplicaSet", "orphan"),
    ],
    links=[
        ("shop", "ReplicaSet", "web-7d9f8c6b5", "Deployment", "web"),
        ("shop", "ReplicaSet", "canary-6b5", "Rollout", "canary"),
        ("shop", "ReplicationController", "cart-3", "DeploymentConfig", "cart"),
        ("shop", "ReplicaSet", "exp-1", "Experiment", "exp"),
        ("shop", "Job", "report-29467800", "CronJob", "report"),
        ("shop", "Job", "train", "", ""),  # kube_job_owner with owner_kind "<none>": a bare Job
    ],
)


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        ("web-7d9f8c6b5-x2x9z", WorkloadRef("shop", "Deployment", "web")),
        ("canary-6b5-abcde", WorkloadRef("shop", "Rollout", "canary")),
        ("cart-3-q8w7e", WorkloadRef("shop", "DeploymentConfig", "cart")),
        ("db-0", WorkloadRef("shop", "StatefulSet", "db")),
        ("report-29467800-abcde", WorkloadRef("shop", "CronJob", "report")),
        ("train-fghij", WorkloadRef("shop", "Job", "train")),
    ],
)
def test_owner_chain_resolves(pod: str, expected: WorkloadRef) -> None:
    assert GRAPH.resolve("shop", pod) == expected


def test_daemonset() -> None:
    assert GRAPH.resolve("kube-system", "node-exporter-abcde") == WorkloadRef(
        "kube-system", "DaemonSet", "node-exporter"
    )


@pytest.mark.parametrize(
    ("pod", "reason"),
    [
        ("cart-3-deploy", "deployer or hook"),
        ("cart-3-hook-pre", "deployer or hook"),
        ("cart-9-deploy", "deployer or hook"),
        ("bare", "no controller"),
        ("exp-1-abcde", "unsupported kind Experiment"),
        ("job-abcde", "owner Job/nightly has no known controller"),
        ("orphan-abc", "no known controller"),
        ("never-seen", "no owner information"),
    ],
)
def test_skipped_with_reason(pod: str, reason: str) -> None:
    result = GRAPH.resolve("shop", pod)
    assert isinstance(result, Skipped)
    assert reason in result.reason
