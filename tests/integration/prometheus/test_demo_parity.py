"""The demo data set read back through a real Prometheus gives the same usage model as read in memory."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from recommender.input.demo import build_demo_dataset
from recommender.input.openmetrics import backfill, write_dataset
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.model import GpuUsage, UsageSnapshot
from recommender.model.aggregate import aggregate

from .conftest import PROMTOOL
from .server import running_prometheus

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[UsageSnapshot, UsageSnapshot]]:
    # The demo samples every 300 s; Prometheus' 300 s rate windows need the samples on that grid.
    end = datetime.fromtimestamp(int(time.time()) // 300 * 300, UTC)
    raw = build_demo_dataset(end, days=7)
    root = tmp_path_factory.mktemp("demo-prom")
    backfill(write_dataset(raw, root / "om", workers=2), root / "data", workers=2, promtool=PROMTOOL)
    with running_prometheus(root / "data", retention_days=9) as server, PromClient(server.url) as client:
        served = PrometheusSource(client).collect(end - timedelta(days=7), end)
    yield aggregate(raw, source="demo"), served


def _gpus(snapshot: UsageSnapshot) -> dict[tuple[str, str, str], GpuUsage]:
    return {(str(g.workload), g.container, g.pod): g for g in snapshot.gpus}


def test_same_workloads_and_containers(both: tuple[UsageSnapshot, UsageSnapshot]) -> None:
    memory, served = both
    # The demo's init container has one sample per pod: a rate needs two, so Prometheus cannot size it.
    once = {(c.workload, c.container) for c in memory.containers if c.samples < 2 * c.pods}
    assert {(c.workload, c.container) for c in served.containers} == {
        (c.workload, c.container) for c in memory.containers
    } - once
    assert once == {(w, "init-chmod") for w in {c.workload for c in memory.containers if c.init_container}}


def test_gpu_pods_agree_on_count_framebuffer_signal_and_activity(
    both: tuple[UsageSnapshot, UsageSnapshot],
) -> None:
    memory, served = _gpus(both[0]), _gpus(both[1])
    assert served.keys() == memory.keys()
    multi = [k for k, g in memory.items() if g.gpu_count > 1]
    assert multi, "the demo has multi-GPU pods"
    for key, m in memory.items():
        s = served[key]
        assert (s.gpu_count, s.activity_signal, s.model_name) == (
            m.gpu_count,
            m.activity_signal,
            m.model_name,
        )
        # Summed over the pod's GPUs on both paths; per-GPU maxima summed are >= the max of the sum.
        assert m.fb_used_max_mib <= s.fb_used_max_mib <= m.fb_used_max_mib * 1.05 + 1, key
        assert s.fb_total_mib == pytest.approx(m.fb_total_mib, rel=1e-6), key
        # Mean over GPUs of per-GPU p95 (Prometheus) vs p95 of the per-step mean (memory): close, not lower.
        assert m.activity.p95 - 0.01 <= s.activity.p95 <= m.activity.p95 + 0.05, key
