"""state_batch.add_rows adds many series on one time grid to their states exactly as add_samples adds
them one by one (histogram weights, counts, spans, days, hourly samples, daily peaks, peaks, and each
day's undecayed CPU histogram with its hours seen)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recommender.model.state_batch import add_rows
from recommender.model.usage_state import DAY_S, UsageState
from tests.support.hypo import examples


def one_by_one_and_batched(
    seed: int, rows: int, states: int, points: int, half: float | None, start: float, levels: int = 0
) -> tuple[list[UsageState], list[UsageState]]:
    """`levels`: samples take that many distinct values (ties within a row and across rows), 0: any."""
    rng = np.random.default_rng(seed)
    ts = start + 60.0 * np.arange(points)
    cpu = rng.gamma(2.0, 0.2, (rows, points))
    mem = rng.uniform(1e8, 4e9, (rows, points))
    if levels:
        cpu = rng.integers(1, levels + 1, (rows, points)) * 0.25
        mem = rng.integers(1, levels + 1, (rows, points)) * 2.0**28
    cpu[rng.random((rows, points)) < 0.1] = np.nan  # gaps
    mem[rng.random((rows, points)) < 0.1] = np.nan
    if rows > 2:
        cpu[1], mem[1] = np.nan, np.nan  # a row with no value at all
    owner = rng.integers(0, states, rows)
    samples: list[int | None] = [None if r % 2 else int(rng.integers(1, 5 * points)) for r in range(rows)]
    single = [UsageState.empty(half) for _ in range(states)]
    batched = [UsageState.empty(half) for _ in range(states)]
    for r in range(rows):
        single[owner[r]].add_samples(ts, cpu[r], mem[r], samples=samples[r])
    add_rows([batched[o] for o in owner], ts, cpu, mem, samples)
    return single, batched


def assert_same(a: UsageState, b: UsageState) -> None:
    assert (a.samples, a.first_seen, a.last_seen, a.days_mask, a.newest_day) == (
        b.samples,
        b.first_seen,
        b.last_seen,
        b.days_mask,
        b.newest_day,
    ) or (a.samples == b.samples == 0)
    assert (a.cpu_peak, a.memory_peak) == (b.cpu_peak, b.memory_peak)
    np.testing.assert_array_equal(a.day_peaks, b.day_peaks)
    np.testing.assert_array_equal(a.day_peak_at, b.day_peak_at)
    np.testing.assert_allclose(a.demand[2], b.demand[2], rtol=1e-5)
    assert sorted(a.open_cpu) == sorted(b.open_cpu) and a.open_hours == b.open_hours
    days = [(a.open_cpu[d], b.open_cpu[d]) for d in a.open_cpu]
    for x, y in ((a.cpu, b.cpu), (a.memory, b.memory), *days):  # weights relative to a reference: shares
        assert x.is_empty() == y.is_empty()
        if not x.is_empty():
            np.testing.assert_allclose(
                x.weights / x.total_weight(), y.weights / y.total_weight(), rtol=1e-5, atol=1e-12
            )


@pytest.mark.parametrize("half", [86400.0, None])
def test_three_days_of_rows_equal_adding_them_one_by_one(half: float | None) -> None:
    single, batched = one_by_one_and_batched(3, rows=40, states=12, points=3 * 1440, half=half, start=0.0)
    assert sum(s.samples for s in single) > 0
    for a, b in zip(single, batched, strict=True):
        assert_same(a, b)


@given(
    seed=st.integers(0, 2**16),
    rows=st.integers(1, 12),
    states=st.integers(1, 5),
    points=st.integers(1, 200),
    start=st.floats(0, 30 * DAY_S).map(lambda t: round(t / 60.0) * 60.0),
    levels=st.sampled_from([0, 1, 2, 4]),
)
@settings(max_examples=examples(80), deadline=None)
def test_any_rows_equal_adding_them_one_by_one(
    seed: int, rows: int, states: int, points: int, start: float, levels: int
) -> None:
    """Also flat series (`levels` values: a working set that does not move ties everywhere): the earliest
    of equal samples is kept, batched or not, and rows of one state at one time (replicas) are one scrape."""
    single, batched = one_by_one_and_batched(seed, rows, states, points, 86400.0, start, levels)
    for a, b in zip(single, batched, strict=True):
        assert_same(a, b)


@given(
    seed=st.integers(0, 2**16),
    rows=st.integers(1, 10),
    states=st.integers(1, 4),
    points=st.integers(1, 120),
    gap_minutes=st.integers(1, 3 * 1440),
    start=st.floats(0, 30 * DAY_S).map(lambda t: round(t / 60.0) * 60.0),
)
@settings(max_examples=examples(40), deadline=None)
def test_rows_added_to_states_with_history_equal_adding_them_one_by_one(
    seed: int, rows: int, states: int, points: int, gap_minutes: int, start: float
) -> None:
    """A later grid (the next hour of a cycle, or days later: peaks shift, hours advance) onto states that
    already hold samples, batched or one by one."""
    single, batched = one_by_one_and_batched(seed, rows, states, points, 86400.0, start)
    later = start + 60.0 * (points - 1 + gap_minutes)
    rng = np.random.default_rng(seed)
    owner = rng.integers(0, states, rows)
    ts = later + 60.0 * np.arange(points)
    cpu = rng.gamma(2.0, 0.2, (rows, points))
    mem = rng.uniform(1e8, 4e9, (rows, points))
    cpu[rng.random((rows, points)) < 0.2] = np.nan
    for r in range(rows):
        single[owner[r]].add_samples(ts, cpu[r], mem[r])
    add_rows([batched[o] for o in owner], ts, cpu, mem, [None] * rows)
    for a, b in zip(single, batched, strict=True):
        assert_same(a, b)
