"""The real node for a test session: started once, early and in the background, with the workloads whose
history the scenarios read, so their scraping minutes overlap the rest of the suite; stopped at the end.

tests/conftest.py starts it at the beginning of a session that selected `realnode` tests (and moves those
tests to its end): the node comes up, the load workloads start and Prometheus scrapes them while the other
tests run. Missing parts skip the realnode tests loudly, or fail them under PODSIZER_REQUIRE_CONTROLPLANE.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.binaries import ROOT, find_binaries
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import create_namespace, create_objects
from tests.controlplane.node.kubelet import LABEL, TOLERATION
from tests.controlplane.node.node import RealNode
from tests.controlplane.node.parts import NodeParts, find_node_parts

REQUIRE_ENV = "PODSIZER_REQUIRE_CONTROLPLANE"
LOAD_NAMESPACE = "realnode-load"
ARTIFACTS = ROOT / "test-artifacts" / "realnode"


@dataclass(frozen=True)
class Load:
    """A Deployment of the load program on the real node: its profile arguments and its resources."""

    name: str
    args: tuple[str, ...]
    resources: dict[str, dict[str, str]]


# Scenario 1: a steady 300m CPU and 200 MiB, requests well below that (the recommendation must rise).
STEADY = Load(
    "steady",
    ("--profile=steady", "--cpu=300m", "--memory=200Mi"),
    {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
)
# Scenario 4: a leak of 4 MiB/s from 16 MiB towards 1 GiB under a 96 MiB limit: OOM-killed in ~20 s, again
# after each restart (the kubelet's back-off spaces them out).
LEAK = Load(
    "leak",
    ("--profile=leak", "--cpu=20m", "--memory=16Mi", "--leak=4Mi/s", "--max-memory=1Gi"),
    {"requests": {"cpu": "20m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "96Mi"}},
)
SESSION_LOADS = (STEADY, LEAK)


def on_real_node(spec: dict[str, Any]) -> dict[str, Any]:
    """A pod spec pinned to the real node: its label selected, its taint tolerated."""
    spec["nodeSelector"] = {**spec.get("nodeSelector", {}), LABEL: "true"}
    spec["tolerations"] = [*spec.get("tolerations", []), TOLERATION]
    return spec


def load_deployment(
    load: Load,
    image: str,
    replicas: int = 1,
    annotations: dict[str, str] | None = None,
    template_annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The Deployment of one load profile (container `main`, image pulled never: it was imported)."""
    labels = {"app": load.name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": load.name, "annotations": dict(annotations or {})},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": dict(template_annotations or {})},
                "spec": on_real_node(
                    {
                        "automountServiceAccountToken": False,
                        "terminationGracePeriodSeconds": 2,
                        "containers": [
                            {
                                "name": "main",
                                "image": image,
                                "imagePullPolicy": "Never",
                                "args": list(load.args),
                                "resources": load.resources,
                                "resizePolicy": [
                                    {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                                    {"resourceName": "memory", "restartPolicy": "NotRequired"},
                                ],
                            }
                        ],
                    }
                ),
            },
        },
    }


class NodeSession:
    """The node started in a thread of its own (start()); wait() returns it once up, or raises what stopped
    it; stop() has that thread stop it. The thread lives as long as the node: the node's processes die with
    the thread that started them (PR_SET_PDEATHSIG follows the parent thread, not the process)."""

    def __init__(self, plane: ControlPlane, parts: NodeParts) -> None:
        self.plane = plane
        self.node = RealNode(plane, parts)
        self.error: BaseException | None = None
        self.loads_started: datetime | None = None  # when the session's load Deployments were created
        self.timings: dict[str, float] = {}
        self.problems: list[str] = []
        self._up = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="realnode", daemon=True)

    def start(self) -> NodeSession:
        self._thread.start()
        return self

    def _run(self) -> None:
        t = time.monotonic()
        try:
            self.node.start()
            admin = self.plane.api_client()
            create_namespace(admin, LOAD_NAMESPACE)
            image = self.node.parts.refs["load"]
            loads = [load_deployment(load, image) for load in SESSION_LOADS]
            create_objects(admin, loads, namespace=LOAD_NAMESPACE)
            self.loads_started = datetime.now(UTC)
            self.timings = {**self.node.timings, "start total": round(time.monotonic() - t, 1)}
        except BaseException as exc:  # handed to the tests by wait()
            self.error = exc
        finally:
            self._up.set()
        self._stop.wait()
        try:
            self.node.copy_logs(ARTIFACTS / "logs")
        finally:
            self.problems = self.node.stop()
            self.node.remove_workdir()

    def wait(self, timeout_s: float = 600.0) -> RealNode:
        if not self._up.wait(timeout_s):
            raise TimeoutError(f"the real node did not start within {timeout_s:.0f} s")
        if self.error is not None:
            raise RuntimeError(f"the real node did not start: {self.error}") from self.error
        return self.node

    def stop(self, timeout_s: float = 120.0) -> list[str]:
        """Stops the node (from its own thread); what it left behind."""
        self._stop.set()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            return [f"the real node did not stop within {timeout_s:.0f} s"]
        return self.problems


def node_parts_or_skip() -> NodeParts:
    """The node's parts; a loud skip without them, a failure under PODSIZER_REQUIRE_CONTROLPLANE."""
    binaries, reason = find_binaries()
    parts, node_reason = find_node_parts() if binaries is not None else (None, "")
    if parts is None:
        why = reason or node_reason
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{REQUIRE_ENV} is set but {why}", pytrace=False)
        pytest.skip(f"REALNODE SKIPPED: {why}; set {REQUIRE_ENV}=1 to make this a failure")
    return parts


def node_parts_ready() -> bool:
    """Whether the node could start (for the early start, which must never skip the whole session)."""
    binaries, _ = find_binaries()
    return binaries is not None and find_node_parts()[0] is not None


@pytest.fixture(scope="session")
def real_node_session(control_plane: ControlPlane) -> Iterator[NodeSession]:
    """The session's NodeSession, started (in the background) when first asked for."""
    session = NodeSession(control_plane, node_parts_or_skip()).start()
    try:
        yield session
    finally:
        problems = session.stop()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "node-start.json").write_text(json.dumps(session.timings, indent=2) + "\n")
        assert problems == [], f"the real node left: {problems}"


@pytest.fixture(scope="session")
def real_node(real_node_session: NodeSession) -> RealNode:
    """The real node, Ready, its images imported, Prometheus scraping its kubelet, the load running."""
    return real_node_session.wait()


def artifact(name: str, data: dict[str, Any]) -> Path:
    """Writes a scenario's measured figures as JSON under test-artifacts/realnode/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return path
