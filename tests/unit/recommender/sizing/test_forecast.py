"""Forecast backtests on generated series with daily + weekly seasonality, trend and noise."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from podsizer.api.identity import WorkloadRef
from recommender.model import TimeSeries, WorkloadDemand
from recommender.sizing.forecast import forecast_demand, forecast_series, hourly

T0 = datetime(2026, 10, 5, tzinfo=UTC)  # a Monday
SEEDS = (0, 1, 2)


def generate(
    days: float, trend_per_day: float = 0.0, seed: int = 0, step: float = 3600.0, noise: float = 0.5
) -> np.ndarray:
    """10 + 3 sin(daily) - 2.5 on weekends + trend + N(0, noise) noise."""
    n = int(days * 86400 / step)
    t = np.arange(n) * step / 3600.0
    hod, dow = t % 24, (t // 24) % 7
    rng = np.random.default_rng(seed)
    daily = 3 * np.sin(2 * np.pi * (hod - 6) / 24)
    weekly = np.where(dow >= 5, -2.5, 0.0)
    return 10 + daily + weekly + trend_per_day * t / 24 + rng.normal(0, noise, n)


def backtest(train_days: int, trend: float, seed: int) -> tuple[float, float, float, float]:
    """(model MAE, seasonal-naive MAE, forecast peak, noiseless peak) on the 7 days after train_days."""
    y = generate(train_days + 7, trend, seed)
    clean = generate(train_days + 7, trend, seed, noise=0.0)
    train, truth = y[:-168], y[-168:]
    f = forecast_series(TimeSeries(T0, 3600.0, train), 7)
    lag = 168 if train.size >= 14 * 24 else 24  # one week earlier; one day when history < 2 weeks
    naive = np.resize(train[-lag:], 168)
    return (
        float(np.abs(f.values - truth).mean()),
        float(np.abs(naive - truth).mean()),
        f.peak,
        float(clean[-168:].max()),
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_four_weeks_of_history_beat_seasonal_naive_by_10_percent(seed: int) -> None:
    model, naive, _, _ = backtest(28, 0.0, seed)
    assert model <= 0.9 * naive


@pytest.mark.parametrize("seed", SEEDS)
def test_ten_days_of_history_beat_one_day_naive_by_30_percent(seed: int) -> None:
    model, naive, _, _ = backtest(10, 0.0, seed)
    assert model <= 0.7 * naive


@pytest.mark.parametrize("seed", SEEDS)
def test_trend_is_followed_and_the_peak_is_close(seed: int) -> None:
    model, naive, peak, true_peak = backtest(28, 0.1, seed)
    assert model <= 0.7 * naive  # the week-old value lags the trend by 0.7
    assert peak == pytest.approx(true_peak, rel=0.03)


def test_methods_by_history_length() -> None:
    def method(days: float) -> str:
        return forecast_series(TimeSeries(T0, 3600.0, generate(days)), 7).method

    assert method(21) == "lsq trend+hour-of-week"
    assert method(10) == "lsq trend+hour-of-day+day-of-week"
    assert method(3) == "lsq trend+hour-of-day"
    assert method(1) == "naive last-day (history < 2 days)"


def test_naive_fallback_repeats_the_last_day() -> None:
    y = generate(1.5, seed=3)
    f = forecast_series(TimeSeries(T0, 3600.0, y), 2)
    assert f.values.size == 48
    np.testing.assert_allclose(f.values[:24], y[-24:])
    assert f.peak == pytest.approx(y[-24:].max())


def test_sub_hourly_samples_are_averaged_into_hours_with_nan_gaps() -> None:
    v = np.arange(24, dtype=np.float64)  # 5-minute steps: two hours
    v[3] = np.nan
    start, h = hourly(TimeSeries(T0 + timedelta(minutes=30), 300.0, v))
    assert start == T0
    assert h.size == 3
    assert h[0] == pytest.approx(np.nanmean(v[:6]))
    assert h[1] == pytest.approx(v[6:18].mean())


def test_forecast_is_never_negative_and_horizon_must_be_positive() -> None:
    falling = 5.0 - np.arange(24 * 7, dtype=np.float64) * 0.05
    f = forecast_series(TimeSeries(T0, 3600.0, falling), 7)
    assert f.values.min() >= 0.0
    with pytest.raises(ValueError, match="horizon"):
        forecast_series(TimeSeries(T0, 3600.0, falling), 0)


def test_forecast_demand_reports_both_peaks_and_horizon() -> None:
    d = WorkloadDemand(
        WorkloadRef("ns", "Deployment", "web"),
        TimeSeries(T0, 3600.0, np.asarray(generate(21) / 10, dtype=np.float64)),
        TimeSeries(T0, 3600.0, np.asarray(generate(21, seed=5) * 1e8, dtype=np.float64)),
    )
    f = forecast_demand(d, 7.0)
    assert f.horizon_days == 7.0
    assert 1.0 < f.cpu_cores_peak < 1.6
    assert 1.0e9 < f.memory_bytes_peak < 1.6e9
    assert f.method == "lsq trend+hour-of-week"


def test_the_forecast_peak_is_the_busiest_hours_mean_not_a_sample_peak() -> None:
    """What the console and the CRD call it: a 1-minute series at 1 core with a 5-core spike for one minute
    of every hour forecasts the hourly mean (1 + 4/60), far below the spikes and their p99."""
    minute = 60.0
    values = np.ones(int(7 * 86400 / minute), dtype=np.float64)
    values[::60] = 5.0
    f = forecast_series(TimeSeries(T0, minute, values), 7)
    hourly_mean = 1.0 + 4.0 / 60.0
    assert f.peak == pytest.approx(hourly_mean, rel=1e-6)
    assert f.peak == pytest.approx(float(np.nanmax(hourly(TimeSeries(T0, minute, values))[1])), rel=1e-6)
    assert f.peak < float(np.percentile(values, 99)) == 5.0
