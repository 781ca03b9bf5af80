"""Per-container statistics computed in numpy from range-query series: Prometheus reads each series once."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np

from recommender.input.prometheus.client import Labels
from recommender.input.prometheus.queries import QUANTILES
from recommender.model import FloatArray

ContainerKey = tuple[str, str, str]
Stats = dict[str, float]

# How the statistics of several series of one container (its incarnations) merge: as max by / min by did.
_MERGE_MIN = frozenset({"first"})


def series_stats(ts: FloatArray, vs: FloatArray) -> Stats:
    """p50..p99 (linear interpolation, like quantile_over_time), max, mean, first and last time with a value.

    Empty when the series has no finite value.
    """
    ok = np.isfinite(vs)
    if not ok.any():
        return {}
    v = vs[ok]
    t = ts[ok]
    qs = np.quantile(v, list(QUANTILES.values()))
    out = {k: float(x) for k, x in zip(QUANTILES, qs, strict=True)}
    out |= {"max": float(v.max()), "mean": float(v.mean()), "first": float(t[0]), "last": float(t[-1])}
    return out


def container_stats(series: Iterable[tuple[Labels, FloatArray, FloatArray]]) -> dict[ContainerKey, Stats]:
    """Statistics per (namespace, pod, container): each series on its own, merged by max (first: min).

    A container whose series hold no finite value maps to empty statistics (callers say why it is skipped).
    """
    out: dict[ContainerKey, Stats] = {}
    for labels, ts, vs in series:
        key = (labels.get("namespace", ""), labels.get("pod", ""), labels.get("container", ""))
        got = series_stats(ts, vs)
        prev = out.setdefault(key, {})
        for k, v in got.items():
            if k not in prev:
                prev[k] = v
            else:
                prev[k] = min(prev[k], v) if k in _MERGE_MIN else max(prev[k], v)
    return out


def pod_steps(
    series: Iterable[tuple[Labels, FloatArray, FloatArray]],
    t0: float,
    step: float,
    n: int,
    how: Literal["mean", "max"],
) -> dict[tuple[str, str], FloatArray]:
    """Per (namespace, pod): the series re-sampled onto t0 + k*step (mean or max of the points in
    (t - step, t]), summed over the pod's series like `sum by (namespace, pod)`; NaN where nothing was seen.
    """
    out: dict[tuple[str, str], FloatArray] = {}
    for labels, ts, vs in series:
        idx = np.ceil((ts - t0) / step - 1e-9).astype(np.int64)
        ok = np.isfinite(vs) & (idx >= 0) & (idx < n)
        i, v = idx[ok], vs[ok]
        seen = np.bincount(i, minlength=n)
        if how == "mean":
            row = np.bincount(i, weights=v, minlength=n) / np.maximum(seen, 1)
        else:
            row = np.full(n, -np.inf)
            np.maximum.at(row, i, v)
        row[seen == 0] = np.nan
        key = (labels.get("namespace", ""), labels.get("pod", ""))
        prev = out.get(key)
        out[key] = (
            row
            if prev is None
            else np.where(np.isnan(prev) & np.isnan(row), np.nan, np.nan_to_num(prev) + np.nan_to_num(row))
        )
    return out
