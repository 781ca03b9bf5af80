"""The chart's NetworkPolicies: webhook port only from the API server and metrics sources; an off switch;
client certificate authentication wired into the webhook Deployment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

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
    proc = run_helm(
        ["template", RELEASE, str(CHART), "-n", NAMESPACE, "--set", "networkPolicy.apiServer.cidrs=null"],
        check=False,
    )
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


def test_without_client_auth_no_client_ca_is_set(render: Render) -> None:
    docs = render(Scenario("generate"))
    deployment = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == WEBHOOK)
    env = {e["name"] for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert "PODSIZER_CLIENT_CA_FILE" not in env
