"""Every pod template podsizer ships (chart, plain manifests, OLM CSV) is admissible under restricted-v2."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.integration.install.scc import policy_violations, violations
from tests.integration.install.support import (
    FIXTURES,
    MANIFESTS,
    SCENARIOS,
    Render,
    Scenario,
    load_yaml_docs,
    olm_csv,
    pod_specs,
)


@pytest.fixture(scope="module")
def scc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((FIXTURES / "scc-restricted-v2.yaml").read_text())
    assert doc["metadata"]["name"] == "restricted-v2"
    return doc


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_chart_pod_templates_pass_restricted_v2(
    scenario: Scenario, scc: dict[str, Any], render: Render
) -> None:
    specs = list(pod_specs(render(scenario), f"chart[{scenario.name}]"))
    # recommender, webhook, the helm test pod; the certificate renewal CronJob in generate mode; the console;
    # the updater
    expected = 3 + int(scenario.generates_certs) + int(scenario.console) + int(scenario.updater)
    assert len(specs) == expected, [w for w, _ in specs]
    for where, spec in specs:
        assert violations(spec, scc) == [], where
        assert policy_violations(spec) == [], where


def test_plain_manifests_pass_restricted_v2(scc: dict[str, Any]) -> None:
    specs = list(pod_specs(load_yaml_docs(MANIFESTS / "install" / "podsizer.yaml"), "manifests/install"))
    assert len(specs) == 3, [w for w, _ in specs]  # recommender, webhook, updater
    for where, spec in specs:
        assert violations(spec, scc) == [], where
        assert policy_violations(spec) == [], where


def test_csv_deployments_pass_restricted_v2(scc: dict[str, Any]) -> None:
    specs = list(pod_specs([olm_csv()], "olm"))
    assert len(specs) == 3, [w for w, _ in specs]  # recommender, webhook, updater
    for where, spec in specs:
        assert violations(spec, scc) == [], where
        assert policy_violations(spec) == [], where


def _compliant(render: Render) -> dict[str, Any]:
    specs = dict(pod_specs(render(SCENARIOS[0]), "chart"))
    return copy.deepcopy(dict(specs["chart: Deployment/podsizer-webhook"]))


def _c(spec: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = spec["containers"][0]
    return container


MUTATIONS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "privileged": (lambda s: _c(s)["securityContext"].update(privileged=True), "privileged"),
    "escalation": (
        lambda s: _c(s)["securityContext"].pop("allowPrivilegeEscalation"),
        "allowPrivilegeEscalation",
    ),
    "no-drop-all": (
        lambda s: _c(s)["securityContext"]["capabilities"].update(drop=["NET_RAW"]),
        "lacks required",
    ),
    "add-sys-admin": (
        lambda s: _c(s)["securityContext"]["capabilities"].update(add=["SYS_ADMIN"]),
        "allowedCapabilities",
    ),
    "fixed-uid": (lambda s: s["securityContext"].update(runAsUser=1000), "runAsUser is fixed"),
    "container-uid": (lambda s: _c(s)["securityContext"].update(runAsUser=0), "runAsUser is fixed"),
    "fsgroup": (lambda s: s["securityContext"].update(fsGroup=2000), "fsGroup is fixed"),
    "selinux": (
        lambda s: s["securityContext"].update(seLinuxOptions={"level": "s0:c1,c2"}),
        "seLinuxOptions",
    ),
    "unconfined": (
        lambda s: s["securityContext"].update(seccompProfile={"type": "Unconfined"}),
        "seccompProfile",
    ),
    "hostpath": (lambda s: s["volumes"].append({"name": "h", "hostPath": {"path": "/"}}), "hostPath"),
    "hostnetwork": (lambda s: s.update(hostNetwork=True), "hostNetwork"),
    "hostport": (lambda s: _c(s)["ports"][0].update(hostPort=8443), "hostPort"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_checker_rejects_what_restricted_v2_refuses(name: str, scc: dict[str, Any], render: Render) -> None:
    spec = _compliant(render)
    assert violations(spec, scc) == []
    mutate, expected = MUTATIONS[name]
    mutate(spec)
    found = violations(spec, scc)
    assert any(expected in v for v in found), found


def test_policy_requires_read_only_root_and_tmp_emptydir(render: Render) -> None:
    spec = _compliant(render)
    assert policy_violations(spec) == []
    _c(spec)["securityContext"]["readOnlyRootFilesystem"] = False
    spec["volumes"] = [v for v in spec["volumes"] if v["name"] != "tmp"]
    found = policy_violations(spec)
    assert any("readOnlyRootFilesystem" in v for v in found) and any("/tmp" in v for v in found), found
