"""`podsizer updater`'s settings: how running pods are brought to their recommendation (docs/updater.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from podsizer.settings.base import SharedSettings
from podsizer.settings.group import SettingsGroup
from podsizer.settings.types import CommaList, Lowered, OptionalText

UpdateModeSetting = Literal["off", "initial", "recreate", "in-place-or-recreate"]  # podsizer.modes.UpdateMode


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
        description="act when a cpu/memory value is more than this fraction off its target (0.10 = 10 %)",
    )
    update_use_band: bool = Field(
        default=True, description="also act when a request is outside the recommendation's lower/upper band"
    )
    update_resize_timeout_seconds: float = Field(
        default=300.0,
        gt=0,
        description="an in-place resize pending, deferred or in progress longer than this falls back to "
        "eviction (infeasible: at once)",
    )


class EvictionSettings(SettingsGroup):
    """How fast the updater may evict, and where never."""

    heading = "eviction pacing"
    updater_min_pod_age_seconds: float = Field(
        default=600.0, ge=0, description="a pod younger than this is never evicted"
    )
    updater_workload_cooldown_seconds: float = Field(
        default=60.0, ge=0, description="after an eviction, the workload's next one waits at least this long"
    )
    updater_evictions_per_minute: int = Field(
        default=5, ge=1, description="most evictions in the whole cluster per minute"
    )
    updater_interval_seconds: float = Field(default=30.0, gt=0, description="seconds between passes")
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
