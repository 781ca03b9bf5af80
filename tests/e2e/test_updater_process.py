"""`podsizer updater` as a process: settings from the environment, leader election on a Lease in its own
namespace, the chart's ServiceAccount, dry-run Events; SIGTERM releases the Lease."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client

from podsizer.api import WorkloadRef
from tests.controlplane.chart import RELEASE_NAMESPACE
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import create_objects, to_dict
from tests.controlplane.nodes import wait_for_running_pods
from tests.controlplane.processes import ManagedProcess, free_port
from tests.controlplane.recommendations import put_recommendation, simple_recommendation
from tests.controlplane.workloads import deployment_replicaset, workload
from tests.support.progress import TEST_TIMEOUT_S, wait_progressing

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]

TEMPLATE = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}
LEASE = "podsizer-updater-e2e"
T = TypeVar("T")


def _podsizer() -> str:
    return str(Path(sys.executable).with_name("podsizer"))


def test_the_updater_process_leads_records_dry_run_events_and_releases_its_lease(
    control_plane: ControlPlane,
    admin_client: client.ApiClient,
    chart_rbac: bool,
    podsizer_crds: list[dict[str, Any]],
    make_namespace: Callable[..., str],
    tmp_path: Path,
) -> None:
    if not chart_rbac:
        pytest.skip("helm is not built (scripts/build_tools.py tools): no chart RBAC for the updater")
    ns = make_namespace(mode="auto", webhook=False)
    body = workload("apps/v1", "Deployment", "web", 2, TEMPLATE)
    body["metadata"]["annotations"] = {"podsizer.io/update-mode": "recreate"}
    create_objects(admin_client, [body], namespace=ns)
    rs = deployment_replicaset(admin_client, ns, "web")["metadata"]["name"]
    before = wait_for_running_pods(admin_client, ns, "ReplicaSet", rs, 2)
    rec = simple_recommendation(
        WorkloadRef(ns, "Deployment", "web"), {"main": {"cpu": "250m", "memory": "96Mi"}}
    )
    put_recommendation(admin_client, rec)
    kubeconfig = control_plane.kubeconfig_for_service_account(RELEASE_NAMESPACE, "podsizer-updater")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PODSIZER_")},
        "PODSIZER_STORE": "crd",
        "PODSIZER_KUBECONFIG": str(kubeconfig),
        "PODSIZER_UPDATER_DRY_RUN": "true",
        "PODSIZER_UPDATER_INTERVAL_SECONDS": "0.5",
        "PODSIZER_UPDATER_MIN_POD_AGE_SECONDS": "0",
        "PODSIZER_UPDATER_METRICS_PORT": str(free_port()),
        "PODSIZER_UPDATER_METRICS_HOST": "127.0.0.1",
        "PODSIZER_UPDATER_LEADER_ELECTION": "true",
        "PODSIZER_UPDATER_LEASE_NAME": LEASE,
        "PODSIZER_UPDATER_LEASE_NAMESPACE": RELEASE_NAMESPACE,
        "PODSIZER_UPDATER_IDENTITY": "updater-e2e-0",
    }
    log = tmp_path / "updater.log"
    proc = ManagedProcess("updater", [_podsizer(), "updater"], log, env=env)
    coordination, core = client.CoordinationV1Api(admin_client), client.CoreV1Api(admin_client)
    try:

        def holder() -> str | None:
            lease = to_dict(admin_client, coordination.read_namespaced_lease(LEASE, RELEASE_NAMESPACE))
            return lease["spec"].get("holderIdentity") or None

        taken = _following_log(log, holder, "the updater to take its Lease")
        assert taken == "updater-e2e-0", proc.describe_failure()

        def would_evict() -> list[dict[str, Any]] | None:
            found = core.list_namespaced_event(ns, field_selector="involvedObject.name=web")
            events = [to_dict(admin_client, e) for e in found.items]
            return [e for e in events if e["reason"] == "PodsizerWouldEvict"] or None

        (event, *_) = _following_log(log, would_evict, "a dry-run event on Deployment web")
        assert "dry-run: would evict (recreate)" in event["message"]
        assert event["source"]["component"] == "podsizer-updater"
    finally:
        proc.stop()
    assert proc.exit_code() == 0, proc.describe_failure()
    assert holder_after(admin_client) == "", "the Lease is released on SIGTERM"
    pods = client.CoreV1Api(admin_client).list_namespaced_pod(ns).items
    assert {p.metadata.uid for p in pods} == {p["metadata"]["uid"] for p in before}, "dry-run evicted nothing"


def _following_log(log: Path, check: Callable[[], T | None], what: str) -> T:
    """check() once it answers; progress: the process writing its log (starting, syncing its watches,
    electing, passes), so a slow start is waited for and a silent process fails after a stall."""

    def look() -> tuple[T | None, int]:
        size = log.stat().st_size if log.exists() else 0
        try:
            return check(), size
        except client.ApiException as e:
            if e.status != 404:  # the Lease before the updater creates it
                raise
            return None, size

    def answer(seen: tuple[T | None, int]) -> T | None:
        return seen[0]

    return wait_progressing(look, answer, lambda seen: seen[1], what)


def holder_after(admin: client.ApiClient) -> str:
    lease = to_dict(admin, client.CoordinationV1Api(admin).read_namespaced_lease(LEASE, RELEASE_NAMESPACE))
    return str(lease["spec"].get("holderIdentity") or "")
