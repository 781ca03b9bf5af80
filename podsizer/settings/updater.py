"""`podsizer updater`'s settings: how running pods are brought to their recommendation (docs/updater.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from podsizer.settings.base import SharedSettings
from podsizer.settings.duration import DAY, HOUR, WEEK
from podsizer.settings.group import SettingsGroup
from podsizer.settings.types import CommaList, Lowered, OptionalText

UpdateModeSetting = Literal["off", "initial", "recreate", "in-place-or-recreate"]  # podsizer.modes.UpdateMode

DEFAULT_RESIZE_TIMEOUT_SECONDS = 300.0
DEFAULT_SETTLING_SECONDS = 10_800.0
"""Three hourly recommender cycles: a target that holds that long is not a flap (updater.damping)."""


class UpdatePolicySettings(SettingsGroup):
    """When a pod is off its recommendation and how it is brought to it."""

    heading = "updates"
    update_mode: Annotated[UpdateModeSetting, Lowered] = Field(
        default="initial",
        description="podsizer.io/update-mode when neither pod, workload nor namespace sets one: off, initial "
        "(admission only), recreate, in-place-or-recreate",
    )
    updater_dry_run: bool = Field(
        default=False, description="record what the updater would do (Events, metric, log) without acting"
    )
    update_threshold: float = Field(
        default=0.10,
        ge=0,
        le=10,
        description="act when a cpu/memory value is more than this fraction off its target (0.10 = 10 %; "
        "at most 10: further off than 1000 % is never tolerated)",
    )
    update_use_band: bool = Field(
        default=True, description="also act when a request is outside the recommendation's lower/upper band"
    )
    update_resize_timeout_seconds: float = Field(
        default=DEFAULT_RESIZE_TIMEOUT_SECONDS,
        gt=0,
        le=DAY,
        description="an in-place resize pending, deferred or in progress longer than this falls back to "
        "eviction (infeasible: at once; at most a day)",
    )
    updater_settling_seconds: float = Field(
        default=DEFAULT_SETTLING_SECONDS,
        ge=0,
        le=WEEK,
        description="a workload's target must hold this long before the updater follows another one, and "
        "one that reversed within it is held (target-oscillating); 0: no damping (at most a week)",
    )


class EvictionSettings(SettingsGroup):
    """How fast the updater may evict, and where never."""

    heading = "eviction pacing"
    updater_min_pod_age_seconds: float = Field(
        default=600.0, ge=0, le=WEEK, description="a pod younger than this is never evicted (at most a week)"
    )
    updater_workload_cooldown_seconds: float = Field(
        default=60.0,
        ge=0,
        le=WEEK,
        description="after an eviction, the workload's next one waits at least this long (at most a week)",
    )
    updater_evictions_per_minute: int = Field(
        default=5,
        ge=1,
        le=600,
        description="most evictions in the whole cluster per minute (at most 600: ten a second)",
    )
    updater_interval_seconds: float = Field(
        default=30.0, gt=0, le=HOUR, description="seconds between passes (at most an hour)"
    )
    updater_excluded_namespaces: CommaList = Field(
        default=("kube-system",), description="comma-separated namespaces never updated; globs allowed"
    )


class UpdaterOperationsSettings(SettingsGroup):
    """The updater's /metrics and its Lease."""

    heading = "updater /metrics and leader election"
    updater_metrics_port: int = Field(default=8080, ge=0, le=65535, description="port of /metrics (0: off)")
    updater_metrics_host: str = Field(default="0.0.0.0", description="address /metrics listens on")
    updater_leader_election: bool = Field(
        default=False, description="elect a leader through a Lease (in a cluster; the chart turns it on)"
    )
    updater_lease_name: str = Field(default="podsizer-updater", min_length=1, description="name of the Lease")
    updater_lease_namespace: OptionalText = Field(
        default=None, description="namespace of the Lease (empty: the pod's namespace, else default)"
    )
    updater_identity: OptionalText = Field(
        default=None, description="holder identity in the Lease (empty: POD_NAME or hostname)"
    )


class UpdaterSettings(UpdatePolicySettings, EvictionSettings, UpdaterOperationsSettings, SharedSettings):
    """`podsizer updater`: brings running pods to their recommendation (docs/updater.md)."""
