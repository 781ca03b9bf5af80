"""PrometheusSource against a real Prometheus holding 7 days of known history: recommendation-level facts."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import httpx
import numpy as np
import pytest

from podsizer.api import WorkloadRef
from podsizer.settings.source import ReadPath
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.input.prometheus.source import DEFAULT_QUERY_STEP_S as STEP
from recommender.model import ContainerUsage, FloatArray, GpuUsage, SourceError, UsageSnapshot
from recommender.model.histogram import CPU_BUCKETS, MEMORY_BUCKETS
from recommender.model.recency import OFF

from .conftest import Served
from .history import GI, MI, NOTEBOOK_UUID
from .server import free_port

pytestmark = pytest.mark.integration


class CountingTransport(httpx.BaseTransport):
    """The real HTTP transport, counting the requests that go through it."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.paths: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


@dataclass(frozen=True)
class Collected:
    snapshot: UsageSnapshot
    requests: int


def _collect(served: Served, namespaces: list[str] | None = None, read: ReadPath = "auto") -> Collected:
    transport = CountingTransport()
    with PromClient(served.server.url, transport=transport) as client:
        snap = PrometheusSource(client, namespaces=namespaces, read=read).collect(
            served.history.start, served.history.end
        )
    return Collected(snap, len(transport.paths))


@pytest.fixture(scope="module")
def full(served: Served) -> Iterator[Collected]:
    yield _collect(served)


def container(snap: UsageSnapshot, ns: str, kind: str, name: str, c: str) -> ContainerUsage:
    return next(x for x in snap.containers if x.workload == WorkloadRef(ns, kind, name) and x.container == c)


def gpu(snap: UsageSnapshot, ns: str, kind: str, name: str) -> GpuUsage:
    return next(g for g in snap.gpus if g.workload == WorkloadRef(ns, kind, name))


def test_steady_200m_cpu_with_5pct_noise_gives_p99_between_200m_and_240m(full: Collected) -> None:
    web = container(full.snapshot, "shop", "Deployment", "web", "app")
    assert 0.2 <= web.cpu_cores.p99 <= 0.24
    assert web.cpu_cores.p50 == pytest.approx(0.2, abs=0.005)
    assert web.per_replica_cpu_cores == pytest.approx(0.2, abs=0.005)
    assert web.pods == 2
    assert web.samples == 2 * 10081


def step_peaks(
    ts: FloatArray, values: FloatArray, start: float, end: float, step: float, *, closed: bool = True
) -> FloatArray:
    """max_over_time(x[step]) at each multiple t of step in [start, end]: the top sample in [t - step, t]
    (Prometheus 2's closed range), or in (t - step, t] (a raw read's step)."""
    grid = np.arange(np.ceil(start / step) * step, end + 1, step)
    out = [values[((ts >= t - step) if closed else (ts > t - step)) & (ts <= t)] for t in grid]
    return np.array([w.max() for w in out if w.size])


@pytest.mark.parametrize("read", ["query", "remote-read"])
def test_memory_quantiles_are_those_of_the_per_step_peaks(served: Served, read: ReadPath) -> None:
    """Every read path: the highest sample of each step's (t - 60 s, t] (PODSIZER_QUERY_STEP): at a 60 s
    scrape the sample itself (range queries ask for a range a millisecond short of the step, so that
    Prometheus 2's closed range does not take a sample on the step's edge into two steps)."""
    h = served.history
    lo, hi = h.start.timestamp(), h.end.timestamp()
    with PromClient(served.server.url) as client:  # unweighted: the recency rule has its own tests
        source = PrometheusSource(client, namespaces=["shop"], recency=OFF, read=read)
        snap = source.collect(h.start, h.end)
    db = container(snap, "shop", "StatefulSet", "db", "postgres")
    s = h.samples("shop", "db-0", "postgres")
    mem = np.rint(s.memory_bytes)  # samples are written as whole bytes
    assert db.memory_bytes.max == pytest.approx(2.5 * GI, rel=1e-9)

    def peaks(ts: FloatArray, values: FloatArray, start: float, end: float, step: float) -> FloatArray:
        return step_peaks(ts, values, start, end, step, closed=False)

    # then the quantiles of those peaks (the sample at each rank) within the histograms' resolution
    db_peaks = peaks(s.timestamps, mem, lo, hi, STEP)
    for got, want in (
        (db.memory_bytes.p99, np.quantile(db_peaks, 0.99, method="inverted_cdf")),
        (db.memory_bytes.p50, np.quantile(db_peaks, 0.5, method="inverted_cdf")),
        (db.memory_bytes.mean, db_peaks.mean()),
    ):
        assert got == pytest.approx(want, abs=MEMORY_BUCKETS.resolution(want))
    # peaks are conservative: never below the quantiles of the raw samples (within a bucket when raw)
    assert db.memory_bytes.p50 >= np.quantile(mem, 0.5) - MEMORY_BUCKETS.resolution(np.quantile(mem, 0.5))
    web = container(snap, "shop", "Deployment", "web", "app")
    # the quantiles of a workload's container pool the peaks of all its pods (as for every source)
    pooled = np.concatenate(
        [
            peaks(c.timestamps, np.rint(c.memory_bytes), lo, hi, STEP)
            for c in h.containers
            if c.pod.startswith("web-")
        ]
    )
    want = np.quantile(pooled, 0.99, method="inverted_cdf")
    assert web.memory_bytes.p99 == pytest.approx(want, abs=MEMORY_BUCKETS.resolution(want))
    assert web.memory_bytes.p99 + MEMORY_BUCKETS.resolution(want) >= max(
        np.quantile(np.rint(c.memory_bytes), 0.99) for c in h.containers if c.pod.startswith("web-")
    )
    assert abs((db.first_seen - h.start).total_seconds()) <= 300
    assert abs((db.last_seen - h.end).total_seconds()) <= 300


def test_samples_every_5_minutes_still_give_a_cpu_rate_from_a_window_off_the_5_minute_grid(
    served: Served,
) -> None:
    h = served.history
    start = h.start + timedelta(seconds=60 if h.start.timestamp() % 300 == 0 else 0)
    with PromClient(served.server.url) as client:
        snap = PrometheusSource(client, namespaces=["sparse"]).collect(start, h.end)
    slow = container(snap, "sparse", "Deployment", "slow", "app")
    ts = h.samples("sparse", "slow-4b7d-ccccc", "app").timestamps
    expected = int(((ts >= start.timestamp()) & (ts <= h.end.timestamp())).sum())
    # samples 5 minutes apart: no rate over the 2-minute window, so the slow-scrape rate (10 minutes)
    assert slow.cpu_cores.p50 == pytest.approx(0.3, abs=CPU_BUCKETS.resolution(0.3))
    assert slow.cpu_cores.mean == pytest.approx(0.3, abs=CPU_BUCKETS.resolution(0.3))
    assert slow.memory_bytes.max == 100.0 * MI
    # counts are apportioned where the chunks meet (a first 6 h one, then the rest): within one sample
    assert abs(slow.samples - expected) <= 1


def test_oom_killed_container_reports_its_peak_working_set(full: Collected) -> None:
    db = container(full.snapshot, "shop", "StatefulSet", "db", "postgres")
    web = container(full.snapshot, "shop", "Deployment", "web", "app")
    assert db.oom_kill_memory_bytes == pytest.approx(2.5 * GI)
    assert web.oom_kill_memory_bytes is None


def test_deployer_and_hook_pods_change_nothing(full: Collected) -> None:
    snap = full.snapshot
    with_deployer = container(snap, "legacy", "DeploymentConfig", "cart", "cart")
    without = container(snap, "legacy-clean", "DeploymentConfig", "cart", "cart")
    assert with_deployer.cpu_cores == without.cpu_cores
    assert with_deployer.memory_bytes == without.memory_bytes
    assert (with_deployer.pods, with_deployer.samples) == (without.pods, without.samples) == (1, 10081)
    assert with_deployer.cpu_cores.max < 1.0  # the hook pod ran at 6 cores, the deployer at 8
    assert not [c for c in snap.containers if c.container == "deployment"]
    skipped = {str(s.subject): s.reason for s in snap.skipped}
    assert "deployer or hook" in skipped["legacy/pod/cart-3-deploy"]
    assert "deployer or hook" in skipped["legacy/pod/cart-3-hook-pre"]
    demand = {str(d.workload): d for d in snap.demand}
    assert np.allclose(
        demand["legacy/DeploymentConfig/cart"].cpu_cores.values,
        demand["legacy-clean/DeploymentConfig/cart"].cpu_cores.values,
        equal_nan=True,
    )


def test_current_requests_and_limits_use_kubernetes_resource_names(full: Collected) -> None:
    web = container(full.snapshot, "shop", "Deployment", "web", "app")
    assert dict(web.current_requests) == {"cpu": 0.5, "memory": 512.0 * MI}
    assert dict(web.current_limits) == {"memory": 1024.0 * MI}
    trainer = container(full.snapshot, "ml", "Deployment", "trainer", "train")
    assert trainer.current_requests["nvidia.com/gpu"] == 1.0


def test_sm_active_is_preferred_and_framebuffer_total_adds_reserved(full: Collected, served: Served) -> None:
    g = gpu(full.snapshot, "ml", "Deployment", "trainer")
    h = served.history
    sm = h.gpus[0].sm_active
    assert sm is not None
    assert g.activity_signal == "SM_ACTIVE"
    # activity is kept as the peak of each 5-minute step (idle detection and sizing need the peaks)
    sm_peaks = step_peaks(h.gpus[0].timestamps, sm, h.start.timestamp(), h.end.timestamp(), 300)
    assert g.activity.p50 == pytest.approx(np.quantile(sm_peaks, 0.5), rel=1e-6)
    assert g.activity.p50 >= np.quantile(sm, 0.5)
    assert g.activity.max == pytest.approx(sm.max(), rel=1e-9)
    assert g.dram_active is not None and g.dram_active.p50 == pytest.approx(0.4)
    assert (g.fb_used_max_mib, g.fb_total_mib) == (30000.0, 30000.0 + 15459.0 + 608.0)
    assert (g.container, g.pod, g.node, g.model_name, g.gpu_count) == (
        "train",
        "trainer-5f6-aaaaa",
        "gpu-node-1",
        "NVIDIA L40S",
        1,
    )
    assert len(g.activity_series) == 7 * 288
    assert np.nanmax(g.activity_series.values) == pytest.approx(sm.max(), rel=1e-9)


def test_without_sm_active_gr_engine_active_is_used_and_exported_labels_name_the_pod(
    full: Collected, served: Served
) -> None:
    g = gpu(full.snapshot, "ml", "Deployment", "notebook")
    idle = next(x for x in served.history.gpus if x.uuid == NOTEBOOK_UUID).gr_engine_active
    assert idle is not None
    assert g.activity_signal == "GR_ENGINE_ACTIVE"
    assert g.activity.max == pytest.approx(idle.max(), rel=1e-9)
    assert (g.container, g.node) == ("jupyter", "gpu-node-2")
    assert not [x for x in full.snapshot.gpus if x.workload.namespace == "gpu-operator"]


def test_mig_instance_with_old_namespace_labels(full: Collected, served: Served) -> None:
    g = gpu(full.snapshot, "ml", "StatefulSet", "infer")
    h = served.history
    mig = h.gpus[2].gr_engine_active
    assert mig is not None
    assert g.mig_profile == "3g.40gb"
    assert g.activity_signal == "GR_ENGINE_ACTIVE"
    assert g.uuids == ("GPU-ed1353d6-52ba-8793-7230-4d5d3eb68167",)
    assert g.model_name == "NVIDIA A100 80GB PCIe"
    mig_peaks = step_peaks(h.gpus[2].timestamps, mig, h.start.timestamp(), h.end.timestamp(), 300)
    assert g.activity.p50 == pytest.approx(np.quantile(mig_peaks, 0.5), rel=1e-6)
    assert g.fb_total_mib == 40000.0


def test_hpa_target_and_replica_bounds_are_picked_up(full: Collected) -> None:
    (hpa,) = full.snapshot.autoscalers
    assert hpa.workload == WorkloadRef("shop", "Deployment", "web")
    assert dict(hpa.target_utilization) == {"cpu": pytest.approx(0.7)}
    assert (hpa.kind, hpa.min_replicas, hpa.max_replicas, hpa.current_replicas) == (
        "HorizontalPodAutoscaler",
        2,
        10,
        2,
    )


def test_node_spot_labels_and_instance_types(full: Collected) -> None:
    nodes = {n.name: n for n in full.snapshot.nodes}
    assert nodes["gpu-node-1"].capacity_type == "spot"  # karpenter.sh/capacity-type=spot
    assert nodes["gpu-node-1"].instance_type == "g6e.xlarge"
    assert nodes["gpu-node-1"].gpu_product == "NVIDIA-L40S"
    assert nodes["gpu-node-3"].capacity_type == "spot"  # lifecycle=EC2Spot
    assert nodes["gpu-node-2"].capacity_type == "on-demand"  # eks.amazonaws.com/capacityType=ON_DEMAND
    assert (nodes["node-1"].instance_type, nodes["node-1"].region) == ("m6i.large", "us-east-1")


def test_demand_sums_the_replicas_of_a_workload(full: Collected) -> None:
    d = next(x for x in full.snapshot.demand if x.workload == WorkloadRef("shop", "Deployment", "web"))
    assert d.cpu_cores.step_seconds == 3600
    assert np.nanmean(d.cpu_cores.values) == pytest.approx(0.4, abs=0.02)
    assert np.nanmin(d.memory_bytes.values) > 2 * 240 * MI


@pytest.mark.parametrize("read", ["auto", "query"])
def test_query_count_grows_with_namespaces_not_containers(
    full: Collected, served: Served, read: ReadPath
) -> None:
    namespaces = sorted({c.workload.namespace for c in full.snapshot.containers})
    assert namespaces == ["batch", "legacy", "legacy-clean", "ml", "shop", "sparse"]
    listed = _collect(served, namespaces, read)
    one = _collect(served, ["shop"], read)
    if read == "auto":
        assert full.requests == listed.requests + 1  # discovery is one label-values lookup
    chunks = 2  # the first 6 h, then the rest of the window at once (a few series: under CHUNK_POINTS)
    # sparse is scraped every 5 minutes: by queries one more CPU query a chunk (the slow-scrape rate); read
    # raw, the wide rate comes from the samples read already
    slow = chunks if read == "query" else 0
    per_namespace, rest = divmod(listed.requests - one.requests - slow, len(namespaces) - 1)
    assert rest == 0 and per_namespace % chunks == 0 and 1 <= per_namespace // chunks <= 6
    assert one.requests - per_namespace <= 10  # cluster-wide: GPUs, autoscalers, nodes
    # batch has 20 workloads, shop 2 with 3 pods: the same number of queries
    assert _collect(served, ["batch"], read).requests == one.requests


def test_empty_namespace_gives_an_empty_snapshot(served: Served) -> None:
    snap = _collect(served, ["empty"]).snapshot
    assert (snap.containers, snap.gpus, snap.autoscalers, snap.demand) == ((), (), (), ())
    assert "namespace/empty" in {str(s.subject) for s in snap.skipped}


def test_unreachable_prometheus_names_the_url(served: Served) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with PromClient(url, timeout=2.0) as client, pytest.raises(SourceError, match=url.replace(".", r"\.")):
        PrometheusSource(client).collect(served.history.start, served.history.end)


def test_bad_promql_surfaces_prometheus_error_text(served: Served) -> None:
    with (
        PromClient(served.server.url) as client,
        pytest.raises(SourceError, match=r"HTTP 400 \(bad_data\).*parse"),
    ):
        client.query("sum(", served.history.end)
