"""Least privilege: no Secrets cluster-wide, a webhook whose one write is Events, UsageCheckpoints for the
recommender only, CSV grants = chart's."""

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


# Built-in ClusterRoles the chart may bind, with the rules Kubernetes gives them.
AUTH_DELEGATOR: list[Rule] = [
    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
    {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
]
BUILTIN_CLUSTER_ROLES = {"system:auth-delegator": AUTH_DELEGATOR}


def _role_rules(docs: Sequence[Mapping[str, Any]], kind: str, binding_kind: str) -> dict[str, list[Rule]]:
    """Rules each service account is granted by (Cluster)RoleBindings, keyed by service account name."""
    builtin = BUILTIN_CLUSTER_ROLES if kind == "ClusterRole" else {}
    roles = {**builtin, **{r["metadata"]["name"]: r["rules"] for r in objects_of(docs, kind)}}
    out: dict[str, list[Rule]] = {}
    for b in objects_of(docs, binding_kind):
        assert b["roleRef"]["kind"] == kind
        for s in b["subjects"]:
            assert s["kind"] == "ServiceAccount"
            out.setdefault(s["name"], []).extend(roles[b["roleRef"]["name"]])
    return out


RENEWER = "podsizer-cert-renewer"


def _check_renewer(cluster: Mapping[str, list[Rule]], namespaced: Mapping[str, list[Rule]]) -> None:
    """The certificate renewal job: get/update of the two certificate Secrets and patch of the one webhook
    configuration, each by resourceNames; nothing else."""
    assert cluster.get(RENEWER) == [
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["mutatingwebhookconfigurations"],
            "resourceNames": ["podsizer-webhook"],
            "verbs": ["patch"],
        }
    ]
    assert namespaced.get(RENEWER) == [
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": ["podsizer-webhook-tls", "podsizer-webhook-ca"],
            "verbs": ["get", "update"],
        }
    ]


CONSOLE = "podsizer-console"


def _check_console(
    cluster: Mapping[str, list[Rule]], namespaced: Mapping[str, list[Rule]], oauth_proxy: bool = False
) -> None:
    """The console: get/list/watch of Recommendations, pods and nodes; nothing else, nothing namespaced.
    With the oauth-proxy, also what it needs to check a user: token and access reviews."""
    assert cluster.get(CONSOLE) == [
        {"apiGroups": ["podsizer.io"], "resources": ["recommendations"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]},
        *(AUTH_DELEGATOR if oauth_proxy else []),
    ]
    assert CONSOLE not in namespaced


UPDATER = "podsizer-updater"


def _check_updater(cluster: Mapping[str, list[Rule]], namespaced: Mapping[str, list[Rule]]) -> None:
    """The updater: reads pods, PDBs, the owner chain and Recommendations; its writes are pods/resize,
    pods/eviction and Events; never a pod's spec, never a delete; its Lease in its own namespace only."""
    rules = cluster[UPDATER]
    assert allows(rules, "", "pods/resize", "patch") and allows(rules, "", "pods/eviction", "create")
    assert allows(rules, "", "events", "create")
    for verb in READ:
        assert allows(rules, "", "pods", verb) and allows(rules, "policy", "poddisruptionbudgets", verb)
        assert allows(rules, "podsizer.io", "recommendations", verb)
    for group, resource in [
        ("apps", "replicasets"),
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("argoproj.io", "rollouts"),
        ("batch", "jobs"),
        ("", "namespaces"),
    ]:
        assert allows(rules, group, resource, "watch"), resource
    writes = {
        (g, res, v)
        for r in rules
        for g in r["apiGroups"]
        for res in r["resources"]
        for v in r["verbs"]
        if v in WRITE
    }
    assert writes == {("", "pods/resize", "patch"), ("", "pods/eviction", "create"), ("", "events", "create")}
    for verb in ("update", "patch", "delete"):
        assert not allows(rules, "", "pods", verb), f"the updater must not {verb} pods"
    assert not allows(rules, "podsizer.io", "recommendations", "update")
    assert not allows(rules, "coordination.k8s.io", "leases", "update"), "leases must be namespaced"
    assert namespaced[UPDATER] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}
    ]


def _check(
    cluster: Mapping[str, list[Rule]],
    namespaced: Mapping[str, list[Rule]],
    renewer: bool = False,
    console: bool = False,
    oauth_proxy: bool = False,
    updater: bool = False,
) -> None:
    for sa, rules in [*cluster.items(), *namespaced.items()]:
        if sa != "podsizer-recommender":  # the recommender's own state: no other part reads it
            assert not any(allows(rules, "podsizer.io", "usagecheckpoints", v) for v in READ | WRITE), sa
    if renewer:
        _check_renewer(cluster, namespaced)
        cluster = {k: v for k, v in cluster.items() if k != RENEWER}
        namespaced = {k: v for k, v in namespaced.items() if k != RENEWER}
    if console:
        _check_console(cluster, namespaced, oauth_proxy)
        cluster = {k: v for k, v in cluster.items() if k != CONSOLE}
    if updater:
        _check_updater(cluster, namespaced)
        cluster = {k: v for k, v in cluster.items() if k != UPDATER}
    else:
        assert UPDATER not in cluster and UPDATER not in namespaced, "the updater is off by default"
    assert set(cluster) == {"podsizer-recommender", "podsizer-webhook"}
    for sa, rules in cluster.items():
        for verb in READ | WRITE:
            assert not allows(rules, "", "secrets", verb), f"{sa} can {verb} secrets cluster-wide"
        for r in rules:
            assert "*" not in r["verbs"] and "*" not in r["resources"] and "*" not in r["apiGroups"], (sa, r)
    webhook = cluster["podsizer-webhook"] + list(namespaced.get("podsizer-webhook", []))
    events = {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}
    assert namespaced.get("podsizer-webhook") == [events], "the webhook's one write: Events in its namespace"
    for r in cluster["podsizer-webhook"]:
        assert set(r["verbs"]) <= READ, f"webhook has write verbs: {r}"
    for verb in READ:
        assert allows(webhook, "podsizer.io", "recommendations", verb)
    for group, resource in [
        ("apps", "replicasets"),
        ("", "replicationcontrollers"),
        ("", "namespaces"),
        ("", "limitranges"),
        ("", "resourcequotas"),
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("argoproj.io", "rollouts"),
        ("apps.openshift.io", "deploymentconfigs"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
    ]:
        assert allows(webhook, group, resource, "watch"), resource
    assert not allows(webhook, "", "pods", "list"), "the webhook gets pods from the AdmissionReview"

    rec = cluster["podsizer-recommender"]
    for verb in ("create", "update", "patch"):
        assert allows(rec, "podsizer.io", "recommendations", verb)
    assert allows(rec, "podsizer.io", "recommendations/status", "update")
    for verb in ("get", "list", "watch", "create", "update", "patch", "delete"):
        assert allows(rec, "podsizer.io", "usagecheckpoints", verb), f"recommender cannot {verb} checkpoints"
    for group, resource in [
        ("", "pods"),
        ("", "nodes"),
        ("apps", "replicasets"),
        ("", "replicationcontrollers"),
        ("batch", "jobs"),
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
    _check(
        _role_rules(docs, "ClusterRole", "ClusterRoleBinding"),
        _role_rules(docs, "Role", "RoleBinding"),
        renewer=scenario.generates_certs,
        console=scenario.console,
        oauth_proxy="console.oauthProxy.enabled=true" in scenario.sets,
        updater=scenario.updater,
    )
    for rb in objects_of(docs, "RoleBinding"):
        assert rb["metadata"]["namespace"] == "podsizer"


def test_plain_manifests_rbac_is_least_privilege() -> None:
    docs = load_yaml_docs(MANIFESTS / "install" / "podsizer.yaml")
    cluster, namespaced = (
        _role_rules(docs, "ClusterRole", "ClusterRoleBinding"),
        _role_rules(docs, "Role", "RoleBinding"),
    )
    _check(cluster, namespaced, updater=True)


def test_csv_permissions_equal_the_charts(render: Render) -> None:
    spec = olm_csv()["spec"]["install"]["spec"]
    cluster = {p["serviceAccountName"]: p["rules"] for p in spec["clusterPermissions"]}
    namespaced = {p["serviceAccountName"]: p["rules"] for p in spec["permissions"]}
    _check(cluster, namespaced, updater=True)
    docs = render(next(s for s in SCENARIOS if s.updater))
    # the chart's certificate renewal job has no place in OLM, which rotates the webhook's certificate itself
    assert RENEWER not in cluster and RENEWER not in namespaced
    assert cluster == _drop(_role_rules(docs, "ClusterRole", "ClusterRoleBinding"), RENEWER)
    assert namespaced == _drop(_role_rules(docs, "Role", "RoleBinding"), RENEWER)
    deployments = {
        d["name"]: d["spec"]["template"]["spec"]["serviceAccountName"] for d in spec["deployments"]
    }
    assert set(deployments.values()) == set(cluster)


def _drop(rules: Mapping[str, list[Rule]], account: str) -> dict[str, list[Rule]]:
    return {k: v for k, v in rules.items() if k != account}


def test_allows_matches_rbac_semantics() -> None:
    rules = [{"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": ["get"]}]
    assert allows(rules, "apps", "replicasets", "get")
    assert not allows(rules, "apps", "replicasets", "list")
    assert not allows(rules, "", "replicasets", "get")
    assert allows([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}], "", "secrets", "get")
