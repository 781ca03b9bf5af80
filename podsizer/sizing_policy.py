"""The sizing knobs, each declared once: type, default, bounds, unit and help (settings are made of them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from annotated_types import Ge, Gt, Le, Lt

from podsizer.knobs import Knob, Unit
from podsizer.plausibility import DEFAULT_MAX_CPU_CORES, DEFAULT_MAX_GPUS, DEFAULT_MAX_MEMORY_BYTES, Ceilings

# Upper bounds of the knobs: past them a value is a typo, not a policy (1e308 once passed as a factor).
MAX_MARGIN = 10.0  # +1000 %
MAX_FACTOR = 100.0
MAX_FLOOR_CORES = 16.0  # a floor every container gets: above a common node it would schedule nowhere
MAX_FLOOR_BYTES = float(64 * 2**30)

BOUNDS = "sizing: percentiles, margins and bounds"
CONFIDENCE = "sizing: confidence"
GPU = "sizing: GPU"
BURST = "sizing: burst path"
COST = "sizing: forecast and cost"


@dataclass(frozen=True)
class SizingPolicy:
    """All knobs of the sizing logic, each with its default, bounds and help below. Units: cores,
    bytes, fractions, hours, days. What the help lines leave out:

      cpu_limit_factor        None: no CPU limit is written, because CPU limits throttle (CFS quota)
                              even on idle nodes; a factor f writes limit = request x f
      oom_bump_*              after an OOM kill, memory >= max(kill x factor, kill + min bytes)
      confidence_threshold    a container below it is low_confidence (the webhook does not apply it)
      cronjob_full_runs       batch workloads (CronJob, Job) count runs instead of days and samples:
                              runs are short
      confidence_multiplier / confidence_exponent / confidence_max_widening
                              VPA-style widening for thin history: estimate x
                              ((1 + m/d) / (1 + m/full_days))^e, d = confidence x confidence_full_days,
                              capped at the max widening (1.0 at full confidence)
      gpu_effective_use_threshold   NVIDIA SM activity counted as effective use; GPU count =
                              ceil(sum of activity p95 / threshold), bounded by the allocation
      mig_memory_headroom     framebuffer peak x (1 + headroom) must fit the MIG slice's memory
      mig_usable_memory_fraction    cap on the part of a slice's nominal size counted as usable
                              (A100/H100 slices expose ~95 %: 1g.10gb ~ 9.5 GiB; H200 and H100 NVL
                              tables already use 0.88); lower it to be stricter
      mig_activity_ceiling    activity p95 rescaled to the slice must stay at or below it
      gpu_idle_*              idle = activity below the threshold for the trailing window
      max_cpu_cores / max_memory_bytes / max_gpus   the plausibility ceilings, settings of every role
                              (podsizer.settings.base; the largest node's allocatable wins where known)
      cpu_burst_*             the burst path (recommender/sizing/burst.py; on in the balanced and
                              aggressive profiles)
      forecast_feed_days      forecast.py; 0: off
      default_gpu_hourly_price      OpenCost's default
    """

    cpu_percentile: Annotated[float, Gt(0), Le(1), Knob("CPU percentile", BOUNDS)] = 0.99
    memory_percentile: Annotated[float, Gt(0), Le(1), Knob("memory percentile", BOUNDS)] = 0.99
    cpu_margin: Annotated[
        float, Ge(0), Le(MAX_MARGIN), Knob("CPU safety margin (0.15 = +15 %; at most 10 = +1000 %)", BOUNDS)
    ] = 0.15
    memory_margin: Annotated[
        float, Ge(0), Le(MAX_MARGIN), Knob("memory safety margin (at most 10 = +1000 %)", BOUNDS)
    ] = 0.15
    cpu_min_cores: Annotated[
        float,
        Ge(0),
        Le(MAX_FLOOR_CORES),
        Knob("CPU floor (cores or 10m; at most 16: every container gets it)", BOUNDS, Unit.CORES),
    ] = 0.01
    memory_min_bytes: Annotated[
        float,
        Ge(0),
        Le(MAX_FLOOR_BYTES),
        Knob("memory floor (bytes or 32Mi; at most 64Gi: every container gets it)", BOUNDS, Unit.BYTES),
    ] = 32 * 1024 * 1024
    oom_bump_factor: Annotated[
        float, Ge(1), Le(MAX_FACTOR), Knob("memory x after an OOM kill (at most 100)", BOUNDS)
    ] = 1.2
    oom_bump_min_bytes: Annotated[
        float,
        Ge(0),
        Le(MAX_FLOOR_BYTES),
        Knob("at least this much more memory after an OOM kill (at most 64Gi)", BOUNDS, Unit.BYTES),
    ] = 100 * 1024 * 1024
    memory_limit_factor: Annotated[
        float, Ge(1), Le(MAX_FACTOR), Knob("memory limit = request x this (at most 100)", BOUNDS)
    ] = 1.25
    cpu_limit_factor: Annotated[
        float | None,
        Ge(1),
        Le(MAX_FACTOR),
        Knob("CPU limit = request x this (empty: no CPU limit; at most 100)", BOUNDS),
    ] = None
    confidence_threshold: Annotated[
        float, Ge(0), Le(1), Knob("below it a recommendation is low-confidence", CONFIDENCE)
    ] = 0.5
    confidence_full_days: Annotated[
        float,
        Gt(0),
        Le(90),
        Knob("days of history for full confidence (at most 90, the longest window)", CONFIDENCE),
    ] = 7.0
    confidence_full_samples: Annotated[
        int,
        Gt(0),
        Le(10**7),
        Knob("samples for full confidence (at most 10,000,000: 90 days at 1s)", CONFIDENCE),
    ] = 1000
    cronjob_full_runs: Annotated[
        int,
        Gt(0),
        Le(10_000),
        Knob(
            "CronJob/Job runs seen for full confidence (batch work: runs, not days or samples; at most "
            "10,000)",
            CONFIDENCE,
        ),
    ] = 5
    confidence_multiplier: Annotated[
        float, Ge(0), Le(MAX_FACTOR), Knob("widening for thin history: multiplier (at most 100)", CONFIDENCE)
    ] = 1.0
    confidence_exponent: Annotated[
        float, Ge(0), Le(10), Knob("widening for thin history: exponent (at most 10)", CONFIDENCE)
    ] = 1.0
    confidence_max_widening: Annotated[
        float, Ge(1), Le(MAX_FACTOR), Knob("widening cap (at most 100)", CONFIDENCE)
    ] = 2.0
    gpu_effective_use_threshold: Annotated[
        float, Gt(0), Le(1), Knob("SM activity counted as full use", GPU)
    ] = 0.8
    mig_memory_headroom: Annotated[
        float, Ge(0), Le(MAX_MARGIN), Knob("framebuffer headroom for a MIG slice (at most 10)", GPU)
    ] = 0.15
    mig_usable_memory_fraction: Annotated[
        float, Gt(0), Le(1), Knob("usable part of a MIG slice's memory", GPU)
    ] = 0.95
    mig_activity_ceiling: Annotated[
        float, Gt(0), Le(1), Knob("max activity rescaled to a MIG slice", GPU)
    ] = 0.8
    gpu_idle_threshold: Annotated[float, Ge(0), Le(1), Knob("GPU activity below this is idle", GPU)] = 0.05
    gpu_idle_window_hours: Annotated[
        float, Gt(0), Le(90 * 24), Knob("hours idle before a GPU pod is flagged (at most 2160: 90 days)", GPU)
    ] = 1.0
    forecast_horizon_days: Annotated[
        float, Gt(0), Le(365), Knob("forecast horizon in days (at most 365)", COST)
    ] = 7.0
    forecast_feed_days: Annotated[
        float,
        Ge(0),
        Le(30),
        Knob(
            "a certain rising trend of daily peaks raises the request to cover this many days ahead "
            "(0: off); never lowers it",
            COST,
        ),
    ] = 2.0
    cpu_burst_path: Annotated[
        bool,
        Knob(
            "bursty CPU (short bursts far above its sustained level) is requested at the sustained level; "
            "bursts run on node headroom or under the CPU limit (--profile balanced and aggressive: on)",
            BURST,
        ),
    ] = False
    cpu_burst_ratio: Annotated[
        float,
        Gt(1),
        Le(1000),
        Knob(
            "burst path: bursty when the CPU p99 is at least this x the sustained level (at most 1000)", BURST
        ),
    ] = 4.0
    cpu_burst_max_share: Annotated[
        float,
        Gt(0),
        Le(0.5),
        Knob(
            "burst path: the sustained level (p95, p90 or p50) leaves at most this share of the time "
            "above it",
            BURST,
        ),
    ] = 0.1
    cpu_burst_min_cores: Annotated[
        float,
        Ge(0),
        Le(MAX_FLOOR_CORES),
        Knob(
            "burst path: the CPU p99 is at least this far above the sustained level (cores or 100m; at "
            "most 16)",
            BURST,
            Unit.CORES,
        ),
    ] = 0.1
    default_gpu_hourly_price: Annotated[
        float, Ge(0), Le(1000), Knob("$/GPU-hour for unknown instance types (at most 1000)", COST)
    ] = 0.95
    spot_discount: Annotated[
        float, Ge(0), Lt(1), Knob("spot price = on-demand x (1 - this) if unknown", COST)
    ] = 0.65
    max_cpu_cores: float = DEFAULT_MAX_CPU_CORES
    max_memory_bytes: float = DEFAULT_MAX_MEMORY_BYTES
    max_gpus: float = DEFAULT_MAX_GPUS

    def ceilings(self) -> Ceilings:
        """The configured ceilings (Ceilings.from_nodes replaces them with the largest node's allocatable)."""
        return Ceilings(self.max_cpu_cores, self.max_memory_bytes, self.max_gpus)
