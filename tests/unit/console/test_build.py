"""build_console_data over a small hand-built cluster run through the real aggregate and sizing engine."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from fastapi.testclient import TestClient

from console.app import create_console_app
from console.build import build_console_data
from console.data import StaticConsoleData, WorkloadRow
from console.demo_data import DemoConsoleData
from console.views import workload_out
from podsizer.api.identity import WorkloadRef
from podsizer.policy import PlanPolicy
from podsizer.resources import GPU
from podsizer.sizing_policy import SizingPolicy
from recommender.input.demo_cluster import build_demo_dataset
from recommender.model import NodeInfo
from recommender.model.aggregate import aggregate
from recommender.model.raw import ContainerSamples, GpuSamples, OwnerLink, PodInfo, RawDataset
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import recommend

MIB = 1024.0 * 1024.0
END = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
START = END - timedelta(days=2)
N = 2 * 288
TS = START.timestamp() + 300.0 * np.arange(N, dtype=np.float64)
BILLING = WorkloadRef("legacy", "DeploymentConfig", "billing")
TRAIN = WorkloadRef("ml", "Deployment", "train")


def _pod(ns: str, name: str, node: str, owner: tuple[str, str] | None, **kw: object) -> PodInfo:
    return PodInfo(ns, name, node, owner[0] if owner else None, owner[1] if owner else None, **kw)  # type: ignore[arg-type]


def _samples(ns: str, pod: str, container: str, cpu: float, mem_mib: float) -> ContainerSamples:
    return ContainerSamples(ns, pod, container, TS, np.full(N, cpu), np.full(N, mem_mib * MIB))


def _gpu(pod: str, index: str, uuid: str, activity: float, **kw: object) -> GpuSamples:
    return GpuSamples(
        "ml",
        pod,
        "trainer" if pod else "",
        "gpu-1",
        index,
        uuid,
        "NVIDIA A100 80GB PCIe",
        TS,
        np.full(N, 20000.0),
        np.full(N, 61920.0),
        sm_active=np.full(N, activity),
        **kw,  # type: ignore[arg-type]
    )


def _raw() -> RawDataset:
    req = {"cpu": 1.0, "memory": 1024 * MIB}
    gpu_req = {"cpu": 4.0, "memory": 8192 * MIB, "nvidia.com/gpu": 1.0}
    pods = (
        _pod(
            "legacy",
            "billing-7-abcde",
            "node-1",
            ("ReplicationController", "billing-7"),
            annotations={"podsizer.io/mode": "auto"},
            requests={"billing": req},
        ),
        # Deployer and hook pods: the hook copies the app's resources, GPUs included.
        _pod(
            "legacy",
            "billing-7-deploy",
            "gpu-1",
            ("ReplicationController", "billing-7"),
            labels={"openshift.io/deployer-pod-for.name": "billing-7"},
            requests={"deployment": {"nvidia.com/gpu": 1.0}},
        ),
        _pod(
            "legacy",
            "billing-7-hook-pre",
            "gpu-1",
            None,
            labels={
                "openshift.io/deployer-pod.type": "hook-pre",
                "openshift.io/deployer-pod-for.name": "billing-7",
            },
            requests={"billing": {"nvidia.com/gpu": 2.0}},
        ),
        _pod("ml", "train-6d4f-x1", "gpu-1", ("ReplicaSet", "train-6d4f"), requests={"trainer": gpu_req}),
        _pod(
            "ml",
            "infer-6d4f-x1",
            "gpu-1",
            ("ReplicaSet", "infer-6d4f"),
            annotations={"podsizer.io/mode": "sideways"},
            requests={"server": {"cpu": 1.0, "memory": 2048 * MIB, "nvidia.com/mig-3g.40gb": 1.0}},
        ),
    )
    owners = (
        OwnerLink("legacy", "ReplicationController", "billing-7", "DeploymentConfig", "billing"),
        OwnerLink("ml", "ReplicaSet", "train-6d4f", "Deployment", "train"),
        OwnerLink("ml", "ReplicaSet", "infer-6d4f", "Deployment", "infer"),
    )
    containers = (
        _samples("legacy", "billing-7-abcde", "billing", 0.2, 300),
        _samples("legacy", "billing-7-deploy", "deployment", 3.0, 4000),
        _samples("legacy", "billing-7-hook-pre", "billing", 3.0, 4000),
        _samples("ml", "train-6d4f-x1", "trainer", 2.0, 4096),
        _samples("ml", "infer-6d4f-x1", "server", 0.5, 1024),
    )
    gpus = (
        _gpu("train-6d4f-x1", "1", "GPU-1111", 0.01),
        GpuSamples(
            "ml",
            "infer-6d4f-x1",
            "server",
            "gpu-1",
            "0",
            "GPU-0000",
            "NVIDIA A100 80GB PCIe",
            TS,
            np.full(N, 9000.0),
            np.full(N, 31000.0),
            gr_engine_active=np.full(N, 0.3),
            mig_profile="3g.40gb",
            mig_instance_id="1",
        ),
        GpuSamples(
            "",
            "",
            "",
            "gpu-1",
            "0",
            "GPU-0000",
            "NVIDIA A100 80GB PCIe",
            TS,
            np.full(N, 0.0),
            np.full(N, 40000.0),
            gr_engine_active=np.zeros(N),
            mig_profile="4g.40gb",
            mig_instance_id="2",
        ),
    )
    nodes = (
        NodeInfo(
            "gpu-1",
            "p4de.24xlarge",
            "on-demand",
            "NVIDIA-A100-80GB-PCIe",
            2,
            81920.0,
            labels={"nvidia.com/mig.strategy": "mixed"},
        ),
    )
    return RawDataset(START, END, pods, owners, containers, gpus, nodes=nodes)


@pytest.fixture(scope="module")
def data() -> StaticConsoleData:
    raw = _raw()
    snapshot = aggregate(raw, source="test")
    run = recommend(snapshot, SizingPolicy(), PriceTable.load(None), END)
    return build_console_data(raw, snapshot, run, END)


def test_deployment_configs_are_workloads_and_deployer_hook_pods_are_not(data: StaticConsoleData) -> None:
    refs = {w.workload for w in data.workloads()}
    assert BILLING in refs
    billing = next(w for w in data.workloads() if w.workload == BILLING)
    assert billing.pods == ("billing-7-abcde",)
    assert {p.name for p in data.pods()} == {"billing-7-abcde", "train-6d4f-x1", "infer-6d4f-x1"}
    skipped = {str(s.subject) for s in data.skipped()}
    assert {"legacy/pod/billing-7-deploy", "legacy/pod/billing-7-hook-pre"} <= skipped
    assert data.pod_detail("legacy", "billing-7-hook-pre") is None


def test_current_requests_come_from_the_pods_and_recommendations_from_the_run(
    data: StaticConsoleData,
) -> None:
    billing = next(w for w in data.workloads() if w.workload == BILLING)
    (c,) = billing.containers
    assert c.current_requests == {"cpu": 1.0, "memory": 1024 * MIB}
    assert 0.2 < c.recommended_requests["cpu"] < 0.5  # flat 0.2 cores + margin, never the hook's 3 cores
    assert billing.mode == "auto" and billing.mode_source == "podsizer.io/mode pod annotation"


def test_invalid_mode_annotation_falls_back_to_the_default_and_says_so(data: StaticConsoleData) -> None:
    infer = next(w for w in data.workloads() if w.workload.name == "infer")
    assert infer.mode == "dry-run"
    assert "invalid podsizer.io/mode 'sideways'" in infer.mode_source
    train = next(w for w in data.workloads() if w.workload == TRAIN)
    assert (train.mode, train.mode_source) == ("dry-run", "default")


def test_exclude_annotation_shows_excluded() -> None:
    raw = _raw()
    opted_out = {"podsizer.io/exclude": "true", "podsizer.io/mode": "auto"}
    pods = tuple(
        dataclasses.replace(p, annotations=opted_out) if p.name == "billing-7-abcde" else p for p in raw.pods
    )
    raw = dataclasses.replace(raw, pods=pods)
    snapshot = aggregate(raw, source="test")
    run = recommend(snapshot, SizingPolicy(), PriceTable.load(None), END)
    data = build_console_data(raw, snapshot, run, END)
    billing = next(w for w in data.workloads() if w.workload == BILLING)
    assert (billing.mode, billing.mode_source) == ("excluded", "podsizer.io/exclude on the pod")
    assert all(not c.changes for c in billing.containers)


def test_gpu_node_inventory_counts_app_pods_only_and_shows_the_mig_layout(data: StaticConsoleData) -> None:
    (node,) = data.gpu_nodes()
    assert node.gpu_count == 2 and node.mig_strategy == "mixed"
    assert node.allocated_gpus == 1  # train's GPU; the deployer's and hook's GPUs are not app allocations
    assert dict(node.allocated_mig) == {"3g.40gb": 1}
    gpu0 = next(d for d in node.devices if d.index == "0")
    assert [(m.profile, m.pod) for m in gpu0.mig] == [("3g.40gb", "ml/infer-6d4f-x1"), ("4g.40gb", None)]


def test_idle_gpu_is_a_waste_finding_and_priced(data: StaticConsoleData) -> None:
    (finding,) = data.waste()
    assert finding.pod == "train-6d4f-x1" and finding.gpus == 1
    assert finding.wasted_hourly_cost == pytest.approx(27.44705 / 8)
    row = next(g for g in data.gpu_pods() if g.pod == "train-6d4f-x1")
    assert row.idle and row.hourly_cost == pytest.approx(27.44705 / 8)
    assert data.costs().cluster.wasted_hourly == pytest.approx(27.44705 / 8)


def test_pod_detail_has_cpu_memory_and_dcgm_charts_with_request_lines(data: StaticConsoleData) -> None:
    detail = data.pod_detail("ml", "train-6d4f-x1")
    assert detail is not None
    charts = {c.key: c for c in detail.charts}
    assert set(charts) == {"cpu", "memory", "gpu-activity", "framebuffer"}  # no DRAM series exported
    assert {r.label: r.value for r in charts["cpu"].references}["trainer request"] == 4.0
    assert charts["gpu-activity"].lines[0].values.size == N
    assert charts["framebuffer"].references[0].value == pytest.approx(81920.0)
    assert charts["framebuffer"].references[0].label == "framebuffer size"


def test_demo_console_data_hides_deployer_pods_and_lists_the_deploymentconfig() -> None:
    data = DemoConsoleData.build(END)
    names = {p.name for p in data.pods()}
    assert not any(n.endswith("-deploy") or "-hook-" in n for n in names)
    assert any(w.workload.kind == "DeploymentConfig" for w in data.workloads())
    assert data.waste(), "the demo has an idle notebook GPU"
    assert data.costs().cluster.hourly == pytest.approx(sum(c.hourly for c in data.costs().by_namespace))


def _row(data: StaticConsoleData, name: str) -> WorkloadRow:
    return next(w for w in data.workloads() if w.workload.name == name)


def test_rows_show_what_the_pod_plan_writes_under_the_console_policy() -> None:
    keep_ratio = _row(DemoConsoleData.build(END), "storefront").containers[0]
    assert keep_ratio.current_limits["memory"] == keep_ratio.current_requests["memory"] == 4096 * MIB
    assert keep_ratio.planned_limits["memory"] == keep_ratio.planned_requests["memory"]  # ratio 1 stays
    assert keep_ratio.planned_limits["memory"] != keep_ratio.recommended_limits["memory"]
    unfactored = PlanPolicy("recommended", max_change_factor=None)  # storefront's memory shrinks 8x
    recommended = _row(DemoConsoleData.build(END, plan_policy=unfactored), "storefront")
    (c,) = recommended.containers
    assert c.planned_limits["memory"] == c.recommended_limits["memory"]
    assert {(ch.field, ch.resource) for ch in c.changes} == {
        ("requests", "cpu"),
        ("requests", "memory"),
        ("limits", "memory"),
    }


def test_gpu_counts_change_only_with_the_gpu_opt_in() -> None:
    kept = _row(DemoConsoleData.build(END), "bert-finetune").containers[0]
    assert kept.planned_requests[GPU] == kept.current_requests[GPU] == 4.0
    assert kept.recommended_requests[GPU] == 3.0
    resized = _row(DemoConsoleData.build(END, plan_policy=PlanPolicy(gpu_resize=True)), "bert-finetune")
    assert resized.gpu_resize and resized.containers[0].planned_requests[GPU] == 3.0


def test_savings_come_from_the_plan_so_a_low_confidence_workload_saves_nothing() -> None:
    flags = _row(DemoConsoleData.build(END), "feature-flags")
    assert flags.plan_skip == "low-confidence"
    out = workload_out(flags)
    assert out.cpu_cores_saved == 0.0 and out.memory_bytes_saved == 0.0
    assert flags.containers[0].recommended_requests["cpu"] != flags.containers[0].current_requests["cpu"]


@pytest.fixture(scope="module")
def demo() -> StaticConsoleData:
    return DemoConsoleData.build(datetime(2026, 12, 2, 12, tzinfo=UTC))


def test_hpa_workload_counts_its_autoscalers_current_replicas_not_every_pod_seen(
    demo: StaticConsoleData,
) -> None:
    search = next(r for r in demo.workload_rows if r.workload.name == "search")
    assert search.replicas is not None and 0 < search.replicas < len(search.pods)
    assert search.replicas_basis.startswith("HorizontalPodAutoscaler")
    out = workload_out(search)
    cpu = sum(
        (c.current_requests["cpu"] - c.planned_requests["cpu"]) * search.replicas for c in search.containers
    )
    assert out.cpu_cores_saved == pytest.approx(cpu)


def test_workloads_without_autoscaler_count_the_pods_present_at_the_newest_sample(
    demo: StaticConsoleData,
) -> None:
    rows = [r for r in demo.workload_rows if r.replicas_basis == "pods present at the newest sample"]
    assert rows and all(r.replicas is not None and r.replicas <= len(r.pods) for r in rows)


def test_unallocated_gpus_get_the_nodes_gpu_price(demo: StaticConsoleData) -> None:
    spare = [n for n in demo.nodes if n.gpu_count > n.allocated_gpus and not n.allocated_mig]
    assert spare, "the demo has a node with unallocated GPUs"
    assert all(n.gpu_hourly_price > 0 and n.price_basis for n in spare)


def test_workload_detail_has_history_over_all_pods_with_request_lines(demo: StaticConsoleData) -> None:
    search = next(r for r in demo.workload_rows if r.workload.name == "search")
    detail = demo.workload_detail(search.workload)
    assert detail is not None and detail.forecast is not None
    cpu = next(c for c in detail.charts if c.key == "cpu")
    labels = {r.label for r in cpu.references}
    assert {"search request", "search new request"} <= labels
    ts = cpu.lines[0].timestamps
    assert np.all(np.diff(ts) > 0), "one point per time, peak over pods"


def test_oom_kills_are_marked_on_the_workloads_memory_chart(demo: StaticConsoleData) -> None:
    marked = [
        (d.workload.name, c.key, m.label) for d in demo.workload_details for c in d.charts for m in c.marks
    ]
    assert marked and all(key == "memory" and "OOM kill" in label for _, key, label in marked)


def test_pod_memory_chart_draws_the_memory_limit_and_the_pods_oom_kill(demo: StaticConsoleData) -> None:
    checkout = next(r for r in demo.workload_rows if r.workload.name == "checkout-api")
    marked = []
    for name in checkout.pods:
        detail = demo.pod_detail(checkout.workload.namespace, name)
        assert detail is not None
        memory = next(c for c in detail.charts if c.key == "memory")
        assert any(r.label.endswith(" limit") for r in memory.references)
        marked += [m.label for m in memory.marks]
    assert len(marked) == 1 and "OOM kill" in marked[0]


def test_stale_data_counts_replicas_at_its_newest_sample_and_says_so() -> None:
    """Data ending 35 minutes before the window's end: the replicas (and savings) are those of the newest
    data, not 0, and the header says the data is stale; fresh data says nothing."""
    now = datetime(2026, 12, 2, 12, tzinfo=UTC)
    fresh = DemoConsoleData.build(now)
    raw = dataclasses.replace(build_demo_dataset(now), end=now + timedelta(minutes=35))
    snapshot = aggregate(raw, source="demo")
    table = PriceTable.load(None)
    run = recommend(snapshot, SizingPolicy(), table, raw.end)
    stale = build_console_data(raw, snapshot, run, raw.end, prices=table)

    def present(data: StaticConsoleData) -> dict[WorkloadRef, tuple[int | None, str]]:
        """Replicas of the workloads counted by the pods present (CronJobs and Jobs: by the window)."""
        rows = [r for r in data.workload_rows if r.running_share is None]
        return {r.workload: (r.replicas, r.replicas_basis) for r in rows}

    replicas = present(stale)
    assert replicas == present(fresh)
    counted = [
        n
        for ref, (n, basis) in replicas.items()
        if basis == "pods present at the newest sample" and ref.kind in ("Deployment", "StatefulSet")
    ]
    assert counted and all(n is not None and n > 0 for n in counted), replicas  # before: every one 0
    assert fresh.meta().stale == ""
    assert "40 min before the window's end" in stale.meta().stale  # the demo's last sample: 5 min before now
    assert "replicas and savings count the pods present at that sample" in stale.meta().stale
    with TestClient(create_console_app(stale)) as client:
        header = client.get("/").text.split("</header>")[0]
        api = client.get("/api/meta").json()
    assert 'id="stale" role="alert"' in header and "40 min before the window" in header
    assert api["stale"] == stale.meta().stale
