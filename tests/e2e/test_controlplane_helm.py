"""`helm install` of the packaged chart (scripts/package_chart.py's .tgz, what a chart repository serves) into
the real apiserver: every object lands and runs; upgrade; uninstall."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, dynamic

from tests.controlplane.binaries import ROOT, load_script
from tests.controlplane.chart import find_helm
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import load_manifests, to_dict, wait_for, wait_for_pods
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]
RELEASE = "e2e"


def _helm(helm: Path, kubeconfig: Path, *args: str) -> str:
    argv = [str(helm), *args, "--kubeconfig", str(kubeconfig)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The chart as scripts/package_chart.py packages it (lint, package, index): the .tgz."""
    helm = find_helm()
    if helm is None:
        pytest.skip("no helm (scripts/build_tools.py tools builds it into $PODSIZER_CACHE/bin)")
    script = load_script("package_chart", ROOT / "scripts" / "package_chart.py")
    tgz: Path = script.package(helm, tmp_path_factory.mktemp("chart-repo"), None)
    return tgz


@pytest.fixture
def helm_release(
    control_plane: ControlPlane, podsizer_crds: list[dict[str, Any]], package: Path
) -> Iterator[tuple[Path, str]]:
    """Installs the packaged chart as release `e2e` into a fresh namespace; uninstalls it afterwards."""
    helm = find_helm()
    assert helm is not None  # the package fixture skips without it
    namespace = f"helm-{uuid.uuid4().hex[:6]}"
    kubeconfig = control_plane.kubeconfig_path
    _helm(helm, kubeconfig, "install", RELEASE, str(package), "--namespace", namespace, "--create-namespace")
    try:
        yield helm, namespace
    finally:
        subprocess.run(
            [str(helm), "uninstall", RELEASE, "-n", namespace, "--kubeconfig", str(kubeconfig)],
            capture_output=True,
            timeout=120,
            check=False,
        )


def test_helm_install_creates_every_object_and_the_controllers_run_them(
    control_plane: ControlPlane, admin_client: client.ApiClient, helm_release: tuple[Path, str]
) -> None:
    helm, namespace = helm_release
    kubeconfig = control_plane.kubeconfig_path
    status = json.loads(_helm(helm, kubeconfig, "status", RELEASE, "-n", namespace, "-o", "json"))
    assert status["info"]["status"] == "deployed"

    manifests = load_manifests(_helm(helm, kubeconfig, "get", "manifest", RELEASE, "-n", namespace))
    dyn = dynamic.DynamicClient(admin_client)
    for m in manifests:
        resource = dyn.resources.get(api_version=m["apiVersion"], kind=m["kind"])
        ns = namespace if resource.namespaced else None
        stored = resource.get(name=m["metadata"]["name"], namespace=ns)
        assert stored.metadata.uid, (m["kind"], m["metadata"]["name"])

    apps = client.AppsV1Api(admin_client)
    deployments = [m for m in manifests if m["kind"] == "Deployment"]
    assert deployments, "the chart has no Deployment"
    for d in deployments:
        name = d["metadata"]["name"]
        replicas = d["spec"].get("replicas", 1)

        def replicaset(name: str = name) -> dict[str, Any] | None:
            for rs in to_dict(admin_client, apps.list_namespaced_replica_set(namespace))["items"]:
                if any(r["name"] == name for r in rs["metadata"].get("ownerReferences", [])):
                    found: dict[str, Any] = rs
                    return found
            return None

        rs = wait_for(replicaset, f"the ReplicaSet of {name}")

        for pod in wait_for_pods(admin_client, namespace, "ReplicaSet", rs["metadata"]["name"], replicas):
            assert pod["spec"]["serviceAccountName"] == d["spec"]["template"]["spec"]["serviceAccountName"]

    (mwc,) = [m for m in manifests if m["kind"] == "MutatingWebhookConfiguration"]
    stored_mwc = to_dict(
        admin_client,
        client.AdmissionregistrationV1Api(admin_client).read_mutating_webhook_configuration(
            mwc["metadata"]["name"]
        ),
    )
    (hook,) = stored_mwc["webhooks"]
    assert hook["failurePolicy"] == "Ignore"
    assert hook["timeoutSeconds"] <= 5
    assert hook["clientConfig"]["service"]["namespace"] == namespace
    # The serving pair; the CA and its key (for renewal) sit in a second, Opaque Secret no pod mounts.
    (secret,) = [
        m for m in manifests if m["kind"] == "Secret" and m["metadata"]["name"].endswith("-webhook-tls")
    ]
    stored_secret = client.CoreV1Api(admin_client).read_namespaced_secret(
        secret["metadata"]["name"], namespace
    )
    assert stored_secret.data is not None
    assert base64.b64decode(hook["clientConfig"]["caBundle"]) == base64.b64decode(
        stored_secret.data["ca.crt"]
    )


@pytest.fixture
def api_server_slice(admin_client: client.ApiClient) -> Iterator[str]:
    """EndpointSlice default/kubernetes as a cluster publishes it. This control plane cannot publish its own:
    its address is 127.0.0.1, which the API refuses ("may not be in the loopback range")."""
    body = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "labels": {"kubernetes.io/service-name": "kubernetes"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.5"]}],
        "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}],
    }
    discovery = client.DiscoveryV1Api(admin_client)
    discovery.create_namespaced_endpoint_slice("default", body)
    try:
        yield "10.0.0.5/32"
    finally:
        discovery.delete_namespaced_endpoint_slice("kubernetes", "default")


def test_helm_install_restricts_the_webhook_port_to_the_api_server_and_keeps_its_client_certificate(
    control_plane: ControlPlane,
    admin_client: client.ApiClient,
    api_server_slice: str,
    helm_release: tuple[Path, str],
    package: Path,
) -> None:
    """The NetworkPolicy admits the kubernetes Service's endpoints (the API servers), read at install, not
    any address; the API server's client certificate survives an upgrade (helm lookup)."""
    helm, namespace = helm_release
    net = client.NetworkingV1Api(admin_client)
    policy = to_dict(
        admin_client, net.read_namespaced_network_policy(f"{RELEASE}-podsizer-webhook", namespace)
    )
    peers = [p for rule in policy["spec"]["ingress"] for p in rule["from"]]
    assert {"ipBlock": {"cidr": api_server_slice}} in peers
    assert all(p.get("ipBlock", {}).get("cidr") != "0.0.0.0/0" for p in peers)
    core = client.CoreV1Api(admin_client)
    secret = f"{RELEASE}-podsizer-webhook-client"
    before = core.read_namespaced_secret(secret, namespace).data
    _helm(helm, control_plane.kubeconfig_path, "upgrade", RELEASE, str(package), "--namespace", namespace)
    assert core.read_namespaced_secret(secret, namespace).data == before


def test_helm_uninstall_removes_the_webhook_configuration(
    control_plane: ControlPlane, admin_client: client.ApiClient, helm_release: tuple[Path, str]
) -> None:
    helm, namespace = helm_release
    manifests = load_manifests(
        _helm(helm, control_plane.kubeconfig_path, "get", "manifest", RELEASE, "-n", namespace)
    )
    (mwc,) = [m for m in manifests if m["kind"] == "MutatingWebhookConfiguration"]
    _helm(helm, control_plane.kubeconfig_path, "uninstall", RELEASE, "-n", namespace)
    api = client.AdmissionregistrationV1Api(admin_client)
    listed = to_dict(admin_client, api.list_mutating_webhook_configuration())
    names = [m["metadata"]["name"] for m in listed["items"]]
    assert mwc["metadata"]["name"] not in names
    assert client.AppsV1Api(admin_client).list_namespaced_deployment(namespace).items == []
