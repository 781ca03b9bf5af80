"""One check for every server: the raw read path and range queries give the same grid of points."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.input.prometheus import PromClient
from recommender.input.prometheus import queries as q
from recommender.input.prometheus.reads import GridSpec, UsageReads


def assert_raw_read_agrees_with_queries(
    url: str, path: str, ns: str, spec: GridSpec, *, cpu_per_point: bool = True
) -> None:
    """With a rate window of one scrape (60 s at a 60 s scrape) Prometheus' rate is the one interval's
    rate: CPU agrees point for point (cpu_per_point; VictoriaMetrics' rate also takes the sample before
    the window, two intervals: there the mean and p95 agree); memory points are the samples (raw) against
    the highest sample of the step's range (query): never above it, the same maximum."""
    with PromClient(url, timeout=120) as client:
        raw = UsageReads(client, path).usage(ns, q.UNSCOPED, spec).grid  # type: ignore[arg-type]
        query = UsageReads(client, "query").usage(ns, q.UNSCOPED, spec).grid
    assert raw.keys == query.keys and raw.keys
    for metric in ("cpu", "memory"):
        mine_all, theirs_all = getattr(raw, metric), getattr(query, metric)
        for key, mine_row, theirs_row in zip(raw.keys, mine_all, theirs_all, strict=True):
            both = np.isfinite(mine_row) & np.isfinite(theirs_row)
            either = np.isfinite(mine_row) | np.isfinite(theirs_row)
            assert both.sum() >= 0.99 * either.sum() > 0, (metric, key)
            mine, theirs = mine_row[both], theirs_row[both]
            if metric == "cpu" and cpu_per_point:
                np.testing.assert_allclose(mine, theirs, rtol=1e-6, err_msg=str(key))
            elif metric == "cpu":
                assert mine.mean() == pytest.approx(theirs.mean(), rel=0.01), key
                assert np.quantile(mine, 0.95) == pytest.approx(np.quantile(theirs, 0.95), rel=0.1), key
            else:
                assert (mine <= theirs * (1 + 1e-9)).all(), key
                assert np.nanmax(mine_row) == np.nanmax(theirs_row), key
