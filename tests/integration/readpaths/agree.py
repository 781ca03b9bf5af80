"""One check for every server: the raw read path and range queries give the same series on the same grid."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.input.prometheus import PromClient
from recommender.input.prometheus import queries as q
from recommender.input.prometheus.client import RangeResult
from recommender.input.prometheus.reads import GridSpec, UsageReads
from recommender.input.prometheus.series import series_key

ContainerKey = tuple[str, str, str]


def by_container(result: RangeResult) -> dict[ContainerKey, tuple[np.ndarray, np.ndarray]]:
    """Each container's points (incarnations merged: the highest value per step, as series.py merges)."""
    out: dict[ContainerKey, dict[float, float]] = {}
    for labels, ts, vs in result:
        points = out.setdefault(series_key(labels), {})
        for t, v in zip(ts.tolist(), vs.tolist(), strict=True):
            points[t] = max(points.get(t, v), v)
    return {k: (np.array(sorted(p)), np.array([p[t] for t in sorted(p)])) for k, p in out.items()}


def assert_raw_read_agrees_with_queries(
    url: str, path: str, ns: str, spec: GridSpec, *, cpu_per_point: bool = True
) -> None:
    """With a rate window of one scrape (60 s at a 60 s scrape) Prometheus' rate is the one interval's
    rate: CPU agrees point for point (cpu_per_point; VictoriaMetrics' rate also takes the sample before
    the window, two intervals: there the mean and p95 agree); memory points are the samples (raw) against
    the highest sample of the step's range (query): never above it, the same maximum."""
    with PromClient(url, timeout=120) as client:
        raw = UsageReads(client, path).usage(ns, q.UNSCOPED, spec)  # type: ignore[arg-type]
        query = UsageReads(client, "query").usage(ns, q.UNSCOPED, spec)
    for metric in ("cpu", "memory"):
        got, want = by_container(getattr(raw, metric)), by_container(getattr(query, metric))
        assert got.keys() == want.keys() and got, metric
        for key, (ts, vs) in got.items():
            wts, wvs = want[key]
            common = np.intersect1d(ts, wts)
            assert common.size >= 0.99 * max(ts.size, wts.size), (metric, key, ts.size, wts.size)
            mine, theirs = vs[np.isin(ts, common)], wvs[np.isin(wts, common)]
            if metric == "cpu" and cpu_per_point:
                np.testing.assert_allclose(mine, theirs, rtol=1e-6, err_msg=str(key))
            elif metric == "cpu":
                assert mine.mean() == pytest.approx(theirs.mean(), rel=0.01), key
                assert np.quantile(mine, 0.95) == pytest.approx(np.quantile(theirs, 0.95), rel=0.1), key
            else:
                assert (mine <= theirs * (1 + 1e-9)).all(), key
                assert mine.max() == theirs.max(), key
