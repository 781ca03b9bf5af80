"""UsageState (recommender.model.usage_state) and build_states (recommender.model.state_build): on the
demo data set and the quality benchmark's traces, the histograms' percentiles equal aggregate()'s
weighted percentiles within one bucket (5 % of the value + 1 millicore / 1 MiB), and samples, first/last
seen, peaks and OOM kills equal aggregate()'s exactly."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from bench.quality.prom import dataset
from bench.quality.traces import generate
from recommender.input.demo import build_demo_dataset
from recommender.model import ContainerUsage, Quantiles
from recommender.model.aggregate import aggregate
from recommender.model.histogram import CPU_BUCKETS, MEMORY_BUCKETS
from recommender.model.raw import RawDataset
from recommender.model.recency import DEFAULT, OFF, Recency
from recommender.model.state_build import build_states
from recommender.model.usage_state import DAY_S, StateKey, UsageState

NOW = datetime(2026, 12, 1, tzinfo=UTC)
QS = (0.5, 0.9, 0.95, 0.99)


@pytest.fixture(scope="module")
def demo() -> RawDataset:
    return build_demo_dataset(NOW)


@pytest.fixture(scope="module")
def traces() -> RawDataset:
    return dataset(generate(), NOW)


def _four(q: Quantiles) -> tuple[float, float, float, float]:
    return q.p50, q.p90, q.p95, q.p99


def percentile_errors(raw: RawDataset, recency: Recency = DEFAULT) -> list[tuple[str, float, float, float]]:
    """(what, q, histogram's, aggregate's) for every container and percentile, cpu and memory."""
    snap = aggregate(raw, source="test", recency=recency)
    states = build_states(raw, recency=recency)
    out = []
    for u in snap.containers:
        s = states[StateKey(u.workload, u.container)]
        for q, cpu, mem in zip(QS, _four(u.cpu_cores), _four(u.memory_bytes), strict=True):
            out.append((f"{u.workload}/{u.container} cpu", q, s.cpu.percentile(q), cpu))
            out.append((f"{u.workload}/{u.container} memory", q, s.memory.percentile(q), mem))
    return out


def assert_within_resolution(errors: list[tuple[str, float, float, float]]) -> None:
    assert len(errors) > 8 * 10  # many containers compared
    bad = [
        (what, q, got, exact)
        for what, q, got, exact in errors
        if abs(got - exact) > (CPU_BUCKETS if what.endswith("cpu") else MEMORY_BUCKETS).resolution(exact)
    ]
    assert bad == []


def test_demo_percentiles_equal_aggregate_within_one_bucket(demo: RawDataset) -> None:
    assert_within_resolution(percentile_errors(demo))


def test_demo_percentiles_without_decay_equal_aggregate_within_one_bucket(demo: RawDataset) -> None:
    assert_within_resolution(percentile_errors(demo, OFF))


def test_trace_percentiles_equal_aggregate_within_one_bucket(traces: RawDataset) -> None:
    """Every everyday pattern: rollouts (the replaced-template rule), canary, leak, OOM, spiky, tiny..."""
    assert_within_resolution(percentile_errors(traces))


def history_facts(u: ContainerUsage) -> tuple[int, float, float, float, float | None]:
    return (
        u.samples,
        u.first_seen.timestamp(),
        u.last_seen.timestamp(),
        u.memory_bytes.max,
        u.oom_kill_memory_bytes,
    )


@pytest.mark.parametrize("which", ["demo", "traces"])
def test_counts_spans_peaks_and_oom_kills_equal_aggregate(which: str, request: pytest.FixtureRequest) -> None:
    raw: RawDataset = request.getfixturevalue(which)
    snap = aggregate(raw, source="test")
    states = build_states(raw)
    expected = {StateKey(u.workload, u.container): history_facts(u) for u in snap.containers}
    got = {
        k: (s.samples, s.first_seen, s.last_seen, s.memory_peak, s.oom_peak())
        for k, s in states.items()
        if k in expected
    }
    assert got == expected
    assert any(f[4] is not None for f in expected.values())  # OOM kills compared too


def test_gpu_containers_get_activity_and_framebuffer_histograms(traces: RawDataset) -> None:
    states = build_states(traces)
    gpu = [s for s in states.values() if s.gpu_activity is not None]
    assert len(gpu) == 3
    for s in gpu:
        assert s.gpu_framebuffer is not None and not s.gpu_framebuffer.is_empty()
        assert 0.0 <= s.gpu_activity.percentile(0.95) <= 1.1  # type: ignore[union-attr]


def test_state_counts_utc_days_seen_in_any_order() -> None:
    s = UsageState.empty(DAY_S)
    late = np.array([5.5, 6.5]) * DAY_S
    early = np.array([0.5, 2.5, 2.6]) * DAY_S
    s.add_samples(late, np.ones(2), np.ones(2) * 2**30)
    s.add_samples(early, np.ones(3), np.ones(3) * 2**30)
    assert s.days_seen() == 4  # days 0, 2, 5, 6
    assert s.samples == 5
    assert s.history_days() == pytest.approx(6.0)


def test_state_keeps_the_newest_oom_kills() -> None:
    s = UsageState.empty(DAY_S)
    for i in range(20):
        s.add_oom(float(i), float(i) * 2**20)
    assert len(s.ooms) == 16
    assert s.ooms[0].at == 4.0
    assert s.oom_peak() == 19.0 * 2**20


def test_state_of_a_few_hundred_bytes_per_container(demo: RawDataset) -> None:
    states = build_states(demo)
    assert max(s.nbytes() for s in states.values() if s.gpu_activity is None) <= 4 * (
        CPU_BUCKETS.count + MEMORY_BUCKETS.count
    )


def test_merging_two_time_chunks_equals_building_from_the_whole_series() -> None:
    rng = np.random.default_rng(11)
    ts = np.arange(0.0, 7 * DAY_S, 60.0)
    cpu, mem = rng.gamma(2.0, 0.2, ts.size), rng.uniform(1e8, 2e9, ts.size)
    whole, first, second = UsageState.empty(DAY_S), UsageState.empty(DAY_S), UsageState.empty(DAY_S)
    whole.add_samples(ts, cpu, mem)
    half = ts.size // 2
    first.add_samples(ts[:half], cpu[:half], mem[:half])
    second.add_samples(ts[half:], cpu[half:], mem[half:])
    first.add_oom(100.0, 5e8)
    first.merge(second)
    assert (first.samples, first.first_seen, first.last_seen) == (
        whole.samples,
        whole.first_seen,
        whole.last_seen,
    )
    assert (first.days_seen(), first.memory_peak, first.cpu_peak) == (7, whole.memory_peak, whole.cpu_peak)
    for q in QS:
        assert first.cpu.percentile(q) == pytest.approx(whole.cpu.percentile(q), rel=1e-5)
        assert first.memory.percentile(q) == pytest.approx(whole.memory.percentile(q), rel=1e-5)
    assert first.oom_peak() == 5e8
