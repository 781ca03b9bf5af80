"""Least privilege: no Secrets cluster-wide, a webhook that writes nothing, CSV grants = chart's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tests.integration.install.support import (
    MANIFESTS,
    SCENARIOS,
    Render,
    Scenario,
    load_yaml_docs,
    objects_of,
    olm_csv,
)

READ = {"get", "list", "watch"}
WRITE = {"create", "update", "patch", "delete", "deletecollection", "*"}
Rule = Mapping[str, Any]


def allows(rules: Sequence[Rule], group: str, resource: str, verb: str) -> bool:
    """RBAC's rule matching (no resourceNames, no non-resource URLs)."""

    def has(r: Rule, key: str, value: str) -> bool:
        return value in r.get(key, []) or "*" in r.get(key, [])

    return any(
        has(r, "apiGroups", group) and has(r, "resources", resource) and has(r, "verbs", verb) for r in rules
    )


def _role_rules(docs: Sequence[Mapping[str, Any]], kind: str, binding_kind: str) -> dict[str, list[Rule]]:
    """Rules each service account is granted by (Cluster)RoleBindings, keyed by service account name."""
    roles = {r["metadata"]["name"]: r["rules"] for r in objects_of(docs, kind)}
    out: dict[str, list[Rule]] = {}
    for b in objects_of(docs, binding_kind):
        assert b["roleRef"]["kind"] == kind
        for s in b["subjects"]:
            assert s["kind"] == "ServiceAccount"
            out.setdefault(s["name"], []).extend(roles[b["roleRef"]["name"]])
    return out


def _check(cluster: Mapping[str, list[Rule]], namespaced: Mapping[str, list[Rule]]) -> None:
    assert set(cluster) == {"podsizer-recommender", "podsizer-webhook"}
    for sa, rules in cluster.items():
        for verb in READ | WRITE:
            assert not allows(rules, "", "secrets", verb), f"{sa} can {verb} secrets cluster-wide"
        for r in rules:
            assert "*" not in r["verbs"] and "*" not in r["resources"] and "*" not in r["apiGroups"], (sa, r)
    webhook = cluster["podsizer-webhook"] + list(namespaced.get("podsizer-webhook", []))
    for r in webhook:
        assert set(r["verbs"]) <= READ, f"webhook has write verbs: {r}"
    for verb in READ:
        assert allows(webhook, "podsizer.io", "recommendations", verb)
    for group, resource in [
        ("apps", "replicasets"),
        ("", "replicationcontrollers"),
        ("", "namespaces"),
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("argoproj.io", "rollouts"),
        ("apps.openshift.io", "deploymentconfigs"),
    ]:
        assert allows(webhook, group, resource, "watch"), resource
    assert not allows(webhook, "", "pods", "list"), "the webhook gets pods from the AdmissionReview"

    rec = cluster["podsizer-recommender"]
    for verb in ("create", "update", "patch"):
        assert allows(rec, "podsizer.io", "recommendations", verb)
    assert allows(rec, "podsizer.io", "recommendations/status", "update")
    for group, resource in [
        ("", "pods"),
        ("", "nodes"),
        ("apps", "replicasets"),
        ("", "replicationcontrollers"),
        ("autoscaling", "horizontalpodautoscalers"),
    ]:
        assert allows(rec, group, resource, "list") and not allows(rec, group, resource, "update"), resource
    assert not allows(rec, "coordination.k8s.io", "leases", "update"), (
        "leases must be namespaced, not cluster-wide"
    )
    lease = namespaced["podsizer-recommender"]
    for verb in ("get", "create", "update"):
        assert allows(lease, "coordination.k8s.io", "leases", verb)
    for rules in namespaced.values():
        assert not allows(rules, "", "secrets", "get")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_chart_rbac_is_least_privilege(scenario: Scenario, render: Render) -> None:
    docs = render(scenario)
    _check(_role_rules(docs, "ClusterRole", "ClusterRoleBinding"), _role_rules(docs, "Role", "RoleBinding"))
    for rb in objects_of(docs, "RoleBinding"):
        assert rb["metadata"]["namespace"] == "podsizer"


def test_plain_manifests_rbac_is_least_privilege() -> None:
    docs = load_yaml_docs(MANIFESTS / "install" / "podsizer.yaml")
    _check(_role_rules(docs, "ClusterRole", "ClusterRoleBinding"), _role_rules(docs, "Role", "RoleBinding"))


def test_csv_permissions_equal_the_charts(render: Render) -> None:
    spec = olm_csv()["spec"]["install"]["spec"]
    cluster = {p["serviceAccountName"]: p["rules"] for p in spec["clusterPermissions"]}
    namespaced = {p["serviceAccountName"]: p["rules"] for p in spec["permissions"]}
    _check(cluster, namespaced)
    docs = render(SCENARIOS[0])
    assert cluster == _role_rules(docs, "ClusterRole", "ClusterRoleBinding")
    assert namespaced == _role_rules(docs, "Role", "RoleBinding")
    deployments = {
        d["name"]: d["spec"]["template"]["spec"]["serviceAccountName"] for d in spec["deployments"]
    }
    assert set(deployments.values()) == set(cluster)


def test_allows_matches_rbac_semantics() -> None:
    rules = [{"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": ["get"]}]
    assert allows(rules, "apps", "replicasets", "get")
    assert not allows(rules, "apps", "replicasets", "list")
    assert not allows(rules, "", "replicasets", "get")
    assert allows([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}], "", "secrets", "get")
