"""`podsizer run --once` against a real Prometheus and the real kube-apiserver, as the chart's recommender
ServiceAccount: the first cycle reads the window and saves one UsageCheckpoint per workload; the second
(a restarted recommender) restores them and reads only the samples since, writing the same
Recommendations within 2 %."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from podsizer.api.quantity import parse
from recommender.input.demo_cluster import build_demo_dataset
from tests.controlplane.binaries import ROOT
from tests.controlplane.chart import RELEASE_NAMESPACE
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import ensure_namespace
from tests.controlplane.podsizer_cli import DEMO_NAMESPACES, stored_recommendations
from tests.controlplane.prometheus import backfill_dataset, running_prometheus
from tests.support.progress import TEST_TIMEOUT_S

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]


def run_once(kubeconfig: Path, url: str) -> str:
    """`podsizer run --once` with the crd store (and so UsageCheckpoints); returns its log (stderr)."""
    podsizer = Path(sys.executable).with_name("podsizer")
    argv = [str(podsizer), "run", "--once", "--source", "prometheus", "--prometheus-url", url]
    argv += ["--store", "crd", "--kubeconfig", str(kubeconfig), "--metrics-port", "0", "--log-level", "info"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240, cwd=ROOT, check=False)
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stderr


def checkpoints(admin: client.ApiClient) -> dict[tuple[str, str], dict[str, Any]]:
    listed = client.CustomObjectsApi(admin).list_cluster_custom_object(
        "podsizer.io", "v1alpha1", "usagecheckpoints"
    )
    return {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in listed["items"]}


def requests_of(stored: dict[tuple[str, str], dict[str, Any]]) -> dict[str, float]:
    return {
        f"{ns}/{name}/{c['name']}/{r}": parse(v)
        for (ns, name), o in stored.items()
        for c in o["status"]["containers"]
        for r, v in c.get("requests", {}).items()
    }


def test_a_restarted_recommender_restores_its_usage_checkpoints(
    control_plane: ControlPlane,
    admin_client: client.ApiClient,
    podsizer_crds: list[dict[str, Any]],
    chart_rbac: bool,
    tmp_path: Path,
) -> None:
    for ns in DEMO_NAMESPACES:
        ensure_namespace(admin_client, ns)
    kubeconfig = (
        control_plane.kubeconfig_for_service_account(RELEASE_NAMESPACE, "podsizer-recommender")
        if chart_rbac
        else control_plane.kubeconfig_path
    )
    now = datetime.now(UTC)
    backfill_dataset(build_demo_dataset(now, days=7), tmp_path / "tsdb", tmp_path / "openmetrics")
    with running_prometheus(tmp_path / "tsdb", now - timedelta(days=7)) as url:
        first = run_once(kubeconfig, url)
        saved = checkpoints(admin_client)
        recommended = requests_of(stored_recommendations(admin_client, DEMO_NAMESPACES))
        second = run_once(kubeconfig, url)
    assert "usage model: cold cycle (no usage model yet)" in first
    assert "checkpoint restored from" in second and "usage model: restored cycle" in second
    demo = {(ns, name) for ns, name in saved if ns in DEMO_NAMESPACES}
    assert len(demo) >= 10  # one per workload of the demo
    assert all(saved[k]["spec"]["bytes"] > 0 for k in demo)
    again = requests_of(stored_recommendations(admin_client, DEMO_NAMESPACES))
    assert set(again) == set(recommended) and recommended
    assert {k: (again[k], v) for k, v in recommended.items() if abs(again[k] - v) > 0.02 * v} == {}
