"""kwok fake nodes: Nodes with allocatable CPU, memory and GPUs; waiting for Running pods."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes import client

from tests.controlplane.kube import Manifest, create_objects, to_dict, wait_for, wait_for_pods
from tests.support.progress import DEFAULT_STALL_S

STAGES_FILE = Path(__file__).resolve().parent / "kwok" / "stages.yaml"
# kwok manages only the Nodes carrying this annotation (so a bare Node a test creates stays kubelet-less).
MANAGED_ANNOTATION = "kwok.x-k8s.io/node"
MANAGED_VALUE = "fake"
# Every kwok node carries this label and taint-free; tests that want "a kwok node" select on the label.
TYPE_LABEL = "type"
TYPE_VALUE = "kwok"
GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class NodeShape:
    """What one fake node offers: allocatable (= capacity) CPU, memory, GPUs and pod slots, and labels."""

    cpu: str = "32"
    memory: str = "128Gi"
    gpus: int = 8
    pods: int = 110
    labels: Mapping[str, str] = field(default_factory=dict)

    def resources(self) -> dict[str, str]:
        """The node's capacity and allocatable, as the kubelet would report them."""
        values = {"cpu": self.cpu, "memory": self.memory, "pods": str(self.pods)}
        if self.gpus:
            values[GPU] = str(self.gpus)
        return values


DEFAULT_SHAPE = NodeShape()
DEFAULT_NODE_COUNT = 3


def node_manifest(name: str, shape: NodeShape) -> Manifest:
    """A Node kwok will manage: the managed annotation, the kwok labels, status capacity and allocatable."""
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/role": "agent",
        "node-role.kubernetes.io/agent": "",
        TYPE_LABEL: TYPE_VALUE,
        **shape.labels,
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "annotations": {MANAGED_ANNOTATION: MANAGED_VALUE}, "labels": labels},
        "status": {"capacity": shape.resources(), "allocatable": shape.resources()},
    }


def create_nodes(
    api_client: client.ApiClient,
    names: Sequence[str],
    shape: NodeShape = DEFAULT_SHAPE,
    timeout_s: float = 60.0,
) -> list[Manifest]:
    """Creates kwok Nodes named `names` and waits until kwok has made each Ready; returns them as stored."""
    create_objects(api_client, [node_manifest(name, shape) for name in names])
    return [wait_for_node_ready(api_client, name, timeout_s) for name in names]


def delete_nodes(api_client: client.ApiClient, names: Iterable[str]) -> None:
    """Deletes Nodes (their pods are then removed by the pod garbage collector); missing ones are fine."""
    core = client.CoreV1Api(api_client)
    for name in names:
        try:
            core.delete_node(name)
        except client.ApiException as e:
            if e.status != 404:
                raise


def is_ready(obj: Manifest) -> bool:
    """Whether a Node's or Pod's Ready condition is True."""
    conditions = obj.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def wait_for_node_ready(api_client: client.ApiClient, name: str, timeout_s: float = 60.0) -> Manifest:
    """Waits until Node `name` is Ready (kwok's node-initialize stage) and returns it."""
    core = client.CoreV1Api(api_client)

    def check() -> Manifest | None:
        node = to_dict(api_client, core.read_node(name))
        return node if is_ready(node) else None

    return wait_for(check, f"kwok node {name} Ready", timeout_s)


def is_running(pod: Manifest) -> bool:
    """Whether a pod is bound to a node, in phase Running and Ready (kwok's pod-ready stage)."""
    status = pod.get("status", {})
    return bool(pod["spec"].get("nodeName")) and status.get("phase") == "Running" and is_ready(pod)


def wait_for_running_pods(
    api_client: client.ApiClient,
    namespace: str,
    owner_kind: str,
    owner_name: str,
    count: int,
    stall_s: float = DEFAULT_STALL_S,
) -> list[Manifest]:
    """Waits until exactly `count` pods owned by owner_kind/owner_name exist and all are Running and Ready
    (following progress: wait_for_pods)."""
    return wait_for_pods(api_client, namespace, owner_kind, owner_name, count, stall_s, running=is_running)


def wait_for_pod_running(
    api_client: client.ApiClient, namespace: str, name: str, timeout_s: float = 60.0
) -> Manifest:
    """Waits until pod namespace/name is scheduled, Running and Ready, and returns it."""
    core = client.CoreV1Api(api_client)

    def check() -> Manifest | None:
        pod = to_dict(api_client, core.read_namespaced_pod(name, namespace))
        return pod if is_running(pod) else None

    return wait_for(check, f"pod {namespace}/{name} Running", timeout_s)
