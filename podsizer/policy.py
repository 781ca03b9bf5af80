"""The policy in force for the pod plan: limit policy, GPU opt-in default, confidence floor, default mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from podsizer.plausibility import DEFAULT_MAX_CHANGE_FACTOR, Ceilings

Mode = Literal["off", "dry-run", "auto"]
MODES: tuple[Mode, ...] = ("off", "dry-run", "auto")
LimitPolicy = Literal["keep-ratio", "cap", "leave", "recommended"]
LIMIT_POLICIES: tuple[LimitPolicy, ...] = ("keep-ratio", "cap", "leave", "recommended")


@dataclass(frozen=True)
class PlanPolicy:
    """Configuration that shapes what a pod gets; every process builds it from the same settings.

    limit_policy    keep-ratio (limit scales with the request), cap (raise a limit only when the new
                    request exceeds it), leave (never touch limits), recommended (write the
                    Recommendation's own limits)
    gpu_resize      default for podsizer.io/gpu (keep | resize): may GPU counts and MIG slices change
    allow_mig_swap  with GPU resize on, replace nvidia.com/gpu by the suggested MIG slice
    min_confidence  container recommendations below this confidence are not applied
    default_mode    mode when neither pod, workload nor namespace sets one
    ceilings        the most one container may get per resource (largest node's allocatable or configured)
    max_change_factor  a new request stays within [current / f, current x f] unless
                    podsizer.io/allow-large-change is "true"; None: no factor rule
    """

    limit_policy: LimitPolicy = "keep-ratio"
    gpu_resize: bool = False
    allow_mig_swap: bool = False
    min_confidence: float = 0.0
    default_mode: Mode = "dry-run"
    ceilings: Ceilings = field(default_factory=Ceilings)
    max_change_factor: float | None = DEFAULT_MAX_CHANGE_FACTOR
