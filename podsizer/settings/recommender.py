"""`podsizer recommend`, `explain` and `run`: the metrics source, the sizing knobs, the loop's settings."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BeforeValidator, Field, model_validator

from podsizer.knobs import Unit
from podsizer.settings.duration import DAY, HOUR, WEEK
from podsizer.settings.group import SettingsGroup, knob_group
from podsizer.settings.profiles import with_profile
from podsizer.settings.source import MetricsSourceSettings
from podsizer.settings.types import CommaList, OptionalPath, OptionalText, whole_seconds
from podsizer.sizing_policy import COST, SizingPolicy

if TYPE_CHECKING:

    class SizingKnobs(SettingsGroup):
        """Made from SizingPolicy at run time, so unknown to mypy: read them through to_sizing_policy()."""

else:
    SizingKnobs = knob_group("SizingKnobs", SizingPolicy)


class DcgmSettings(SettingsGroup):
    """--source dcgm: the dcgm-exporters scraped and the journal of their samples."""

    heading = "DCGM source"
    dcgm_urls: CommaList = Field(
        default=(), description="comma-separated dcgm-exporter /metrics URLs for --source dcgm"
    )
    dcgm_store_path: OptionalPath = Field(
        default=None, description="journal of scraped DCGM samples, replayed at start (empty: memory only)"
    )


class LoopSettings(SettingsGroup):
    """`podsizer run`'s cycle: interval, retries, the model kept between cycles, DCGM scrapes."""

    heading = "the loop"
    interval_seconds: float = Field(
        default=3600.0,
        gt=0,
        le=WEEK,
        description="seconds between runs of `podsizer run` (at most a week: the window's default length)",
    )
    backoff_initial_seconds: float = Field(
        default=10.0,
        gt=0,
        le=HOUR,
        description="first retry delay after the source failed (doubles per failure; at most an hour)",
    )
    backoff_max_seconds: float = Field(
        default=600.0, gt=0, le=DAY, description="cap of the retry delay (at most a day)"
    )
    incremental: bool = Field(
        default=True,
        description="`podsizer run` with the prometheus source keeps a usage model (decaying histograms) "
        "between cycles and reads only the samples since the last one (false: every cycle reads the "
        "whole window)",
    )
    dcgm_scrape_interval_seconds: float = Field(
        default=30.0,
        gt=0,
        le=HOUR,
        description="seconds between dcgm-exporter scrapes (at most an hour: sparser scrapes miss GPU use)",
    )


def _whole_hours(value: object) -> object:
    out = whole_seconds(value)
    if isinstance(out, int) and out % 3600:
        raise ValueError(f"{out}s is not a whole number of hours")
    return out


class CheckpointSettings(SettingsGroup):
    """The usage model's checkpoint: where it is kept, how a cold start reads the window."""

    heading = "usage checkpoint"
    checkpoint_store: Literal["auto", "crd", "file", "none"] = Field(
        default="auto",
        description="where the usage model is checkpointed after every cycle: crd (a UsageCheckpoint per "
        "workload), file (checkpoint_file), none (memory only: a restart reads the whole window again); "
        "auto: crd with store=crd, else file when checkpoint_file is set, else none",
    )
    checkpoint_file: OptionalPath = Field(
        default=None, description="the usage checkpoint file (checkpoint_store file or auto)"
    )
    cold_start_chunk: Annotated[int, Unit.SECONDS, BeforeValidator(_whole_hours)] = Field(
        default=21600,
        ge=3600,
        le=WEEK,
        description="a cold start reads the window in chunks of this duration (whole hours: 6h), folding "
        "each into the model before the next: memory holds one chunk (at most 7d)",
    )


class OneRunSettings(SettingsGroup):
    """`podsizer recommend` and `explain` only: one run that starts from the checkpoint."""

    heading = "one run from the checkpoint"
    from_checkpoint: bool = Field(
        default=False,
        description="`podsizer recommend`: start from the usage checkpoint and read only the samples since "
        "it was written (default: read the whole window)",
    )


class PriceSettings(SettingsGroup):
    """The instance price table (the cost knobs are SizingPolicy's)."""

    heading = COST
    price_file: OptionalPath = Field(
        default=None, description="CSV of instance prices merged over the shipped table"
    )


class OperationsSettings(SettingsGroup):
    """`podsizer run`'s /metrics and probes."""

    heading = "/metrics and probes"
    metrics_port: int = Field(
        default=8080, ge=0, le=65535, description="port of /metrics for `podsizer run` (0: off)"
    )
    metrics_host: str = Field(default="0.0.0.0", description="address /metrics listens on")
    liveness_grace_seconds: float = Field(
        default=300.0,
        gt=0,
        le=DAY,
        description="/livez fails when a cycle goes this long without progress, or the next cycle is this "
        "late (at most a day: a hung loop must be noticed)",
    )
    readiness_source_failure_seconds: float = Field(
        default=1800.0,
        gt=0,
        le=WEEK,
        description="/readyz fails once the metrics source has failed for this long (at most a week)",
    )


class LeaderElectionSettings(SettingsGroup):
    """`podsizer run` with replicas: one leader through a Lease."""

    heading = "leader election"
    leader_election: bool = Field(default=False, description="elect a leader through a Lease (in a cluster)")
    lease_name: str = Field(default="podsizer-recommender", min_length=1, description="name of the Lease")
    lease_namespace: OptionalText = Field(
        default=None, description="namespace of the Lease (empty: the pod's namespace, else default)"
    )
    lease_duration_seconds: int = Field(
        default=15, gt=0, le=HOUR, description="Lease duration (at most an hour: so long without a leader)"
    )
    lease_renew_deadline_seconds: int = Field(
        default=10, gt=0, le=HOUR, description="leader gives up if not renewed within (at most an hour)"
    )
    lease_retry_period_seconds: float = Field(
        default=2.0, gt=0, le=600, description="seconds between Lease attempts (at most 10 minutes)"
    )
    identity: OptionalText = Field(
        default=None, description="holder identity in the Lease (empty: POD_NAME or hostname)"
    )


RUN_ONLY: tuple[type[SettingsGroup], ...] = (LoopSettings, OperationsSettings, LeaderElectionSettings)
"""The groups only `podsizer run` reads (`recommend` and `explain` accept them and list them not)."""
ONE_RUN_ONLY: tuple[type[SettingsGroup], ...] = (OneRunSettings,)
"""The groups `podsizer run` does not read (it accepts them and lists them not)."""


class RecommenderSettings(
    MetricsSourceSettings,
    DcgmSettings,
    CheckpointSettings,
    OneRunSettings,
    SizingKnobs,
    PriceSettings,
    LoopSettings,
    OperationsSettings,
    LeaderElectionSettings,
):
    """`podsizer recommend` and `podsizer run`: metrics source, loop, sizing policy, operations."""

    @model_validator(mode="before")
    @classmethod
    def _profile_presets(cls, data: object) -> object:
        """The profile's presets fill the estimator settings not given explicitly (env or flag)."""
        return with_profile(data, frozenset(cls.model_fields))

    def to_sizing_policy(self) -> SizingPolicy:
        """The SizingPolicy these settings describe (every SizingPolicy field has a setting of that name)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(SizingPolicy)}
        return SizingPolicy(**values)
