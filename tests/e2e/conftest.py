"""Fixtures for e2e tests: one real control plane per session, namespaces, the CRDs, the podsizer webhook."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable, Generator, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.controlplane.chart import RBAC_TEMPLATES, RELEASE_NAMESPACE, find_helm, render
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.fixtures import log_destination
from tests.controlplane.kube import create_from_yaml, create_namespace
from tests.controlplane.podsizer_updater import FAST_BUDGETS, UpdaterRun
from tests.controlplane.podsizer_webhook import E2E_NAMESPACE_LABEL, WebhookProcess, register_webhook
from tests.controlplane.rollouts import RolloutsController
from tests.support.progress import RECORDS, WaitRecord, slowest
from updater.decide import UpdaterPolicy
from updater.loop import UpdaterConfig

MODE_LABEL = "podsizer.io/mode"
WEBHOOK_CONFIGURATION = "podsizer-e2e"


@pytest.fixture
def namespace(control_plane: ControlPlane, admin_client: client.ApiClient) -> Iterator[str]:
    """A fresh namespace (with its default ServiceAccount) for one test, deleted afterwards."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    create_namespace(admin_client, name)
    yield name
    control_plane.check_alive()
    client.CoreV1Api(admin_client).delete_namespace(name)


NamespaceFactory = Callable[..., str]


@pytest.fixture
def make_namespace(control_plane: ControlPlane, admin_client: client.ApiClient) -> Iterator[NamespaceFactory]:
    """make_namespace(mode=None, labels=None) -> name: fresh namespaces, deleted after the test.

    mode sets the podsizer.io/mode label; webhook=True (the default) labels it for the session's webhook.
    """
    names: list[str] = []

    def make(mode: str | None = None, labels: dict[str, str] | None = None, webhook: bool = True) -> str:
        all_labels = dict(labels or {})
        if webhook:
            all_labels[E2E_NAMESPACE_LABEL] = "true"
        if mode is not None:
            all_labels[MODE_LABEL] = mode
        name = f"e2e-{uuid.uuid4().hex[:8]}"
        create_namespace(admin_client, name, all_labels)
        names.append(name)
        return name

    yield make
    control_plane.check_alive()
    for name in names:
        client.CoreV1Api(admin_client).delete_namespace(name)


@pytest.fixture(scope="session")
def chart_rbac(control_plane: ControlPlane, admin_client: client.ApiClient) -> bool:
    """Namespace `podsizer` with the chart's ServiceAccounts, ClusterRoles and bindings (helm template).

    False when no helm is built (scripts/build_tools.py tools); the tests needing the chart's roles skip then.
    """
    helm = find_helm()
    if helm is None:
        return False
    create_namespace(admin_client, RELEASE_NAMESPACE)
    create_from_yaml(admin_client, render(helm, RBAC_TEMPLATES, control_plane.binaries.version))
    return True


@pytest.fixture(scope="session")
def webhook_kubeconfig(control_plane: ControlPlane, chart_rbac: bool) -> Path:
    """The webhook's identity: the chart's podsizer-webhook ServiceAccount (a TokenRequest token), so it has
    exactly the chart's ClusterRole; the admin's kubeconfig only when there is no helm to render the chart.
    """
    if chart_rbac:
        return control_plane.kubeconfig_for_service_account(RELEASE_NAMESPACE, "podsizer-webhook")
    return control_plane.kubeconfig_path


@pytest.fixture(scope="session")
def podsizer_webhook(
    control_plane: ControlPlane,
    admin_client: client.ApiClient,
    podsizer_crds: list[dict[str, Any]],
    webhook_kubeconfig: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[WebhookProcess]:
    """`python -m webhook` (store=crd, default mode dry-run) registered for namespaces from make_namespace;
    with client-certificate verification on, as the chart installs it (the apiserver presents its own)."""
    kubeconfig = webhook_kubeconfig
    hook = WebhookProcess(
        tmp_path_factory.mktemp("webhook"), kubeconfig, client_ca=control_plane.admission_client_ca_file
    )
    hook.start()
    register_webhook(admin_client, WEBHOOK_CONFIGURATION, hook, {E2E_NAMESPACE_LABEL: "true"})
    try:
        yield hook
    finally:
        try:
            client.AdmissionregistrationV1Api(admin_client).delete_mutating_webhook_configuration(
                WEBHOOK_CONFIGURATION
            )
        finally:
            hook.stop()
            dest = log_destination()
            dest.mkdir(parents=True, exist_ok=True)
            if hook.log_path.exists():
                shutil.copy2(hook.log_path, dest / "webhook.log")


@pytest.fixture
def start_updater(
    control_plane: ControlPlane, chart_rbac: bool, podsizer_crds: list[dict[str, Any]]
) -> Iterator[Callable[..., UpdaterRun]]:
    """start_updater(dry_run=False) -> a running updater with the chart's podsizer-updater identity; each
    is stopped after the test, which fails if a pass raised."""
    if not chart_rbac:
        pytest.skip("helm is not built (scripts/build_tools.py tools): no chart RBAC for the updater")
    runs: list[UpdaterRun] = []

    def start(dry_run: bool = False) -> UpdaterRun:
        api = control_plane.client_for_service_account(RELEASE_NAMESPACE, "podsizer-updater")
        config = UpdaterConfig(UpdaterPolicy(budgets=FAST_BUDGETS), dry_run=dry_run)
        run = UpdaterRun(api, config).start()
        runs.append(run)
        return run

    yield start
    for run in runs:
        run.stop()
        assert run.errors == [], run.errors


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """On a failed e2e test, attach the control plane's state and log tails to the report; on every test,
    its waits (tests/support/progress.py; shown with -rA, or on failure)."""
    report = yield
    waits = [r for r in RECORDS if r.test == item.nodeid]
    if waits and call.when == "call":
        report.sections.append(("waits", "\n".join(r.line() for r in waits)))
    plane = getattr(item, "funcargs", {}).get("control_plane")
    if isinstance(plane, ControlPlane) and report.failed:
        report.sections.append(("control plane", plane.describe()))
    hook = getattr(item, "funcargs", {}).get("podsizer_webhook")
    if isinstance(hook, WebhookProcess) and report.failed:
        report.sections.append(("podsizer webhook", hook.describe()))
    rollouts = getattr(item, "funcargs", {}).get("argo_rollouts")
    if isinstance(rollouts, RolloutsController) and report.failed:
        report.sections.append(("argo rollouts controller", rollouts.describe()))
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The slowest progress waits of the session (tests/support/progress.py), also written as JSON to
    progress-waits.json beside the control plane's logs (test-artifacts/controlplane/)."""
    if not RECORDS:
        return
    terminalreporter.section("slowest waits (tests/support/progress.py)")
    for record in slowest(RECORDS):
        terminalreporter.line(f"{record.line()}  [{record.test}]")
    _write_waits(RECORDS)


def _write_waits(records: list[WaitRecord]) -> None:
    dest = log_destination()
    dest.mkdir(parents=True, exist_ok=True)
    rows = [asdict(r) for r in sorted(records, key=lambda r: r.took_s, reverse=True)]
    (dest / "progress-waits.json").write_text(json.dumps(rows, indent=1) + "\n")
