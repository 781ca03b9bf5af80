"""Usage series on the query grid as the raw model: one pre-reduced ContainerSamples per container of a pod.

Every read path ends here (recommender/input/prometheus/reads.py): range-query answers are put on the grid
by on_grid, raw samples by rawgrid's MetricFold into GridRows; container_samples cuts the rows into the raw
model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from recommender.input.prometheus.client import RangeResult
from recommender.model import FloatArray
from recommender.model.histogram import Matrix
from recommender.model.raw import ContainerSamples
from recommender.model.timegrid import IntArray, point_index

ContainerKey = tuple[str, str, str]


@dataclass(frozen=True)
class GridUsage:
    """Each container's CPU and working set on the grid lo + i * step: row r is keys[r] (NaN: no point);
    the incarnations (restarts) of a container merged by max. cpu_resets: per row, the decreases of the CPU
    counter among the raw samples read (summed over incarnations; 0 from range queries)."""

    keys: list[ContainerKey]
    cpu: Matrix
    memory: Matrix
    lo: float
    step: float
    cpu_resets: IntArray

    @staticmethod
    def empty(keys: list[ContainerKey], lo: float, step: float, n: int) -> GridUsage:
        shape = (len(keys), n)
        return GridUsage(
            keys,
            np.full(shape, np.nan),
            np.full(shape, np.nan),
            lo,
            step,
            np.zeros(len(keys), dtype=np.int64),
        )

    def fill_cpu(self, result: RangeResult) -> None:
        """More CPU series (of containers already on the grid) merged in by max."""
        row_of = {key: i for i, key in enumerate(self.keys)}
        _fill(self.cpu, [s for s in result if _key(s[0]) in row_of], row_of, self.lo, self.step)

    def sparse_rows(self) -> npt.NDArray[np.bool_]:
        """Rows with SLOW_SCRAPE_POINTS or more working-set points and no CPU point at all: samples further
        apart than the rate window (a slow scrape), not a container that lived too short."""
        seen = np.count_nonzero(np.isfinite(self.memory), axis=1) >= SLOW_SCRAPE_POINTS
        sparse: npt.NDArray[np.bool_] = seen & ~np.isfinite(self.cpu).any(axis=1)
        return sparse


SLOW_SCRAPE_POINTS = 3  # a container seen this often has lived long enough for a rate at any sane scrape


def series_key(labels: Mapping[str, str]) -> ContainerKey:
    """(namespace, pod, container) of a series."""
    return (labels.get("namespace", ""), labels.get("pod", ""), labels.get("container", ""))


_key = series_key


def _fill(
    out: FloatArray, result: RangeResult, row_of: Mapping[ContainerKey, int], lo: float, step: float
) -> None:
    """Each container's series onto its row of `out` (grid lo + i*step); incarnations (restarts) merged by
    max. The first series of each row are written by one scatter, any later ones merged after."""
    if not result:
        return
    n = out.shape[1]
    rows = np.array([row_of[_key(labels)] for labels, _, _ in result], dtype=np.int64)
    first = np.zeros(rows.size, dtype=bool)
    first[np.unique(rows, return_index=True)[1]] = True
    flat = out.reshape(-1)  # a view: out is C-contiguous
    firsts = np.flatnonzero(first)
    for part in range(0, firsts.size, 128):  # 128 series at a time keep the index arrays small
        ks = firsts[part : part + 128]
        sizes = np.array([result[k][1].size for k in ks], dtype=np.int64)
        idx = point_index(np.concatenate([result[k][1] for k in ks]), lo, step)
        vs = np.concatenate([result[k][2] for k in ks])
        ok = (idx >= 0) & (idx < n) & np.isfinite(vs)
        idx += np.repeat(rows[ks] * n, sizes)  # flat position; one series per row: no point written twice
        if ok.all():
            flat[idx] = vs
        else:
            flat[idx[ok]] = vs[ok]
    for k in np.flatnonzero(~first):  # a restarted container's later incarnations
        _, ts, v = result[k]
        row = out[rows[k]]
        i = point_index(ts, lo, step)
        good = (i >= 0) & (i < n) & np.isfinite(v)
        row[i[good]] = np.fmax(row[i[good]], v[good])


def on_grid(cpu: RangeResult, memory: RangeResult, lo: float, step: float, n: int) -> GridUsage:
    """Range-query answers on the grid lo + i*step (i < n), one row per (namespace, pod, container)."""
    keys = sorted({_key(labels) for labels, _, _ in cpu} | {_key(labels) for labels, _, _ in memory})
    row_of = {key: i for i, key in enumerate(keys)}
    out = GridUsage.empty(keys, lo, step, n)
    _fill(out.cpu, cpu, row_of, lo, step)
    _fill(out.memory, memory, row_of, lo, step)
    return out


def container_samples(grid: GridUsage, samples: Mapping[ContainerKey, int]) -> list[ContainerSamples]:
    """One series per (namespace, pod, container): CPU rate and peak working set per step, trimmed to the
    points where either has a value; `samples` are the raw working-set sample counts (None where the
    source gave none); cpu_resets the row's counter resets."""
    c, m, keys = grid.cpu, grid.memory, grid.keys
    n = c.shape[1]
    times: FloatArray = grid.lo + grid.step * np.arange(n, dtype=np.float64)
    seen = np.isfinite(c) | np.isfinite(m)
    has = seen.any(axis=1)
    zero = np.zeros(len(keys), dtype=np.int64)
    a = np.where(has, seen.argmax(axis=1), 0) if n else zero  # first and one past the last point seen
    b = np.where(has, n - seen[:, ::-1].argmax(axis=1), 0) if n else zero
    # rows kept as views of the two matrices where they fill most of them, else as copies (churn)
    views = int((b - a).sum()) * 2 >= c.size
    resets = grid.cpu_resets.tolist()

    def cut(x: FloatArray, i: int) -> FloatArray:
        part = x[i, a[i] : b[i]]
        return part if views else part.copy()

    return [
        ContainerSamples(
            *key,
            timestamps=times[a[i] : b[i]],
            cpu_cores=cut(c, i),
            memory_bytes=cut(m, i),
            samples=samples.get(key),
            cpu_resets=resets[i],
        )
        for i, key in enumerate(keys)
    ]
