"""Per-container statistics computed in numpy from range-query series: Prometheus reads each series once."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from recommender.model import FloatArray
from recommender.sources.prometheus.client import Labels
from recommender.sources.prometheus.queries import QUANTILES

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
