"""Range-query answers become one pre-reduced ContainerSamples per container (the raw model)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from recommender.input.prometheus.series import container_samples, on_grid
from recommender.model import FloatArray


def arr(*xs: float) -> FloatArray:
    return np.array(xs, dtype=np.float64)


def lab(pod: str, container: str = "app", **extra: str) -> dict[str, str]:
    return {"namespace": "ns", "pod": pod, "container": container} | extra


def test_incarnations_of_a_container_merge_on_the_grid_by_max() -> None:
    old = (lab("p", id="a"), arr(0, 300, 600), arr(1.0, 2.0, math.nan))
    new = (lab("p", id="b"), arr(600, 900), arr(5.0, 1.0))
    mem = (lab("p"), arr(0, 300, 600, 900), arr(10.0, 20.0, 30.0, 40.0))
    (s,) = container_samples(on_grid([old, new], [mem], 0.0, 300.0, 5), {("ns", "p", "app"): 17})
    assert s.timestamps.tolist() == [0, 300, 600, 900]
    assert s.cpu_cores.tolist() == [1.0, 2.0, 5.0, 1.0]
    assert s.memory_bytes.tolist() == [10.0, 20.0, 30.0, 40.0]
    assert s.samples == 17


def test_series_are_trimmed_to_points_with_a_value_and_share_the_grid() -> None:
    late = (lab("late"), arr(600, 900), arr(0.5, 0.5))
    early = (lab("early"), arr(0, 300), arr(0.1, 0.1))
    a, b = container_samples(on_grid([late, early], [], 0.0, 300.0, 4), {})
    assert (a.pod, a.timestamps.tolist(), a.samples) == ("early", [0, 300], None)
    assert (b.pod, b.timestamps.tolist()) == ("late", [600, 900])
    assert np.isnan(b.memory_bytes).all()
    assert a.timestamps.base is b.timestamps.base  # views of one grid, not copies


def test_a_container_with_only_nan_points_is_kept_empty_for_the_aggregation_to_skip() -> None:
    (s,) = container_samples(
        on_grid([(lab("p"), arr(0, 300), arr(math.nan, math.nan))], [], 0.0, 300.0, 2), {}
    )
    assert (s.timestamps.size, s.cpu_cores.size, s.memory_bytes.size) == (0, 0, 0)


def test_the_cpu_counters_resets_read_raw_reach_the_raw_model_and_range_queries_say_none() -> None:
    grid = on_grid([(lab("p"), arr(0, 300), arr(1.0, 2.0))], [], 0.0, 300.0, 2)
    assert [s.cpu_resets for s in container_samples(grid, {})] == [0]
    counted = replace(grid, cpu_resets=np.array([3], dtype=np.int64))
    assert [s.cpu_resets for s in container_samples(counted, {})] == [3]
