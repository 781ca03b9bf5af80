"""Raw samples (remote read's chunks, VictoriaMetrics' export) reduced to the query grid: the points a range
query answers (a point per step), straight into the containers' rows (series.GridUsage), so the raw model
reads every path alike.

Step k of the grid lo + k * res covers (lo + (k - 1) * res, lo + k * res]:
- a gauge's point is the highest sample in the step (max_over_time over one step);
- a counter's point is its rate over the scrape intervals that end in the rate window (t - window, t] (the
  `rate(...[window])` of the range queries): their increases (a decrease is a reset: the new value is the
  increase) over their summed length; an interval longer than the window is a gap, not a rate (as a rate
  window that holds fewer than two samples).
Staleness markers (Prometheus' NaN that ends a series) are gaps; any other non-finite value is left out and
counted. Every series is walked at once in numpy, whatever the number of series.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from recommender.input.prometheus.client import Labels
from recommender.input.prometheus.series import ContainerKey, GridUsage, series_key
from recommender.model import FloatArray
from recommender.model.histogram import Matrix
from recommender.model.timegrid import IntArray

STALE_NAN = 0x7FF0000000000002
"""The bits of Prometheus' staleness marker (value.StaleNaN)."""


@dataclass(frozen=True)
class RawSeries:
    """Raw samples of many series: series i's are [offsets[i], offsets[i + 1]) of the arrays, in time
    order."""

    labels: list[Labels]
    offsets: IntArray
    timestamps_ms: IntArray
    values: FloatArray

    @property
    def samples(self) -> int:
        return int(self.timestamps_ms.size)

    def series_of(self) -> IntArray:
        """Each sample's series index."""
        return np.repeat(np.arange(len(self.labels), dtype=np.int64), np.diff(self.offsets))

    def only(self, keep: npt.NDArray[np.bool_]) -> RawSeries:
        """The samples where `keep` is True (each series keeps its place, possibly empty)."""
        sid = self.series_of()[keep]
        offsets = np.searchsorted(sid, np.arange(len(self.labels) + 1)).astype(np.int64)
        return RawSeries(self.labels, offsets, self.timestamps_ms[keep], self.values[keep])

    def series(self, chosen: npt.NDArray[np.bool_]) -> RawSeries:
        """The series where `chosen` (one flag per series) is True."""
        keep = np.repeat(chosen, np.diff(self.offsets))
        sid = self.series_of()[keep]
        labels = [lab for lab, c in zip(self.labels, chosen.tolist(), strict=True) if c]
        renumber = np.cumsum(chosen) - 1
        offsets = np.searchsorted(renumber[sid], np.arange(len(labels) + 1)).astype(np.int64)
        return RawSeries(labels, offsets, self.timestamps_ms[keep], self.values[keep])


def joined(parts: list[RawSeries]) -> RawSeries:
    """Raw reads of consecutive time ranges as one: each series' samples concatenated in time order."""
    if len(parts) == 1:
        return parts[0]
    by_key: dict[tuple[tuple[str, str], ...], int] = {}
    labels: list[Labels] = []
    for part in parts:
        for lab in part.labels:
            key = tuple(sorted(lab.items()))
            if key not in by_key:
                by_key[key] = len(labels)
                labels.append(lab)
    sids, ts, vs, order = [], [], [], []
    for k, part in enumerate(parts):
        index = np.array([by_key[tuple(sorted(lab.items()))] for lab in part.labels], dtype=np.int64)
        sid = index[part.series_of()] if part.labels else np.empty(0, np.int64)
        sids.append(sid)
        ts.append(part.timestamps_ms)
        vs.append(part.values)
        order.append(np.full(sid.size, k))
    sid, t, v, piece = (np.concatenate(a) for a in (sids, ts, vs, order))
    by = np.lexsort((t, piece, sid))
    offsets = np.searchsorted(sid[by], np.arange(len(labels) + 1)).astype(np.int64)
    return RawSeries(labels, offsets, t[by], v[by])


def cleaned(raw: RawSeries) -> tuple[RawSeries, int]:
    """The samples that are values: staleness markers dropped, other non-finite values dropped and counted,
    and a timestamp not after its series' previous one dropped (pieces that share an edge)."""
    finite = np.isfinite(raw.values)
    stale = raw.values.view(np.uint64) == np.uint64(STALE_NAN)
    later = np.ones(raw.samples, dtype=bool)
    later[1:] = raw.timestamps_ms[1:] > raw.timestamps_ms[:-1]
    later[raw.offsets[:-1][np.diff(raw.offsets) > 0]] = True  # each series' first sample
    bad = int(np.count_nonzero(~finite & ~stale))
    keep = finite & later
    return (raw if keep.all() else raw.only(keep)), bad


@dataclass(frozen=True)
class Grid:
    """The query grid: n steps lo, lo + res, ... (seconds)."""

    lo: float
    res: float
    n: int

    def step_of(self, timestamps_ms: IntArray) -> IntArray:
        """The step whose (t - res, t] holds each timestamp (outside 0..n-1: not on the grid)."""
        lo_ms, res_ms = round(self.lo * 1000), round(self.res * 1000)
        return -((lo_ms - timestamps_ms) // res_ms)


BLOCK = 64
"""Series reduced at once: the per-sample temporaries stay a few MiB whatever the answer's size."""
BLOCK_CELLS = 1 << 18
"""Grid cells (series x steps) of the per-step matrices a block of rates holds at most."""


def _blocks(raw: RawSeries, size: int = BLOCK) -> list[tuple[int, RawSeries]]:
    """The series in consecutive blocks of `size` (views, no copy), with the first one's index."""
    out = []
    for lo in range(0, len(raw.labels), size):
        hi = min(lo + size, len(raw.labels))
        a, b = int(raw.offsets[lo]), int(raw.offsets[hi])
        part = RawSeries(
            raw.labels[lo:hi], raw.offsets[lo : hi + 1] - a, raw.timestamps_ms[a:b], raw.values[a:b]
        )
        out.append((lo, part))
    return out


def _folded(key: IntArray, values: FloatArray, fold: np.ufunc) -> tuple[IntArray, FloatArray]:
    """`fold` of the values that share a key, per distinct key (keys come in series and time order, so
    equal keys are neighbours; sorted first where they are not)."""
    if (np.diff(key) < 0).any():
        order = np.argsort(key, kind="stable")
        key, values = key[order], values[order]
    starts = np.flatnonzero(np.diff(key, prepend=key[0] - 1))
    return key[starts], fold.reduceat(values, starts)


def _put(out: Matrix, rows: IntArray, key: IntArray, values: FloatArray, n: int) -> None:
    """Per-series points (key = series * n + step) onto their containers' rows, merged by max with what the
    row has (a container's other incarnations)."""
    flat = out.reshape(-1)  # a view: out is C-contiguous
    at = rows[key // n] * n + key % n
    if np.unique(rows).size == rows.size:  # one series per row in this block: no cell written twice
        flat[at] = np.fmax(flat[at], values)
    else:
        np.fmax.at(flat, at, values)


def _put_rows(out: Matrix, rows: IntArray, values: Matrix) -> None:
    """Per-series rows of points (NaN: none) onto their containers' rows, merged by max as _put."""
    if np.unique(rows).size == rows.size:
        out[rows] = np.fmax(out[rows], values)
    else:
        np.fmax.at(out, rows, values)


def _peaks(out: Matrix, rows: IntArray, raw: RawSeries, grid: Grid) -> None:
    """Each series' highest sample per step (a gauge: the working set)."""
    for first, part in _blocks(raw):
        step = grid.step_of(part.timestamps_ms)
        on = (step >= 0) & (step < grid.n)
        if not on.any():
            continue
        key, peak = _folded(part.series_of()[on] * grid.n + step[on], part.values[on], np.maximum)
        _put(out, rows[first : first + len(part.labels)], key, peak, grid.n)


def _rates(out: Matrix, rows: IntArray, raw: RawSeries, grid: Grid, window_s: float) -> None:
    """Each series' rate per step over the scrape intervals ending in (t - window, t] (a counter: CPU
    seconds). An interval enters the window at the step its end falls in and leaves it at the first step
    whose window starts at or after its end: per series and step what entered less what left, summed along
    the steps (each series' own running sums, so a series' rates do not depend on the others read with it;
    a window where the counter stood still is exactly 0)."""
    n, window_ms = grid.n, round(window_s * 1000)
    for first, part in _blocks(raw, max(1, min(BLOCK, BLOCK_CELLS // n))):
        if part.samples < 2:
            continue
        t, v = part.timestamps_ms, part.values
        sid = part.series_of()
        dt = np.diff(t)
        rise = np.diff(v)
        entered = grid.step_of(t[1:])
        left = grid.step_of(t[1:] + window_ms)
        ok = (sid[1:] == sid[:-1]) & (dt > 0) & (dt <= window_ms) & (left > 0) & (entered < n)
        if not ok.any():
            continue
        m = len(part.labels)
        series, increase = sid[1:][ok], np.where(rise >= 0, rise, v[1:])[ok]
        ends = (series * (n + 1) + np.maximum(entered[ok], 0), series * (n + 1) + np.minimum(left[ok], n))
        spans_s = _in_window(ends, dt[ok].astype(np.float64), m, n) / 1000.0  # whole milliseconds: exact
        seen = spans_s > 0
        moving = _in_window(ends, (increase != 0).astype(np.float64), m, n) > 0  # counts: exact
        rises = np.maximum(_in_window(ends, increase, m, n), 0.0)
        rates = np.where(moving, rises / np.where(seen, spans_s, 1.0), 0.0)
        _put_rows(out, rows[first : first + m], np.where(seen, rates, np.nan))


def _in_window(ends: tuple[IntArray, IntArray], weights: FloatArray, m: int, n: int) -> Matrix:
    """Per series (m rows) and step (n columns), the sum of the intervals' `weights` over the intervals
    in the step's window; `ends`: each interval's (series, step) cell where it enters the windows and where
    it leaves them (series * (n + 1) + step; step n: never within the grid)."""
    size = m * (n + 1)
    flow = np.bincount(ends[0], weights=weights, minlength=size) - np.bincount(
        ends[1], weights=weights, minlength=size
    )
    held: Matrix = np.cumsum(flow.reshape(m, n + 1), axis=1, dtype=np.float64)[:, :n]
    return held


def grid_usage(
    cpu: RawSeries, memory: RawSeries, grid: Grid, rate_s: float, slow_window_s: float
) -> tuple[GridUsage, set[ContainerKey]]:
    """Raw counters and gauges on the grid, one row per (namespace, pod, container); the CPU of a row
    with no rate over `rate_s` but SLOW_SCRAPE_POINTS or more working-set points is its rate over
    `slow_window_s` (a slow scrape), and such rows' keys come back."""
    cpu_keys = [series_key(labels) for labels in cpu.labels]
    mem_keys = [series_key(labels) for labels in memory.labels]
    keys = sorted(set(cpu_keys) | set(mem_keys))
    row_of = {key: i for i, key in enumerate(keys)}
    out = GridUsage.empty(keys, grid.lo, grid.res, grid.n)
    cpu_rows = np.array([row_of[k] for k in cpu_keys], dtype=np.int64)
    _peaks(out.memory, np.array([row_of[k] for k in mem_keys], dtype=np.int64), memory, grid)
    _rates(out.cpu, cpu_rows, cpu, grid, rate_s)
    slow = out.sparse_rows()
    if not slow.any() or rate_s >= slow_window_s:
        return out, set()
    chosen = slow[cpu_rows]
    _rates(out.cpu, cpu_rows[chosen], cpu.series(chosen), grid, slow_window_s)
    return out, {keys[i] for i in np.flatnonzero(slow).tolist()}
