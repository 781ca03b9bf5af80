"""The whole run: snapshot in, Recommendations + skipped + waste + costs out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import MIB, parse
from podsizer.api.resource import (
    ContainerPolicy,
    Recommendation,
    recommendation_from_resource,
    recommendation_to_resource,
)
from podsizer.owners import Skipped
from podsizer.sizing_policy import SizingPolicy
from podsizer.subject import Subject
from recommender.model import (
    Autoscaler,
    ContainerUsage,
    GpuUsage,
    NodeInfo,
    Quantiles,
    TimeSeries,
    UsageSnapshot,
    WorkloadDemand,
    index_by_workload,
)
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import RecommendationRun, recommend, recommend_workload

END = datetime(2026, 11, 8, tzinfo=UTC)
START = END - timedelta(days=7)
NOW = END + timedelta(minutes=5)
DB = WorkloadRef("shop", "StatefulSet", "db")
WEB = WorkloadRef("shop", "Deployment", "web")
INFER = WorkloadRef("ml", "Deployment", "infer")
BROKEN = WorkloadRef("shop", "DaemonSet", "agent")


def cu(workload: WorkloadRef, container: str, cpu: float, mem_mib: float) -> ContainerUsage:
    q_cpu = Quantiles(cpu, cpu * 1.1, cpu * 1.15, cpu * 1.2, cpu * 1.3, cpu)
    q_mem = Quantiles(*(mem_mib * MIB * f for f in (1.0, 1.02, 1.04, 1.05, 1.06, 1.0)))
    return ContainerUsage(workload, container, q_cpu, q_mem, cpu, mem_mib * MIB, 20160, START, END)


def idle_gpu(pod: str, node: str) -> GpuUsage:
    values = np.concatenate([np.full(120, 0.5), np.full(180, 0.01)])  # busy 2 h, idle 3 h (1-min steps)
    return GpuUsage(
        workload=INFER,
        container="model",
        pod=pod,
        node=node,
        model_name="NVIDIA A100 80GB PCIe",
        gpu_count=1,
        activity_signal="GR_ENGINE_ACTIVE",
        activity=Quantiles(0.01, 0.03, 0.05, 0.5, 0.5, 0.2),
        fb_used_max_mib=8 * 1024.0,
        fb_total_mib=81920.0,
        activity_series=TimeSeries(END - timedelta(hours=5), 60.0, values),
    )


def snapshot() -> UsageSnapshot:
    hours = 24 * 7
    t = np.arange(hours)
    demand = WorkloadDemand(
        WEB,
        TimeSeries(START, 3600.0, 1.0 + 0.3 * np.sin(2 * np.pi * t / 24)),
        TimeSeries(START, 3600.0, np.full(hours, 2e9)),
    )
    return UsageSnapshot(
        window_start=START,
        window_end=END,
        containers=(
            cu(DB, "main", 0.2, 400),
            cu(WEB, "app", 0.35, 300),
            cu(INFER, "model", 1.0, 4000),
            cu(BROKEN, "agent", 0.05, 50),
        ),
        gpus=(idle_gpu("infer-a", "gpu-1"), idle_gpu("infer-b", "gpu-2")),
        autoscalers=(Autoscaler(WEB, "HorizontalPodAutoscaler", "web", 2, 10, {"cpu": 70}),),
        nodes=(
            NodeInfo("gpu-1", "p4de.24xlarge", "on-demand", region="us-east-1"),
            NodeInfo("gpu-2", "a2-ultragpu-1g", "spot", region="us-central1"),
        ),
        demand=(demand,),
        skipped=(Skipped(Subject.of_pod("shop", "x-1-deploy"), "deployer pod"),),
        source="test",
    )


@pytest.fixture(scope="module")
def run() -> RecommendationRun:
    bounds = {
        DB: (ContainerPolicy("*", max_allowed={"memory": 256 * MIB}),),
        BROKEN: (ContainerPolicy("*", min_allowed={"cpu": 2.0}, max_allowed={"cpu": 1.0}),),
    }
    return recommend(snapshot(), SizingPolicy(), PriceTable.load(), NOW, bounds)


def test_one_recommendation_per_sizable_workload_and_the_broken_one_is_skipped(
    run: RecommendationRun,
) -> None:
    assert {r.target for r in run.recommendations} == {DB, WEB, INFER}
    subjects = {str(s.subject): s.reason for s in run.skipped}
    assert "shop/pod/x-1-deploy" in subjects  # the snapshot's own skips pass through
    assert subjects[str(BROKEN)].startswith(
        "sizing failed: BoundsError: resourcePolicy for container 'agent'"
    )
    assert "minAllowed cpu 2000m is above maxAllowed 1000m" in subjects[str(BROKEN)]


def test_the_index_holds_each_workloads_own_usage_and_nothing_else() -> None:
    snap = snapshot()
    index = index_by_workload(snap)
    assert list(index) == snap.workloads()
    for workload, usage in index.items():
        assert usage.containers == tuple(c for c in snap.containers if c.workload == workload)
        assert usage.gpus == tuple(g for g in snap.gpus if g.workload == workload)
    assert index[WEB].autoscaler is snap.autoscalers[0] and index[WEB].demand is snap.demand[0]
    assert index[DB].autoscaler is None and index[DB].demand is None
    assert len(index[INFER].gpus) == 2


def test_a_run_sizes_each_workload_as_sizing_it_alone_would(run: RecommendationRun) -> None:
    for rec in run.recommendations:
        alone = recommend_workload(rec.target, snapshot(), SizingPolicy(), PriceTable.load(), NOW, rec.policy)
        assert alone.recommendation == rec


def by(run: RecommendationRun, ref: WorkloadRef) -> Recommendation:
    return next(r for r in run.recommendations if r.target == ref)


def test_static_workload_with_bounds(run: RecommendationRun) -> None:
    db = by(run, DB)
    assert db.sizing_mode == "static"
    assert db.reason == "static: no horizontal autoscaler"
    c = db.container("main")
    assert c is not None and c.requests["memory"] == "256Mi"
    assert "memory clipped to maxAllowed 256Mi" in c.reason
    assert "cpu" not in c.limits and c.limits["memory"] == "320Mi"
    assert db.window.start == START and db.window.end == END and db.window.samples == 20160
    assert db.generated_at == NOW
    assert db.policy and db.forecast is None


def test_hpa_workload_is_autopilot_with_forecast(run: RecommendationRun) -> None:
    web = by(run, WEB)
    assert web.sizing_mode == "autopilot"
    assert web.reason == "autopilot: HPA web targets cpu 70%"
    c = web.container("app")
    assert c is not None and c.requests["cpu"] == "500m"
    assert web.forecast is not None and web.forecast.horizon_days == 7.0
    assert web.forecast.cpu_cores_peak == pytest.approx(1.3, abs=0.05)


def test_gpu_workload_gets_whole_gpu_requests_mig_suggestion_idle_and_cost(run: RecommendationRun) -> None:
    infer = by(run, INFER)
    c = infer.container("model")
    assert c is not None
    assert c.requests["nvidia.com/gpu"] == c.limits["nvidia.com/gpu"] == "1"
    g = infer.gpu
    assert g is not None
    assert g.allocated == 2 and g.model == "NVIDIA A100 80GB PCIe"
    assert g.suggested_resource == "nvidia.com/mig-1g.10gb"
    assert g.fb_used_max_bytes == 8 * 1024 * MIB
    assert g.activity_signal == "GR_ENGINE_ACTIVE"
    assert g.idle and g.idle_since == END - timedelta(hours=3)
    on_demand = 27.447050 / 8  # p4de.24xlarge, 1 of 8 GPUs
    spot = 3.04123753424658  # a2-ultragpu-1g spot
    assert g.hourly_cost == pytest.approx(on_demand + spot)
    assert g.wasted_hourly_cost == pytest.approx(on_demand + spot)
    assert len(run.waste) == 2 and {w.price_basis for w in run.waste} == {"on-demand", "spot"}
    assert run.costs.by_namespace["ml"] == pytest.approx(on_demand + spot)
    assert run.costs.cluster_wasted_hourly == pytest.approx(on_demand + spot)


def test_recommendations_survive_the_wire_codec(run: RecommendationRun) -> None:
    assert run.recommendations
    for rec in run.recommendations:
        back = recommendation_from_resource(recommendation_to_resource(rec))
        assert back.target == rec.target
        for c in back.containers:
            for value in (*c.requests.values(), *c.limits.values()):
                parse(value)


def test_gpu_only_container_still_gets_its_gpu_request() -> None:
    snap = UsageSnapshot(START, END, containers=(), gpus=(idle_gpu("infer-a", "gpu-x"),))
    result = recommend(snap, SizingPolicy(), PriceTable.load(), NOW)
    (rec,) = result.recommendations
    c = rec.container("model")
    assert c is not None and c.requests == {"nvidia.com/gpu": "1"}
    assert rec.gpu is not None and rec.gpu.hourly_cost == pytest.approx(0.95)  # unknown node: default


def test_gpu_only_container_confidence_comes_from_its_series_span() -> None:
    snap = UsageSnapshot(START, END, containers=(), gpus=(idle_gpu("infer-a", "gpu-x"),))
    (rec,) = recommend(snap, SizingPolicy(), PriceTable.load(), NOW).recommendations
    c = rec.container("model")
    assert c is not None
    assert c.confidence == pytest.approx(5 / (24 * 7))  # 5 hours of a 7-day full-confidence span
    assert c.low_confidence and "short GPU history" in c.reason


def test_mig_pod_keeps_its_slice_and_pays_its_share() -> None:
    g = idle_gpu("infer-a", "gpu-1")
    on_slice = GpuUsage(**{**g.__dict__, "mig_profile": "1g.10gb"})
    snap = UsageSnapshot(
        START,
        END,
        containers=(cu(INFER, "model", 1.0, 4000),),
        gpus=(on_slice,),
        nodes=(NodeInfo("gpu-1", "p4de.24xlarge", "on-demand", region="us-east-1"),),
    )
    result = recommend(snap, SizingPolicy(), PriceTable.load(), NOW)
    (rec,) = result.recommendations
    c = rec.container("model")
    assert c is not None
    assert c.requests["nvidia.com/mig-1g.10gb"] == c.limits["nvidia.com/mig-1g.10gb"] == "1"
    assert "nvidia.com/gpu" not in c.requests
    assert rec.gpu is not None and rec.gpu.hourly_cost == pytest.approx(27.447050 / 8 / 7)
    assert not result.waste  # a slice is not a whole idle GPU


def test_forecast_failure_is_noted_but_sizing_stands() -> None:
    nan = TimeSeries(START, 3600.0, np.full(48, np.nan))
    snap = UsageSnapshot(
        START, END, containers=(cu(DB, "main", 0.2, 400),), demand=(WorkloadDemand(DB, nan, nan),)
    )
    (rec,) = recommend(snap, SizingPolicy(), PriceTable.load(), NOW).recommendations
    assert rec.forecast is None
    assert "forecast unavailable: no finite samples" in rec.reason


def test_nan_usage_skips_only_that_workload() -> None:
    bad = cu(WEB, "app", 0.35, 300)
    bad = ContainerUsage(**{**bad.__dict__, "cpu_cores": Quantiles(*([float("nan")] * 6))})
    snap = UsageSnapshot(START, END, containers=(cu(DB, "main", 0.2, 400), bad))
    result = recommend(snap, SizingPolicy(), PriceTable.load(), NOW)
    assert [r.target for r in result.recommendations] == [DB]
    (skip,) = result.skipped
    assert skip.subject == Subject.of_workload(WEB) and skip.failed
    assert "cpu estimate nan is not a finite amount" in skip.reason


def test_gpu_bounds_win_over_the_gpu_count() -> None:
    g = idle_gpu("infer-a", "gpu-1")
    four = GpuUsage(**{**g.__dict__, "gpu_count": 4, "fb_total_mib": 4 * 81920.0})
    snap = UsageSnapshot(START, END, containers=(cu(INFER, "model", 1.0, 4000),), gpus=(four,))
    bounds = {INFER: (ContainerPolicy("model", min_allowed={"nvidia.com/gpu": 2}),)}
    (rec,) = recommend(snap, SizingPolicy(), PriceTable.load(), NOW, bounds).recommendations
    c = rec.container("model")
    assert c is not None
    assert c.requests["nvidia.com/gpu"] == c.limits["nvidia.com/gpu"] == "2"  # activity alone says 1
    assert "nvidia.com/gpu raised to minAllowed 2 (wanted 1)" in c.reason


FORGED = "Bad_Name\n2026-01-01 ERROR forged\x1b[31m"


def test_an_invalid_container_name_skips_that_container_and_the_valid_ones_are_sized() -> None:
    """A container label that is not a Kubernetes name costs that container, never its workload."""
    snap = UsageSnapshot(START, END, containers=(cu(WEB, "app", 0.35, 300), cu(WEB, FORGED, 0.1, 100)))
    result = recommend(snap, SizingPolicy(), PriceTable.load(), NOW)
    (rec,) = result.recommendations
    assert (rec.target, [c.name for c in rec.containers]) == (WEB, ["app"])
    (skip,) = result.skipped
    assert (skip.subject, skip.failed) == (Subject.of_workload(WEB, FORGED), False)
    assert skip.reason.startswith(f"container not sized: {FORGED[:64]!r}")
    assert "is not a Kubernetes name" in skip.reason and "\n" not in skip.reason


def test_a_workload_whose_every_container_name_is_invalid_is_skipped_per_container() -> None:
    snap = UsageSnapshot(
        START, END, containers=(cu(WEB, "App", 0.35, 300), cu(WEB, "a" * 64, 0.1, 100)), gpus=()
    )
    result = recommend(snap, SizingPolicy(), PriceTable.load(), NOW)
    assert result.recommendations == ()
    assert sorted(s.subject.container for s in result.skipped) == sorted(["App", "a" * 64])
