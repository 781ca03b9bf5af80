"""Decaying histograms (recommender.model.histogram): buckets, percentiles within one bucket of the exact
weighted percentile, decay by half-life, moving the reference time, merging."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recommender.model import FloatArray
from recommender.model.histogram import (
    CPU_BUCKETS,
    MAX_EXPONENT,
    MEMORY_BUCKETS,
    BucketScheme,
    Histogram,
    percentiles_of,
)
from tests.support.hypo import examples

DAY = 86400.0


def step_quantile(values: FloatArray, weights: FloatArray, q: float) -> float:
    """The exact weighted q-quantile: the smallest sample whose cumulative weight reaches q * total."""
    order = np.argsort(values, kind="stable")
    v, cum = values[order], np.cumsum(weights[order])
    if q == 0.0:
        return float(v[0])
    return float(v[min(int(np.searchsorted(cum, q * cum[-1], side="left")), v.size - 1)])


def bucket_edges(scheme: BucketScheme, value: float) -> tuple[float, float]:
    i = int(scheme.index(np.array([value]))[0])
    lo, hi = scheme.starts()[i : i + 2]
    return float(lo), float(hi)


# ---- buckets ----------------------------------------------------------------------------------------


def test_cpu_buckets_cover_a_tenth_of_a_millicore_to_a_thousand_cores_at_two_percent() -> None:
    edges = CPU_BUCKETS.starts()
    assert edges[1] == pytest.approx(0.0001)
    assert edges[-2] >= 1000.0
    widths = np.diff(edges)[1:]
    assert (widths / edges[1:-1]).min() >= 0.02 - 1e-12
    assert widths[-1] / edges[-2] == pytest.approx(0.02, rel=0.01)


def test_memory_buckets_cover_64_kibibytes_to_four_tebibytes_at_two_percent() -> None:
    edges = MEMORY_BUCKETS.starts()
    assert edges[1] == pytest.approx(2.0**16)
    assert edges[-2] >= 4.0 * 2**40
    assert widths_ratio(edges) == pytest.approx(0.02, rel=0.01)
    assert MEMORY_BUCKETS.count < 750


def widths_ratio(edges: np.ndarray[tuple[int], np.dtype[np.float64]]) -> float:
    return float((edges[-1] - edges[-2]) / edges[-2])


def test_a_histogram_holds_only_the_buckets_between_its_lowest_and_highest_sample() -> None:
    h = Histogram(CPU_BUCKETS, DAY)
    h.add_many(np.array([0.1, 0.2, 0.15]), 1.0, np.array([0.0, 60.0, 120.0]))
    span = int(CPU_BUCKETS.index(np.array([0.2]))[0] - CPU_BUCKETS.index(np.array([0.1]))[0]) + 1
    assert h.nbytes() == 4 * span
    h.add(0.01, 1.0, 180.0)  # a lower value widens it
    assert h.nbytes() > 4 * span
    assert h.percentile(0.0) <= 0.0102
    assert h.weights.shape == (CPU_BUCKETS.count,)


def test_negative_values_land_in_the_first_bucket_and_huge_ones_in_the_last() -> None:
    idx = CPU_BUCKETS.index(np.array([-5.0, 0.0, 1e9]))
    assert idx.tolist() == [0, 0, CPU_BUCKETS.count - 1]


@given(st.floats(0.0, 1000.0))
@settings(max_examples=examples(400))
def test_every_value_lies_in_its_bucket_and_the_bucket_is_within_resolution(v: float) -> None:
    lo, hi = bucket_edges(CPU_BUCKETS, v)
    assert lo - 1e-12 <= v <= hi + 1e-12
    assert hi - lo <= CPU_BUCKETS.resolution(v) + 1e-12


# ---- percentiles ------------------------------------------------------------------------------------

samples = st.lists(
    st.tuples(st.floats(0.0, 1000.0), st.integers(1, 8)), min_size=1, max_size=200
)  # (cores, integer weight: sums are exact, so ties resolve alike on both sides)


@given(samples, st.floats(0.0, 1.0))
@settings(max_examples=examples(600))
def test_percentile_lies_in_the_bucket_of_the_exact_weighted_percentile(
    pairs: list[tuple[float, int]], q: float
) -> None:
    values = np.array([v for v, _ in pairs])
    weights = np.array([w for _, w in pairs], dtype=np.float64)
    h = Histogram(CPU_BUCKETS, None)
    h.add_many(values, weights, np.zeros(values.size))
    exact = step_quantile(values, weights, q)
    lo, hi = bucket_edges(CPU_BUCKETS, exact)
    got = h.percentile(q)
    assert lo <= got <= hi
    # the edges are float products (the first bucket's upper edge is 1.0000000000000002e-4): a last bit
    assert abs(got - exact) <= CPU_BUCKETS.resolution(exact) * (1 + 1e-12)


@given(
    st.lists(st.tuples(st.floats(0.0, 1000.0), st.floats(0.0, 14 * DAY)), min_size=1, max_size=200),
    st.floats(0.01, 0.99),
)
@settings(max_examples=examples(400))
def test_decayed_percentile_is_within_resolution_of_the_exact_decayed_percentile(
    pairs: list[tuple[float, float]], q: float
) -> None:
    """Weights 2^(age / 1 day) as recency.age_weights gives them; float32 weights may move a near-tie
    across its neighbour, so the bound is taken over the exact percentiles at q -/+ 1e-5."""
    values, at = np.array([v for v, _ in pairs]), np.array([t for _, t in pairs])
    h = Histogram(CPU_BUCKETS, DAY)
    h.add_many(values, 1.0, at)
    weights = np.exp2((at - at.max()) / DAY)
    low = bucket_edges(CPU_BUCKETS, step_quantile(values, weights, max(0.0, q - 1e-5)))[0]
    high = bucket_edges(CPU_BUCKETS, step_quantile(values, weights, min(1.0, q + 1e-5)))[1]
    assert low <= h.percentile(q) <= high


@given(
    st.lists(st.floats(1e-4, 50.0), min_size=1, max_size=40),
    st.integers(0, CPU_BUCKETS.count - 1),
    st.lists(st.floats(0.0, 10.0), min_size=1, max_size=60),
)
def test_adding_dense_weights_inside_or_beyond_the_span_equals_adding_them_to_every_bucket(
    values: list[float], lo: int, added: list[float]
) -> None:
    """add_dense (in place within the span, else merged) gives the weights a dense float64 sum rounds to."""
    h = Histogram(CPU_BUCKETS, None)
    h.add_many(np.array(values), 1.0, np.zeros(len(values)))
    weights = np.array(added[: CPU_BUCKETS.count - lo])
    expected = h.weights.astype(np.float64)
    expected[lo : lo + weights.size] += weights
    h.add_dense(lo, weights)
    np.testing.assert_array_equal(h.weights, expected.astype(np.float32))
    nonzero = np.flatnonzero(h.weights)
    assert (h.offset, h.span.size) == (nonzero[0], nonzero[-1] - nonzero[0] + 1)  # no zero ends kept


def test_one_sample_at_a_time_equals_adding_them_at_once() -> None:
    rng = np.random.default_rng(3)
    values, at = rng.gamma(2.0, 0.3, 500), np.sort(rng.uniform(0, 3 * DAY, 500))
    one, many = Histogram(CPU_BUCKETS, DAY), Histogram(CPU_BUCKETS, DAY)
    for v, t in zip(values.tolist(), at.tolist(), strict=True):
        one.add(v, 1.0, t)
    many.add_many(values, 1.0, at)
    one.rereference(many.reference)
    np.testing.assert_allclose(one.weights, many.weights, rtol=1e-5)


def test_an_empty_histogram_has_no_percentile_and_ignores_gaps() -> None:
    h = Histogram(CPU_BUCKETS, DAY)
    h.add(math.nan, 1.0, 0.0)
    h.add(1.0, 0.0, 0.0)
    h.add_many(np.array([math.nan, math.inf]), 1.0, np.array([0.0, 1.0]))
    assert h.is_empty()
    assert h.total_weight() == 0.0
    with pytest.raises(ValueError, match="empty"):
        h.percentile(0.5)


def test_a_percentile_outside_zero_to_one_is_refused() -> None:
    h = Histogram(CPU_BUCKETS, None)
    h.add(1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="within"):
        h.percentile(1.5)


# ---- decay ------------------------------------------------------------------------------------------


def test_a_sample_one_half_life_older_weighs_half() -> None:
    h = Histogram(CPU_BUCKETS, DAY)
    h.add(1.0, 1.0, 2 * DAY)
    h.add(1.0, 1.0, DAY)
    assert h.total_weight() == pytest.approx(1.5)


def test_far_newer_samples_move_the_reference_and_keep_weights_finite() -> None:
    h = Histogram(CPU_BUCKETS, DAY)
    h.add(0.1, 1.0, 0.0)
    late = (MAX_EXPONENT + 8) * DAY
    h.add(2.0, 1.0, late)
    assert h.reference == late
    assert np.isfinite(h.weights).all()
    assert h.total_weight() == pytest.approx(1.0 + 2.0 ** -(MAX_EXPONENT + 8), rel=1e-6)
    assert h.percentile(0.5) == pytest.approx(2.0, rel=0.05)


def test_moving_the_reference_keeps_every_percentile() -> None:
    rng = np.random.default_rng(5)
    h = Histogram(MEMORY_BUCKETS, DAY)
    h.add_many(rng.uniform(1e8, 4e9, 2000), 1.0, rng.uniform(0, 7 * DAY, 2000))
    before = [h.percentile(q) for q in (0.5, 0.9, 0.99)]
    h.rereference(h.reference + 5 * DAY)
    after = [h.percentile(q) for q in (0.5, 0.9, 0.99)]
    np.testing.assert_allclose(after, before, rtol=1e-6)


def test_merging_equals_adding_both_halves_to_one_histogram() -> None:
    rng = np.random.default_rng(7)
    values, at = rng.gamma(2.0, 0.5, 1000), rng.uniform(0, 7 * DAY, 1000)
    whole, a, b = Histogram(CPU_BUCKETS, DAY), Histogram(CPU_BUCKETS, DAY), Histogram(CPU_BUCKETS, DAY)
    whole.add_many(values, 1.0, at)
    a.add_many(values[:500], 1.0, at[:500])
    b.add_many(values[500:], 1.0, at[500:])
    a.merge(b)
    a.rereference(whole.reference)
    np.testing.assert_allclose(a.weights, whole.weights, rtol=1e-5, atol=1e-30)


def test_histograms_of_other_schemes_do_not_merge() -> None:
    with pytest.raises(ValueError, match="different"):
        Histogram(CPU_BUCKETS, DAY).merge(Histogram(MEMORY_BUCKETS, DAY))


def test_percentiles_of_many_histograms_equal_each_ones_own() -> None:
    rng = np.random.default_rng(5)
    hists = []
    for i in range(40):
        h = Histogram(MEMORY_BUCKETS if i % 2 else CPU_BUCKETS, DAY)
        if i % 7:  # every seventh stays empty
            scale = 10.0 ** rng.uniform(-3, 2) * (2**30 if i % 2 else 1.0)
            h.add_many(rng.gamma(2.0, scale, 500), 1.0, np.arange(500) * 60.0)
        hists.append(h)
    qs = (0.0, 0.5, 0.9, 0.95, 0.99, 1.0)
    for part in (hists[0::2], hists[1::2]):  # one scheme each
        got, means = percentiles_of(part, qs, rows=7)
        for h, row, mean in zip(part, got, means, strict=True):
            if h.is_empty():
                assert np.isnan(row).all() and np.isnan(mean)
            else:
                np.testing.assert_allclose(row, h.percentiles(qs), rtol=1e-9)
                assert mean == pytest.approx(h.mean(), rel=1e-9)
