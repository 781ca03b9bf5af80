"""The control plane the e2e and browser suites share: one real kube-apiserver per session (started by the
first test that asks), an admin client, and the shipped CRDs. tests/conftest.py makes these fixtures visible
to every suite, so pytest builds each once per session.

Pods run: the cluster has kube-scheduler and kwok, which plays the kubelet of fake Nodes. Every session starts
with DEFAULT_NODE_COUNT (3) kwok nodes of DEFAULT_SHAPE (32 CPU, 128Gi, 8 nvidia.com/gpu, 110 pods each), so a
controller's pods are scheduled by the real scheduler, become Running and Ready at once, and are removed as
soon as they are deleted or evicted (pods/eviction honours PDBs: the apiserver's own). In-place resize:
Running pods report containerStatuses[].resources, so the apiserver accepts pods/resize; our kwok stage
then reports the new resources and status.observedGeneration == metadata.generation within ~1 s. It never
sets PodResizePending/PodResizeInProgress and never refuses a resize (docs/testing.md, "In-place resize").

    def test_running(admin_client, kwok_nodes, make_kwok_nodes, namespace):
        kwok_nodes                       # ['kwok-node-0', ...]: the session's nodes, Ready
        make_kwok_nodes(2, NodeShape(cpu="4", memory="8Gi", gpus=0))  # more, deleted after the test
        ...create a Deployment with 3 replicas...
        pods = wait_for_running_pods(admin_client, namespace, "ReplicaSet", rs_name, count=3)

Helpers in tests/controlplane/nodes.py: NodeShape, create_nodes/delete_nodes, wait_for_running_pods,
wait_for_pod_running, is_running.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.controlplane.binaries import ROOT, find_binaries
from tests.controlplane.cluster import ControlPlane, ControlPlaneError
from tests.controlplane.kube import create_from_yaml
from tests.controlplane.nodes import DEFAULT_SHAPE, NodeShape, create_nodes, delete_nodes
from tests.controlplane.rollouts import argo_crd_files

REQUIRE_ENV = "PODSIZER_REQUIRE_CONTROLPLANE"
LOGS_ENV = "PODSIZER_CONTROLPLANE_LOGS"
CRD_FILES = [
    ROOT / "manifests" / "crds" / "recommendation.yaml",
    ROOT / "manifests" / "crds" / "usagecheckpoint.yaml",
    *sorted((ROOT / "manifests" / "crds" / "testing").glob("*.yaml")),
]


def log_destination() -> Path:
    return Path(os.environ.get(LOGS_ENV) or ROOT / "test-artifacts" / "controlplane")


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """A started ControlPlane shared by the session; its logs are copied to test-artifacts/ when it stops.

    Missing binaries skip the test loudly, unless PODSIZER_REQUIRE_CONTROLPLANE is set (CI): then they fail.
    """
    binaries, reason = find_binaries()
    if binaries is None:
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{REQUIRE_ENV} is set but {reason}", pytrace=False)
        pytest.skip(f"E2E SKIPPED: {reason}; set {REQUIRE_ENV}=1 to make this a failure")
    plane = ControlPlane(binaries)
    failure: str | None = None
    try:
        plane.start()
    except ControlPlaneError as e:
        failure = str(e)
        plane.copy_logs(log_destination())
        plane.stop()
    if failure is not None:
        pytest.fail(f"control plane did not start: {failure}", pytrace=False)
    try:
        yield plane
    finally:
        try:
            plane.copy_logs(log_destination())
        finally:
            plane.stop()


@pytest.fixture(scope="session")
def admin_client(control_plane: ControlPlane) -> client.ApiClient:
    """An ApiClient authenticated as the cluster admin (system:masters)."""
    return control_plane.api_client()


@pytest.fixture(scope="session")
def podsizer_crds(admin_client: client.ApiClient) -> list[dict[str, Any]]:
    """The shipped CRDs (Recommendation, UsageCheckpoint; the DeploymentConfig stand-in) and Argo Rollouts'
    own CRDs (from scripts/build_tools.py, when built), created and Established."""
    stored: list[dict[str, Any]] = []
    for path in [*CRD_FILES, *argo_crd_files()]:
        stored.extend(create_from_yaml(admin_client, path))
    return stored


@pytest.fixture(scope="session")
def kwok_nodes(control_plane: ControlPlane) -> list[str]:
    """The names of the session's kwok nodes (Ready, DEFAULT_SHAPE each): pods scheduled there run."""
    return list(control_plane.node_names)


NodeFactory = Callable[..., list[str]]


@pytest.fixture
def make_kwok_nodes(admin_client: client.ApiClient) -> Iterator[NodeFactory]:
    """make_kwok_nodes(count, shape=DEFAULT_SHAPE, prefix="kwok-extra") -> names: more kwok nodes, Ready,
    deleted after the test (their pods go with them)."""
    made: list[str] = []

    def make(count: int, shape: NodeShape = DEFAULT_SHAPE, prefix: str = "kwok-extra") -> list[str]:
        names = [f"{prefix}-{uuid.uuid4().hex[:6]}" for _ in range(count)]
        made.extend(names)
        create_nodes(admin_client, names, shape)
        return names

    yield make
    delete_nodes(admin_client, made)
