"""Scenarios 4 and 1 on the real node: `podsizer recommend --source prometheus` sizes from what the kubelet's
cAdvisor really measured, scraped by a real Prometheus, with owners, requests and OOM kills from the
Kubernetes API (no kube-state-metrics here).

The session's load Deployments (tests/controlplane/node/fixtures.py) start with the node, before the other
tests: `steady` burns 300m CPU and holds 200 MiB; `leak` grows 4 MiB/s under a 96 MiB limit and is
OOM-killed by the kernel again and again. These tests run last and wait, if they must, until the steady
load has HISTORY_S of history.

Tolerances (scenario 1): the conservative profile asks the CPU P99 of the per-step rates + 15 % and the
memory P99 of the per-step peaks + 15 % (never below the peak). Against the kernel's own figures for the
container (cpuacct.usage over its life: the mean; the working set now): the CPU request is within
[0.95, 1.5] x 1.15 x mean (a steady burner's P99 rate sits a little above its mean), the memory request
within [0.97, 1.08] x 1.15 x working set.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from podsizer.api import quantity
from tests.controlplane.chart import RELEASE_NAMESPACE
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Manifest, pods_owned_by, wait_for
from tests.controlplane.node import cgroups
from tests.controlplane.node.fixtures import LEAK, LOAD_NAMESPACE, STEADY, NodeSession, artifact
from tests.controlplane.node.monitoring import SCRAPE_INTERVAL_S
from tests.controlplane.node.node import RealNode
from tests.controlplane.podsizer_cli import recommend_and_write, reported_recommendations
from tests.controlplane.workloads import deployment_replicaset
from tests.support.progress import TEST_TIMEOUT_S

HISTORY_S = 300.0  # scenario 1 sizes from at least five minutes of scraping
pytestmark = [pytest.mark.realnode(history=True), pytest.mark.timeout(TEST_TIMEOUT_S)]
MI = 1024 * 1024


@pytest.fixture
def recommender_kubeconfig(
    control_plane: ControlPlane, chart_rbac: bool, podsizer_crds: list[dict[str, Any]]
) -> Path:
    """The chart's podsizer-recommender ServiceAccount: what it may read is what the API fallback reads."""
    if not chart_rbac:
        pytest.skip("helm is not built (scripts/build_tools.py tools): no chart RBAC for the recommender")
    return control_plane.kubeconfig_for_service_account(RELEASE_NAMESPACE, "podsizer-recommender")


def _recommend(kubeconfig: Path, node: RealNode, since: datetime, history_s: float) -> dict[str, Any]:
    """`podsizer recommend --source prometheus` of the load namespace over [since - 1 min, now], the query
    step and rate window fitted to the 5 s scrape, full confidence at `history_s` of history."""
    assert node.prometheus is not None
    window_s = (datetime.now(UTC) - since).total_seconds() + 60
    return recommend_and_write(
        kubeconfig,
        "--source",
        "prometheus",
        "--prometheus-url",
        node.prometheus.url,
        "--namespaces",
        LOAD_NAMESPACE,
        "--window-days",
        f"{window_s / 86400:.6f}",
        "--query-step",
        "30s",
        "--cpu-rate-window",
        "60s",
        "--confidence-full-days",
        f"{history_s / 86400:.6f}",
        "--confidence-full-samples",
        str(int(history_s / SCRAPE_INTERVAL_S / 2)),
    )


def _container(report: dict[str, Any], name: str) -> dict[str, Any]:
    rec = reported_recommendations(report).get((LOAD_NAMESPACE, f"deployment-{name}"))
    assert rec is not None, (
        f"no recommendation for Deployment {name}: {sorted(reported_recommendations(report))}; "
        f"skipped: {report.get('skipped')}"
    )
    containers = rec["status"]["containers"]
    assert [c["name"] for c in containers] == ["main"], containers
    container: dict[str, Any] = containers[0]
    return container


def _pod(admin: client.ApiClient, name: str) -> Manifest:
    rs = deployment_replicaset(admin, LOAD_NAMESPACE, name)["metadata"]["name"]
    (pod,) = pods_owned_by(admin, LOAD_NAMESPACE, "ReplicaSet", rs)
    return pod


def _kernel_oom_lines(pod_uid: str) -> list[str]:
    """The kernel log's OOM-kill records of the pod's memory cgroup (/dev/kmsg, read without blocking)."""
    lines = []
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    try:
        while True:
            try:
                record = os.read(fd, 8192).decode(errors="replace")
            except BlockingIOError:
                break
            except OSError:  # EPIPE: a record was overwritten while reading; go on
                continue
            if "oom-kill:" in record and f"pod{pod_uid}" in record:
                lines.append(record.split(";", 1)[-1].strip())
    finally:
        os.close(fd)
    return lines


def test_an_oom_killed_container_is_seen_and_its_memory_raised(
    real_node: RealNode,
    admin_client: client.ApiClient,
    recommender_kubeconfig: Path,
    real_node_session: NodeSession,
) -> None:
    def killed() -> Manifest | None:
        pod = _pod(admin_client, LEAK.name)
        statuses = pod.get("status", {}).get("containerStatuses") or [{}]
        last = (statuses[0].get("lastState") or {}).get("terminated") or {}
        return pod if last.get("reason") == "OOMKilled" else None

    pod = wait_for(killed, "the leaking container's OOM kill", 180, interval_s=2)
    status = pod["status"]["containerStatuses"][0]
    assert status["lastState"]["terminated"]["exitCode"] == 137 and status["restartCount"] >= 1
    kernel = _kernel_oom_lines(pod["metadata"]["uid"])
    assert kernel, "no oom-kill record of this pod's memory cgroup in the kernel log"
    assert "task=podsizer-load" in kernel[-1], kernel[-1]

    assert real_node_session.loads_started is not None
    report = _recommend(recommender_kubeconfig, real_node, real_node_session.loads_started, 60.0)
    container = _container(report, LEAK.name)
    memory = quantity.parse(container["requests"]["memory"])
    limit = quantity.parse(LEAK.resources["limits"]["memory"])
    assert memory > limit, (
        f"memory {container['requests']['memory']} not raised above the {limit / MI:.0f}Mi limit"
    )
    assert "OOMKilled at" in container["reason"], container["reason"]
    artifact(
        "scenario4-oom",
        {
            "kernel": kernel[-1],
            "restarts": status["restartCount"],
            "recommended": container["requests"],
            "reason": container["reason"],
        },
    )


def test_steady_load_is_recommended_at_its_real_usage_plus_margin(
    real_node: RealNode,
    admin_client: client.ApiClient,
    recommender_kubeconfig: Path,
    real_node_session: NodeSession,
) -> None:
    assert real_node.prometheus is not None and real_node_session.loads_started is not None
    since = real_node_session.loads_started
    wait_s = HISTORY_S - (datetime.now(UTC) - since).total_seconds()
    if wait_s > 0:
        time.sleep(wait_s)
    pod = _pod(admin_client, STEADY.name)
    started = datetime.fromisoformat(pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"])
    cg = cgroups.of(pod, "main")
    measured_at = datetime.now(UTC)
    mean_cpu = cg.cpu_usage_seconds / (measured_at - started).total_seconds()
    working_set = cg.working_set_bytes

    # the series are cAdvisor's, labelled by the kubelet and kube-prometheus' relabelling; no KSM series
    selector = f'namespace="{LOAD_NAMESPACE}",pod="{pod["metadata"]["name"]}",container="main"'
    # both kubelet endpoints export the container's CPU counter (/metrics/resource without image and id
    # labels); the source merges a container's series by their maximum, so neither counts twice
    series = {
        s["metric"]["metrics_path"]: s
        for s in real_node.prometheus.query(f"container_cpu_usage_seconds_total{{{selector}}}")
    }
    assert sorted(series) == ["/metrics/cadvisor", "/metrics/resource"], series
    labels = series["/metrics/cadvisor"]["metric"]
    assert (labels["job"], labels["metrics_path"], labels["node"]) == (
        "kubelet",
        "/metrics/cadvisor",
        real_node.name,
    )
    assert labels["image"] == real_node.parts.refs["load"]
    assert real_node.prometheus.query("count(kube_pod_owner)") == []

    t = time.monotonic()
    report = _recommend(recommender_kubeconfig, real_node, since, HISTORY_S)
    took = time.monotonic() - t
    container = _container(report, STEADY.name)
    cpu = quantity.parse(container["requests"]["cpu"])
    memory = quantity.parse(container["requests"]["memory"])
    figures = {
        "history_s": round((measured_at - since).total_seconds()),
        "kernel_cpu_mean_cores": round(mean_cpu, 4),
        "kernel_working_set_mib": round(working_set / MI, 1),
        "recommended": container["requests"],
        "confidence": container["confidence"],
        "low_confidence": container.get("lowConfidence", False),
        "reason": container["reason"],
        "recommend_wall_s": round(took, 1),
        "node_start_s": real_node_session.timings,
    }
    artifact("scenario1-steady", figures)
    assert 0.95 * 1.15 * mean_cpu <= cpu <= 1.5 * 1.15 * mean_cpu, figures
    assert 0.97 * 1.15 * working_set <= memory <= 1.08 * 1.15 * working_set, figures
    assert 0.25 <= mean_cpu <= 0.35, figures  # the load program did burn about 300m
    assert 190 * MI <= working_set <= 230 * MI, figures  # and hold about 200 MiB
    assert not container.get("lowConfidence", False), figures
