"""The chart's NetworkPolicies: webhook port only from the API server and metrics sources; an off switch;
client certificate authentication, on by default, wired into the webhook Deployment."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.integration.install.support import (
    CHART,
    NAMESPACE,
    RELEASE,
    Render,
    Scenario,
    objects_of,
    run_helm,
)

WEBHOOK = f"{RELEASE}-webhook"


def _policy(docs: list[dict[str, Any]], name: str) -> Mapping[str, Any]:
    found = [d for d in objects_of(docs, "NetworkPolicy") if d["metadata"]["name"] == name]
    assert len(found) == 1, [d["metadata"]["name"] for d in objects_of(docs, "NetworkPolicy")]
    return found[0]


def _peers_on(policy: Mapping[str, Any], port: object) -> list[Mapping[str, Any]]:
    rules = [r for r in policy["spec"]["ingress"] if any(p["port"] == port for p in r["ports"])]
    return [peer for r in rules for peer in r["from"]]


def test_the_webhook_port_admits_only_the_configured_control_plane_and_metrics_sources(
    render: Render,
) -> None:
    monitoring = "networkPolicy.metrics.from[0].namespaceSelector.matchLabels.team=monitoring"
    scenario = Scenario(
        "np-cidrs",
        (
            "networkPolicy.apiServer.cidrs={10.0.0.0/24}",
            "networkPolicy.apiServer.exceptCidrs={10.0.0.128/25}",
            monitoring,
        ),
    )
    policy = _policy(render(scenario), WEBHOOK)
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "webhook"
    peers = _peers_on(policy, "https")
    assert {"ipBlock": {"cidr": "10.0.0.0/24", "except": ["10.0.0.128/25"]}} in peers
    assert {"namespaceSelector": {"matchLabels": {"team": "monitoring"}}} in peers
    assert all(p.get("ipBlock", {}).get("cidr") != "0.0.0.0/0" for p in peers)
    assert all(r["from"] for r in policy["spec"]["ingress"])  # never an empty (allow-all) source list


def test_openshift_values_admit_the_host_network_and_cluster_monitoring(render: Render) -> None:
    docs = render(Scenario("service-ca", values_files=("values-openshift.yaml",)))
    peers = _peers_on(_policy(docs, WEBHOOK), "https")
    host = {"matchLabels": {"policy-group.network.openshift.io/host-network": ""}}
    assert {"namespaceSelector": host} in peers
    assert not any("ipBlock" in p for p in peers)
    recommender = _policy(docs, f"{RELEASE}-recommender")
    assert _peers_on(recommender, 8080)


def test_network_policies_can_be_switched_off(render: Render) -> None:
    docs = render(Scenario("np-off", ("networkPolicy.enabled=false",)))
    assert objects_of(docs, "NetworkPolicy") == []


def test_an_empty_source_list_is_refused() -> None:
    sets = [
        "--set",
        "networkPolicy.apiServer.cidrs=null",
        "--set",
        "networkPolicy.apiServer.kubernetesEndpoints=false",
    ]
    proc = run_helm(["template", RELEASE, str(CHART), "-n", NAMESPACE, *sets], check=False)
    assert proc.returncode != 0
    assert "networkPolicy.apiServer" in proc.stderr


@pytest.mark.parametrize("names", [(), ("kube-apiserver", "apiserver-proxy")])
def test_client_auth_mounts_the_ca_and_sets_the_webhook_settings(
    render: Render, names: tuple[str, ...]
) -> None:
    sets = ["webhook.clientAuth.caConfigMap=apiserver-client-ca"]
    if names:
        sets.append("webhook.clientAuth.allowedNames={" + ",".join(names) + "}")
    docs = render(Scenario(f"client-auth-{len(names)}", tuple(sets)))
    deployment = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == WEBHOOK)
    pod = deployment["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["PODSIZER_CLIENT_CA_FILE"] == "/etc/podsizer/client-ca/ca.crt"
    assert env["PODSIZER_CLIENT_ALLOWED_NAMES"] == ",".join(names)
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["client-ca"]["configMap"]["name"] == "apiserver-client-ca"
    mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert mounts["client-ca"] == "/etc/podsizer/client-ca"


def _webhook_pod(docs: list[dict[str, Any]]) -> Mapping[str, Any]:
    deployment = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == WEBHOOK)
    pod: Mapping[str, Any] = deployment["spec"]["template"]["spec"]
    return pod


def _env(pod: Mapping[str, Any]) -> dict[str, str | None]:
    return {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}


def test_client_auth_is_on_by_default_with_the_charts_own_client_certificate(render: Render) -> None:
    """generate: a client CA and the API server's client certificate (CN podsizer-apiserver-client, client
    auth usage) in Secret <release>-webhook-client; the webhook verifies with its ca.crt and that name."""
    docs = render(Scenario("generate"))
    pod = _webhook_pod(docs)
    assert _env(pod)["PODSIZER_CLIENT_CA_FILE"] == "/etc/podsizer/client-ca/ca.crt"
    assert _env(pod)["PODSIZER_CLIENT_ALLOWED_NAMES"] == "podsizer-apiserver-client"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["client-ca"]["secret"] == {
        "secretName": f"{WEBHOOK}-client",
        "items": [{"key": "ca.crt", "path": "ca.crt"}],
    }
    (secret,) = [d for d in objects_of(docs, "Secret") if d["metadata"]["name"] == f"{WEBHOOK}-client"]
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    ca = x509.load_pem_x509_certificate(data["ca.crt"])
    cert = x509.load_pem_x509_certificate(data["tls.crt"])
    cert.verify_directly_issued_by(ca)
    cn = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert cn == "podsizer-apiserver-client" and x509.ExtendedKeyUsageOID.CLIENT_AUTH in usages
    key = serialization.load_pem_private_key(data["tls.key"], None)
    assert key.public_key().public_numbers() == cert.public_key().public_numbers()  # type: ignore[union-attr]


def test_with_cert_manager_the_client_certificate_comes_from_the_issuer(render: Render) -> None:
    docs = render(Scenario("cert-manager", ("certs.mode=cert-manager",)))
    (client,) = [d for d in objects_of(docs, "Certificate") if d["metadata"]["name"] == f"{WEBHOOK}-client"]
    assert client["spec"]["secretName"] == f"{WEBHOOK}-client"
    assert client["spec"]["commonName"] == "podsizer-apiserver-client"
    assert "client auth" in client["spec"]["usages"]
    assert _env(_webhook_pod(docs))["PODSIZER_CLIENT_ALLOWED_NAMES"] == "podsizer-apiserver-client"


def test_client_auth_can_be_turned_off_and_is_off_on_openshift(render: Render) -> None:
    for docs in (
        render(Scenario("client-auth-off", ("webhook.clientAuth.enabled=false",))),
        render(Scenario("service-ca", values_files=("values-openshift.yaml",))),
    ):
        assert "PODSIZER_CLIENT_CA_FILE" not in _env(_webhook_pod(docs))
        assert not [d for d in objects_of(docs, "Secret") if d["metadata"]["name"] == f"{WEBHOOK}-client"]


def test_client_auth_without_a_ca_the_chart_can_make_is_refused_naming_the_values() -> None:
    sets = ["--set", "certs.mode=secret", "--set", "certs.caBundle=Y2EK", "--set", "certs.secretName=tls"]
    proc = run_helm(["template", RELEASE, str(CHART), "-n", NAMESPACE, *sets], check=False)
    assert proc.returncode != 0
    assert (
        "webhook.clientAuth.caConfigMap" in proc.stderr and "webhook.clientAuth.enabled=false" in proc.stderr
    )


def test_without_the_api_servers_addresses_at_render_time_any_address_is_admitted(render: Render) -> None:
    """helm template cannot look up the kubernetes Service's endpoints: the policy then admits any address
    (and client authentication still holds); helm install writes the addresses (tests/e2e)."""
    peers = _peers_on(_policy(render(Scenario("generate")), WEBHOOK), "https")
    assert {"ipBlock": {"cidr": "0.0.0.0/0"}} in peers
