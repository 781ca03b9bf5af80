"""Real Prometheus -> IncrementalSource (a cold start 3 hours before the end, then a delta cycle) ->
sizing engine: every recommendation assertion of test_recommendations.py, unchanged, on the incremental
path (and tests/integration/victoriametrics/test_incremental.py runs them on VictoriaMetrics)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

import pytest

from recommender.incremental.source import IncrementalSource
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import RecommendationRun, recommend

from . import test_recommendations as full_window
from .conftest import Served

pytestmark = pytest.mark.integration
POLICY = full_window.POLICY


def shared() -> dict[str, Callable[..., None]]:
    """Every test of the full-window module that takes only `run`."""
    return {
        name: fn
        for name, fn in vars(full_window).items()
        if name.startswith("test_") and callable(fn) and list(inspect.signature(fn).parameters) == ["run"]
    }


globals().update(shared())


def test_every_full_window_recommendation_test_runs_here_too() -> None:
    assert "test_steady_100m_dc_app_gets_p99_plus_margin" in shared()
    for name in shared():
        assert globals()[name] is getattr(full_window, name)


def incremental_run(url: str, start: datetime, end: datetime) -> RecommendationRun:
    """A cold start 3 h before `end`, then one delta cycle to `end`, sized."""
    with PromClient(url) as client:
        source = IncrementalSource(PrometheusSource(client), window=end - start)
        earlier = end - timedelta(hours=3)
        source.collect(earlier - (end - start), earlier)
        snapshot = source.collect(start, end)
        assert source.last_cycle is not None and source.last_cycle.kind == "delta"
    return recommend(snapshot, POLICY, PriceTable.for_policy(POLICY), end)


@pytest.fixture(scope="module")
def run(served: Served) -> Iterator[RecommendationRun]:
    yield incremental_run(served.server.url, served.history.start, served.history.end)
