"""A peak must be corroborated before it drives a recommendation: one or two bad scrapes among thousands
(anywhere, adjacent or not, in several replicas at once, or forged into a checkpoint's daily peaks) move
nothing, a peak three scrapes reach is kept, an OOM kill corroborates a memory peak, a short series keeps
its shape, and a sample above the container's own memory limit or its node's allocatable never counts."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import MIB, parse
from podsizer.plausibility import Ceilings
from podsizer.sizing_policy import SizingPolicy
from recommender.model import ContainerUsage, NodeInfo, RejectedSamples
from recommender.model.aggregate import aggregate
from recommender.model.checkpoint import CheckpointSettings, dumps, loads
from recommender.model.raw import ContainerSamples, OomKill, OwnerLink, PodInfo, RawDataset
from recommender.model.recency import DEFAULT as RECENCY
from recommender.model.state_build import build_states
from recommender.model.usage_model import UsageModel, view
from recommender.model.usage_state import MEMORY_PEAKS
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import recommend
from recommender.sizing.robust import SPIKE_FACTOR, robust_usage
from tests.support.hypo import examples

END = datetime(2026, 11, 8, tzinfo=UTC)
WEB = WorkloadRef("shop", "Deployment", "web")
GIB = 2.0**30
TIB = 2.0**40
STEP = 60.0


def _week(n: int = 7 * 1440) -> np.ndarray:
    return END.timestamp() - STEP * np.arange(n, 0, -1)


def _raw(
    memory: list[np.ndarray],
    cpu: list[np.ndarray] | None = None,
    *,
    limits: dict[str, float] | None = None,
    nodes: tuple[NodeInfo, ...] = (),
    ooms: tuple[OomKill, ...] = (),
) -> RawDataset:
    """One Deployment whose pods web-abc-<i> carry the memory (and CPU) series i, on the grid up to END."""
    ts = END.timestamp() - STEP * np.arange(memory[0].size, 0, -1)
    pods, series = [], []
    for i, mem in enumerate(memory):
        name = f"web-abc-{i}"
        pods.append(PodInfo("shop", name, f"n{i}", "ReplicaSet", "web-abc", limits={"app": limits or {}}))
        c = cpu[i] if cpu is not None else np.full(mem.size, 0.2)
        series.append(ContainerSamples("shop", name, "app", ts, c, mem))
    owner = OwnerLink("shop", "ReplicaSet", "web-abc", "Deployment", "web")
    start = datetime.fromtimestamp(ts[0], UTC)
    return RawDataset(start, END, tuple(pods), (owner,), tuple(series), nodes=nodes, ooms=ooms)


def _honest(n: int = 7 * 1440, seed: int = 3) -> np.ndarray:
    """A working set around 100 MiB with a daily wave: its p99 near 112 MiB."""
    rng = np.random.default_rng(seed)
    wave = 1.0 + 0.08 * np.sin(np.arange(n) * 2 * math.pi / 1440)
    return 100 * MIB * wave * rng.uniform(0.97, 1.03, n)


def _usage(raw: RawDataset) -> ContainerUsage:
    (usage,) = aggregate(raw, source="test").containers
    return usage


def _memory_request(raw: RawDataset) -> tuple[float, str]:
    snap = aggregate(raw, source="test")
    (rec,) = recommend(snap, SizingPolicy(), PriceTable.load(), END + timedelta(minutes=5)).recommendations
    (c,) = rec.containers
    return parse(c.requests["memory"]), c.reason


@pytest.mark.parametrize("at", [(100, 9000), (5000, 5001), (0, 10079)], ids=["apart", "adjacent", "ends"])
def test_two_3_tib_samples_among_a_week_do_not_become_the_memory_request(at: tuple[int, int]) -> None:
    memory = _honest()
    honest, _ = _memory_request(_raw([memory.copy()]))
    memory[list(at)] = 3 * TIB
    got, reason = _memory_request(_raw([memory]))
    assert got == honest  # as if the two scrapes had not happened
    assert got < 200 * MIB
    assert "memory peak 3145728Mi and 3145728Mi ignored (2 samples" in reason


def test_a_bad_scrape_of_every_replica_at_once_is_one_scrape() -> None:
    """cAdvisor's glitch hits every container on a node in the same scrape: three replicas at two times
    are six samples but two scrapes."""
    replicas = [_honest(seed=s) for s in (1, 2, 3)]
    for memory in replicas:
        memory[[700, 4000]] = 2 * TIB
    got, reason = _memory_request(_raw(replicas))
    assert got < 200 * MIB
    assert "ignored (2 samples" in reason


def test_a_peak_three_scrapes_reach_is_kept() -> None:
    memory = _honest()
    memory[[100, 4000, 9000]] = 2 * GIB
    got, reason = _memory_request(_raw([memory]))
    assert got >= 2 * GIB
    assert "ignored" not in reason


def test_samples_that_rise_towards_the_peak_corroborate_it() -> None:
    memory = _honest()
    memory[5000:5003] = [600 * MIB, 1.2 * GIB, 1.9 * GIB]  # a ramp: within SPIKE_FACTOR of each other
    memory[5003] = 2 * GIB
    got, _ = _memory_request(_raw([memory]))
    assert got >= 2 * GIB


def test_an_oom_kill_corroborates_a_short_memory_peak() -> None:
    """A genuine short peak before an OOM kill must never be dropped: the kill shows the working set got
    there."""
    memory = _honest()
    memory[[6000, 6001]] = 3 * GIB
    at = datetime.fromtimestamp(_week()[6001], UTC)
    kill = OomKill("shop", "web-abc-0", "app", at, 3 * GIB)
    usage = _usage(_raw([memory], limits={"memory": 3 * GIB}, ooms=(kill,)))
    assert robust_usage(usage, Ceilings()).usage.memory_bytes.max == 3 * GIB
    got, _ = _memory_request(_raw([memory], limits={"memory": 3 * GIB}, ooms=(kill,)))
    assert got >= 3 * GIB


def test_a_cpu_peak_needs_the_same_corroboration() -> None:
    cpu = np.full(7 * 1440, 0.2)
    cpu[[10, 20]] = 120.0
    usage = _usage(_raw([_honest()], [cpu]))
    assert usage.cpu_cores.max == 120.0
    robust = robust_usage(usage, Ceilings())
    assert robust.usage.cpu_cores.max == pytest.approx(0.2)
    assert any(n.startswith("cpu peak 120000m and 120000m ignored (2 samples") for n in robust.notes)


def test_a_forged_daily_peak_in_a_checkpoint_is_not_corroborated() -> None:
    states = build_states(_raw([_honest()]))
    (state,) = states.values()
    state.day_peaks[MEMORY_PEAKS, 2] = 3 * TIB  # one forged sample on the day before yesterday
    settings = CheckpointSettings(RECENCY.half_life_s or None, STEP)
    model = UsageModel(loads(dumps(states, settings), settings), covered_until=END.timestamp())
    (usage,) = view(model, END - timedelta(days=7), END, RECENCY).containers
    assert usage.memory_bytes.max == 3 * TIB
    robust = robust_usage(usage, Ceilings())
    assert robust.usage.memory_bytes.max < 200 * MIB
    assert any("memory peak 3145728Mi ignored (1 sample" in n for n in robust.notes)


def test_a_sample_above_the_containers_own_memory_limit_is_impossible() -> None:
    memory = _honest()
    memory[[10, 2000, 4000, 6000]] = 1.5 * GIB  # four scrapes: corroborated, but over the 1 GiB limit
    usage = _usage(_raw([memory], limits={"memory": GIB}))
    assert usage.memory_bytes.max < 200 * MIB
    assert RejectedSamples("memory", "above-limit", 4) in usage.rejected
    got, reason = _memory_request(_raw([memory], limits={"memory": GIB}))
    assert got < 200 * MIB
    assert "4 samples of memory above the container's memory limit ignored" in reason


def test_a_sample_above_its_own_nodes_allocatable_is_impossible_though_a_larger_node_exists() -> None:
    small = NodeInfo("n0", None, "on-demand", allocatable={"cpu": 4.0, "memory": 16 * GIB})
    large = NodeInfo("big", None, "on-demand", allocatable={"cpu": 96.0, "memory": 768 * GIB})
    memory = _honest()
    memory[[10, 2000, 4000, 6000]] = 64 * GIB  # possible on the large node, not on the pod's own
    usage = _usage(_raw([memory], nodes=(small, large)))
    assert usage.memory_bytes.max < 200 * MIB
    assert RejectedSamples("memory", "above-allocatable", 4) in usage.rejected


def test_a_short_series_keeps_its_peak_however_sharp() -> None:
    """A Job of a few minutes: its profile is its profile, there is no evidence to call a sample bad."""
    memory = np.full(8, 50 * MIB)
    memory[[5, 6]] = GIB
    assert robust_usage(_usage(_raw([memory])), Ceilings()).usage.memory_bytes.max == GIB


genuine = st.builds(
    lambda n, seed, base: base * np.random.default_rng(seed).lognormal(0.0, 0.15, n),
    st.integers(400, 3000),
    st.integers(0, 2**16),
    st.sampled_from([0.05, 0.5, 4.0]),
)


@given(
    values=genuine,
    k=st.integers(1, 2),
    data=st.data(),
)
@settings(max_examples=examples(200), deadline=None)
def test_k_spikes_anywhere_move_the_peak_no_more_than_the_rule_allows(
    values: np.ndarray, k: int, data: st.DataObject
) -> None:
    """k <= 2 samples of any value at any places (replacing genuine ones): the robust peak is at most
    SPIKE_FACTOR x the highest genuine sample left, and spikes above that are ignored entirely."""
    at = data.draw(st.lists(st.integers(0, values.size - 1), min_size=k, max_size=k, unique=True))
    spikes = data.draw(st.lists(st.floats(0.0, 1e12), min_size=k, max_size=k))
    spiked = values.copy()
    spiked[at] = spikes
    genuine_max = float(np.delete(values, at).max())
    usage = _usage(_raw([spiked * GIB / 4.0], [spiked]))
    robust = robust_usage(usage, Ceilings()).usage
    for peak, scale in ((robust.cpu_cores.max, 1.0), (robust.memory_bytes.max, GIB / 4.0)):
        assert peak <= SPIKE_FACTOR * genuine_max * scale * (1 + 1e-9)
        if min(spikes) > SPIKE_FACTOR * genuine_max:
            assert peak == pytest.approx(genuine_max * scale, rel=1e-9)


def test_a_reset_storm_lowers_confidence_below_applying() -> None:
    raw = _raw([_honest()])
    (series,) = raw.containers
    stormy = RawDataset(
        raw.start, raw.end, raw.pods, raw.owners, (ContainerSamples(**{**vars(series), "cpu_resets": 5000}),)
    )
    snap = aggregate(stormy, source="test")
    (usage,) = snap.containers
    assert usage.cpu_resets == 5000
    (rec,) = recommend(snap, SizingPolicy(), PriceTable.load(), END).recommendations
    (c,) = rec.containers
    assert c.confidence < 0.05
    assert "cpu counter reset 5000 times in 10080 samples: its rates are not trusted" in c.reason
    calm = RawDataset(
        raw.start, raw.end, raw.pods, raw.owners, (ContainerSamples(**{**vars(series), "cpu_resets": 2}),)
    )
    (rec,) = recommend(aggregate(calm, source="test"), SizingPolicy(), PriceTable.load(), END).recommendations
    assert rec.containers[0].confidence > 0.9


def test_reset_counts_follow_the_window_of_an_incremental_model() -> None:
    """Resets are counted per hour as samples are: a window after the storm does not see it."""
    raw = _raw([_honest()])
    (series,) = raw.containers
    stormy = RawDataset(
        raw.start, raw.end, raw.pods, raw.owners, (ContainerSamples(**{**vars(series), "cpu_resets": 700}),)
    )
    model = UsageModel(built_at=END.timestamp())
    build_states(stormy, into=model.states)
    (whole,) = view(model, raw.start, END, RECENCY).containers
    (last_day,) = view(model, END - timedelta(days=1), END, RECENCY).containers
    assert whole.cpu_resets == 700
    assert last_day.cpu_resets == pytest.approx(100, abs=2)  # a seventh, spread as the samples are
