"""Raw samples onto the query grid: counters as rates over the scrape intervals ending in each step's rate
window, gauges as each step's peak, staleness markers as gaps, other non-finite values counted."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from recommender.input.prometheus.rawgrid import STALE_NAN, Grid, GridRows, MetricFold, RawSeries
from recommender.input.prometheus.series import ContainerKey, GridUsage

LO = 1_764_547_200.0  # a grid point (s)
GRID = Grid(LO, 60.0, 60)  # an hour at 1 minute
POD = {"__name__": "x", "namespace": "ns", "pod": "p", "container": "c"}


def grid_usage(
    cpu: RawSeries, memory: RawSeries, grid: Grid, rate_s: float, slow_window_s: float
) -> tuple[GridUsage, set[ContainerKey]]:
    """Raw counters and gauges (each one answer, read whole) on the grid as a raw read folds them, one row
    per (namespace, pod, container); the CPU of a row with no rate over `rate_s` but SLOW_SCRAPE_POINTS or
    more working-set points is its rate over `slow_window_s` (a slow scrape); such rows' keys come back."""
    rows = GridRows(grid)
    folds = (
        (MetricFold(rows, counter=True, window_s=rate_s, wide_s=slow_window_s), cpu),
        (MetricFold(rows), memory),
    )
    for fold, raw in folds:
        fold.begin(final=True)
        fold.add(fold.series(raw.labels), raw)
        fold.finish()
    return rows.usage()


Rows = list[tuple[ContainerKey, np.ndarray, np.ndarray]]


def _rows(grid: GridUsage, matrix: np.ndarray) -> Rows:
    """The grid's rows with a point: (container, step times, values)."""
    times = grid.lo + grid.step * np.arange(matrix.shape[1])
    out = []
    for key, row in zip(grid.keys, matrix, strict=True):
        seen = np.isfinite(row)
        if seen.any():
            out.append((key, times[seen], row[seen]))
    return out


def rates(series: RawSeries, grid: Grid, max_interval_s: float) -> Rows:
    usage, _ = grid_usage(series, raw(), grid, max_interval_s, max_interval_s)
    return _rows(usage, usage.cpu)


def peaks(series: RawSeries, grid: Grid) -> Rows:
    usage, _ = grid_usage(raw(), series, grid, 120, 120)
    return _rows(usage, usage.memory)


def raw(*series: tuple[dict[str, str], list[float], list[float]]) -> RawSeries:
    sizes = [len(ts) for _, ts, _ in series]
    return RawSeries(
        [labels for labels, _, _ in series],
        np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        np.array([round(t * 1000) for _, ts, _ in series for t in ts], dtype=np.int64),
        np.array([v for _, _, vs in series for v in vs], dtype=np.float64),
    )


def test_a_counter_scraped_every_minute_gives_the_mean_rate_of_the_intervals_in_each_window() -> None:
    ts = [LO + 60 * i for i in range(-1, 60)]
    counter = np.cumsum([0.5 * 60 * (1 + (i % 3)) for i in range(61)]).tolist()
    each = [0.5 * (1 + ((i + 1) % 3)) for i in range(60)]  # the rate of the interval ending at step i
    ((key, at, rate),) = rates(raw((POD, ts, counter)), GRID, 60)
    assert key == ("ns", "p", "c")
    assert at.tolist() == [LO + 60 * i for i in range(60)]
    assert rate.tolist() == pytest.approx(each)
    ((_, at, rate),) = rates(raw((POD, ts, counter)), GRID, 120)
    assert at.tolist() == [LO + 60 * i for i in range(60)]
    assert rate.tolist() == pytest.approx([each[0]] + [(x + y) / 2 for x, y in itertools.pairwise(each)])


def test_several_scrapes_in_a_window_give_their_mean_rate_and_a_reset_counts_the_new_value() -> None:
    ts = [LO + 15 * i for i in range(9)]  # 15 s scrapes ending in steps 1 (t = LO + 60) and 2
    counter = [100.0, 101.0, 103.0, 106.0, 110.0, 1.0, 3.0, 5.0, 7.0]  # a reset after 110
    (_, at, rate) = rates(raw((POD, ts, counter)), GRID, 120)[0]
    # (LO - 60, LO + 60] holds 4 intervals, (LO, LO + 120] all 8, (LO + 60, LO + 180] the last 4
    assert at.tolist() == [LO + 60, LO + 120, LO + 180]
    assert rate.tolist() == pytest.approx([10 / 60, (10 + 1 + 2 + 2 + 2) / 120, (1 + 2 + 2 + 2) / 60])


def test_an_interval_longer_than_the_rate_window_is_a_gap() -> None:
    ts = [LO, LO + 60, LO + 600, LO + 660]
    (_, at, rate) = rates(raw((POD, ts, [0.0, 6.0, 12.0, 18.0])), GRID, 120)[0]
    assert at.tolist() == [LO + 60, LO + 120, LO + 660, LO + 720]
    assert rate.tolist() == pytest.approx([0.1] * 4)
    (_, wide_at, wide) = rates(raw((POD, ts, [0.0, 6.0, 12.0, 18.0])), GRID, 600)[0]
    assert wide_at.tolist() == [LO + 60 * k for k in range(1, 21)]  # the 540 s interval is a rate now
    assert wide[wide_at.tolist().index(LO + 600)] == pytest.approx(12 / 600)


def test_a_gauge_gives_each_steps_highest_sample_and_nothing_off_the_grid() -> None:
    ts = [LO - 90, LO - 30, LO, LO + 10, LO + 50, LO + 3600, LO + 3700]
    (_, at, peak) = peaks(raw((POD, ts, [9.0, 1.0, 2.0, 5.0, 4.0, 7.0, 8.0])), GRID)[0]
    # (LO - 60, LO] holds -30 and 0; (LO, LO + 60] holds 10 and 50; LO + 3600 is past the last step
    assert at.tolist() == [LO, LO + 60] and peak.tolist() == [2.0, 5.0]


def test_series_stay_apart_and_empty_ones_are_left_out() -> None:
    other = {**POD, "pod": "q"}
    both = raw((POD, [LO, LO + 60], [1.0, 2.0]), ({**POD, "pod": "gone"}, [], []), (other, [LO], [3.0]))
    assert [(key[1], p.tolist()) for key, _, p in peaks(both, GRID)] == [("p", [1.0, 2.0]), ("q", [3.0])]
    assert [key[1] for key, _, _ in rates(both, GRID, 120)] == ["p"]  # q has no interval


def folded(answers: list[list[RawSeries]], grid: Grid = GRID, window: float = 120) -> tuple[MetricFold, ...]:
    """Each answer (consecutive time ranges of one read) fed batch by batch to a counter's and a gauge's
    fold, as a read feeds them: (cpu fold, memory fold), both finished."""
    rows = GridRows(grid)
    cpu, mem = MetricFold(rows, counter=True, window_s=window, wide_s=600), MetricFold(rows)
    for fold in (cpu, mem):
        for k, batches in enumerate(answers):
            fold.begin(final=k == len(answers) - 1)
            for j, part in enumerate(batches):
                fold.add(fold.series(part.labels), part, last=j == len(batches) - 1)
        fold.finish()
    return cpu, mem


def test_staleness_markers_are_gaps_and_other_non_finite_values_are_counted() -> None:
    stale = np.array([STALE_NAN], dtype=np.uint64).view(np.float64)[0]
    cpu, mem = folded([[raw((POD, [LO, LO + 60, LO + 120, LO + 180], [1.0, stale, np.inf, 4.0]))]])
    usage, _ = mem.rows.usage()
    assert cpu.rejected.non_finite == mem.rejected.non_finite == 1 and cpu.kept == mem.kept == 2
    assert _rows(usage, usage.memory)[0][2].tolist() == [1.0, 4.0]


def test_impossible_timestamps_are_left_out_and_counted_but_not_the_overlap_of_consecutive_ranges() -> None:
    """Before 1970, from the year 3000 on, or not after the previous sample in the same answer: counted;
    a sample the previous answer already gave (whole chunks reach past a range's end): left out silently."""
    times = [-60.0, LO, LO + 60, LO + 30, LO + 60, LO + 120, 4e10]
    bad = raw((POD, times, [9.0, 1.0, 2.0, 8.0, 8.0, 3.0, 9.0]))
    cpu, mem = folded([[bad]])
    assert cpu.rejected.impossible == mem.rejected.impossible == 4 and mem.kept == 3
    usage, _ = mem.rows.usage()
    assert _rows(usage, usage.memory)[0][2].tolist() == [1.0, 2.0, 3.0]
    first = raw((POD, [LO, LO + 60, LO + 120], [1.0, 2.0, 3.0]))
    again = raw((POD, [LO + 60, LO + 120, LO + 180], [2.0, 3.0, 4.0]))  # the chunk that holds the edge
    cpu, mem = folded([[first], [again]])
    assert cpu.rejected.impossible == mem.rejected.impossible == 0 and mem.kept == 4


@given(
    st.lists(st.tuples(st.integers(1, 200), st.floats(0.0, 1000.0)), min_size=2, max_size=80),
    st.lists(st.tuples(st.integers(1, 79), st.booleans(), st.integers(0, 6)), max_size=8),
)
def test_a_read_in_batches_and_pieces_gives_the_one_answers_points_and_resets(
    samples: list[tuple[int, float]], cuts: list[tuple[int, bool, int]]
) -> None:
    """However the samples are cut into batches (a series' last sample carried into its next one) and
    answers of consecutive ranges (each repeating some samples of the one before, as whole chunks do), the
    rates, peaks and resets are the one answer's."""
    ts = (LO - 900 + np.cumsum([gap for gap, _ in samples])).tolist()
    values = [v for _, v in samples]
    n = len(ts)
    other = ({**POD, "pod": "q"}, [LO + 60 * i for i in range(10)], [float(i) for i in range(10)])
    marks = {at: (new, back) for at, new, back in cuts if 0 < at < n}
    answers: list[list[RawSeries]] = [[raw(other)]]
    a = 0
    for b in [*sorted(marks), n]:
        answers[-1].append(raw((POD, ts[a:b], values[a:b])))
        new, back = marks.get(b, (False, 0))
        if new:
            answers.append([])  # the next answer repeats `back` samples of this one
        a = max(0, b - back) if new else b
    whole, cut = folded([[raw(other, (POD, ts, values))]]), folded(answers)
    (one, _), (two, _) = whole[0].rows.usage(), cut[0].rows.usage()
    assert one.keys == two.keys
    np.testing.assert_allclose(one.cpu, two.cpu, rtol=1e-9, atol=1e-12)
    assert np.array_equal(one.memory, two.memory, equal_nan=True)
    assert one.cpu_resets.tolist() == two.cpu_resets.tolist()
    assert cut[0].rejected.impossible == cut[1].rejected.impossible == 0


def test_resets_are_counted_per_container_over_its_incarnations_on_the_grid_only() -> None:
    before = ({**POD, "id": "a"}, [LO - 120, LO - 60, LO, LO + 60], [5.0, 1.0, 2.0, 0.5])  # 1 before lo
    after = ({**POD, "id": "b"}, [LO + 120, LO + 180, LO + 240], [9.0, 1.0, 3.0])
    usage, _ = grid_usage(raw(before, after), raw(), GRID, 120, 600)
    assert usage.cpu_resets.tolist() == [2]


def _oracle(ts: list[float], values: list[float], grid: Grid, window: float) -> dict[float, float]:
    """Each step's rate by the definition, one interval at a time: the intervals no longer than the window
    ending in (t - window, t], their increases (a decrease: the new value) over their summed length."""
    out = {}
    for k in range(grid.n):
        t = grid.lo + grid.res * k
        rise = span = 0.0
        for (t0, v0), (t1, v1) in itertools.pairwise(zip(ts, values, strict=True)):
            if t - window < t1 <= t and t1 - t0 <= window:
                rise += v1 - v0 if v1 >= v0 else v1
                span += t1 - t0
        if span:
            out[t] = rise / span
    return out


@given(
    st.lists(st.tuples(st.integers(1, 200), st.floats(0.0, 1000.0)), min_size=2, max_size=60),
    st.integers(-300, 300),
    st.sampled_from([(60, 60), (60, 90), (60, 120), (30, 60), (60, 300), (60, 600)]),
)
def test_every_steps_rate_is_the_one_the_definition_gives(
    samples: list[tuple[int, float]], offset: int, res_and_window: tuple[int, int]
) -> None:
    """Whatever the scrape gaps, resets, phase and window (a multiple of the step or not), each step's point
    is the rate over the intervals in its window, and a step with none has no point."""
    res, window = res_and_window
    ts = (LO + offset + np.cumsum([gap for gap, _ in samples])).tolist()
    values = [v for _, v in samples]
    grid = Grid(LO, float(res), 40)
    got = rates(raw((POD, ts, values)), grid, window)
    expected = _oracle(ts, values, grid, window)
    assert sorted(expected) == (got[0][1].tolist() if got else [])
    assert (got[0][2].tolist() if got else []) == pytest.approx([expected[t] for t in sorted(expected)])


def test_incarnations_of_a_container_merge_by_max_and_a_slow_scrape_gets_the_wide_rate() -> None:
    old = ({**POD, "id": "a"}, [LO - 60, LO, LO + 60], [0.0, 6.0, 12.0])  # 0.1 cores
    new = ({**POD, "id": "b"}, [LO + 60, LO + 120], [0.0, 30.0])  # 0.5 cores from its second sample
    slow = ({**POD, "pod": "s"}, [LO - 600 + 300 * i for i in range(8)], [30.0 * i for i in range(8)])
    memory = raw(({**POD, "pod": "s"}, [LO + 300 * i for i in range(4)], [1.0] * 4), (POD, [LO], [5.0]))
    usage, sparse = grid_usage(raw(old, new, slow), memory, GRID, 120, 600)
    assert usage.keys == [("ns", "p", "c"), ("ns", "s", "c")]
    assert sparse == {("ns", "s", "c")}  # 4 working-set points, no interval within 120 s
    ((_, at, rate), (_, slow_at, slow_rate)) = _rows(usage, usage.cpu)
    # the new incarnation's interval ending at LO + 120 is in the windows of LO + 120 and LO + 180
    assert at.tolist() == [LO + 60 * k for k in range(4)]
    assert rate.tolist() == pytest.approx([0.1, 0.1, 0.5, 0.5])
    assert slow_rate.tolist() == pytest.approx([0.1] * slow_rate.size) and slow_at[0] == LO


def test_a_series_rates_do_not_depend_on_the_series_read_with_it_and_a_still_counter_is_zero() -> None:
    rng = np.random.default_rng(7)
    ts = [LO + 15 * i + float(rng.uniform(0, 2)) for i in range(240)]
    mine = np.cumsum(rng.gamma(2.0, 0.7, 240)).tolist()
    mine[100:160] = [mine[99]] * 60  # the counter stands still for 15 minutes
    busy = np.cumsum(rng.gamma(2.0, 9e5, 240)).tolist()  # a huge counter read in the same answer
    alone = rates(raw((POD, ts, mine)), GRID, 120)
    together = rates(raw(({**POD, "pod": "a-busy-one"}, ts, busy), (POD, ts, mine)), GRID, 120)
    ((_, at, rate),) = alone
    assert at.tolist() == together[1][1].tolist() and rate.tolist() == together[1][2].tolist()  # bitwise
    still = (at > ts[100] + 120) & (at <= ts[159])
    assert still.any() and (rate[still] == 0.0).all()
