"""Tunable sizing parameters with their documented defaults (the settings loader fills these)."""

from __future__ import annotations

from dataclasses import dataclass

from podsizer.plausibility import DEFAULT_MAX_CPU_CORES, DEFAULT_MAX_GPUS, DEFAULT_MAX_MEMORY_BYTES, Ceilings


@dataclass(frozen=True)
class SizingPolicy:
    """All knobs of the sizing logic. Units: cores, bytes, fractions, hours, days.

    Static sizing (workloads without a horizontal autoscaler):
      cpu_percentile / memory_percentile   which point of the usage distribution (0.99 = P99)
      cpu_margin / memory_margin           safety margin added on top (0.15 = +15 %)
      cpu_min_cores / memory_min_bytes     floors (10m, 32Mi)
      oom_bump_factor / oom_bump_min_bytes after an OOM kill, memory >= max(kill x 1.2, kill + 100Mi)
      memory_limit_factor                  memory limit = request x 1.25
      cpu_limit_factor                     None (default): no CPU limit is written, because CPU limits
                                           throttle (CFS quota) even on idle nodes; set e.g. 2.0 to
                                           write limit = request x 2.0
    Confidence:
      confidence_full_days / confidence_full_samples   history that counts as full confidence (7 d, 1000)
      cronjob_full_runs                    batch workloads (CronJob, Job): runs seen for full confidence
                                           (5), instead of days and samples: runs are short
      confidence_threshold                 below it the container is marked low_confidence (the
                                           webhook does not apply those)
      confidence_multiplier / confidence_exponent / confidence_max_widening
                                           VPA-style widening for thin history: estimate x
                                           ((1 + m/d) / (1 + m/full_days))^e, d = confidence x
                                           confidence_full_days, capped at x2.0 (1.0 at full confidence)
    GPU:
      gpu_effective_use_threshold          NVIDIA: SM activity >= 0.8 is effective use; GPU count =
                                           ceil(sum of activity p95 / 0.8), bounded by the allocation
      mig_memory_headroom                  framebuffer peak x 1.15 must fit the MIG slice's memory
      mig_usable_memory_fraction           cap on the part of a slice's nominal size counted as usable
                                           (A100/H100 slices expose ~95 %: 1g.10gb ~ 9.5 GiB; H200 and
                                           H100 NVL tables already use 0.88); lower it to be stricter
      mig_activity_ceiling                 activity p95 rescaled to the slice must stay <= 0.8
      gpu_idle_threshold / gpu_idle_window_hours   idle = activity < 0.05 for the trailing 1 h
    Plausibility (shared with the pod plan; the largest node's allocatable wins where a source knows it):
      max_cpu_cores / max_memory_bytes / max_gpus   ceilings no recommendation exceeds (256, 4Ti, 16)
    Burst path (recommender/sizing/burst.py; on in the balanced and aggressive profiles):
      cpu_burst_path                       size bursty CPU at its sustained level (False: off)
      cpu_burst_ratio                      bursty: p99 at least ratio x the sustained level (4.0)
      cpu_burst_max_share                  the sustained level leaves at most this share of the time
                                           above it (0.10: p90 or p95)
      cpu_burst_min_cores                  and p99 is at least this far above it (0.1 cores)
    Forecast / cost:
      forecast_horizon_days                7 (PODSIZER_FORECAST_HORIZON_DAYS)
      forecast_feed_days                   a certain rising trend of daily peaks raises the request to
                                           cover this many days ahead (2; 0: off; forecast.py)
      default_gpu_hourly_price             0.95 $/GPU-hour (OpenCost's default) for unknown instance types
      spot_discount                        spot estimate = on-demand x (1 - 0.65) when no spot price is known
    """

    cpu_percentile: float = 0.99
    memory_percentile: float = 0.99
    cpu_margin: float = 0.15
    memory_margin: float = 0.15
    cpu_min_cores: float = 0.01
    memory_min_bytes: float = 32 * 1024 * 1024
    oom_bump_factor: float = 1.2
    oom_bump_min_bytes: float = 100 * 1024 * 1024
    memory_limit_factor: float = 1.25
    cpu_limit_factor: float | None = None
    confidence_threshold: float = 0.5
    confidence_full_days: float = 7.0
    confidence_full_samples: int = 1000
    cronjob_full_runs: int = 5
    confidence_multiplier: float = 1.0
    confidence_exponent: float = 1.0
    confidence_max_widening: float = 2.0
    gpu_effective_use_threshold: float = 0.8
    mig_memory_headroom: float = 0.15
    mig_usable_memory_fraction: float = 0.95
    mig_activity_ceiling: float = 0.8
    gpu_idle_threshold: float = 0.05
    gpu_idle_window_hours: float = 1.0
    forecast_horizon_days: float = 7.0
    forecast_feed_days: float = 2.0
    cpu_burst_path: bool = False
    cpu_burst_ratio: float = 4.0
    cpu_burst_max_share: float = 0.1
    cpu_burst_min_cores: float = 0.1
    default_gpu_hourly_price: float = 0.95
    spot_discount: float = 0.65
    max_cpu_cores: float = DEFAULT_MAX_CPU_CORES
    max_memory_bytes: float = DEFAULT_MAX_MEMORY_BYTES
    max_gpus: float = DEFAULT_MAX_GPUS

    def ceilings(self) -> Ceilings:
        """The configured ceilings (Ceilings.from_nodes replaces them with the largest node's allocatable)."""
        return Ceilings(self.max_cpu_cores, self.max_memory_bytes, self.max_gpus)
