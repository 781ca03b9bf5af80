"""The real controller-manager turns workloads into stored pods, and the real apiserver enforces RBAC."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import (
    api_error_message,
    create_from_yaml,
    pods_owned_by,
    to_dict,
    wait_for,
    wait_for_pods,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

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


def test_deployment_gets_replicaset_and_pending_pods(admin_client: client.ApiClient, namespace: str) -> None:
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
    pods = wait_for_pods(admin_client, namespace, "ReplicaSet", rs_name, count=2)
    for pod in pods:
        assert pod["metadata"]["name"].startswith(f"{rs_name}-")
        assert pod["status"]["phase"] == "Pending"
        assert "nodeName" not in pod["spec"]
        assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "64Mi"}


def test_statefulset_creates_ordinal_zero_and_waits_for_it(
    admin_client: client.ApiClient, namespace: str
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
    apps = client.AppsV1Api(admin_client)
    (pod,) = wait_for_pods(admin_client, namespace, "StatefulSet", "db", count=1)
    assert pod["metadata"]["name"] == "db-0"

    # OrderedReady: db-1 only comes once db-0 is Running and Ready, which never happens without nodes.
    def one_replica() -> bool:
        sts = to_dict(admin_client, apps.read_namespaced_stateful_set("db", namespace))
        return bool(sts.get("status", {}).get("replicas") == 1)

    wait_for(one_replica, "StatefulSet status.replicas == 1")
    time.sleep(3)
    names = [p["metadata"]["name"] for p in pods_owned_by(admin_client, namespace, "StatefulSet", "db")]
    assert names == ["db-0"]


def test_daemonset_without_nodes_creates_no_pods(admin_client: client.ApiClient, namespace: str) -> None:
    create_from_yaml(
        admin_client,
        f"""
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent}}
spec:{_template("agent")}
""",
        namespace=namespace,
    )
    apps = client.AppsV1Api(admin_client)

    def observed() -> dict[str, Any] | None:
        ds = to_dict(admin_client, apps.read_namespaced_daemon_set("agent", namespace))
        status: dict[str, Any] = ds.get("status", {})
        return status if status.get("observedGeneration") == 1 else None

    status = wait_for(observed, "the DaemonSet controller to observe generation 1")
    assert status["desiredNumberScheduled"] == 0
    assert status["currentNumberScheduled"] == 0
    assert pods_owned_by(admin_client, namespace, "DaemonSet", "agent") == []


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
