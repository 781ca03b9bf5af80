"""Shared helpers for the install-artefact tests: tool lookup, chart rendering, pod-spec extraction."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import pytest
import yaml

from tests.controlplane.binaries import load_script

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "podsizer"
MANIFESTS = ROOT / "manifests"
CRDS = MANIFESTS / "crds"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CACHE = Path(os.environ.get("PODSIZER_CACHE") or Path.home() / ".cache" / "podsizer")
TOOLS_BIN = CACHE / "bin"
TOOLS_LOGS = CACHE / "logs"

NAMESPACE = "podsizer"
RELEASE = "podsizer"
# The chart's floor (Chart.yaml kubeVersion) and a current release.
KUBE_VERSIONS = ("1.27.0", "1.31.0")
POD_TEMPLATE_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"})


def tool(name: str) -> Path:
    """The CLI built by scripts/build_tools.py; skips the test when it is missing (fails instead under CI)."""
    built = TOOLS_BIN / name
    if built.is_file() and os.access(built, os.X_OK):
        return built
    found = shutil.which(name)
    if found:
        return Path(found)
    why = f"{name} not built: run scripts/build_tools.py (logs in {TOOLS_LOGS})"
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


@dataclass(frozen=True)
class Scenario:
    """One way of installing the chart: a name, --set values and values files."""

    name: str
    sets: tuple[str, ...] = ()
    values_files: tuple[str, ...] = ()

    @property
    def generates_certs(self) -> bool:
        """certs.mode=generate (the default, and no values file changes it): the renewal CronJob is there."""
        return not self.values_files and not any(s.startswith("certs.mode=") for s in self.sets)

    @property
    def updater(self) -> bool:
        """updater.enabled=true: the updater's Deployment, ServiceAccount and RBAC are there."""
        return "updater.enabled=true" in self.sets

    @property
    def console(self) -> bool:
        """console.enabled=true: the console's Deployment, read-only ServiceAccount and Service are there."""
        return "console.enabled=true" in self.sets

    def args(self) -> list[str]:
        out: list[str] = []
        for f in self.values_files:
            out += ["-f", str(CHART / f)]
        for s in self.sets:
            out += ["--set", s]
        return out


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("generate"),
    Scenario("cert-manager", ("certs.mode=cert-manager",)),
    Scenario(
        "cert-manager-issuer",
        (
            "certs.mode=cert-manager",
            "certs.certManager.issuerRef.name=corp-ca",
            "certs.certManager.issuerRef.kind=ClusterIssuer",
        ),
    ),
    Scenario("service-ca", values_files=("values-openshift.yaml",)),
    Scenario(
        "secret",
        (
            "certs.mode=secret",
            "certs.secretName=my-webhook-tls",
            "certs.caBundle=Y2EK",
            "webhook.clientAuth.caConfigMap=apiserver-client-ca",
        ),
    ),
    Scenario("dcgm-counters", ("dcgmCounters.enabled=true", "dcgmCounters.namespace=gpu-operator")),
    Scenario(
        "console-ingress",
        ("console.enabled=true", "console.ingress.enabled=true", "console.ingress.host=podsizer.example.com"),
    ),
    Scenario(
        "console-openshift-route",
        ("console.enabled=true", "console.route.enabled=true"),
        values_files=("values-openshift.yaml",),
    ),
    Scenario(
        "console-openshift-oauth",
        ("console.enabled=true", "console.route.enabled=true", "console.oauthProxy.enabled=true"),
        values_files=("values-openshift.yaml",),
    ),
    Scenario("updater", ("updater.enabled=true",)),
)


class Render(Protocol):
    """The `render` fixture: chart objects for a scenario."""

    def __call__(
        self, scenario: Scenario, *, kube_version: str = ..., with_tests: bool = ...
    ) -> list[dict[str, Any]]: ...


def run_helm(args: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    helm = tool("helm")
    proc = subprocess.run(
        [str(helm), *args], capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": "/tmp"}
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def helm_template_text(
    scenario: Scenario, *, kube_version: str = KUBE_VERSIONS[-1], with_tests: bool = True
) -> str:
    """`helm template` output for a scenario; tests use the cached `render` fixture from conftest.py."""
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE, "--kube-version", kube_version]
    if not with_tests:
        args.append("--skip-tests")
    return run_helm(args + scenario.args()).stdout


def load_yaml_docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def objects_of(docs: Sequence[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [d for d in docs if d.get("kind") == kind]


def one(docs: Sequence[Mapping[str, Any]], kind: str) -> Mapping[str, Any]:
    found = objects_of(docs, kind)
    assert len(found) == 1, f"expected exactly one {kind}, found {len(found)}"
    return found[0]


def pod_specs(docs: Sequence[Mapping[str, Any]], source: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(where, pod spec) for every pod template in the objects, CSV install strategies included."""
    for d in docs:
        kind, name = d.get("kind"), d.get("metadata", {}).get("name")
        if kind in POD_TEMPLATE_KINDS:
            yield f"{source}: {kind}/{name}", d["spec"]["template"]["spec"]
        elif kind == "CronJob":
            yield f"{source}: CronJob/{name}", d["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        elif kind == "Pod":
            yield f"{source}: Pod/{name}", d["spec"]
        elif kind == "ClusterServiceVersion":
            for dep in d["spec"]["install"]["spec"]["deployments"]:
                yield f"{source}: CSV deployment/{dep['name']}", dep["spec"]["template"]["spec"]


def olm_csv() -> dict[str, Any]:
    docs = load_yaml_docs(MANIFESTS / "olm" / "manifests" / "podsizer.clusterserviceversion.yaml")
    assert len(docs) == 1
    return docs[0]


def renderer() -> ModuleType:
    """scripts/render_manifests.py as a module (registered, so its dataclasses find their module)."""
    return load_script("render_manifests", ROOT / "scripts" / "render_manifests.py")
