"""The MutatingWebhookConfiguration (chart, plain manifests, OLM CSV) can never block or slow pod creation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from podsizer.modes import namespace_excluded
from podsizer.settings import WebhookSettings
from tests.integration.install.support import (
    MANIFESTS,
    NAMESPACE,
    SCENARIOS,
    Render,
    Scenario,
    load_yaml_docs,
    objects_of,
    olm_csv,
)

EXCLUDE = {"key": "podsizer.io/exclude", "operator": "NotIn", "values": ["true"]}
POD_CREATE = [
    {
        "operations": ["CREATE"],
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "resources": ["pods"],
        "scope": "Namespaced",
    }
]


def _check_hook(hook: Mapping[str, Any]) -> None:
    assert hook["failurePolicy"] == "Ignore"
    assert 1 <= hook["timeoutSeconds"] <= 5
    assert hook["sideEffects"] == "None"
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["reinvocationPolicy"] == "IfNeeded"
    assert hook["rules"] == POD_CREATE
    assert hook["objectSelector"]["matchExpressions"] == [EXCLUDE]


def _selector_excludes(hook: Mapping[str, Any]) -> set[str]:
    exprs = hook["namespaceSelector"]["matchExpressions"]
    assert EXCLUDE in exprs
    names = [e for e in exprs if e["key"] == "kubernetes.io/metadata.name"]
    assert len(names) == 1 and names[0]["operator"] == "NotIn"
    return set(names[0]["values"])


def _hooks(docs: list[dict[str, Any]]) -> list[Mapping[str, Any]]:
    configs = objects_of(docs, "MutatingWebhookConfiguration")
    assert len(configs) == 1
    assert not objects_of(docs, "ValidatingWebhookConfiguration")
    hooks: list[Mapping[str, Any]] = configs[0]["webhooks"]
    assert len(hooks) == 1
    return hooks


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_chart_webhook_invariants(scenario: Scenario, render: Render) -> None:
    docs = render(scenario)
    (hook,) = _hooks(docs)
    _check_hook(hook)
    assert {"kube-system", NAMESPACE} <= _selector_excludes(hook)
    service = hook["clientConfig"]["service"]
    assert service["path"] == "/mutate" and service["namespace"] == NAMESPACE
    assert any(s["metadata"]["name"] == service["name"] for s in objects_of(docs, "Service"))


def test_extra_excluded_namespaces_are_added(render: Render) -> None:
    (hook,) = _hooks(render(Scenario("x", ("webhook.excludeNamespaces={team-a,team-b}",))))
    assert _selector_excludes(hook) == {"kube-system", NAMESPACE, "team-a", "team-b"}


def test_webhook_pods_are_excluded_from_their_own_webhook(render: Render) -> None:
    deployments = objects_of(render(SCENARIOS[0]), "Deployment")
    assert deployments
    for dep in deployments:
        assert dep["spec"]["template"]["metadata"]["labels"]["podsizer.io/exclude"] == "true"


def test_plain_manifests_webhook_invariants() -> None:
    (hook,) = _hooks(load_yaml_docs(MANIFESTS / "install" / "podsizer.yaml"))
    _check_hook(hook)
    assert {"kube-system", NAMESPACE} <= _selector_excludes(hook)


def test_csv_webhook_definition_invariants() -> None:
    csv = olm_csv()
    (hook,) = csv["spec"]["webhookdefinitions"]
    _check_hook(hook)
    assert hook["type"] == "MutatingAdmissionWebhook"
    assert hook["webhookPath"] == "/mutate"
    assert hook["containerPort"] == 8443 and hook["targetPort"] == 8443
    deployments = {d["name"]: d for d in csv["spec"]["install"]["spec"]["deployments"]}
    container = deployments[hook["deploymentName"]]["spec"]["template"]["spec"]["containers"][0]
    assert {"containerPort": 8443, "name": "https", "protocol": "TCP"} in container["ports"]


def test_glob_patterns_reach_the_webhook_but_not_the_selectors_name_list(render: Render) -> None:
    docs = render(Scenario("x", ("webhook.excludeNamespaces={team-a,openshift-*,kube-*}",)))
    (hook,) = _hooks(docs)
    assert _selector_excludes(hook) == {"kube-system", NAMESPACE, "team-a"}
    (dep,) = [d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == "podsizer-webhook"]
    env = {e["name"]: e.get("value") for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["PODSIZER_EXCLUDED_NAMESPACES"] == "kube-system,team-a,openshift-*,kube-*"


def test_openshift_values_exclude_every_platform_namespace(render: Render) -> None:
    docs = render(Scenario("openshift", values_files=("values-openshift.yaml",)))
    (hook,) = _hooks(docs)
    exprs = hook["namespaceSelector"]["matchExpressions"]
    assert {"key": "openshift.io/run-level", "operator": "NotIn", "values": ["0", "1"]} in exprs
    assert "openshift" in _selector_excludes(hook)
    (dep,) = [d for d in objects_of(docs, "Deployment") if d["metadata"]["name"] == "podsizer-webhook"]
    env = {e["name"]: e.get("value") for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}
    patterns = set(env["PODSIZER_EXCLUDED_NAMESPACES"].split(","))
    assert {"openshift", "openshift-*", "kube-*"} <= patterns
    excluded = WebhookSettings(excluded_namespaces=env["PODSIZER_EXCLUDED_NAMESPACES"]).excluded_namespace_set
    for platform in ("openshift", "openshift-etcd", "openshift-ingress", "kube-node-lease", "kube-public"):
        assert namespace_excluded(platform, excluded), platform
    assert not namespace_excluded("shop", excluded) and not namespace_excluded("default", excluded)
