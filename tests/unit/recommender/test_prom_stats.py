"""Client-side statistics of range-query series: numpy quantiles, incarnations merged, demand re-sampled."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recommender.input.prometheus.stats import container_stats, pod_steps, series_stats
from recommender.model import FloatArray


def arr(*xs: float) -> FloatArray:
    return np.array(xs, dtype=np.float64)


def test_series_stats_ignores_nan_and_interpolates_quantiles_like_numpy() -> None:
    vs = arr(math.nan, 1.0, 2.0, 3.0, 4.0, math.nan)
    got = series_stats(arr(0, 300, 600, 900, 1200, 1500), vs)
    finite = vs[np.isfinite(vs)]
    assert got["p50"] == np.quantile(finite, 0.5) == 2.5
    assert got["p99"] == pytest.approx(np.quantile(finite, 0.99))
    assert (got["max"], got["mean"], got["first"], got["last"]) == (4.0, 2.5, 300.0, 1200.0)
    assert series_stats(arr(0, 300), arr(math.nan, math.nan)) == {}


def test_container_stats_merge_incarnations_by_max_and_earliest_first_seen() -> None:
    key = {"namespace": "ns", "pod": "p", "container": "c"}
    old = (key | {"id": "1"}, arr(0, 300), arr(5.0, 5.0))
    new = (key | {"id": "2"}, arr(600, 900, 1200), arr(1.0, 2.0, 9.0))
    quiet = ({"namespace": "ns", "pod": "q", "container": "c"}, arr(0), arr(math.nan))
    got = container_stats([old, new, quiet])
    s = got[("ns", "p", "c")]
    assert (s["p50"], s["max"], s["mean"], s["first"], s["last"]) == (5.0, 9.0, 5.0, 0.0, 1200.0)
    assert got[("ns", "q", "c")] == {}


def test_pod_steps_average_or_peak_each_step_and_sum_the_containers_of_a_pod() -> None:
    ts = np.arange(0, 7201, 300, dtype=np.float64)  # 0 .. 2 h every 5 minutes
    a = ({"namespace": "ns", "pod": "p", "container": "a"}, ts, np.where(ts <= 3600, 1.0, 3.0))
    b = ({"namespace": "ns", "pod": "p", "container": "b"}, ts, np.full(ts.size, 0.5))
    gap = ({"namespace": "ns", "pod": "g", "container": "a"}, ts, np.where(ts > 3600, 2.0, math.nan))
    mean = pod_steps([a, b, gap], 0.0, 3600.0, 3, "mean")
    # step k covers (k-1 h, k h]: 0 holds only t=0, 1 the twelve points up to 1 h, 2 the rest
    assert mean[("ns", "p")].tolist() == [1.5, 1.5, 3.5]
    assert np.isnan(mean[("ns", "g")][:2]).all() and mean[("ns", "g")][2] == 2.0
    peak = pod_steps([(a[0], ts, ts / 7200)], 0.0, 3600.0, 3, "max")
    assert peak[("ns", "p")].tolist() == [0.0, 0.5, 1.0]
