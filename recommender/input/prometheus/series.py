"""Range-query answers as the raw model: one pre-reduced ContainerSamples per container of a pod."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from recommender.input.prometheus.client import RangeResult
from recommender.model import FloatArray
from recommender.model.raw import ContainerSamples
from recommender.model.timegrid import point_index

ContainerKey = tuple[str, str, str]


def _rows(result: RangeResult, lo: float, step: float, n: int) -> dict[ContainerKey, FloatArray]:
    """Each container's series on the grid lo + i*step; its incarnations (restarts) merged by max."""
    out: dict[ContainerKey, FloatArray] = {}
    for labels, ts, vs in result:
        key = (labels.get("namespace", ""), labels.get("pod", ""), labels.get("container", ""))
        idx = point_index(ts, lo, step)
        ok = (idx >= 0) & (idx < n) & np.isfinite(vs)
        row = out.get(key)
        if row is None:
            row = out[key] = np.full(n, np.nan)
        row[idx[ok]] = np.fmax(row[idx[ok]], vs[ok])
    return out


def container_samples(
    cpu: RangeResult,
    memory: RangeResult,
    samples: Mapping[ContainerKey, int],
    lo: float,
    step: float,
    n: int,
) -> list[ContainerSamples]:
    """One series per (namespace, pod, container) on the grid lo + i*step (i < n): CPU rate and peak
    working set per step, trimmed to the points where either has a value; `samples` are the raw
    working-set sample counts (None where Prometheus gave none)."""
    grid: FloatArray = lo + step * np.arange(n, dtype=np.float64)
    cpu_rows, mem_rows = _rows(cpu, lo, step, n), _rows(memory, lo, step, n)
    empty = np.full(n, np.nan)
    out: list[ContainerSamples] = []
    for key in sorted(cpu_rows.keys() | mem_rows.keys()):
        c, m = cpu_rows.get(key, empty), mem_rows.get(key, empty)
        seen = np.flatnonzero(np.isfinite(c) | np.isfinite(m))
        a, b = (int(seen[0]), int(seen[-1]) + 1) if seen.size else (0, 0)
        out.append(
            ContainerSamples(
                *key,
                timestamps=grid[a:b],
                cpu_cores=c[a:b].copy(),
                memory_bytes=m[a:b].copy(),
                samples=samples.get(key),
            )
        )
    return out
