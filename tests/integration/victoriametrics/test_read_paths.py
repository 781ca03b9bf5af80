"""VictoriaMetrics' export API: the raw read gives the range queries' series, and `auto` takes it (remote
read is not offered there)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.input.prometheus.reads import GridSpec
from tests.integration.readpaths.agree import assert_raw_read_agrees_with_queries

from .conftest import Loaded

pytestmark = pytest.mark.integration


def test_the_export_api_gives_the_range_queries_series(vm_single: Loaded) -> None:
    history = vm_single.histories[None]
    end = history.end.timestamp()
    spec = GridSpec(end - 2 * 86400, end, 60.0, 60)
    ns = history.containers[0].namespace
    assert_raw_read_agrees_with_queries(vm_single.server.url, "export", ns, spec, cpu_per_point=False)


def test_auto_reads_victoria_metrics_by_its_export_api(vm_single: Loaded) -> None:
    end = vm_single.end
    with PromClient(vm_single.server.url, timeout=120) as client:
        source = PrometheusSource(client)
        snap = source.collect(end - timedelta(days=1), end)
    assert source.reads.chosen == "export"
    assert snap.containers and all(c.samples > 0 for c in snap.containers)
