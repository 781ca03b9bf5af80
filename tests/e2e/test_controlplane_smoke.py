"""Real controllers turn workloads into pods that the real scheduler binds to kwok nodes, where they run;
the real apiserver enforces RBAC."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import (
    api_error_message,
    create_from_yaml,
    to_dict,
    wait_for,
    wait_for_pods,
)
from tests.controlplane.nodes import wait_for_running_pods
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]

CONTAINER = """
      containers:
        - name: main
          image: registry.example/app:1
          resources:
            requests: {cpu: 100m, memory: 64Mi}
"""


def _template(app: str) -> str:
    return f"""
  selector:
    matchLabels: {{app: {app}}}
  template:
    metadata:
      labels: {{app: {app}}}
    spec:{CONTAINER}"""


def test_deployment_gets_replicaset_and_pods_running_on_kwok_nodes(
    admin_client: client.ApiClient, namespace: str, kwok_nodes: list[str]
) -> None:
    create_from_yaml(
        admin_client,
        f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: 2{_template("web")}
""",
        namespace=namespace,
    )
    apps = client.AppsV1Api(admin_client)

    def replicaset() -> dict[str, Any] | None:
        items = to_dict(admin_client, apps.list_namespaced_replica_set(namespace))["items"]
        return items[0] if items else None

    rs = wait_for(replicaset, "the Deployment's ReplicaSet")
    (owner,) = rs["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Deployment", "web", True)
    rs_name = rs["metadata"]["name"]
    pods = wait_for_running_pods(admin_client, namespace, "ReplicaSet", rs_name, count=2)
    assert len(pods) == 2
    for pod in pods:
        assert pod["metadata"]["name"].startswith(f"{rs_name}-")
        assert pod["spec"]["nodeName"] in kwok_nodes  # bound by kube-scheduler
        assert pod["status"]["phase"] == "Running"  # kwok's pod-ready stage
        assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "True"
        assert pod["status"]["podIP"]
        assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "64Mi"}


def test_statefulset_creates_ordinal_one_only_once_zero_is_ready(
    admin_client: client.ApiClient, namespace: str, kwok_nodes: list[str]
) -> None:
    create_from_yaml(
        admin_client,
        f"""
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db}}
spec:
  serviceName: db
  replicas: 2{_template("db")}
""",
        namespace=namespace,
    )
    # OrderedReady: db-1 is created only once db-0 is Running and Ready (kwok makes it so).
    pods = wait_for_running_pods(admin_client, namespace, "StatefulSet", "db", count=2)
    by_name = {p["metadata"]["name"]: p for p in pods}
    assert sorted(by_name) == ["db-0", "db-1"]
    ready_at = {c["type"]: c["lastTransitionTime"] for c in by_name["db-0"]["status"]["conditions"]}["Ready"]
    assert by_name["db-1"]["metadata"]["creationTimestamp"] >= ready_at  # RFC 3339 UTC: ordered as text
    assert {p["spec"]["nodeName"] for p in pods} <= set(kwok_nodes)


def test_daemonset_runs_one_pod_per_kwok_node(
    admin_client: client.ApiClient, namespace: str, kwok_nodes: list[str]
) -> None:
    template = _template("agent") + "      nodeSelector: {type: kwok}\n"  # not other tests' bare Nodes
    create_from_yaml(
        admin_client,
        f"""
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent}}
spec:{template}""",
        namespace=namespace,
    )
    apps = client.AppsV1Api(admin_client)

    def observed() -> dict[str, Any] | None:
        ds = to_dict(admin_client, apps.read_namespaced_daemon_set("agent", namespace))
        status: dict[str, Any] = ds.get("status", {})
        return status if status.get("observedGeneration") == 1 else None

    status = wait_for(observed, "the DaemonSet controller to observe generation 1")
    assert status["desiredNumberScheduled"] == len(kwok_nodes)
    pods = wait_for_running_pods(admin_client, namespace, "DaemonSet", "agent", count=len(kwok_nodes))
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(kwok_nodes)


def test_replicationcontroller_creates_pods(admin_client: client.ApiClient, namespace: str) -> None:
    create_from_yaml(
        admin_client,
        f"""
apiVersion: v1
kind: ReplicationController
metadata: {{name: legacy-1}}
spec:
  replicas: 2
  selector: {{app: legacy}}
  template:
    metadata:
      labels: {{app: legacy}}
    spec:{CONTAINER}""",
        namespace=namespace,
    )
    pods = wait_for_pods(admin_client, namespace, "ReplicationController", "legacy-1", 2)
    assert all(p["metadata"]["name"].startswith("legacy-1-") for p in pods)


def test_user_without_roles_cannot_list_secrets(control_plane: ControlPlane, namespace: str) -> None:
    admin = client.CoreV1Api(control_plane.api_client())
    assert admin.list_namespaced_secret(namespace).items is not None
    nobody = client.CoreV1Api(control_plane.client_for_user("nobody", ["e2e-testers"]))
    with pytest.raises(client.ApiException) as refused:
        nobody.list_namespaced_secret(namespace)
    assert refused.value.status == 403
    assert 'User "nobody" cannot list resource "secrets"' in api_error_message(refused.value)


def test_service_account_token_gets_exactly_its_role(
    control_plane: ControlPlane, admin_client: client.ApiClient, namespace: str
) -> None:
    create_from_yaml(
        admin_client,
        f"""
apiVersion: v1
kind: ServiceAccount
metadata: {{name: reader}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: pod-reader}}
rules:
  - {{apiGroups: [""], resources: [pods], verbs: [list]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: reader-pods}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}}
subjects:
  - {{kind: ServiceAccount, name: reader, namespace: {namespace}}}
""",
        namespace=namespace,
    )
    reader = client.CoreV1Api(control_plane.client_for_service_account(namespace, "reader"))
    # RBAC caches are informer-fed: the binding can take a moment to be seen.
    wait_for(lambda: reader.list_namespaced_pod(namespace).items is not None, "the RoleBinding to apply")
    with pytest.raises(client.ApiException) as refused:
        reader.list_namespaced_secret(namespace)
    assert refused.value.status == 403
    message = api_error_message(refused.value)
    assert f'User "system:serviceaccount:{namespace}:reader" cannot list resource "secrets"' in message
