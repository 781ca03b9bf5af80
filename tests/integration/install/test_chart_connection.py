"""The chart's Prometheus connection values become the recommender's and the console's settings."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest

from podsizer.settings import ConsoleSettings, RecommenderSettings, load
from recommender.input.prometheus.connection import OPENSHIFT_THANOS_URL, effective
from tests.integration.install.support import ROOT, Render, Scenario, objects_of

CONSOLE = ("console.enabled=true", "console.source=prometheus")


def _env(docs: list[dict[str, Any]], name: str) -> dict[str, str]:
    dep = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == name)
    return {
        e["name"]: str(e.get("value", "x")) for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]
    }


def test_tenant_header_ca_and_basic_auth_reach_both_processes(render: Render) -> None:
    sets = (
        *CONSOLE,
        "recommender.prometheus.url=https://mimir.example:443/prometheus",
        "recommender.prometheus.headers=X-Scope-OrgID=team-a",
        "recommender.prometheus.caFile=/etc/podsizer/ca.pem",
        "recommender.prometheus.basicAuthUser=reader",
        "recommender.prometheus.basicAuthPasswordFile=/etc/podsizer/password",
    )
    docs = render(Scenario("prometheus-connection", sets=sets))
    for name, role in (("podsizer-recommender", RecommenderSettings), ("podsizer-console", ConsoleSettings)):
        settings = load(role, env=_env(docs, name))
        assert settings.prometheus_headers == (("X-Scope-OrgID", "team-a"),), name
        assert str(settings.prometheus_ca_file) == "/etc/podsizer/ca.pem", name
        assert settings.prometheus_basic_auth_user == "reader", name


def test_the_openshift_preset_leaves_the_url_to_the_preset(render: Render) -> None:
    docs = render(
        Scenario("prometheus-openshift", sets=(*CONSOLE, "recommender.prometheus.preset=openshift"))
    )
    env = _env(docs, "podsizer-recommender")
    assert "PODSIZER_PROMETHEUS_URL" not in env
    settings = load(RecommenderSettings, env=env)
    assert effective(settings, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}).prometheus_url == OPENSHIFT_THANOS_URL


def test_by_default_only_the_url_is_rendered(render: Render) -> None:
    env = _env(render(Scenario("prometheus-default", sets=CONSOLE)), "podsizer-recommender")
    assert sorted(k for k in env if k.startswith("PODSIZER_PROMETHEUS_")) == ["PODSIZER_PROMETHEUS_URL"]


@pytest.mark.parametrize("bad", ["recommender.prometheus.preset=okd", "recommender.prometheus.caFile=ca.pem"])
def test_bad_connection_values_are_refused_by_the_schema(render: Render, bad: str) -> None:
    with pytest.raises(AssertionError, match=r"values don.t meet the specifications"):
        render(Scenario("prometheus-bad", sets=(bad,)))


SECRETS = (
    "recommender.prometheus.caSecret=prom-ca",
    "recommender.prometheus.basicAuthUser=reader",
    "recommender.prometheus.basicAuthPasswordSecret=prom-password",
    "recommender.prometheus.clientCertSecret=prom-client-tls",
)


def test_connection_secrets_are_mounted_where_their_file_settings_point(render: Render) -> None:
    docs = render(Scenario("prometheus-secrets", sets=(*CONSOLE, *SECRETS)))
    for name, role in (("podsizer-recommender", RecommenderSettings), ("podsizer-console", ConsoleSettings)):
        dep = next(d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == name)
        pod = dep["spec"]["template"]["spec"]
        secret_of = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
        mounted = {m["mountPath"]: secret_of.get(m["name"]) for m in pod["containers"][0]["volumeMounts"]}
        settings = load(role, env=_env(docs, name))
        files = {
            settings.prometheus_ca_file: ("prom-ca", "ca.crt"),
            settings.prometheus_basic_auth_password_file: ("prom-password", "password"),
            settings.prometheus_client_cert_file: ("prom-client-tls", "tls.crt"),
            settings.prometheus_client_key_file: ("prom-client-tls", "tls.key"),
        }
        for path, (secret, key) in files.items():
            assert path is not None and path.name == key, (name, path)
            assert mounted[str(path.parent)] == secret, (name, path, mounted)


def test_a_secret_and_the_file_setting_it_supplies_together_are_refused(render: Render) -> None:
    both = ("recommender.prometheus.caSecret=prom-ca", "recommender.prometheus.caFile=/etc/ca.pem")
    refused = r"caSecret and recommender\.prometheus\.caFile both name the file"
    with pytest.raises(AssertionError, match=refused):
        render(Scenario("prometheus-secret-and-file", sets=both))


def _documented_amp_sets() -> tuple[str, ...]:
    """The --set values of docs/install.md's `helm install` for AWS Managed Prometheus (with sigv4Region)."""
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "docs" / "install.md").read_text(), re.DOTALL)
    (block,) = [b for b in blocks if "sigv4Region" in b and "helm install" in b]
    words = shlex.split(block.replace("\\\n", " "))
    sets = tuple(words[i + 1] for i, w in enumerate(words) if w == "--set")
    return tuple(s.replace("$REGISTRY", "registry.example.com/team") for s in sets)


def test_the_documented_amp_install_signs_in_both_processes_with_their_irsa_roles(render: Render) -> None:
    docs = render(Scenario("prometheus-amp", sets=_documented_amp_sets()))
    for name, role in (("podsizer-recommender", RecommenderSettings), ("podsizer-console", ConsoleSettings)):
        settings = load(role, env=_env(docs, name))
        assert settings.prometheus_sigv4_region == "us-east-1", name
        assert settings.prometheus_sigv4_service == "aps", name
        assert str(settings.prometheus_url).startswith("https://aps-workspaces.us-east-1.amazonaws.com/"), (
            name
        )
        (sa,) = [a for a in objects_of(docs, "ServiceAccount") if a["metadata"]["name"] == name]
        assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].startswith("arn:aws:iam::"), name
