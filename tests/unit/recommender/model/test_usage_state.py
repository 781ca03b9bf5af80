"""UsageState (recommender.model.usage_state), build_states (recommender.model.state_build) and their
reading as ContainerUsage (recommender.model.usage_model.view, through aggregate()): on the demo data set
and the quality benchmark's traces, the percentiles equal the exact weighted percentiles of the raw
samples within one bucket (2 % of the value + 0.1 millicore / 64 KiB), and samples, first/last seen,
peaks, pods and demand equal the exact ones (tests.support.exact_usage)."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest

from bench.quality.prom import dataset
from bench.quality.traces import generate
from podsizer.api.identity import WorkloadRef
from recommender.input.demo_cluster import build_demo_dataset
from recommender.model import ContainerUsage, Quantiles, UsageSnapshot
from recommender.model.aggregate import aggregate
from recommender.model.checkpoint import CheckpointSettings, dumps, loads
from recommender.model.histogram import CPU_BUCKETS, MEMORY_BUCKETS
from recommender.model.raw import RawDataset
from recommender.model.recency import DEFAULT, OFF, Recency
from recommender.model.state_build import build_states
from recommender.model.usage_model import UsageModel, view
from recommender.model.usage_state import DAY_S, HOUR_S, UsageState, top_distinct
from tests.support.exact_usage import exact_demand, exact_usage
from tests.support.request_mix import EDITED_CPU, WORKLOAD, demo_with_differing_pods

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


def by_key(snap: UsageSnapshot) -> dict[tuple[WorkloadRef, str], ContainerUsage]:
    return {(u.workload, u.container): u for u in snap.containers}


def percentile_errors(raw: RawDataset, recency: Recency = DEFAULT) -> list[tuple[str, float, float, float]]:
    """(what, q, the model's, the exact) for every container of one template and percentile."""
    mine = by_key(aggregate(raw, source="test", recency=recency))
    out = []
    for key, e in exact_usage(raw, recency).items():
        m = mine[key]
        for q, cpu, mem, my_cpu, my_mem in zip(
            QS, _four(e.cpu), _four(e.memory), _four(m.cpu_cores), _four(m.memory_bytes), strict=True
        ):
            out.append((f"{key} cpu", q, my_cpu, cpu))
            out.append((f"{key} memory", q, my_mem, mem))
    return out


def assert_within_resolution(errors: list[tuple[str, float, float, float]]) -> None:
    assert len(errors) > 8 * 10  # many containers compared
    bad = [
        (what, q, got, exact)
        for what, q, got, exact in errors
        if abs(got - exact) > (CPU_BUCKETS if what.endswith("cpu") else MEMORY_BUCKETS).resolution(exact)
    ]
    assert bad == []


def test_demo_percentiles_equal_the_exact_ones_within_one_bucket(demo: RawDataset) -> None:
    assert_within_resolution(percentile_errors(demo))


def test_demo_percentiles_without_decay_equal_the_exact_ones_within_one_bucket(demo: RawDataset) -> None:
    assert_within_resolution(percentile_errors(demo, OFF))


def test_trace_percentiles_equal_the_exact_ones_within_one_bucket(traces: RawDataset) -> None:
    """Every everyday pattern of one template: canary, leak, OOM, spiky, tiny..."""
    assert_within_resolution(percentile_errors(traces))


@pytest.mark.parametrize("which", ["demo", "traces"])
def test_counts_spans_and_peaks_equal_the_exact_ones(which: str, request: pytest.FixtureRequest) -> None:
    raw: RawDataset = request.getfixturevalue(which)
    mine = by_key(aggregate(raw, source="test"))
    exact = exact_usage(raw, DEFAULT)
    assert len(exact) > 10
    for key, e in exact.items():
        u = mine[key]
        assert (u.samples, u.pods) == (e.samples, e.pods)
        assert (u.first_seen, u.last_seen) == (e.first_seen, e.last_seen)
        for got, want in ((u.cpu_cores, e.cpu), (u.memory_bytes, e.memory)):
            assert (got.max, got.second_max, got.third_max) == (want.max, want.second_max, want.third_max)


def test_replaced_templates_are_left_out_with_a_note(traces: RawDataset) -> None:
    snap = aggregate(traces, source="test")
    replaced = [u for u in snap.containers if u.recency_note.startswith("replaced template")]
    assert replaced  # the traces roll out new templates
    for u in replaced:
        assert (u.workload, u.container) not in exact_usage(traces, DEFAULT)  # more than one template


@pytest.mark.parametrize("which", ["demo", "traces"])
def test_demand_equals_the_exact_hourly_sums(which: str, request: pytest.FixtureRequest) -> None:
    raw: RawDataset = request.getfixturevalue(which)
    mine = {d.workload: d for d in aggregate(raw, source="test").demand}
    exact = exact_demand(raw)
    assert set(mine) == set(exact) and len(exact) > 10
    for w, (first, cpu, mem) in exact.items():
        got = mine[w]
        assert (got.cpu_cores.start.timestamp(), got.cpu_cores.step_seconds) == (first, HOUR_S)
        np.testing.assert_allclose(got.cpu_cores.values, cpu, rtol=1e-6)
        np.testing.assert_allclose(got.memory_bytes.values, mem, rtol=1e-6)


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


def test_daily_peaks_give_a_windows_three_highest_samples_with_their_times() -> None:
    s = UsageState.empty(DAY_S)
    ts = np.array([0.5, 0.6, 0.7, 0.8, 1.5, 3.2, 3.3, 3.4]) * DAY_S
    cpu = np.array([9.0, 8.0, 7.0, 1.0, 1.0, 2.0, 3.0, 2.5])
    s.add_samples(ts, cpu, cpu * 2**30)
    assert sorted(s.window_peaks(0.0)[0])[-3:] == [(7.0, 0.7 * DAY_S), (8.0, 0.6 * DAY_S), (9.0, 0.5 * DAY_S)]
    later = sorted(v for v, _ in s.window_peaks(1.0 * DAY_S)[0])
    assert later == [1.0, 2.0, 2.5, 3.0]  # day 1's one sample and day 3's three
    assert s.window_peaks(4.0 * DAY_S) == ([], [])


def test_samples_of_several_pods_at_one_time_are_one_scrape_in_the_daily_peaks() -> None:
    s = UsageState.empty(DAY_S)
    ts = np.array([100.0, 160.0, 220.0, 280.0])
    s.add_samples(ts, np.ones(4), np.array([5.0, 1.0, 1.0, 1.0]) * 2**30)  # pod a: a peak at 100 s
    s.add_samples(ts, np.ones(4), np.array([6.0, 2.0, 1.0, 1.0]) * 2**30)  # pod b: higher, at the same time
    mem = s.window_peaks(0.0)[1]
    assert [v / 2**30 for v, _ in sorted(mem, reverse=True)] == [6.0, 2.0, 1.0]  # 100 s counted once
    assert [t for _, t in sorted(mem, reverse=True)] == [100.0, 160.0, 220.0]


def test_top_distinct_keeps_the_highest_of_each_time_whatever_the_grouping() -> None:
    peaks = [(3.0, 1.0), (5.0, 1.0), (4.0, 2.0), (4.0, 3.0), (1.0, 4.0), (4.0, 5.0)]
    whole = top_distinct(peaks)
    assert whole == [(5.0, 1.0), (4.0, 2.0), (4.0, 3.0)]  # ties: the earlier first
    parts = top_distinct([*top_distinct(peaks[:3]), *top_distinct(peaks[3:])])
    assert parts == whole


def test_demand_of_a_later_read_replaces_the_hours_it_covers() -> None:
    s = UsageState.empty(DAY_S)
    s.set_demand(100, np.array([1.0, 2.0, math.nan]), np.array([10.0, 20.0, math.nan]))
    s.set_demand(101, np.array([5.0, 6.0]), np.array([50.0, 60.0]))
    cpu, mem = s.demand_hours(99, 4)
    np.testing.assert_array_equal(cpu, [math.nan, 1.0, 5.0, 6.0])
    np.testing.assert_array_equal(mem, [math.nan, 10.0, 50.0, 60.0])
    s.set_demand(100 + 400, np.array([7.0]), np.array([70.0]))  # far later: the old hours are gone
    assert np.isnan(s.demand_hours(100, 3)[0]).all()
    assert s.demand_hours(500, 1)[0][0] == 7.0
    assert s.newest_hour * HOUR_S > 0


def test_state_keeps_the_newest_oom_kills() -> None:
    s = UsageState.empty(DAY_S)
    for i in range(20):
        s.add_oom(float(i), float(i) * 2**20)
    assert len(s.ooms) == 16
    assert s.ooms[0].at == 4.0
    assert s.oom_peak() == 19.0 * 2**20
    assert s.oom_peak(since=100.0) is None


def test_a_state_holds_a_few_kilobytes(demo: RawDataset) -> None:
    states = build_states(demo)
    assert max(s.nbytes() for s in states.values() if s.gpu_activity is None) < 8 * 1024


def test_two_time_chunks_added_one_after_the_other_equal_the_whole_series() -> None:
    rng = np.random.default_rng(11)
    ts = np.arange(0.0, 7 * DAY_S, 60.0)
    cpu, mem = rng.gamma(2.0, 0.2, ts.size), rng.uniform(1e8, 2e9, ts.size)
    whole, chunked = UsageState.empty(DAY_S), UsageState.empty(DAY_S)
    whole.add_samples(ts, cpu, mem)
    half = ts.size // 2
    chunked.add_samples(ts[:half], cpu[:half], mem[:half])
    chunked.add_samples(ts[half:], cpu[half:], mem[half:])
    assert (chunked.samples, chunked.first_seen, chunked.last_seen) == (
        whole.samples,
        whole.first_seen,
        whole.last_seen,
    )
    assert (chunked.days_seen(), chunked.memory_peak, chunked.cpu_peak) == (
        7,
        whole.memory_peak,
        whole.cpu_peak,
    )
    np.testing.assert_array_equal(chunked.day_peaks, whole.day_peaks)
    np.testing.assert_array_equal(chunked.demand[2], whole.demand[2])
    for q in QS:
        assert chunked.cpu.percentile(q) == pytest.approx(whole.cpu.percentile(q), rel=1e-5)
        assert chunked.memory.percentile(q) == pytest.approx(whole.memory.percentile(q), rel=1e-5)


def test_a_windows_sample_count_leaves_out_the_hours_before_it() -> None:
    s = UsageState.empty(DAY_S)
    ts = np.arange(0.0, 3 * DAY_S, 60.0)
    s.add_samples(ts, np.ones(ts.size), np.ones(ts.size) * 2**30)
    assert s.samples == ts.size
    assert s.samples_since(0.0) == ts.size
    assert s.samples_since(DAY_S + 1800.0) == np.count_nonzero(ts >= DAY_S)  # from that hour on
    later = np.arange(
        3 * DAY_S, 4 * DAY_S, 60.0
    )  # a pre-reduced series: its raw count spread over its points
    s.add_samples(later, np.ones(later.size), np.ones(later.size), samples=4 * later.size)
    assert s.samples_since(3 * DAY_S) == 4 * later.size
    assert s.samples_since(0.0) == ts.size + 4 * later.size


def test_the_models_pod_annotations_are_the_marked_pods_and_survive_a_checkpoint(demo: RawDataset) -> None:
    """The incremental path (`podsizer run`, `recommend --from-checkpoint`) plans with the same pod
    template metadata as every other source: its podsizer.io/ annotations, kept through a checkpoint."""
    marked = {"podsizer.io/gpu": "resize", "podsizer.io/mode": "auto", "example.com/team": "a"}
    pods = tuple(
        replace(p, annotations=marked) if p.name.startswith(("storefront-", "notebook-")) else p
        for p in demo.pods
    )
    raw = replace(demo, pods=pods)
    snap = aggregate(raw, source="test")
    states = build_states(raw)
    ours = {"podsizer.io/gpu": "resize", "podsizer.io/mode": "auto"}
    assert {w.name: a for w, a in snap.pod_annotations.items()} == {"storefront": ours, "notebook": ours}
    settings = CheckpointSettings(half_life_s=DEFAULT.half_life_s, step_s=300.0)
    restored = loads(dumps(states, settings), settings)
    assert view(UsageModel(restored), raw.start, raw.end, DEFAULT).pod_annotations == snap.pod_annotations


def test_the_request_mix_is_read_from_the_states_and_survives_a_checkpoint() -> None:
    """Pods that request differently (one storefront pod edited by hand) read as the same mix from one
    dataset at once (aggregate), from a streamed model's states, and after a checkpoint: one reading."""
    raw = demo_with_differing_pods(NOW)
    (usage,) = [u for u in aggregate(raw, source="test").containers if u.workload.name == WORKLOAD]
    assert [(dict(s.requests).get("cpu"), s.pods) for s in usage.request_mix] == [(2.0, 2), (EDITED_CPU, 1)]
    states = build_states(raw)
    settings = CheckpointSettings(half_life_s=DEFAULT.half_life_s, step_s=300.0)
    restored = view(UsageModel(loads(dumps(states, settings), settings)), raw.start, raw.end, DEFAULT)
    (again,) = [u for u in restored.containers if u.workload.name == WORKLOAD]
    assert again.request_mix == usage.request_mix
