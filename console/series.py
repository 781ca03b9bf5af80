"""Downsamples a time series into equal-time buckets for charts, keeping each bucket's peak."""

from __future__ import annotations

import numpy as np

from recommender.model import FloatArray
from recommender.model.timegrid import bucket_index


def downsample_max(
    timestamps: FloatArray, values: FloatArray, points: int
) -> tuple[list[float], list[float | None]]:
    """At most `points` (timestamp, value) pairs: the bucket's centre time and its largest finite value
    (None when the bucket has none). Peaks stay visible, which matters next to a request line."""
    if points < 1:
        raise ValueError(f"points must be >= 1, got {points}")
    ts = np.asarray(timestamps, dtype=np.float64)
    vs = np.asarray(values, dtype=np.float64)
    if ts.shape != vs.shape:
        raise ValueError(f"timestamps and values differ in length: {ts.size} != {vs.size}")
    if ts.size == 0:
        return [], []
    if ts.size <= points:
        return [float(t) for t in ts], [float(v) if np.isfinite(v) else None for v in vs]
    start, end = float(ts.min()), float(ts.max())
    width = (end - start) / points or 1.0
    bucket = np.minimum(bucket_index(ts, start, width), points - 1)
    finite = np.isfinite(vs)
    peaks = np.full(points, -np.inf)
    np.maximum.at(peaks, bucket[finite], vs[finite])
    seen = np.zeros(points, dtype=bool)
    seen[np.unique(bucket)] = True
    centres = start + (np.arange(points) + 0.5) * width
    out_t: list[float] = []
    out_v: list[float | None] = []
    for i in np.flatnonzero(seen):
        out_t.append(float(centres[i]))
        out_v.append(float(peaks[i]) if np.isfinite(peaks[i]) else None)
    return out_t, out_v
