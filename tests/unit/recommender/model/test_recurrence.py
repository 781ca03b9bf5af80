"""Recurring peaks survive recency (recommender.model.recurrence): a cycle that recurs, or may, is kept; a
level that stopped (a step down whose weekday a week later was quieter) is discounted; the rule, its
per-day inputs and its reason, read from the usage states' histograms (aggregate: build_states and the
one reading, view), agree with the rule applied to the exact figures of the raw samples."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from podsizer.sizing_policy import SizingPolicy
from recommender.model import ContainerUsage, Quantiles
from recommender.model.aggregate import aggregate
from recommender.model.histogram import CPU_BUCKETS, Histogram
from recommender.model.raw import ContainerSamples, OwnerLink, PodInfo, RawDataset
from recommender.model.recency import DEFAULT, OFF, Recency, weighted_quantiles
from recommender.model.recurrence import CYCLE_DAYS, DAY_NOISE, MIN_HOURS, DayUsage, Recurrence, recurring
from recommender.model.state_build import build_states
from recommender.model.usage_state import UsageState, open_day_points
from recommender.sizing.static import size_static
from tests.support.hypo import examples

DAY = 86400.0
STEP = 600.0  # ten-minute samples: 144 a day, enough for a day's p99 and cheap to generate
MIB = 2.0**20
END = datetime(2026, 11, 2, tzinfo=UTC)  # a Monday, midnight UTC
QS = (0.5, 0.9, 0.95, 0.99)
QS_NAMES = ("p50", "p90", "p95", "p99")


def _raw(levels: list[float], *, noise: float = 0.05, seed: int = 0, days: int | None = None) -> RawDataset:
    """One Deployment pod whose CPU sits at levels[d] (cores) on day d of the window, with noise."""
    n = days or len(levels)
    start = END - timedelta(days=n)
    ts = np.arange(start.timestamp(), END.timestamp(), STEP)
    day = ((ts - ts[0]) // DAY).astype(int)
    rng = np.random.default_rng(seed)
    cpu = np.asarray(levels)[day] * (1 + noise * rng.standard_normal(ts.size)).clip(0.5, None)
    sample = ContainerSamples("shop", "web-5f8b-a", "app", ts, cpu, np.full(ts.size, 300 * MIB))
    return RawDataset(
        start,
        END,
        (PodInfo("shop", "web-5f8b-a", "n1", "ReplicaSet", "web-5f8b"),),
        (OwnerLink("shop", "ReplicaSet", "web-5f8b", "Deployment", "web"),),
        (sample,),
    )


def _usage(raw: RawDataset) -> ContainerUsage:
    (usage,) = aggregate(raw, source="t").containers
    return usage


def _recency_only_p99(raw: RawDataset) -> float:
    """The p99 recency alone gives (age-weighted samples, recommender.model.recency), before the rule."""
    (s,) = raw.containers
    w = DEFAULT.age_weights(s.timestamps, float(s.timestamps[-1]))
    return float(weighted_quantiles(s.cpu_cores[None, :], w[None, :], [0.99])[0, 0])


def _day_p99(raw: RawDataset, day: int) -> float:
    (s,) = raw.containers
    lo = raw.start.timestamp() + day * DAY
    return float(np.quantile(s.cpu_cores[(s.timestamps >= lo) & (s.timestamps < lo + DAY)], 0.99))


# ---- through the reading path: raw samples -> aggregate -------------------------------------------


@settings(max_examples=examples(200), deadline=None)
@given(
    quiet=st.floats(0.02, 2.0),
    factor=st.floats(1.5, 5.0),
    days=st.integers(7, 13),
    heavy=st.integers(0, 12),
    seed=st.integers(0, 2**16),
)
def test_a_heavy_weekday_that_recurs_or_may_is_kept(
    quiet: float, factor: float, days: int, heavy: int, seed: int
) -> None:
    """One heavy weekday a week, anywhere in 7..13 days of history: the p99 covers that day's own p99 (to
    within the day-to-day noise band, where recency already weighs it that high)."""
    heavy = heavy % days
    levels = [quiet * factor if (d - heavy) % CYCLE_DAYS == 0 else quiet for d in range(days)]
    raw = _raw(levels, seed=seed)
    usage = _usage(raw)
    last_heavy = max(d for d in range(days) if levels[d] > quiet)
    assert usage.cpu_cores.p99 * (1 + DAY_NOISE) >= _day_p99(raw, last_heavy)
    if usage.cpu_cores.p99 > _recency_only_p99(raw) * (1 + DAY_NOISE):  # the rule raised it: it says why
        present = last_heavy - CYCLE_DAYS >= 0
        why = "a weekly cycle is present" if present else "a weekly cycle cannot be ruled out"
        assert why in usage.recency_note


@settings(max_examples=examples(200), deadline=None)
@given(
    high=st.floats(0.1, 4.0),
    drop=st.floats(0.2, 0.6),
    days=st.integers(9, 15),
    step=st.integers(1, 7),
    seed=st.integers(0, 2**16),
)
def test_a_step_down_that_stopped_a_week_ago_is_discounted(
    high: float, drop: float, days: int, step: int, seed: int
) -> None:
    """A step down at least a week before the last whole day: every busier day's weekday a week later
    was quieter, so recency lowers the p99 to the new level."""
    step = min(step, days - CYCLE_DAYS - 1)
    levels = [high if d < step else high * drop for d in range(days)]
    usage = _usage(_raw(levels, seed=seed))
    assert usage.cpu_cores.p99 < high * drop * 1.3  # the new level (plus its noise), not the old one
    assert "did not recur within a week: recency discounts them" in usage.recency_note


def test_a_step_down_within_the_week_cannot_be_told_from_a_weekly_cycle() -> None:
    raw = _raw([1.0] * 3 + [0.3] * 4, noise=0.15)  # busy days, then quiet ones: a week and its weekend?
    usage = _usage(raw)
    assert usage.cpu_cores.p99 >= max(_day_p99(raw, d) for d in range(3)) * 0.999
    assert usage.cpu_cores.p99 > _recency_only_p99(raw) * (1 + DAY_NOISE)
    assert "a weekly cycle cannot be ruled out in 7 days of history" in usage.recency_note


def test_the_heavy_day_recency_weighs_at_under_a_percent_is_sized_for() -> None:
    """The quality benchmark's largest loss: a heavy Monday a week back weighs under 1 % with a 24 h
    half-life."""
    raw = _raw([3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    usage = _usage(raw)
    sized = size_static(usage, SizingPolicy())
    assert sized.requests["cpu"] >= _day_p99(raw, 0) * 1.15 * 0.999  # P99 of that day + 15 %
    assert "Mon 2026-10-26" in sized.reason and "cannot be ruled out" in sized.reason
    # the recency-weighted p99 alone (what the rule starts from) is the quiet days'
    assert recurring(usage.cpu_cores, [], DEFAULT).cpu == usage.cpu_cores
    weighted = float(usage.recency_note.split("recency-weighted p99 ")[1].split("m")[0]) / 1000
    assert weighted < 1.2


def test_a_rising_level_keeps_what_recency_gives() -> None:
    raw = _raw([0.2] * 5 + [0.6] * 2)
    usage = _usage(raw)
    assert usage.cpu_cores.p50 == pytest.approx(0.6, rel=0.05)  # the last two days weigh most
    assert usage.recency_note == ""  # nothing recurring above what recency already gives


def test_a_thin_day_speaks_for_nothing() -> None:
    """Samples in fewer than MIN_HOURS hours of a day: a pod that started late, a partial first day."""
    full = DayUsage(10, 24, (0.1, 0.12, 0.13, 0.15))
    thin = DayUsage(11, MIN_HOURS - 1, (3.0, 3.1, 3.2, 3.3))
    decayed = Quantiles(0.1, 0.12, 0.13, 0.15, 3.4, 0.2)
    assert recurring(decayed, [full, thin], DEFAULT).cpu.p99 == pytest.approx(0.15)
    enough = DayUsage(11, MIN_HOURS, (3.0, 3.1, 3.2, 3.3))
    assert recurring(decayed, [full, enough], DEFAULT).cpu.p99 == pytest.approx(3.3)
    assert recurring(decayed, [full, enough], OFF).cpu == decayed  # without decay there is nothing to undo


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 20), st.integers(0, 24), st.lists(st.floats(0, 10), min_size=4, max_size=4)),
        max_size=20,
    ),
    st.lists(st.floats(0, 10), min_size=4, max_size=4),
)
def test_the_rule_never_lowers_a_point_and_covers_each_recent_day(
    days: list[tuple[int, int, list[float]]], points: list[float]
) -> None:
    summaries = [DayUsage(d, h, tuple(sorted(p))) for d, h, p in days]  # type: ignore[arg-type]
    p50, p90, p95, p99 = sorted(points)
    decayed = Quantiles(p50, p90, p95, p99, max(p99, 10.0), p50)
    out = recurring(decayed, summaries, DEFAULT).cpu
    for name in ("p50", "p90", "p95", "p99"):
        assert getattr(out, name) >= getattr(decayed, name)
    seen_again = {d.day - CYCLE_DAYS for d in summaries if d.hours >= MIN_HOURS}
    for d in summaries:
        if d.hours >= MIN_HOURS and d.day not in seen_again:
            assert out.p99 * (1 + DAY_NOISE) >= d.p99  # covered, or within the day-to-day noise
            if d.p99 > decayed.p99 * (1 + DAY_NOISE):  # a busier day: every point at least its
                assert all(getattr(out, n) >= d.points[i] for i, n in enumerate(("p50", "p90", "p95", "p99")))
    assert out.p50 <= out.p90 <= out.p95 <= out.p99
    assert out.max >= out.p99 and (out.mean, out.second_max, out.min) == (decayed.mean, None, None)


def _exact_days(raw: RawDataset) -> list[DayUsage]:
    """Each UTC day's exact p50, p90, p95, p99 (the sample at each rank) and hours with samples."""
    (s,) = raw.containers
    days = np.floor(s.timestamps / DAY).astype(np.int64)
    out = []
    for d in np.unique(days).tolist():
        on = days == d
        points = np.quantile(s.cpu_cores[on], [0.5, 0.9, 0.95, 0.99], method="inverted_cdf")
        hours = np.unique(np.floor(s.timestamps[on] / 3600.0)).size
        out.append(DayUsage(d, hours, tuple(float(p) for p in points)))  # type: ignore[arg-type]
    return out


def _exact(raw: RawDataset, recency: Recency) -> Recurrence:
    """The rule over exact figures: the age-weighted samples' percentiles and the exact days."""
    (s,) = raw.containers
    w = recency.age_weights(s.timestamps, float(s.timestamps[-1]))
    p50, p90, p95, p99 = (float(v) for v in weighted_quantiles(s.cpu_cores[None, :], w[None, :], QS)[:, 0])
    q = Quantiles(p50, p90, p95, p99, float(s.cpu_cores.max()), p50)
    return recurring(q, _exact_days(raw), recency)


def test_day_usage_summarises_each_day_and_counts_its_hours() -> None:
    raw = _raw([0.5, 1.0], noise=0.0)
    (state,) = build_states(raw, recency=DEFAULT).values()
    got = sorted(state.day_usage(raw.start.timestamp()), key=lambda d: d.day)
    first = math.floor(raw.start.timestamp() / DAY)
    assert [(d.day, d.hours) for d in got] == [(first, 24), (first + 1, 24)]
    assert got[0].points == pytest.approx((0.5,) * 4, abs=CPU_BUCKETS.resolution(0.5))
    assert got[1].p99 == pytest.approx(1.0, abs=CPU_BUCKETS.resolution(1.0))


def test_the_open_days_summarised_at_once_equal_each_states_own() -> None:
    """open_day_points (every open day's histogram at once, as the view reads them) gives the figures each
    state's own day_usage computes, empty open days included."""
    rng = np.random.default_rng(5)
    states = [UsageState.empty(DAY) for _ in range(6)]
    now = 20_000 * DAY
    for k, s in enumerate(states[:5]):
        ts = now - 3 * DAY + 300.0 * np.arange(int(3 * DAY / 300) + k)
        s.add_samples(ts, rng.gamma(2.0, 0.1 * (k + 1), ts.size), np.full(ts.size, 1e8))
    states[1].open_cpu[states[1].newest_day - 1] = Histogram(CPU_BUCKETS, None)  # an open day, no weight
    opened = open_day_points(states)
    assert opened[5] == {} and any(opened[:5])
    for s, points in zip(states, opened, strict=True):
        assert sorted(points) == sorted(s.open_cpu)
        assert s.day_usage(now - 3 * DAY, points) == s.day_usage(now - 3 * DAY)


def test_each_days_figures_are_within_a_bucket_of_the_exact_ones() -> None:
    raw = _raw([1.0, 3.0, 1.0, 0.4, 2.0, 1.0, 0.7])
    (state,) = build_states(raw, recency=DEFAULT).values()
    got = {d.day: d for d in state.day_usage(raw.start.timestamp())}
    exact = _exact_days(raw)
    assert sorted(got) == [d.day for d in exact]
    for d in exact:
        assert got[d.day].hours == d.hours
        for mine, theirs in zip(got[d.day].points, d.points, strict=True):
            assert abs(mine - theirs) <= CPU_BUCKETS.resolution(theirs)


# ---- the histograms' reading agrees with the rule over exact figures ---------------------------------


@pytest.mark.parametrize(
    "levels",
    [
        [1.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0],  # a heavy Tuesday
        [1.0] * 4 + [0.3] * 3,  # busy days, then quiet ones
        [2.0] * 2 + [0.5] * 10,  # a step down that stopped
        [0.4, 0.4, 2.0, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 2.2, 0.4],  # a weekly heavy day, seen twice
        [0.2] * 5 + [0.6] * 2,  # a rise
    ],
)
def test_the_reading_and_the_exact_figures_agree_on_the_rule(levels: list[float]) -> None:
    raw = _raw(levels)
    got, exact = _usage(raw), _exact(raw, DEFAULT)
    # the same verdict in the same words, except the figures each reads within its resolution
    assert _words(got.recency_note) == _words(exact.note)
    for name in QS_NAMES:
        want = getattr(exact.cpu, name)
        assert abs(getattr(got.cpu_cores, name) - want) <= CPU_BUCKETS.resolution(want) * 1.5


def test_the_reading_agrees_with_the_exact_figures_with_the_decay_off() -> None:
    raw = _raw([1.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    (got,) = aggregate(raw, source="t", recency=OFF).containers
    exact = _exact(raw, OFF).cpu
    assert abs(got.cpu_cores.p99 - exact.p99) <= CPU_BUCKETS.resolution(exact.p99)


def _words(note: str) -> str:
    """A note without its figures (the paths read percentiles within a bucket of each other)."""
    return " ".join("#" if any(c.isdigit() for c in w) and not w[:3].isalpha() else w for w in note.split())
