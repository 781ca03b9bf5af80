"""Real VictoriaMetrics -> IncrementalSource -> sizing engine: the Prometheus tests' recommendation
assertions on the incremental path (a cold start 3 hours before the end, then a delta cycle)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from recommender.sizing.engine import RecommendationRun
from tests.integration.prometheus import test_incremental_recommendations as on_prometheus

from .conftest import Loaded

pytestmark = pytest.mark.integration

globals().update(on_prometheus.shared())


def test_every_full_window_recommendation_test_runs_here_too() -> None:
    assert "test_steady_100m_dc_app_gets_p99_plus_margin" in on_prometheus.shared()
    for name in on_prometheus.shared():
        assert globals()[name] is getattr(on_prometheus, name)


@pytest.fixture(scope="module")
def run(vm_single: Loaded) -> Iterator[RecommendationRun]:
    history = vm_single.histories[None]
    yield on_prometheus.incremental_run(vm_single.server.url, history.start, history.end)
