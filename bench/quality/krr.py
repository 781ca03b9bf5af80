"""KRR's `simple` strategy, reimplemented from its documented algorithm (KRR is not on PyPI).

Source: robusta-dev/krr, README "Algorithm" (https://github.com/robusta-dev/krr#algorithm) and
robusta_krr/strategies/simple.py (SimpleStrategySettings):
- CPU request = the `cpu_percentile` (default 95) of each pod's CPU rate samples
  (`quantile_over_time(p, max(rate(container_cpu_usage_seconds_total[step])) by (container, pod, job)
  [duration:step])`), the largest over the workload's pods; no CPU limit.
- Memory request = limit = the largest working set of any pod over the history
  (`max_over_time(container_memory_working_set_bytes[duration])`) + `memory_buffer_percentage` (default 15 %).
- Nothing is recommended with fewer than `points_required` (default 100) samples, or (unless --allow-hpa)
  for a workload with a CPU/memory HPA; the benchmark runs it as `--allow-hpa` so every workload gets a value.
Samples here are the per-minute rates (KRR's default step is 1.25 min; the scrape here is 1 min).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from recommender.model import FloatArray

POINTS_REQUIRED = 100
MEMORY_BUFFER = 0.15


@dataclass(frozen=True)
class KrrResult:
    """KRR simple's recommendation for one container (NaN: not enough data)."""

    cpu_request: float
    memory_request: float
    memory_limit: float


def simple(
    cpu_by_pod: Sequence[FloatArray], memory_by_pod: Sequence[FloatArray], percentile: float
) -> KrrResult:
    """KRR simple for one workload container from each pod's per-minute CPU cores and memory bytes."""
    cpu_pods = [c for c in cpu_by_pod if c.size]
    mem_pods = [m for m in memory_by_pod if m.size]
    if sum(c.size for c in cpu_pods) < POINTS_REQUIRED or sum(m.size for m in mem_pods) < POINTS_REQUIRED:
        nan = float("nan")
        return KrrResult(nan, nan, nan)
    cpu = max(float(np.percentile(c, percentile)) for c in cpu_pods)
    memory = max(float(m.max()) for m in mem_pods) * (1 + MEMORY_BUFFER)
    return KrrResult(cpu, memory, memory)
