"""The demo data set read back through a real Prometheus gives the same usage model as read in memory.

Both paths end in the one aggregation (recommender.model.aggregate): the in-memory path aggregates the
demo's RawDataset, the Prometheus path the RawDataset that PrometheusSource.dataset() rebuilds from
cAdvisor, kube-state-metrics and dcgm-exporter series. The demo samples every 300 s, Prometheus answers
at the same 300 s grid: CPU rates equal the samples, memory points are the samples (read raw by remote
read), GPU points the peak of two adjacent samples (max_over_time over a closed 300 s range), so they are
never below the in-memory figures.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from podsizer.api import WorkloadRef
from podsizer.resources import GPU
from recommender.input.demo_cluster import build_demo_dataset
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.model import Autoscaler, ContainerUsage, GpuUsage, UsageSnapshot
from recommender.model.aggregate import aggregate
from recommender.model.raw import RawDataset
from tests.support.openmetrics import backfill, write_dataset

from .conftest import PROMTOOL
from .server import running_prometheus

pytestmark = pytest.mark.integration

KEDA = Autoscaler(
    WorkloadRef("platform", "Deployment", "event-router"), "ScaledObject", "event-router", 1, 8, {}, 3
)


@dataclass(frozen=True)
class Both:
    raw: RawDataset
    served_raw: RawDataset
    memory: UsageSnapshot
    served: UsageSnapshot


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Both]:
    # The demo samples every 300 s; Prometheus' 300 s rate windows need the samples on that grid.
    end = datetime.fromtimestamp(int(time.time()) // 300 * 300, UTC)
    demo = build_demo_dataset(end, days=7)
    raw = replace(demo, autoscalers=(*demo.autoscalers, KEDA))  # the demo has HPAs only
    root = tmp_path_factory.mktemp("demo-prom")
    backfill(write_dataset(raw, root / "om", workers=2), root / "data", workers=2, promtool=PROMTOOL)
    with running_prometheus(root / "data", retention_days=9) as server, PromClient(server.url) as client:
        # the query step and rate window of the demo's 300 s sampling (the defaults, 60 s and 2 m, suit a
        # 15-60 s scrape: a 2 m window over 300 s samples holds one sample, no rate)
        source = PrometheusSource(client, resolution_s=300, rate_s=300)
        served_raw = source.dataset(end - timedelta(days=7), end)
    yield Both(raw, served_raw, aggregate(raw, source="demo"), aggregate(served_raw, source="prometheus"))


def _containers(snapshot: UsageSnapshot) -> dict[tuple[WorkloadRef, str], ContainerUsage]:
    return {(c.workload, c.container): c for c in snapshot.containers}


def _gpus(snapshot: UsageSnapshot) -> dict[tuple[str, str, str], GpuUsage]:
    return {(str(g.workload), g.container, g.pod): g for g in snapshot.gpus}


def _once(memory: UsageSnapshot) -> set[tuple[WorkloadRef, str]]:
    """The demo's init container has one sample per pod: a rate needs two, so Prometheus cannot size it."""
    return {(c.workload, c.container) for c in memory.containers if c.samples < 2 * c.pods}


def test_same_workloads_and_containers(both: Both) -> None:
    memory, served = both.memory, both.served
    once = _once(memory)
    assert set(_containers(served)) == set(_containers(memory)) - once
    assert once == {(w, "init-chmod") for w in {c.workload for c in memory.containers if c.init_container}}


def test_owner_graph_is_rebuilt_from_kube_state_metrics(both: Both) -> None:
    def pods(raw: RawDataset) -> dict[tuple[str, str], tuple[str | None, str | None, tuple[str, ...]]]:
        return {(p.namespace, p.name): (p.owner_kind, p.owner_name, p.init_containers) for p in raw.pods}

    def links(raw: RawDataset) -> set[tuple[str, str, str, str, str]]:
        return {(o.namespace, o.kind, o.name, o.owner_kind, o.owner_name) for o in raw.owners}

    assert pods(both.served_raw) == pods(both.raw)
    assert links(both.served_raw) == links(both.raw)
    assert {(p.namespace, p.name): p.node for p in both.served_raw.pods if p.requests} == {
        (p.namespace, p.name): p.node for p in both.raw.pods if p.requests
    }


def test_skipped_pods_are_identical_deployer_and_hook_pods_included(both: Both) -> None:
    def pod_skips(snapshot: UsageSnapshot) -> dict[str, str]:
        return {str(s.subject): s.reason for s in snapshot.skipped if "/pod/" in str(s.subject)}

    memory, served = pod_skips(both.memory), pod_skips(both.served)
    assert served == memory
    assert memory["legacy/pod/billing-7-deploy"] == "OpenShift deployer or hook pod"
    assert memory["legacy/pod/billing-7-hook-pre"] == "OpenShift deployer or hook pod"
    # The only container-level difference: the init container Prometheus cannot rate.
    extra = {str(s.subject) for s in both.served.skipped} - {str(s.subject) for s in both.memory.skipped}
    assert extra == {f"{w}/container/{c}" for w, c in _once(both.memory)}


def test_containers_agree_on_pods_specs_and_usage(both: Both) -> None:
    memory, served = _containers(both.memory), _containers(both.served)
    for key, s in served.items():
        m = memory[key]
        assert (s.pods, s.init_container) == (m.pods, m.init_container), key
        assert (dict(s.current_requests), dict(s.current_limits)) == (
            dict(m.current_requests),
            dict(m.current_limits),
        ), key
        # one raw sample per 300 s point: the counts agree, less the first point a rate cannot have
        assert m.samples - m.pods <= s.samples <= m.samples, key
        # CPU: rate over 300 s of a counter sampled every 300 s is the sample itself
        assert s.cpu_cores.max == pytest.approx(m.cpu_cores.max, rel=1e-6), key
        assert s.cpu_cores.p95 == pytest.approx(m.cpu_cores.p95, rel=0.02), key
        assert s.per_replica_cpu_cores == pytest.approx(m.per_replica_cpu_cores, rel=0.05), key
        # memory: read raw (remote read) the points are the samples; a range query's 5-minute peaks are never
        # below them; either way their maximum is the samples' maximum
        assert s.memory_bytes.max == pytest.approx(m.memory_bytes.max, abs=1.0), key
        assert m.memory_bytes.p95 * (1 - 1e-6) <= s.memory_bytes.p95 <= m.memory_bytes.p95 * 1.05, key
        assert abs((s.first_seen - m.first_seen).total_seconds()) <= 300, key
        assert abs((s.last_seen - m.last_seen).total_seconds()) <= 300, key


def test_oom_kills_give_the_peak_working_set_on_both_paths(both: Both) -> None:
    memory, served = _containers(both.memory), _containers(both.served)
    killed = {k for k, c in memory.items() if c.oom_kill_memory_bytes is not None}
    assert killed == {(WorkloadRef("shop", "Deployment", "checkout-api"), "api")}
    assert {k for k, c in served.items() if c.oom_kill_memory_bytes is not None} == killed
    (key,) = killed
    m, s = memory[key].oom_kill_memory_bytes, served[key].oom_kill_memory_bytes
    assert m is not None and s is not None
    assert s == pytest.approx(m, rel=0.01)  # the working set at the kill vs the peak before it


def test_autoscalers_hpa_and_keda_are_identical(both: Both) -> None:
    def key(a: Autoscaler) -> str:
        return f"{a.workload}/{a.kind}/{a.name}"

    memory = sorted(both.memory.autoscalers, key=key)
    served = sorted(both.served.autoscalers, key=key)
    assert served == memory
    assert {a.kind for a in served} == {"HorizontalPodAutoscaler", "ScaledObject"}


def test_nodes_are_identical(both: Both) -> None:
    memory = {
        n.name: (n.instance_type, n.capacity_type, n.gpu_product, n.gpu_count) for n in both.memory.nodes
    }
    served = {
        n.name: (n.instance_type, n.capacity_type, n.gpu_product, n.gpu_count) for n in both.served.nodes
    }
    assert served == memory


def test_node_allocatable_is_identical(both: Both) -> None:
    memory = {n.name: dict(n.allocatable) for n in both.memory.nodes}
    served = {n.name: dict(n.allocatable) for n in both.served.nodes}
    assert served == memory
    assert any(GPU in a for a in served.values()) and all(
        {"cpu", "memory"} <= a.keys() for a in served.values()
    )


def test_demand_covers_the_same_workloads_and_hours(both: Both) -> None:
    memory = {d.workload: d for d in both.memory.demand}
    served = {d.workload: d for d in both.served.demand}
    assert served.keys() == memory.keys()
    for workload, m in memory.items():
        s = served[workload]
        assert (s.cpu_cores.start, s.cpu_cores.step_seconds, len(s.cpu_cores)) == (
            m.cpu_cores.start,
            m.cpu_cores.step_seconds,
            len(m.cpu_cores),
        )
        # a peak at t covers (t - 300 s, t]: the hours seen may differ by the one at either end
        s_seen, m_seen = np.isfinite(s.memory_bytes.values), np.isfinite(m.memory_bytes.values)
        assert abs(int(s_seen.sum()) - int(m_seen.sum())) <= 1, workload
        both_seen = np.isfinite(s.cpu_cores.values) & np.isfinite(m.cpu_cores.values)
        assert both_seen.sum() >= m_seen.sum() - 2, workload
        # a pod's first sample has no rate: an hour where a replica starts late may miss it whole. The HPA
        # workload starts replicas in about 1 hour in 20, so at some times of day (the window follows the
        # clock) up to ~5.4 % of its hours differ by more than 10 %; the totals below must still agree.
        sv, mv = s.cpu_cores.values[both_seen], m.cpu_cores.values[both_seen]
        assert np.isclose(sv, mv, rtol=0.1).mean() >= 0.9, workload
        assert sv.sum() == pytest.approx(mv.sum(), rel=0.02), workload


def test_gpu_pods_agree_on_count_framebuffer_signal_and_activity(both: Both) -> None:
    memory, served = _gpus(both.memory), _gpus(both.served)
    assert served.keys() == memory.keys()
    multi = [k for k, g in memory.items() if g.gpu_count > 1]
    assert multi, "the demo has multi-GPU pods"
    for key, m in memory.items():
        s = served[key]
        assert (s.gpu_count, s.activity_signal, s.model_name, s.mig_profile, s.uuids, s.node) == (
            m.gpu_count,
            m.activity_signal,
            m.model_name,
            m.mig_profile,
            m.uuids,
            m.node,
        ), key
        # Summed over the pod's GPUs per step on both paths; 5-minute peaks are never lower.
        assert m.fb_used_max_mib <= s.fb_used_max_mib <= m.fb_used_max_mib * 1.05 + 1, key
        assert s.fb_total_mib == pytest.approx(m.fb_total_mib, rel=1e-6), key
        # per GPU peaks, then the mean over the pod's GPUs: equal for one GPU, at or above for several
        if m.gpu_count == 1:
            assert s.activity.max == pytest.approx(m.activity.max, rel=1e-6), key
        assert m.activity.max - 1e-9 <= s.activity.max <= m.activity.max + 0.05, key
        # the peak of two adjacent samples: its p95 is about the samples' p97.5, so at most their p99
        assert m.activity.p95 - 1e-9 <= s.activity.p95 <= max(m.activity.p99, m.activity.p95 + 0.05), key
        assert len(s.activity_series) == len(m.activity_series), key
