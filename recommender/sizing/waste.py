"""Idle-GPU waste: a pod holding whole GPUs whose activity stays under a threshold up to the window end.

Rules: the trailing run of samples below `threshold` (NaN gaps inside it are skipped, they are not
activity) must span at least `window_hours` up to the end of the series. A gap (consecutive NaN, or
the time from the last sample to the end) longer than the window means "unknown", never idle.
`idle_since` is the time of the first sample of that trailing run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from podsizer.api.identity import WorkloadRef
from recommender.model import GpuUsage, TimeSeries
from recommender.sizing.gpu import gpu_model


@dataclass(frozen=True)
class WasteFinding:
    """One idle GPU pod, for reports."""

    workload: WorkloadRef
    container: str
    pod: str
    node: str
    model: str
    gpus: int
    activity_signal: str
    idle_since: datetime
    idle_hours: float
    threshold: float
    hourly_cost: float
    wasted_hourly_cost: float
    price_basis: str


def idle_since(series: TimeSeries, threshold: float, window_hours: float) -> datetime | None:
    """Start of the trailing below-threshold run when it lasts >= window_hours, else None."""
    values = np.asarray(series.values, dtype=np.float64)
    n = values.size
    if n == 0 or series.step_seconds <= 0:
        return None
    window_s = window_hours * 3600.0
    step = series.step_seconds
    finite = np.isfinite(values)
    idx = np.flatnonzero(finite)
    if idx.size == 0:
        return None
    # Trailing gap: from the end of the last sample's step to the end of the series.
    if (n - 1 - idx[-1]) * step > window_s:
        return None
    active = np.flatnonzero(finite & (values >= threshold))
    first = int(idx[0]) if active.size == 0 else int(active[-1]) + 1
    run = idx[idx >= first]
    if run.size == 0:
        return None
    # Gaps between consecutive finite samples of the run, in seconds of missing data.
    if run.size > 1 and (np.diff(run) - 1).max() * step > window_s:
        return None
    start = series.start + timedelta(seconds=float(run[0]) * step)
    end = series.start + timedelta(seconds=float(n) * step)
    if (end - start).total_seconds() < window_s:
        return None
    return start


def series_end(series: TimeSeries) -> datetime:
    return series.start + timedelta(seconds=float(len(series)) * series.step_seconds)


def find_idle(
    gpu: GpuUsage,
    threshold: float,
    window_hours: float,
    hourly_cost: float,
    price_basis: str,
) -> WasteFinding | None:
    """A WasteFinding when the pod holds whole GPUs and is idle per the module rules."""
    if gpu.gpu_count < 1 or gpu.mig_profile:
        return None
    since = idle_since(gpu.activity_series, threshold, window_hours)
    if since is None:
        return None
    hours = (series_end(gpu.activity_series) - since).total_seconds() / 3600.0
    return WasteFinding(
        workload=gpu.workload,
        container=gpu.container,
        pod=gpu.pod,
        node=gpu.node,
        model=gpu_model(gpu.model_name),
        gpus=gpu.gpu_count,
        activity_signal=gpu.activity_signal,
        idle_since=since,
        idle_hours=hours,
        threshold=threshold,
        hourly_cost=hourly_cost,
        wasted_hourly_cost=hourly_cost,
        price_basis=price_basis,
    )
