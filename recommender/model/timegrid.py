"""Time buckets: the one rule that maps timestamps to the bins of a step that starts at a given time.

Bin i of a grid (start, step) covers [start + i*step, start + (i+1)*step). Every place that buckets
timestamps (aggregation, Prometheus answers, forecast hours, console charts, demo alignment) calls this.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from recommender.model import FloatArray

IntArray = npt.NDArray[np.int64]


def floor_to(t: float, step: float) -> float:
    """The largest multiple of step at or before t (epoch seconds)."""
    return math.floor(t / step) * step


def bucket_index(timestamps: FloatArray, start: float, step: float) -> IntArray:
    """Index of the bin [start + i*step, start + (i+1)*step) of each timestamp (negative before start)."""
    if step <= 0:
        raise ValueError(f"step must be positive, got {step}")
    return np.floor((np.asarray(timestamps, dtype=np.float64) - start) / step).astype(np.int64)


def bucket_count(start: float, end: float, step: float) -> int:
    """How many bins of step cover [start, end): at least one."""
    return max(1, math.ceil((end - start) / step))


def point_count(start: float, end: float, step: float) -> int:
    """How many points start + i*step lie in [start, end] (a range query's answer for that window)."""
    return int((end - start) // step) + 1 if end >= start else 0


def point_index(timestamps: FloatArray, start: float, step: float) -> IntArray:
    """Index of the grid point start + i*step nearest to each timestamp (range-query answers sit on it)."""
    return np.rint((np.asarray(timestamps, dtype=np.float64) - start) / step).astype(np.int64)


def aligned(start: float, end: float, step: float) -> tuple[float, float]:
    """The first and last multiple of step inside [start, end]; (start, end) when there is none."""
    lo, hi = math.ceil(start / step) * step, floor_to(end, step)
    return (lo, hi) if lo <= hi else (start, end)


def bucket_max(timestamps: FloatArray, values: FloatArray, start: float, step: float, n: int) -> FloatArray:
    """Max of the finite values within each of n bins from start; NaN for empty bins."""
    out = np.full(n, np.nan)
    if n <= 0:
        return out
    idx = bucket_index(timestamps, start, step)
    ok = np.isfinite(values) & (idx >= 0) & (idx < n)
    if not ok.any():
        return out
    peaks = np.full(n, -np.inf)
    np.maximum.at(peaks, idx[ok], values[ok])
    seen = np.isfinite(peaks)
    out[seen] = peaks[seen]
    return out


def bucket_mean(timestamps: FloatArray, values: FloatArray, start: float, step: float, n: int) -> FloatArray:
    """Mean of the finite values within each of n bins from start; NaN for empty bins.

    values may hold several rows over the same timestamps (shape (rows, len(timestamps))): one row of
    means each, the bins computed once."""
    rows = values if values.ndim == 2 else values[None, :]
    out = np.full((rows.shape[0], max(n, 0)), np.nan)
    if n > 0:
        idx = bucket_index(timestamps, start, step)
        ok = ((idx >= 0) & (idx < n)) & np.isfinite(rows)
        # every row's bins in one bincount (row r's bin i at r*n + i), summed in each row's sample order
        flat = (np.arange(rows.shape[0])[:, None] * n + idx)[ok]
        counts = np.bincount(flat, minlength=out.size).reshape(out.shape)
        sums = np.bincount(flat, weights=rows[ok], minlength=out.size).reshape(out.shape)
        np.divide(sums, counts, out=out, where=counts > 0)
    return out if values.ndim == 2 else out[0]


def present_sums(rows: FloatArray, starts: IntArray) -> FloatArray:
    """Per group of consecutive rows (group k: rows starts[k] .. starts[k+1] - 1) the column sums over
    the rows with a value there, NaN where none has one: the rule for summing pods' series (demand)."""
    finite = np.isfinite(rows)
    present = np.logical_or.reduceat(finite, starts, axis=0)
    sums = np.add.reduceat(np.where(finite, rows, 0.0), starts, axis=0)
    return np.where(present, sums, np.nan)
