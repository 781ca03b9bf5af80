"""Demand forecast per workload: least squares on trend + daily/weekly seasonal terms (numpy).

The series is averaged into hourly buckets. Then, by the length of finite history:
  >= 14 days   trend + hour-of-week terms (168)          method "lsq trend+hour-of-week"
  7-14 days    trend + hour-of-day (24) + day-of-week (7) method "lsq trend+hour-of-day+day-of-week"
  2-7 days     trend + hour-of-day (24)                   method "lsq trend+hour-of-day"
  < 2 days     naive: the last 24 h repeated              method "naive last-day (history < 2 days)"
Forecasts are clipped at 0. The "peak" (Forecast.cpu_cores_peak, memory_bytes_peak) is the forecast's max:
the busiest hour's mean demand, not a sample peak; an hour's mean smooths out the spikes a p99 of samples
catches, so it can sit below one (the console says so).

The forecast feeding the request (trend_feed): a line through the daily peaks of the last whole days; when
its slope is certain (t >= FEED_MIN_T) and the projection forecast_feed_days ahead is above the highest
daily peak seen, the container's request is raised by that ratio (never lowered).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

import numpy as np

from podsizer.api.quantity import format_human
from podsizer.api.resource import Forecast
from recommender.model import FloatArray, TimeSeries, WorkloadDemand
from recommender.model.timegrid import IntArray, bucket_index, bucket_mean, floor_to
from recommender.sizing.estimators import Estimate, Resource

HOUR = 3600.0


@dataclass(frozen=True, eq=False)
class SeriesForecast:
    """Hourly forecast values from `start`, their max (the busiest hour's mean), and the method used."""

    start: datetime
    values: FloatArray
    peak: float
    method: str


def hourly(series: TimeSeries) -> tuple[datetime, FloatArray]:
    """Mean of the finite samples in each whole hour (NaN where an hour has none)."""
    values = np.asarray(series.values, dtype=np.float64)
    if values.size == 0:
        return series.start, np.empty(0)
    steps = np.arange(values.size, dtype=np.float64)
    offsets: FloatArray = series.start.timestamp() + steps * series.step_seconds
    t0 = floor_to(float(offsets[0]), HOUR)
    n = int(bucket_index(offsets[-1:], t0, HOUR)[0]) + 1
    out = bucket_mean(offsets, values, t0, HOUR, n)
    return series.start - timedelta(seconds=float(offsets[0] - t0)), out


def _design(t_hours: FloatArray, start: datetime, mode: str) -> FloatArray:
    """Columns: intercept, trend (days), then one-hot seasonal terms (first level dropped)."""
    base_how = start.weekday() * 24 + start.hour
    how = (base_how + t_hours.astype(np.int64)) % 168
    cols = [np.ones_like(t_hours)[:, None], (t_hours / 24.0)[:, None]]
    if mode == "week":
        cols.append(_one_hot(how, 168))
    else:
        cols.append(_one_hot(how % 24, 24))
        if mode == "day+dow":
            cols.append(_one_hot(how // 24, 7))
    return np.hstack(cols)


def _one_hot(level: IntArray, levels: int) -> FloatArray:
    """One column per level but the first: 1.0 where `level` is that level."""
    return np.eye(levels, dtype=np.float64)[level][:, 1:]


def forecast_series(series: TimeSeries, horizon_days: float) -> SeriesForecast:
    """Forecast `horizon_days` of hourly values after the end of `series`."""
    if horizon_days <= 0:
        raise ValueError(f"forecast horizon must be positive, got {horizon_days} days")
    start, y = hourly(series)
    horizon = max(1, math.ceil(horizon_days * 24))
    future_start = start + timedelta(hours=int(y.size))
    finite = np.isfinite(y)
    if not finite.any():
        raise ValueError("no finite samples to forecast from")
    idx = np.flatnonzero(finite)
    span_hours = float(idx[-1] - idx[0] + 1)
    if span_hours < 48:
        last_day = y[max(0, y.size - 24) :]
        last_day = last_day[np.isfinite(last_day)]
        if last_day.size == 0:
            last_day = y[idx[-1:]]
        reps = np.resize(last_day, horizon)
        values = np.clip(reps, 0.0, None)
        return SeriesForecast(future_start, values, float(values.max()), "naive last-day (history < 2 days)")
    mode, label = (
        ("week", "lsq trend+hour-of-week")
        if span_hours >= 14 * 24
        else ("day+dow", "lsq trend+hour-of-day+day-of-week")
        if span_hours >= 7 * 24
        else ("day", "lsq trend+hour-of-day")
    )
    t = np.arange(y.size, dtype=np.float64)
    x = _design(t[finite], start, mode)
    coef, *_ = np.linalg.lstsq(x, y[finite], rcond=None)
    tf = np.arange(y.size, y.size + horizon, dtype=np.float64)
    values = np.clip(_design(tf, start, mode) @ coef, 0.0, None)
    return SeriesForecast(future_start, values, float(values.max()), label)


def forecast_demand(demand: WorkloadDemand, horizon_days: float) -> Forecast:
    """The workload's peak CPU and memory demand over the horizon."""
    cpu = forecast_series(demand.cpu_cores, horizon_days)
    mem = forecast_series(demand.memory_bytes, horizon_days)
    method = cpu.method if cpu.method == mem.method else f"cpu: {cpu.method}; memory: {mem.method}"
    return Forecast(
        horizon_days=horizon_days,
        cpu_cores_peak=cpu.peak,
        memory_bytes_peak=mem.peak,
        method=method,
    )


FEED_MIN_T = 4.0
"""A trend of daily peaks feeds the request only when its slope is at least this many standard errors."""
FEED_MIN_RISE = 0.02
"""... and raises the request by at least 2 % (less is within any margin)."""
FEED_MIN_DAYS = 4
"""... over at least this many whole days (with at least 12 hours of samples each)."""


@dataclass(frozen=True)
class PeakTrend:
    """A linear trend of the daily peaks (max of hourly means per day, days counted back from the end)."""

    days: int
    slope: float
    t: float
    last: float
    top: float

    def rise(self, days_ahead: float) -> float:
        """Projected peak `days_ahead` after the last day over the highest daily peak seen."""
        return (self.last + self.slope * days_ahead) / self.top if self.top > 0 else 1.0


def daily_peaks(series: TimeSeries) -> FloatArray:
    """Per whole day ending at the series' end: the max of its hourly means (NaN: under 12 hours seen)."""
    _, y = hourly(series)
    days = y.size // 24
    if days == 0:
        return np.empty(0)
    by_day = y[y.size - days * 24 :].reshape(days, 24)
    seen = np.isfinite(by_day).sum(axis=1)
    peaks = np.full(days, np.nan)
    ok = seen >= 12
    peaks[ok] = np.nanmax(by_day[ok], axis=1)
    return peaks


def peak_trend(series: TimeSeries) -> PeakTrend | None:
    """Least-squares line through the daily peaks, with its t statistic; None under FEED_MIN_DAYS days."""
    peaks = daily_peaks(series)
    x = np.flatnonzero(np.isfinite(peaks)).astype(np.float64)
    if x.size < FEED_MIN_DAYS:
        return None
    y = peaks[x.astype(np.int64)]
    with np.errstate(over="ignore", invalid="ignore"):  # absurd values: a non-finite fit is no trend
        slope, intercept = (float(v) for v in np.polyfit(x, y, 1))
        residual = y - (slope * x + intercept)
        spread = float(np.sum((x - x.mean()) ** 2))
        sse = float(np.sum(residual**2))
    if not all(math.isfinite(v) for v in (slope, intercept, sse)):
        return None
    se = math.sqrt(sse / (x.size - 2) / spread) if spread > 0 else math.inf
    t = slope / se if se > 0 else (math.inf if slope > 0 else 0.0)
    last = slope * float(peaks.size - 1) + intercept
    return PeakTrend(int(x.size), slope, t, last, float(np.max(y)))


@dataclass(frozen=True)
class Feed:
    """How much a certain rising trend raises a request, and the words for the reason."""

    factor: float
    text: str


def trend_feed(series: TimeSeries, days_ahead: float, unit: Callable[[float], str]) -> Feed | None:
    """The factor that lifts the history's top daily peak to the trend's projection `days_ahead` after the
    last day, when the trend is certain (t >= FEED_MIN_T) and rising by at least FEED_MIN_RISE; else None.
    Never below 1: a falling forecast alone never lowers a request."""
    if days_ahead <= 0:
        return None
    trend = peak_trend(series)
    if trend is None or trend.slope <= 0 or trend.t < FEED_MIN_T:
        return None
    factor = trend.rise(days_ahead)
    if factor < 1.0 + FEED_MIN_RISE:
        return None
    return Feed(
        factor,
        f"x{factor:.2f} for the trend: daily peaks rise {unit(trend.slope)} a day "
        f"(t {min(trend.t, 999):.0f} over {trend.days} days), {days_ahead:g} "
        f"{'day' if days_ahead == 1 else 'days'} ahead",
    )


def demand_feeds(demand: WorkloadDemand, days_ahead: float) -> dict[Resource, Feed]:
    """The certain rising trends of a workload's total CPU and memory demand (trend_feed), by resource."""
    out: dict[Resource, Feed] = {}
    for resource, series in (("cpu", demand.cpu_cores), ("memory", demand.memory_bytes)):
        name: Resource = "cpu" if resource == "cpu" else "memory"
        feed = trend_feed(series, days_ahead, partial(format_human, name))
        if feed is not None:
            out[name] = feed
    return out


def fed(estimate: Estimate, feed: Feed | None) -> Estimate:
    """`estimate` raised by the feed's factor (the step names the trend); unchanged without one."""
    if feed is None or feed.factor <= 1.0:
        return estimate
    return Estimate(estimate.value * feed.factor, (*estimate.steps, feed.text))
