"""Real Prometheus -> PrometheusSource -> sizing engine: concrete recommendations for known history."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from podsizer.api import Recommendation, WorkloadRef
from podsizer.api.quantity import parse
from podsizer.sizing_policy import SizingPolicy
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import RecommendationRun, recommend

from .conftest import Served
from .history import GI, MI

pytestmark = pytest.mark.integration

POLICY = SizingPolicy()


@pytest.fixture(scope="module")
def run(served: Served) -> Iterator[RecommendationRun]:
    with PromClient(served.server.url) as client:
        snapshot = PrometheusSource(client).collect(served.history.start, served.history.end)
    yield recommend(snapshot, POLICY, PriceTable.for_policy(POLICY), served.history.end)


def _rec(run: RecommendationRun, ns: str, kind: str, name: str) -> Recommendation:
    target = WorkloadRef(ns, kind, name)
    return next(r for r in run.recommendations if r.target == target)


def _request(rec: Recommendation, container: str, resource: str) -> float:
    c = rec.container(container)
    assert c is not None, f"{rec.name} has no container {container}"
    return parse(c.requests[resource])


def test_steady_100m_dc_app_gets_p99_plus_margin(run: RecommendationRun) -> None:
    # 100m with 5% noise per 60 s sample; 5-minute rates average 5 samples: p99 ~ 105m, +15% ~ 121m.
    rec = _rec(run, "legacy", "DeploymentConfig", "cart")
    assert rec.sizing_mode == "static"
    assert 0.110 <= _request(rec, "cart", "cpu") <= 0.135
    memory = _request(rec, "cart", "memory")
    assert 128 * MI * 1.15 <= memory <= 150 * MI * 1.15


def test_deployer_and_hook_pods_leave_the_dc_recommendation_as_without_them(run: RecommendationRun) -> None:
    with_deployer = _rec(run, "legacy", "DeploymentConfig", "cart").containers
    alone = _rec(run, "legacy-clean", "DeploymentConfig", "cart").containers
    assert with_deployer == alone


def test_hpa_workload_is_sized_per_replica_for_its_cpu_target(run: RecommendationRun) -> None:
    # per-replica steady 200m / HPA target 0.7 = 286m, so the HPA keeps seeing its target.
    rec = _rec(run, "shop", "Deployment", "web")
    assert rec.sizing_mode == "autopilot"
    assert 0.27 <= _request(rec, "app", "cpu") <= 0.30
    assert "70%" in rec.reason or "70%" in (rec.container("app") or rec.containers[0]).reason


def test_oom_killed_statefulset_gets_memory_above_the_kill(run: RecommendationRun) -> None:
    rec = _rec(run, "shop", "StatefulSet", "db")
    assert _request(rec, "postgres", "memory") >= max(2.5 * GI * 1.2, 2.5 * GI + 100 * MI)


def test_idle_gpu_notebook_is_flagged_with_its_cost(run: RecommendationRun) -> None:
    rec = _rec(run, "ml", "Deployment", "notebook")
    assert rec.gpu is not None and rec.gpu.idle
    assert rec.gpu.idle_since is not None
    assert rec.gpu.wasted_hourly_cost == pytest.approx(POLICY.default_gpu_hourly_price)
    assert any(w.workload == rec.target for w in run.waste)
    busy = _rec(run, "ml", "Deployment", "trainer")
    assert busy.gpu is not None and not busy.gpu.idle


def test_gpu_requests_equal_limits_in_whole_numbers(run: RecommendationRun) -> None:
    for rec in run.recommendations:
        for c in rec.containers:
            for resource in set(c.requests) | set(c.limits):
                if resource.startswith("nvidia.com/"):
                    assert c.requests.get(resource) == c.limits.get(resource), (rec.name, c.name)
                    assert float(c.limits[resource]).is_integer()
