"""Tunable sizing parameters with their documented defaults (the CLI/env config fills these)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SizingPolicy:
    """All knobs of the sizing logic. Units: cores, bytes, fractions, hours, days."""

    cpu_percentile: float = 0.99
    memory_percentile: float = 0.99
    cpu_margin: float = 0.15
    memory_margin: float = 0.15
    cpu_min_cores: float = 0.01
    memory_min_bytes: float = 32 * 1024 * 1024
    oom_bump_factor: float = 1.2
    oom_bump_min_bytes: float = 100 * 1024 * 1024
    memory_limit_factor: float = 1.25
    confidence_threshold: float = 0.5
    confidence_full_days: float = 7.0
    confidence_full_samples: int = 1000
    gpu_idle_threshold: float = 0.05
    gpu_idle_window_hours: float = 1.0
    forecast_horizon_days: float = 7.0
    default_gpu_hourly_price: float = 0.95
    spot_discount: float = 0.65
