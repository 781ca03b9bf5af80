"""The forecast feeding the request: a certain rising trend of daily peaks raises it; nothing lowers it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import MIB, format_human
from podsizer.sizing_policy import SizingPolicy
from recommender.model import Autoscaler, ContainerUsage, Quantiles, TimeSeries, UsageSnapshot, WorkloadDemand
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import recommend_workload
from recommender.sizing.estimators import Estimate
from recommender.sizing.forecast import Feed, daily_peaks, fed, peak_trend, trend_feed
from recommender.sizing.static import size_static

T0 = datetime(2026, 10, 26, tzinfo=UTC)
END = T0 + timedelta(days=7)
REF = WorkloadRef("shop", "Deployment", "web")
MINUTES = 7 * 1440


def cycle(slope_per_day: float, seed: int = 1, noise: float = 0.03) -> np.ndarray:
    """A week per minute: a daily cycle 0.2..0.5 cores plus a linear trend, with relative noise."""
    rng = np.random.default_rng(seed)
    m = np.arange(MINUTES)
    hours = (m % 1440) / 60
    base = 0.2 + 0.3 * 0.5 * (1 + np.cos(2 * np.pi * (hours - 14) / 24)) + slope_per_day * m / 1440
    return base * (1 + noise * rng.standard_normal(MINUTES))


def series(values: np.ndarray) -> TimeSeries:
    return TimeSeries(T0, 60.0, values)


def cpu(slope: float) -> Feed | None:
    return trend_feed(series(cycle(slope)), 2.0, lambda v: format_human("cpu", v))


def test_daily_peaks_are_one_per_whole_day_ending_at_the_series_end() -> None:
    peaks = daily_peaks(series(cycle(0.04)))
    assert peaks.size == 7
    assert np.all(np.diff(peaks) > 0)


def test_a_certain_rising_trend_feeds_its_projection_two_days_ahead() -> None:
    feed = cpu(0.04)
    assert feed is not None
    trend = peak_trend(series(cycle(0.04)))
    assert trend is not None and trend.slope == pytest.approx(0.04, rel=0.2)
    # top daily peak ~0.5 + 6 x 0.04 = 0.74; two days on ~0.82: about x1.11
    assert 1.05 < feed.factor < 1.2
    assert "for the trend" in feed.text and "2 days ahead" in feed.text


def test_a_flat_cycle_does_not_feed() -> None:
    assert cpu(0.0) is None


def test_a_falling_trend_never_feeds() -> None:
    assert cpu(-0.03) is None


def test_an_uncertain_trend_does_not_feed() -> None:
    # a rise hidden in noise of +/- 40 % per minute (hourly means keep some): t well under the threshold
    rng = np.random.default_rng(5)
    days = np.repeat(rng.uniform(0.3, 0.9, 7), 1440)
    days[-1440:] += 0.05
    assert trend_feed(series(days), 2.0, str) is None


def test_a_feed_never_lowers_an_estimate() -> None:
    e = Estimate(1.0, ("p99 1000m",))
    assert fed(e, Feed(0.8, "falling")) == e
    assert fed(e, None) == e
    assert fed(e, Feed(1.1, "x1.10 for the trend")).value == pytest.approx(1.1)


def _usage(values: np.ndarray) -> ContainerUsage:
    q = Quantiles.of(values)
    mem = Quantiles.of(np.full(100, 300 * MIB))
    return ContainerUsage(REF, "app", q, mem, q.mean, mem.mean, MINUTES, T0, END)


def _snapshot(values: np.ndarray, autoscaler: Autoscaler | None = None) -> UsageSnapshot:
    demand = WorkloadDemand(REF, series(values), series(np.full(MINUTES, 300 * MIB)))
    return UsageSnapshot(
        T0, END, (_usage(values),), autoscalers=(autoscaler,) if autoscaler else (), demand=(demand,)
    )


def _cpu_request(snapshot: UsageSnapshot, policy: SizingPolicy) -> tuple[float, str]:
    rec = recommend_workload(REF, snapshot, policy, PriceTable.load(None), END).recommendation
    (c,) = rec.containers
    return float(c.requests["cpu"].rstrip("m")) / 1000, c.reason


def test_the_engine_raises_a_static_request_by_the_feed_and_says_so() -> None:
    values = cycle(0.04)
    plain = size_static(_usage(values), SizingPolicy()).requests["cpu"]
    request, reason = _cpu_request(_snapshot(values), SizingPolicy())
    feed = cpu(0.04)
    assert feed is not None
    assert request == pytest.approx(plain * feed.factor, abs=0.0011)
    assert "for the trend" in reason


def test_feeding_off_or_under_an_autoscaler_leaves_the_request() -> None:
    values = cycle(0.04)
    plain = size_static(_usage(values), SizingPolicy()).requests["cpu"]
    off, _ = _cpu_request(_snapshot(values), replace(SizingPolicy(), forecast_feed_days=0))
    # an HPA on a custom metric: sized statically, but replicas answer a rising total, not the request
    hpa = Autoscaler(REF, "HorizontalPodAutoscaler", "web", 1, 5, {})
    scaled, reason = _cpu_request(_snapshot(values, hpa), SizingPolicy())
    assert off == pytest.approx(plain, abs=0.0011)
    assert scaled == pytest.approx(plain, abs=0.0011)
    assert "for the trend" not in reason
