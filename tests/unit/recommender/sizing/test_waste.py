"""Idle GPU detection: trailing run under the threshold for the window, NaN gaps, idle_since."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from podsizer.api.identity import WorkloadRef
from recommender.model import GpuUsage, Quantiles, TimeSeries
from recommender.sizing.waste import find_idle, idle_since

T0 = datetime(2026, 11, 1, tzinfo=UTC)
STEP = 60.0  # one sample a minute


def series(values: list[float] | np.ndarray) -> TimeSeries:
    return TimeSeries(T0, STEP, np.asarray(values, dtype=np.float64))


def busy_then_idle(busy_min: int, idle_min: int, idle_value: float = 0.01) -> np.ndarray:
    return np.concatenate([np.full(busy_min, 0.6), np.full(idle_min, idle_value)])


def test_idle_since_is_the_start_of_the_trailing_run() -> None:
    s = series(busy_then_idle(120, 90))
    assert idle_since(s, 0.05, 1.0) == T0 + timedelta(minutes=120)


@pytest.mark.parametrize(
    ("values", "idle"),
    [
        (busy_then_idle(120, 59), False),  # 59 min idle < 1 h window
        (busy_then_idle(120, 60), True),  # exactly the window
        (np.concatenate([busy_then_idle(120, 90), [0.5]]), False),  # active at the end
        (busy_then_idle(120, 90, idle_value=0.05), False),  # at the threshold is not below it
        (np.full(200, 0.0), True),  # idle for the whole series
    ],
)
def test_idle_needs_the_whole_window_below_threshold(values: np.ndarray, idle: bool) -> None:
    assert (idle_since(series(values), 0.05, 1.0) is not None) is idle


def test_short_nan_gaps_inside_the_run_are_skipped() -> None:
    v = busy_then_idle(120, 90)
    v[150:170] = np.nan  # a 20-minute scrape gap
    assert idle_since(series(v), 0.05, 1.0) == T0 + timedelta(minutes=120)


def test_gap_longer_than_window_means_unknown_not_idle() -> None:
    v = busy_then_idle(120, 200)
    v[150:220] = np.nan  # 70 minutes without data
    assert idle_since(series(v), 0.05, 1.0) is None


def test_trailing_gap_longer_than_window_means_unknown() -> None:
    v = np.concatenate([busy_then_idle(10, 90), np.full(70, np.nan)])
    assert idle_since(series(v), 0.05, 1.0) is None


def test_all_nan_is_unknown() -> None:
    assert idle_since(series(np.full(100, np.nan)), 0.05, 1.0) is None


def gpu(values: np.ndarray, count: int = 1, mig: str | None = None) -> GpuUsage:
    return GpuUsage(
        workload=WorkloadRef("ml", "StatefulSet", "notebook"),
        container="jupyter",
        pod="notebook-0",
        node="gpu-1",
        model_name="NVIDIA A100 80GB PCIe",
        gpu_count=count,
        activity_signal="GR_ENGINE_ACTIVE",
        activity=Quantiles.of(values),
        fb_used_max_mib=2048.0,
        fb_total_mib=81920.0 * count,
        activity_series=series(values),
        mig_profile=mig,
    )


def test_finding_carries_cost_and_idle_hours() -> None:
    f = find_idle(gpu(busy_then_idle(60, 180), count=2), 0.05, 1.0, hourly_cost=7.34, price_basis="on-demand")
    assert f is not None
    assert f.idle_since == T0 + timedelta(minutes=60)
    assert f.idle_hours == pytest.approx(3.0)
    assert f.wasted_hourly_cost == pytest.approx(7.34)
    assert f.gpus == 2 and f.activity_signal == "GR_ENGINE_ACTIVE"


def test_mig_slices_are_not_whole_gpu_waste() -> None:
    assert find_idle(gpu(np.zeros(200), mig="1g.10gb"), 0.05, 1.0, 1.0, "default") is None
