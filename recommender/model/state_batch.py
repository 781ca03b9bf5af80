"""Many series on one time grid added to their usage states at once (a Prometheus answer's series share
the query's grid): UsageState.add_samples' rules, vectorised over the rows, so that a cycle over
thousands of containers does not pay numpy's per-call cost thousands of times per step."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from recommender.model import FloatArray
from recommender.model.histogram import Histogram, _decay
from recommender.model.usage_state import (
    CPU_PEAKS,
    CPU_RESETS,
    DAY_S,
    HOUR_S,
    MEMORY_PEAKS,
    PEAK_TOP,
    Peak,
    UsageState,
)

Matrix = npt.NDArray[np.float64]


def _groups(states: Sequence[UsageState]) -> tuple[list[UsageState], npt.NDArray[np.intp]]:
    """The distinct states (first-seen order) and each row's index among them."""
    index: dict[int, int] = {}
    distinct: list[UsageState] = []
    of_row = np.empty(len(states), dtype=np.intp)
    for i, s in enumerate(states):
        g = index.get(id(s))
        if g is None:
            g = index[id(s)] = len(distinct)
            distinct.append(s)
        of_row[i] = g
    return distinct, of_row


def _row_tops(m: Matrix, cols: npt.NDArray[np.bool_]) -> tuple[Matrix, npt.NDArray[np.intp]]:
    """Each row's PEAK_TOP highest finite values among `cols`, highest first (earlier first on ties), and
    their column indexes in `m` (-inf where fewer): shapes (rows, PEAK_TOP). A partition finds each row's
    PEAK_TOP-th value, so only the few samples at or above it are sorted."""
    at = np.flatnonzero(cols)
    sub = m[:, at]
    sub = np.where(np.isfinite(sub), sub, -np.inf)
    if sub.shape[1] < PEAK_TOP:
        sub = np.concatenate([sub, np.full((sub.shape[0], PEAK_TOP - sub.shape[1]), -np.inf)], axis=1)
        at = np.concatenate([at, np.zeros(PEAK_TOP - at.size, dtype=np.intp)])
    kth = np.partition(sub, -PEAK_TOP, axis=1)[:, -PEAK_TOP, None]
    chosen = sub >= kth
    tied = np.flatnonzero(chosen.sum(axis=1) > PEAK_TOP)  # the PEAK_TOP-th value more than once
    if tied.size:
        above, at_kth = sub[tied] > kth[tied], sub[tied] == kth[tied]
        wanted = PEAK_TOP - above.sum(axis=1, keepdims=True)
        chosen[tied] = above | (at_kth & (np.cumsum(at_kth, axis=1) <= wanted))  # the earliest tied
    picked = np.nonzero(chosen)[1].reshape(-1, PEAK_TOP)  # PEAK_TOP a row, in column order
    values = np.take_along_axis(sub, picked, axis=1)
    order = np.argsort(-values, axis=1, kind="stable")
    return np.take_along_axis(values, order, axis=1), at[np.take_along_axis(picked, order, axis=1)]


def _group_tops(
    tops: tuple[Matrix, npt.NDArray[np.intp]], starts: npt.NDArray[np.intp], ts: FloatArray
) -> list[list[Peak]]:
    """Each group's PEAK_TOP highest samples at distinct times (usage_state.top_distinct's rule) among its
    rows' highest (rows grouped from `starts`), as (value, time): one sort of all candidates."""
    values, cols = tops
    rows = values.shape[0]
    group = np.repeat(np.repeat(np.arange(starts.size), np.diff(np.append(starts, rows))), PEAK_TOP)
    v, c = values.ravel(), cols.ravel()
    real = v > -np.inf
    group, v, c = group[real], v[real], c[real]
    by_time = np.lexsort((-v, c, group))  # the highest of each (group, time) first
    group, v, c = group[by_time], v[by_time], c[by_time]
    first = np.ones(v.size, dtype=bool)
    first[1:] = (group[1:] != group[:-1]) | (c[1:] != c[:-1])
    group, v, c = group[first], v[first], c[first]
    ranked = np.lexsort((c, -v, group))  # per group: highest first, earlier first on ties
    group, v, c = group[ranked], v[ranked], c[ranked]
    rank = np.arange(v.size) - np.searchsorted(group, group)
    keep = rank < PEAK_TOP
    out: list[list[Peak]] = [[] for _ in range(starts.size)]
    for g, value, t in zip(group[keep].tolist(), v[keep].tolist(), ts[c[keep]].tolist(), strict=True):
        out[g].append((value, t))
    return out


def _histograms(
    hists: list[Histogram],
    of_row: npt.NDArray[np.intp],
    ts: FloatArray,
    m: Matrix,
    newest: FloatArray,
    buckets: npt.NDArray[np.intp] | None = None,
) -> None:
    """Every row's finite values into its group's histogram, decayed to that histogram's reference;
    `buckets`: the values' bucket indexes when known (the same scheme's)."""
    scheme, half = hists[0].scheme, hists[0].half_life_s
    for g, h in enumerate(hists):
        if math.isfinite(newest[g]):
            h.reference_for(float(newest[g]))
    keep = np.isfinite(m)
    if not keep.any():
        return
    idx = scheme.index(np.where(keep, m, 0.0)) if buckets is None else buckets
    flat = of_row[:, None] * scheme.count + idx
    if half:
        refs = np.array([h.reference for h in hists])[of_row]
        weights = _decay(half, ts[None, :] - refs[:, None], 0.0)
        dense = np.bincount(flat[keep], weights=weights[keep], minlength=len(hists) * scheme.count).astype(
            np.float64, copy=False
        )
    else:
        dense = np.bincount(flat[keep], minlength=len(hists) * scheme.count).astype(np.float64)
    dense = dense.reshape(len(hists), scheme.count)
    nonzero = dense != 0
    added = np.flatnonzero(nonzero.any(axis=1))
    first = nonzero.argmax(axis=1)[added]
    last = scheme.count - nonzero[:, ::-1].argmax(axis=1)[added]
    for g, lo, hi in zip(added.tolist(), first.tolist(), last.tolist(), strict=True):
        hists[g].add_dense(lo, dense[g, lo:hi])


def _per_hour(
    seen: npt.NDArray[np.bool_], hours: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], Matrix]:
    """The distinct hours of a time-ordered grid and each row's points with a value in each (one pass)."""
    unique_hours = np.unique(hours)
    starts = np.searchsorted(hours, unique_hours)
    return unique_hours, np.add.reduceat(seen, starts, axis=1, dtype=np.float64)


def add_rows(
    states: Sequence[UsageState],
    ts: FloatArray,
    cpu: Matrix,
    mem: Matrix,
    samples: Sequence[int | None],
    resets: Sequence[int] = (),
) -> None:
    """Row i (CPU and memory over `ts`, a grid in time order as a query's; NaN: a gap; `samples[i]` raw
    samples behind it, None: one per point with a value; `resets[i]` the CPU counter's resets among them,
    () none) into states[i], as states[i].add_samples would add it."""
    seen = np.isfinite(cpu) | np.isfinite(mem)
    points = seen.sum(axis=1)
    distinct, of_row = _groups(states)
    raw = np.array([p if n is None else n for p, n in zip(points.tolist(), samples, strict=True)], float)
    reset = np.array(resets, dtype=float) if resets else np.zeros(len(states))
    order = np.argsort(of_row, kind="stable")
    order = order[points[order] > 0]  # rows by group, rows without a value left out
    if order.size == 0:
        return
    cpu, mem, seen, points, raw, reset, of_row = (
        cpu[order],
        mem[order],
        seen[order],
        points[order],
        raw[order],
        reset[order],
        of_row[order],
    )
    groups = np.unique(of_row)
    starts = np.searchsorted(of_row, groups)
    width = ts.size
    first = np.minimum.reduceat(ts[seen.argmax(axis=1)], starts)
    last = np.maximum.reduceat(ts[width - 1 - seen[:, ::-1].argmax(axis=1)], starts)
    totals = np.add.reduceat(raw, starts)
    days, hours = np.floor(ts / DAY_S).astype(np.int64), np.floor(ts / HOUR_S).astype(np.int64)
    day_seen = np.logical_or.reduceat(seen, starts, axis=0)
    unique_hours, per_hour = _per_hour(seen, hours)
    hour_counts = np.add.reduceat(per_hour * (raw / points)[:, None], starts, axis=0).tolist()
    hour_resets = (
        np.add.reduceat(per_hour * (reset / points)[:, None], starts, axis=0) if reset.any() else None
    )
    grid_days = np.unique(days).tolist()
    seen_on = np.stack([day_seen[:, days == d].any(axis=1) for d in grid_days], axis=1).tolist()
    tops = {
        d: (
            _group_tops(_row_tops(cpu, days == d), starts, ts),
            _group_tops(_row_tops(mem, days == d), starts, ts),
        )
        for d in grid_days
    }
    cpu_peak = np.fmax.reduceat(np.fmax.reduce(cpu, axis=1), starts).tolist()
    mem_peak = np.fmax.reduceat(np.fmax.reduce(mem, axis=1), starts).tolist()
    spans = zip(first.tolist(), last.tolist(), totals.tolist(), strict=True)
    hours_seen = unique_hours.tolist()
    # per state only Python scalars: numpy's per-call cost would be paid thousands of times per cycle
    for k, (g, (lo, hi, total)) in enumerate(zip(groups.tolist(), spans, strict=True)):
        state = distinct[g]
        state.count_seen(lo, hi, [d for d, on in zip(grid_days, seen_on[k], strict=True) if on], int(total))
        for hour, n in zip(hours_seen, hour_counts[k], strict=True):
            state.count_hour(hour, n)
        if hour_resets is not None:
            for hour, n in zip(hours_seen, hour_resets[k].tolist(), strict=True):
                state.count_hour(hour, n, CPU_RESETS)
        for d, (cpu_top, mem_top) in tops.items():
            state.merge_day_top(d, CPU_PEAKS, cpu_top[k])
            state.merge_day_top(d, MEMORY_PEAKS, mem_top[k])
        state.cpu_peak = max(state.cpu_peak, cpu_peak[k])
        state.memory_peak = max(state.memory_peak, mem_peak[k])
    kept = [distinct[g] for g in groups.tolist()]
    slot = np.repeat(np.arange(len(groups)), np.diff([*starts.tolist(), len(of_row)]))
    cpu_buckets = kept[0].cpu.scheme.index(np.where(np.isfinite(cpu), cpu, 0.0))  # for both CPU histograms
    _histograms([s.cpu for s in kept], slot, ts, cpu, last, cpu_buckets)
    _histograms([s.memory for s in kept], slot, ts, mem, last)
    _day_histograms(kept, slot, starts, ts, (cpu, cpu_buckets), days)


def _day_histograms(
    kept: list[UsageState],
    slot: npt.NDArray[np.intp],
    starts: npt.NDArray[np.intp],
    ts: FloatArray,
    cpu_and_buckets: tuple[Matrix, npt.NDArray[np.intp]],
    days: npt.NDArray[np.int64],
) -> None:
    """Every row's finite CPU values into its state's undecayed histogram of their UTC day, and the hours
    seen, as UsageState.add_day_cpu adds them (a day closed or older than the days kept takes none)."""
    cpu, buckets = cpu_and_buckets
    finite = np.isfinite(cpu)
    for d in np.unique(days).tolist():
        cols = days == d
        seen = np.logical_or.reduceat(finite[:, cols], starts, axis=0)  # groups x the day's columns
        ok = [k for k, s in enumerate(kept) if seen[k].any() and s.takes_day(d)]
        if not ok:
            continue
        rows = np.isin(slot, ok)
        index = {k: i for i, k in enumerate(ok)}
        sub_slot = np.array([index[k] for k in slot[rows].tolist()], dtype=np.intp)
        hists = [kept[k].open_day(d) for k in ok]
        newest = np.full(len(ok), float(ts[cols].max()))
        same = hists[0].scheme == kept[0].cpu.scheme
        _histograms(
            hists, sub_slot, ts[cols], cpu[rows][:, cols], newest, buckets[rows][:, cols] if same else None
        )
        hour_of = (np.floor(ts[cols] / HOUR_S).astype(np.int64) - 24 * d).clip(0, 23)
        masks = np.zeros(seen.shape[0], dtype=np.int64)
        for h in np.unique(hour_of).tolist():
            masks |= seen[:, hour_of == h].any(axis=1).astype(np.int64) << h
        for k in ok:
            kept[k].see_hours(d, int(masks[k]))
