"""The control plane the e2e and browser suites share: one real kube-apiserver per session (started by the
first test that asks), an admin client, and the shipped CRDs. tests/conftest.py makes these fixtures visible
to every suite, so pytest builds each once per session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.controlplane.binaries import ROOT, find_binaries
from tests.controlplane.cluster import ControlPlane, ControlPlaneError
from tests.controlplane.kube import create_from_yaml

REQUIRE_ENV = "PODSIZER_REQUIRE_CONTROLPLANE"
LOGS_ENV = "PODSIZER_CONTROLPLANE_LOGS"
CRD_FILES = [
    ROOT / "manifests" / "crds" / "recommendation.yaml",
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
    """The shipped CRDs (Recommendation; Rollout and DeploymentConfig stand-ins), created and Established."""
    stored: list[dict[str, Any]] = []
    for path in CRD_FILES:
        stored.extend(create_from_yaml(admin_client, path))
    return stored
