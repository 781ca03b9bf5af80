"""`podsizer recommend --write --store crd` through the apiserver, and the webhook serving what it wrote."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from podsizer.api import recommendation_from_resource
from podsizer.keys import ALLOW_LARGE_CHANGE_KEY
from recommender.input.demo_cluster import build_demo_dataset
from tests.controlplane.chart import RELEASE_NAMESPACE
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import create_objects, ensure_namespace
from tests.controlplane.podsizer_cli import (
    DEMO_NAMESPACES,
    recommend_and_write,
    reported_recommendations,
    stored_recommendations,
)
from tests.controlplane.podsizer_webhook import E2E_NAMESPACE_LABEL, WebhookProcess
from tests.controlplane.prometheus import backfill_dataset, running_prometheus
from tests.controlplane.workloads import container_resources, deployment, first_pod_once_webhook_applies
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]


@pytest.fixture
def recommender_kubeconfig(
    control_plane: ControlPlane, admin_client: client.ApiClient, chart_rbac: bool
) -> Path:
    """The chart's podsizer-recommender ServiceAccount (admin only without helm); the demo namespaces exist,
    "shop" in auto mode for the session's webhook."""
    for ns in DEMO_NAMESPACES:
        labels = {E2E_NAMESPACE_LABEL: "true", "podsizer.io/mode": "auto"} if ns == "shop" else {}
        ensure_namespace(admin_client, ns, labels)
    if chart_rbac:
        return control_plane.kubeconfig_for_service_account(RELEASE_NAMESPACE, "podsizer-recommender")
    return control_plane.kubeconfig_path


def _check_written(admin: client.ApiClient, report: dict[str, Any]) -> None:
    reported = reported_recommendations(report)
    assert reported, "the run recommended nothing"
    stored = stored_recommendations(admin, DEMO_NAMESPACES)
    assert reported.keys() <= stored.keys()
    for key, obj in reported.items():
        assert stored[key]["status"]["containers"] == obj["status"]["containers"], key
        assert stored[key]["spec"]["targetRef"] == obj["spec"]["targetRef"], key
        recommendation_from_resource(stored[key])  # what the webhook parses


def _webhook_applies(admin: client.ApiClient, report: dict[str, Any], workload: str) -> None:
    rec = reported_recommendations(report)[("shop", f"deployment-{workload}")]
    container = rec["status"]["containers"][0]
    template = {"requests": {"cpu": "10m", "memory": "16Mi"}}
    manifest = deployment(workload, container["name"], template)
    # From 10m/16Mi the recommendation is more than the default 4x change: the workload opts in to it.
    manifest["spec"]["template"]["metadata"].setdefault("annotations", {})[ALLOW_LARGE_CHANGE_KEY] = "true"
    create_objects(admin, [manifest], namespace="shop")
    pod = first_pod_once_webhook_applies(admin, "shop", workload, container["requests"])
    assert container_resources(pod)["requests"] == container["requests"]
    applied = json.loads(pod["metadata"]["annotations"]["podsizer.io/applied"])
    assert applied["recommendation"] == f"deployment-{workload}"


def test_demo_source_recommendations_are_written_and_applied(
    admin_client: client.ApiClient, podsizer_webhook: WebhookProcess, recommender_kubeconfig: Path
) -> None:
    report = recommend_and_write(recommender_kubeconfig, "--source", "demo")
    _check_written(admin_client, report)
    _webhook_applies(admin_client, report, "storefront")


def test_prometheus_history_recommendations_are_written_and_applied(
    admin_client: client.ApiClient,
    podsizer_webhook: WebhookProcess,
    recommender_kubeconfig: Path,
    tmp_path: Path,
) -> None:
    now = datetime.now(UTC)
    dataset = build_demo_dataset(now, days=7)
    backfill_dataset(dataset, tmp_path / "tsdb", tmp_path / "openmetrics")
    with running_prometheus(tmp_path / "tsdb", now - timedelta(days=7)) as url:
        report = recommend_and_write(
            recommender_kubeconfig, "--source", "prometheus", "--prometheus-url", url
        )
    _check_written(admin_client, report)
    _webhook_applies(admin_client, report, "search")
