"""The one time-bucketing rule: bins [start + i*step, start + (i+1)*step), grid points, alignment."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from recommender.model.timegrid import (
    aligned,
    bucket_count,
    bucket_index,
    bucket_max,
    bucket_mean,
    floor_to,
    point_count,
    point_index,
)
from tests.support.hypo import examples


def test_bucket_max_leaves_empty_bins_nan() -> None:
    out = bucket_max(np.array([0.0, 10.0, 700.0]), np.array([1.0, 3.0, 2.0]), 0.0, 300.0, 3)
    assert out[0] == 3.0
    assert np.isnan(out[1])
    assert out[2] == 2.0


def test_bucket_mean_ignores_nan_and_samples_outside_the_bins() -> None:
    ts = np.array([-1.0, 0.0, 100.0, 200.0, 300.0, 900.0])
    vs = np.array([50.0, 1.0, math.nan, 3.0, 4.0, 9.0])
    out = bucket_mean(ts, vs, 0.0, 300.0, 2)
    assert out.tolist() == [2.0, 4.0]


def test_bucket_mean_of_several_rows_is_each_rows_own_mean() -> None:
    ts = np.array([0.0, 100.0, 400.0])
    rows = np.array([[1.0, 3.0, 5.0], [math.nan, 4.0, math.nan]])
    out = bucket_mean(ts, rows, 0.0, 300.0, 2)
    assert out[0].tolist() == [2.0, 5.0]
    assert out[1, 0] == 4.0 and math.isnan(out[1, 1])


def test_a_timestamp_on_a_bin_edge_opens_the_next_bin() -> None:
    assert bucket_index(np.array([299.999, 300.0, -0.5]), 0.0, 300.0).tolist() == [0, 1, -1]


def test_counts_and_alignment() -> None:
    assert bucket_count(0.0, 3600.0, 3600.0) == 1
    assert bucket_count(0.0, 3601.0, 3600.0) == 2
    assert bucket_count(5.0, 5.0, 60.0) == 1
    assert point_count(0.0, 600.0, 300.0) == 3
    assert point_index(np.array([299.6, 600.2]), 0.0, 300.0).tolist() == [1, 2]
    assert aligned(10.0, 700.0, 300.0) == (300.0, 600.0)
    assert aligned(10.0, 200.0, 300.0) == (10.0, 200.0)
    assert floor_to(1234.0, 300.0) == 1200.0


@settings(max_examples=examples(200))
@given(
    st.lists(st.floats(0, 10_000, allow_nan=False), min_size=1, max_size=50),
    st.floats(1, 2_000, allow_nan=False),
)
def test_every_sample_lands_in_the_bin_that_contains_it(ts: list[float], step: float) -> None:
    t = np.array(ts)
    idx = bucket_index(t, 0.0, step)
    assert bool(np.all(idx * step <= t + 1e-9)) and bool(np.all(t < (idx + 1) * step + 1e-9))
    n = int(idx.max()) + 1
    peaks = bucket_max(t, t, 0.0, step, n)
    assert float(np.nanmax(peaks)) == float(t.max())
