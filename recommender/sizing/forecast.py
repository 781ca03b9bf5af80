"""Demand forecast per workload: least squares on trend + daily/weekly seasonal terms (numpy).

The series is averaged into hourly buckets. Then, by the length of finite history:
  >= 14 days   trend + hour-of-week terms (168)          method "lsq trend+hour-of-week"
  7-14 days    trend + hour-of-day (24) + day-of-week (7) method "lsq trend+hour-of-day+day-of-week"
  2-7 days     trend + hour-of-day (24)                   method "lsq trend+hour-of-day"
  < 2 days     naive: the last 24 h repeated              method "naive last-day (history < 2 days)"
Forecasts are clipped at 0; the peak is the forecast's max.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from podsizer.api.resource import Forecast
from recommender.model import FloatArray, TimeSeries, WorkloadDemand
from recommender.model.timegrid import bucket_index, bucket_mean, floor_to

HOUR = 3600.0


@dataclass(frozen=True, eq=False)
class SeriesForecast:
    """Hourly forecast values starting at `start`, their peak, and the method used."""

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
    cols = [np.ones_like(t_hours), t_hours / 24.0]
    if mode == "week":
        cols.extend((how == k).astype(np.float64) for k in range(1, 168))
    else:
        hod = how % 24
        cols.extend((hod == k).astype(np.float64) for k in range(1, 24))
        if mode == "day+dow":
            dow = how // 24
            cols.extend((dow == k).astype(np.float64) for k in range(1, 7))
    return np.column_stack(cols)


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
