"""Raw samples (remote read's chunks, VictoriaMetrics' export) reduced to the query grid batch by batch: the
points a range query answers (a point per step), straight into the containers' rows (series.GridUsage), so
the raw model reads every path alike and memory holds one batch of samples, the grid and a few numbers per
series, whatever an answer holds.

Step k of the grid lo + k * res covers (lo + (k - 1) * res, lo + k * res]:
- a gauge's point is the highest sample in the step (max_over_time over one step);
- a counter's point is its rate over the scrape intervals that end in the rate window (t - window, t] (the
  `rate(...[window])` of the range queries): their increases (a decrease is a reset: the new value is the
  increase) over their summed length; an interval longer than the window is a gap, not a rate (as a rate
  window that holds fewer than two samples).
A series' samples come in time order, its batches one after the other (a read's answers in time order, an
answer's series in turn). Each series carries its last sample into its next batch, so the interval across
a batch boundary counts as any other, and its flows (what entered and left each step's window) until no
batch of it can follow (the answer moved past it, or the read ended): then they are summed along the steps.
Staleness markers (Prometheus' NaN that ends a series) are gaps; any other non-finite value is left out and
counted, as is a timestamp before 1970, from the year 3000 on, or not after its series' previous one in the
same answer (impossible); a sample at or before the last one an earlier answer gave of its series is the
overlap of consecutive time ranges (whole chunks come back) and is left out silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from recommender.input.prometheus.caps import MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS
from recommender.input.prometheus.client import Labels, SeriesIdentity, series_identity
from recommender.input.prometheus.series import ContainerKey, GridUsage, series_key
from recommender.model import FloatArray
from recommender.model.histogram import Matrix
from recommender.model.timegrid import IntArray

STALE_NAN = 0x7FF0000000000002
"""The bits of Prometheus' staleness marker (value.StaleNaN)."""
_SHIFT = 46
"""(series << 46) + timestamp orders a batch by series, then time: possible timestamps are below 2**45."""
_G = TypeVar("_G", bound=np.generic)
BLOCK = 64
"""Series whose rates are reduced at once: their per-step matrices stay in the CPU's cache."""
BLOCK_CELLS = 1 << 18
"""Grid cells (series x steps) of the per-step matrices a block of rates holds at most."""


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

    @cached_property
    def series_of(self) -> IntArray:
        """Each sample's series index."""
        return np.repeat(np.arange(len(self.labels), dtype=np.int64), np.diff(self.offsets))

    def only(self, keep: npt.NDArray[np.bool_]) -> RawSeries:
        """The samples where `keep` is True (each series keeps its place, possibly empty)."""
        sid = self.series_of[keep]
        offsets = np.searchsorted(sid, np.arange(len(self.labels) + 1)).astype(np.int64)
        return RawSeries(self.labels, offsets, self.timestamps_ms[keep], self.values[keep])


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

    @property
    def span_ms(self) -> tuple[int, int]:
        """(lo, last step] in ms: where the intervals a read counts end (consecutive grids share lo/hi)."""
        return round(self.lo * 1000), round((self.lo + self.res * (self.n - 1)) * 1000)


def _grown(a: npt.NDArray[_G], rows: int, fill: object) -> npt.NDArray[_G]:
    """`a` with room for `rows` rows (capacity doubled), new rows filled with `fill`."""
    if rows <= a.shape[0]:
        return a
    out: npt.NDArray[_G] = np.full((max(rows, 2 * a.shape[0], 16), *a.shape[1:]), fill, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


class GridRows:
    """The containers' rows of one read, added as their series appear: CPU and working set per step (NaN:
    no point), the CPU counter's resets, and the wide-window CPU of rows that may be a slow scrape."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid
        self.keys: list[ContainerKey] = []
        self._row_of: dict[ContainerKey, int] = {}
        self.cpu: Matrix = np.full((0, grid.n), np.nan)
        self.memory: Matrix = np.full((0, grid.n), np.nan)
        self.resets: IntArray = np.zeros(0, dtype=np.int64)
        self.wide: dict[int, FloatArray] = {}

    def row(self, key: ContainerKey) -> int:
        found = self._row_of.get(key)
        if found is not None:
            return found
        k = len(self.keys)
        self._row_of[key] = k
        self.keys.append(key)
        if k == self.resets.shape[0]:
            self.cpu, self.memory = _grown(self.cpu, k + 1, np.nan), _grown(self.memory, k + 1, np.nan)
            self.resets = _grown(self.resets, k + 1, 0)
        return k

    def put_wide(self, rows: IntArray, rates: Matrix) -> None:
        for r, line in zip(rows.tolist(), rates, strict=True):
            held = self.wide.get(r)
            self.wide[r] = line.copy() if held is None else np.fmax(held, line)

    def usage(self) -> tuple[GridUsage, set[ContainerKey]]:
        """The grid, rows in key order; a row with SLOW_SCRAPE_POINTS or more working-set points and no CPU
        point takes the wide-window CPU (a slow scrape), and such rows' keys come back."""
        k = len(self.keys)
        order = sorted(range(k), key=self.keys.__getitem__)
        usage = GridUsage(
            [self.keys[i] for i in order],
            self.cpu[:k][order],
            self.memory[:k][order],
            self.grid.lo,
            self.grid.res,
            self.resets[:k][order],
        )
        self.cpu = self.memory = np.full((0, self.grid.n), np.nan)  # the grid's copies are the rows now
        slow = usage.sparse_rows()
        place = np.argsort(np.array(order, dtype=np.int64)) if k else np.zeros(0, np.int64)
        for r, line in self.wide.items():
            if slow[place[r]]:
                usage.cpu[place[r]] = np.fmax(usage.cpu[place[r]], line)
        return usage, {usage.keys[i] for i in np.flatnonzero(slow).tolist()}


@dataclass
class Rejected:
    """Samples a fold left out, by reason (added to the client's rejections by the caller)."""

    non_finite: int = 0
    impossible: int = 0


@dataclass
class _Carry:
    """Per series (by its index in the fold): its row, the latest timestamp seen and the answer that gave
    it, the last sample kept (-1: none), and whether it has a rate within the set window on the grid."""

    row: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    seen_ms: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    seen_in: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    last_ms: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    last_value: FloatArray = field(default_factory=lambda: np.zeros(0))
    short: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, bool))

    def grow(self, n: int) -> None:
        if n <= self.row.shape[0]:
            return
        self.row, self.seen_ms = _grown(self.row, n, 0), _grown(self.seen_ms, n, -1)
        self.seen_in, self.last_ms = _grown(self.seen_in, n, 0), _grown(self.last_ms, n, -1)
        self.last_value, self.short = _grown(self.last_value, n, np.nan), _grown(self.short, n, False)


class MetricFold:
    """One metric's raw samples folded onto `rows` batch by batch (module docstring): a gauge's peaks, or a
    counter's rates over `window_s` (and over `wide_s` for series without one: a slow scrape)."""

    def __init__(
        self, rows: GridRows, *, counter: bool = False, window_s: float = 0.0, wide_s: float = 0.0
    ) -> None:
        self.rows = rows
        self.counter = counter
        self.window_ms = round(window_s * 1000)
        self.wide_ms = round(wide_s * 1000) if wide_s > window_s else 0
        self.rejected = Rejected()
        self.kept = 0
        self._index: dict[SeriesIdentity, int] = {}
        self._rows_used: set[int] = set()
        self._distinct = True  # no two series share a row (no container with two incarnations)
        self._carry = _Carry()
        self._open: dict[tuple[int, int], Matrix] = {}  # (series, window ms): flows not summed yet
        self._answer = 0
        self._final = True

    def series(self, labels: list[Labels], identities: list[SeriesIdentity] | None = None) -> IntArray:
        """The fold's index of each series (by its label set, series_identity unless given: the same series
        in every answer)."""
        out = np.empty(len(labels), dtype=np.int64)
        for i, lab in enumerate(labels):
            key = series_identity(lab) if identities is None else identities[i]
            sid = self._index.get(key)
            if sid is None:
                sid = self._index[key] = len(self._index)
                self._carry.grow(sid + 1)
                row = self._carry.row[sid] = self.rows.row(series_key(lab))
                self._distinct = self._distinct and row not in self._rows_used
                self._rows_used.add(row)
            out[i] = sid
        return out

    def begin(self, final: bool) -> None:
        """An answer starts; `final`: no later answer of the read follows it."""
        self._answer += 1
        self._final = final

    def add(self, sids: IntArray, part: RawSeries, last: bool = True) -> None:
        """The next batch of the answer: part's series i is the fold's series sids[i]; `last`: the answer's
        last batch (else its last series may go on in the next)."""
        blocks = _blocks(part, BLOCK)
        for k, (first, block) in enumerate(blocks):  # a few series at a time: their arrays stay in cache
            ids = sids[first : first + len(block.labels)]
            kept = self._cleaned(ids, block)
            self.kept += kept.samples
            if self.counter:
                self._rates(ids, kept, last and k == len(blocks) - 1)
            else:
                self._peaks(ids, kept)

    def finish(self) -> None:
        """The read ended: every series' flows still held summed into rates."""
        by_window: dict[int, list[int]] = {}
        for sid, window in self._open:
            by_window.setdefault(window, []).append(sid)
        for window, sids in by_window.items():
            flows = np.stack([self._open.pop((s, window)) for s in sids], axis=1)
            self._settle(np.array(sids, dtype=np.int64), flows, window)

    def _cleaned(self, sids: IntArray, part: RawSeries) -> RawSeries:
        """The batch's samples that are values at possible times after their series' previous one (module
        docstring), counting the others; each series' latest timestamp carried."""
        t, v, c = part.timestamps_ms, part.values, self._carry
        if not t.size:
            return part
        local = part.series_of
        finite = np.isfinite(v)
        if not finite.all():
            self.rejected.non_finite += int(np.count_nonzero(~finite & (v.view(np.uint64) != STALE_NAN)))
        sizes = np.diff(part.offsets)
        heads, ends = part.offsets[:-1][sizes > 0], part.offsets[1:][sizes > 0] - 1
        rising = np.empty(t.size, dtype=bool)
        rising[0] = True
        np.greater(t[1:], t[:-1], out=rising[1:])
        rising[heads] = t[heads] > c.seen_ms[sids[local[heads]]]  # a series' first: after its carried latest
        if rising.all() and t.min() >= MIN_TIMESTAMP_MS and t.max() < MAX_TIMESTAMP_MS:  # every honest batch
            after, latest, possible = rising, t[ends], rising
        else:
            possible = (t >= MIN_TIMESTAMP_MS) & (t < MAX_TIMESTAMP_MS)
            after, latest = self._ordered(sids, local, t, possible)
            latest = latest[ends]
        moved = sids[local[ends]][latest >= 0]
        c.seen_ms[moved] = np.maximum(c.seen_ms[moved], latest[latest >= 0])
        c.seen_in[moved] = self._answer
        keep = finite & possible & after
        return part if keep.all() else part.only(keep)

    def _ordered(
        self, sids: IntArray, local: IntArray, t: IntArray, possible: npt.NDArray[np.bool_]
    ) -> tuple[npt.NDArray[np.bool_], IntArray]:
        """Which samples come after every earlier one of their series (the batch's and the carried latest),
        counting the others but the overlap of an earlier answer; and each sample's series' latest possible
        timestamp up to it (-1: none)."""
        c = self._carry
        base = local << _SHIFT
        ordered = base + np.where(possible, t, -1)
        running = np.maximum.accumulate(ordered)
        before = np.empty_like(running)
        before[0], before[1:] = -1, running[:-1]
        carried = ((np.arange(len(sids), dtype=np.int64) << _SHIFT) + c.seen_ms[sids])[local]
        after = ordered > np.maximum(before, carried)
        earlier = (carried >= ordered) & (c.seen_in[sids][local] != self._answer) & (before < ordered)
        self.rejected.impossible += int(np.count_nonzero(~possible | (possible & ~after & ~earlier)))
        latest: IntArray = running - base
        return after, latest

    def _peaks(self, sids: IntArray, part: RawSeries) -> None:
        """Each series' highest sample per step (a gauge: the working set)."""
        grid, n = self.rows.grid, self.rows.grid.n
        if not part.samples:
            return
        step = grid.step_of(part.timestamps_ms)
        on = (step >= 0) & (step < n)
        if not on.any():
            return
        key, peak = _folded(part.series_of[on] * n + step[on], part.values[on], np.maximum)
        _put(self.rows.memory, self._carry.row[sids], key, peak, n, self._distinct)

    def _rates(self, sids: IntArray, part: RawSeries, last: bool) -> None:
        """The batch's scrape intervals (each sample's from the one before it, the carried one for a
        series' first) into flows per series; the flows of series no later batch can reach summed into
        rates, the others held; resets counted; each series' last sample carried."""
        c, grid, m = self._carry, self.rows.grid, len(sids)
        pairs = _Pairs.of(part, c.last_ms[sids], c.last_value[sids])
        lo_ms, hi_ms = grid.span_ms
        fell = np.flatnonzero(pairs.rise < 0)  # few: a reset's interval
        reset = fell[(pairs.dt[fell] > 0) & (pairs.t[fell] > lo_ms) & (pairs.t[fell] <= hi_ms)]
        if reset.size:
            np.add.at(self.rows.resets, c.row[sids][pairs.local[reset]], 1)
        iv = pairs.rates(grid, self.window_ms)
        c.short[sids[iv.series]] = True
        done = np.full(m, self._final)
        if m and not last:
            done[-1] = False  # it may go on in the answer's next batch
        self._fold(sids, iv, done, self.window_ms)
        if self.wide_ms:
            lacking = ~c.short[sids]  # no rate within the window yet: maybe a slow scrape
            for s in sids[~lacking].tolist() if self._open else ():
                self._open.pop((s, self.wide_ms), None)  # a rate after all: no slow scrape
            if lacking.any():
                self._fold(sids, pairs.rates(grid, self.wide_ms), done & lacking, self.wide_ms, only=lacking)
        if part.samples:
            ends = part.offsets[1:][np.diff(part.offsets) > 0] - 1
            moved = sids[pairs.local[ends]]
            c.last_ms[moved], c.last_value[moved] = part.timestamps_ms[ends], part.values[ends]

    def _fold(
        self,
        sids: IntArray,
        iv: _Intervals,
        done: npt.NDArray[np.bool_],
        window: int,
        only: npt.NDArray[np.bool_] | None = None,
    ) -> None:
        """Flows of the intervals in blocks of series: added to those held, summed where `done`, else held."""
        n = self.rows.grid.n
        size = max(1, min(BLOCK, BLOCK_CELLS // (n + 1)))
        for a in range(0, len(sids), size):
            b = min(a + size, len(sids))
            chosen = np.ones(b - a, bool) if only is None else only[a:b]
            held = [(j, self._open.pop((int(s), window))) for j, s in enumerate(sids[a:b].tolist())
                    if (int(s), window) in self._open] if self._open else []  # fmt: skip
            flows = iv.flows(a, b, n)
            if flows is None:
                if not held:
                    continue
                flows = np.zeros((3, b - a, n + 1))
            for j, f in held:
                flows[:, j] += f
            settle = done[a:b] & chosen
            if settle.any():
                self._settle(sids[a:b][settle], flows[:, settle], window)
            for j in np.flatnonzero(~done[a:b] & chosen).tolist():
                self._open[(int(sids[a + j]), window)] = flows[:, j].copy()

    def _settle(self, sids: IntArray, flows: Matrix, window: int) -> None:
        """Flows (3, series, n + 1) summed along the steps into rates, merged into the series' rows by max."""
        n = self.rows.grid.n
        held = np.cumsum(flows, axis=2, dtype=np.float64)[:, :, :n]
        spans_s = held[0] / 1000.0  # whole milliseconds: exact
        seen = spans_s > 0
        moving = held[1] > 0  # counts: exact
        rises = np.maximum(held[2], 0.0)
        rates = np.where(seen, np.where(moving, rises / np.where(seen, spans_s, 1.0), 0.0), np.nan)
        rows = self._carry.row[sids]
        if window == self.window_ms:
            _put_rows(self.rows.cpu, rows, rates, self._distinct)
        else:
            self.rows.put_wide(rows, rates)


@dataclass(frozen=True)
class _Pairs:
    """Each sample of a batch with the one before it in its series (the carried one for a series' first):
    the scrape interval ending at it (dt 0: none before it)."""

    local: IntArray
    t: IntArray
    v: FloatArray
    dt: IntArray
    rise: FloatArray

    @staticmethod
    def of(part: RawSeries, last_ms: IntArray, last_value: FloatArray) -> _Pairs:
        t, v, local = part.timestamps_ms, part.values, part.series_of
        dt, rise = np.empty_like(t), np.empty_like(v)
        np.subtract(t[1:], t[:-1], out=dt[1:])
        np.subtract(v[1:], v[:-1], out=rise[1:])
        heads = part.offsets[:-1][np.diff(part.offsets) > 0]
        first = local[heads]
        carried = last_ms[first] >= 0
        dt[heads] = np.where(carried, t[heads] - last_ms[first], 0)
        rise[heads] = np.where(carried, v[heads] - last_value[first], 0.0)
        return _Pairs(local, t, v, dt, rise)

    def rates(self, grid: Grid, window_ms: int) -> _Intervals:
        """The intervals that are rates of `window_ms` on the grid: no longer than the window, ending
        before the grid's end and leaving the windows after its start."""
        entered, left = grid.step_of(self.t), grid.step_of(self.t + window_ms)
        ok = (self.dt > 0) & (self.dt <= window_ms) & (left > 0) & (entered < grid.n)
        increase = self.rise[ok]
        fell = increase < 0
        increase[fell] = self.v[ok][fell]  # a reset: the new value is the increase
        span = self.dt[ok].astype(np.float64)
        into, out_of = np.maximum(entered[ok], 0), np.minimum(left[ok], grid.n)
        return _Intervals(self.local[ok], into, out_of, span, increase)


@dataclass(frozen=True)
class _Intervals:
    """Scrape intervals that are rates on the grid, by series (in order): each enters the windows at the step
    its end falls in and leaves them at the first step whose window starts at or after its end."""

    series: IntArray
    into: IntArray
    out_of: IntArray
    span_ms: FloatArray
    increase: FloatArray

    def flows(self, a: int, b: int, n: int) -> Matrix | None:
        """(span ms, moving, increase) flows (3, b - a, n + 1) of series a..b-1's intervals (None: none)."""
        lo, hi = np.searchsorted(self.series, [a, b])
        if lo == hi:
            return None
        base = (self.series[lo:hi] - a) * (n + 1)
        into, out_of, increase = base + self.into[lo:hi], base + self.out_of[lo:hi], self.increase[lo:hi]
        size = (b - a) * (n + 1)
        flows = np.empty((3, b - a, n + 1))
        for k, w in enumerate((self.span_ms[lo:hi], (increase != 0).astype(np.float64), increase)):
            flow = np.bincount(into, weights=w, minlength=size) - np.bincount(
                out_of, weights=w, minlength=size
            )
            flows[k] = flow.reshape(b - a, n + 1)
        return flows


def _blocks(raw: RawSeries, size: int) -> list[tuple[int, RawSeries]]:
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


def _put(out: Matrix, rows: IntArray, key: IntArray, values: FloatArray, n: int, distinct: bool) -> None:
    """Per-series points (key = series * n + step) onto their containers' rows, merged by max with what the
    row has (a container's other incarnations); `distinct`: no two series share a row."""
    flat = out.reshape(-1)  # a view: out is C-contiguous
    at = rows[key // n] * n + key % n
    if distinct or np.unique(rows).size == rows.size:  # one series per row here: no cell written twice
        flat[at] = np.fmax(flat[at], values)
    else:
        np.fmax.at(flat, at, values)


def _put_rows(out: Matrix, rows: IntArray, values: Matrix, distinct: bool) -> None:
    """Per-series rows of points (NaN: none) onto their containers' rows, merged by max as _put."""
    if distinct or np.unique(rows).size == rows.size:
        out[rows] = np.fmax(out[rows], values)
    else:
        np.fmax.at(out, rows, values)
