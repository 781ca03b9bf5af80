"""Real VictoriaMetrics -> PrometheusSource -> sizing engine: the Prometheus tests' recommendation
assertions, unchanged, over the same history imported into VictoriaMetrics instead of backfilled."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator

import pytest

from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import RecommendationRun, recommend
from tests.integration.prometheus import test_recommendations as prometheus_tests

from .conftest import Loaded, workloads

pytestmark = pytest.mark.integration
POLICY = prometheus_tests.POLICY


def _shared() -> dict[str, Callable[..., None]]:
    """Every test of the Prometheus module that takes only `run` (so any test added there runs here too)."""
    return {
        name: fn
        for name, fn in vars(prometheus_tests).items()
        if name.startswith("test_") and callable(fn) and list(inspect.signature(fn).parameters) == ["run"]
    }


globals().update(_shared())


def test_every_prometheus_recommendation_test_is_shared_here() -> None:
    assert "test_steady_100m_dc_app_gets_p99_plus_margin" in _shared()
    for name in _shared():
        assert globals()[name] is getattr(prometheus_tests, name)


@pytest.fixture(scope="module")
def run(vm_single: Loaded) -> Iterator[RecommendationRun]:
    """The `run` the imported tests take: one collect() from VictoriaMetrics over the whole history."""
    history = vm_single.histories[None]
    with PromClient(vm_single.server.url) as client:
        snapshot = PrometheusSource(client).collect(history.start, history.end)
    yield recommend(snapshot, POLICY, PriceTable.for_policy(POLICY), history.end)


def test_every_workload_of_the_history_is_recommended(vm_single: Loaded, run: RecommendationRun) -> None:
    expected = workloads(vm_single.histories[None])
    got = {(r.target.namespace, r.target.kind, r.target.name) for r in run.recommendations}
    assert {("shop", "StatefulSet", "db"), ("batch", "CronJob", "report")} <= expected
    assert expected <= got
