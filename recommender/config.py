"""Recommender settings: PODSIZER_* environment variables, each also a CLI flag (flags win).

Every setting has a default (see docs/recommender.md). `load_settings(args)` validates both
sources together; a bad value raises ConfigError whose message names the variable (and the flag
when the value came from one), e.g. "PODSIZER_CPU_MARGIN: Input should be greater than or equal
to 0 (got '-1')". The CLI prints that one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from podsizer.api.quantity import parse as parse_quantity
from recommender.sizing.policy import SizingPolicy

ENV_PREFIX = "PODSIZER_"

_DEFAULT_POLICY = SizingPolicy()


class ConfigError(ValueError):
    """Bad configuration; the message names the variable or flag and what is wrong."""


def env_name(field: str) -> str:
    return f"{ENV_PREFIX}{field.upper()}"


def flag_name(field: str) -> str:
    return "--" + field.replace("_", "-")


class RecommenderSettings(BaseSettings):
    """Every recommender setting with its default; the field description is the flag's help text."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    # Metrics source
    source: Literal["prometheus", "demo", "file", "dcgm"] = Field(
        "prometheus", description="metrics source: prometheus, demo (built-in data set), file, dcgm"
    )
    prometheus_url: str = Field("http://localhost:9090", description="Prometheus (or Thanos) base URL")
    prometheus_timeout_seconds: float = Field(30.0, gt=0, description="timeout of one Prometheus request")
    prometheus_bearer_token_file: Path | None = Field(
        None, description="file holding a bearer token sent to Prometheus (e.g. a service account token)"
    )
    source_file: Path | None = Field(None, description="data file read by --source file")
    dcgm_urls: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="comma-separated dcgm-exporter /metrics URLs for --source dcgm"
    )
    dcgm_scrape_interval_seconds: float = Field(
        30.0, gt=0, description="seconds between dcgm-exporter scrapes"
    )
    dcgm_store_path: Path | None = Field(
        None, description="journal of scraped DCGM samples, replayed at start (empty: memory only)"
    )
    namespaces: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="comma-separated namespaces to size (empty: all)"
    )
    window_days: float = Field(7.0, gt=0, description="days of history each run looks back")

    # Loop
    interval_seconds: float = Field(3600.0, gt=0, description="seconds between runs of `podsizer run`")
    backoff_initial_seconds: float = Field(
        10.0, gt=0, description="first retry delay after the source failed (doubles per failure)"
    )
    backoff_max_seconds: float = Field(600.0, gt=0, description="cap of the retry delay")

    # Store
    store: Literal["json", "crd"] = Field(
        "json", description="where recommendations go: json (one file; 'file' also accepted) or crd"
    )
    store_file: Path = Field(Path("recommendations.json"), description="file of the json store")
    store_namespace: str | None = Field(
        None, description="crd store: only this namespace (empty: all namespaces)"
    )
    kubeconfig: Path | None = Field(
        None, description="kubeconfig for the crd store and leader election (empty: in-cluster, then ~/.kube)"
    )

    # Sizing policy (SizingPolicy fields; quantities accept Kubernetes units)
    cpu_percentile: float = Field(_DEFAULT_POLICY.cpu_percentile, gt=0, le=1, description="CPU percentile")
    memory_percentile: float = Field(
        _DEFAULT_POLICY.memory_percentile, gt=0, le=1, description="memory percentile"
    )
    cpu_margin: float = Field(
        _DEFAULT_POLICY.cpu_margin, ge=0, description="CPU safety margin (0.15 = +15 %)"
    )
    memory_margin: float = Field(_DEFAULT_POLICY.memory_margin, ge=0, description="memory safety margin")
    cpu_min_cores: float = Field(_DEFAULT_POLICY.cpu_min_cores, ge=0, description="CPU floor (cores or 10m)")
    memory_min_bytes: float = Field(
        _DEFAULT_POLICY.memory_min_bytes, ge=0, description="memory floor (bytes or 32Mi)"
    )
    oom_bump_factor: float = Field(
        _DEFAULT_POLICY.oom_bump_factor, ge=1, description="memory x after an OOM kill"
    )
    oom_bump_min_bytes: float = Field(
        _DEFAULT_POLICY.oom_bump_min_bytes,
        ge=0,
        description="at least this much more memory after an OOM kill",
    )
    memory_limit_factor: float = Field(
        _DEFAULT_POLICY.memory_limit_factor, ge=1, description="memory limit = request x this"
    )
    cpu_limit_factor: float | None = Field(
        _DEFAULT_POLICY.cpu_limit_factor, ge=1, description="CPU limit = request x this (empty: no CPU limit)"
    )
    confidence_threshold: float = Field(
        _DEFAULT_POLICY.confidence_threshold,
        ge=0,
        le=1,
        description="below it a recommendation is low-confidence",
    )
    confidence_full_days: float = Field(
        _DEFAULT_POLICY.confidence_full_days, gt=0, description="days of history for full confidence"
    )
    confidence_full_samples: int = Field(
        _DEFAULT_POLICY.confidence_full_samples, gt=0, description="samples for full confidence"
    )
    confidence_multiplier: float = Field(
        _DEFAULT_POLICY.confidence_multiplier, ge=0, description="widening for thin history: multiplier"
    )
    confidence_exponent: float = Field(
        _DEFAULT_POLICY.confidence_exponent, ge=0, description="widening for thin history: exponent"
    )
    confidence_max_widening: float = Field(
        _DEFAULT_POLICY.confidence_max_widening, ge=1, description="widening cap"
    )
    gpu_effective_use_threshold: float = Field(
        _DEFAULT_POLICY.gpu_effective_use_threshold, gt=0, le=1, description="SM activity counted as full use"
    )
    mig_memory_headroom: float = Field(
        _DEFAULT_POLICY.mig_memory_headroom, ge=0, description="framebuffer headroom for a MIG slice"
    )
    mig_usable_memory_fraction: float = Field(
        _DEFAULT_POLICY.mig_usable_memory_fraction,
        gt=0,
        le=1,
        description="usable part of a MIG slice's memory",
    )
    mig_activity_ceiling: float = Field(
        _DEFAULT_POLICY.mig_activity_ceiling, gt=0, le=1, description="max activity rescaled to a MIG slice"
    )
    gpu_idle_threshold: float = Field(
        _DEFAULT_POLICY.gpu_idle_threshold, ge=0, le=1, description="GPU activity below this is idle"
    )
    gpu_idle_window_hours: float = Field(
        _DEFAULT_POLICY.gpu_idle_window_hours, gt=0, description="hours idle before a GPU pod is flagged"
    )
    forecast_horizon_days: float = Field(
        _DEFAULT_POLICY.forecast_horizon_days, gt=0, description="forecast horizon in days"
    )
    default_gpu_hourly_price: float = Field(
        _DEFAULT_POLICY.default_gpu_hourly_price, ge=0, description="$/GPU-hour for unknown instance types"
    )
    spot_discount: float = Field(
        _DEFAULT_POLICY.spot_discount,
        ge=0,
        lt=1,
        description="spot price = on-demand x (1 - this) if unknown",
    )
    price_file: Path | None = Field(None, description="CSV of instance prices merged over the shipped table")

    # Operations
    metrics_port: int = Field(
        8080, ge=0, le=65535, description="port of /metrics for `podsizer run` (0: off)"
    )
    metrics_host: str = Field("0.0.0.0", description="address /metrics listens on")
    leader_election: bool = Field(False, description="elect a leader through a Lease (in a cluster)")
    lease_name: str = Field("podsizer-recommender", min_length=1, description="name of the Lease")
    lease_namespace: str | None = Field(
        None, description="namespace of the Lease (empty: the pod's namespace, else default)"
    )
    lease_duration_seconds: int = Field(15, gt=0, description="Lease duration")
    lease_renew_deadline_seconds: int = Field(10, gt=0, description="leader gives up if not renewed within")
    lease_retry_period_seconds: float = Field(2.0, gt=0, description="seconds between Lease attempts")
    identity: str | None = Field(
        None, description="holder identity in the Lease (empty: POD_NAME or hostname)"
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="log level")

    @field_validator("namespaces", "dcgm_urls", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("cpu_min_cores", "memory_min_bytes", "oom_bump_min_bytes", mode="before")
    @classmethod
    def _quantity(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip():
            return parse_quantity(value.strip())
        return value

    @field_validator(
        "cpu_limit_factor",
        "prometheus_bearer_token_file",
        "source_file",
        "dcgm_store_path",
        "price_file",
        "kubeconfig",
        "store_namespace",
        "lease_namespace",
        "identity",
        mode="before",
    )
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("", "none"):
            return None
        return value

    @field_validator("store", mode="before")
    @classmethod
    def _file_is_json(cls, value: Any) -> Any:
        # The webhook calls the standalone store "file"; one PODSIZER_STORE then configures both.
        return "json" if isinstance(value, str) and value.strip().lower() == "file" else value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    def to_sizing_policy(self) -> SizingPolicy:
        """The SizingPolicy these settings describe (every SizingPolicy field has a setting of that name)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(SizingPolicy)}
        return SizingPolicy(**values)


_BOOL_FIELDS = {name for name, f in RecommenderSettings.model_fields.items() if f.annotation is bool}


def add_settings_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per setting (--cpu-margin for PODSIZER_CPU_MARGIN); absent flags leave env/defaults."""
    group = parser.add_argument_group("settings (each also PODSIZER_<NAME> in the environment)")
    for name, field in RecommenderSettings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        shown = ",".join(default) if isinstance(default, list) else default
        help_text = f"{field.description} [{env_name(name)}, default: {shown if shown is not None else ''}]"
        help_text = help_text.replace("%", "%%")
        if name in _BOOL_FIELDS:
            group.add_argument(
                flag_name(name),
                dest=f"setting_{name}",
                action=argparse.BooleanOptionalAction,
                default=argparse.SUPPRESS,
                help=help_text,
            )
        else:
            group.add_argument(
                flag_name(name),
                dest=f"setting_{name}",
                metavar=name.upper(),
                default=argparse.SUPPRESS,
                help=help_text,
            )


def flag_values(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags, by field name."""
    prefix = "setting_"
    return {k[len(prefix) :]: v for k, v in vars(args).items() if k.startswith(prefix)}


def load_settings(
    flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> RecommenderSettings:
    """Settings from `env` (default: the process environment) overridden by `flags`; ConfigError when
    any value is bad, naming each bad variable (and flag)."""
    flags = dict(flags or {})
    try:
        if env is None:
            return RecommenderSettings(**flags)
        merged: dict[str, Any] = {
            name: env[env_name(name)] for name in RecommenderSettings.model_fields if env_name(name) in env
        }
        merged.update(flags)
        return _NoEnv(**merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, flags)) from None


class _NoEnv(RecommenderSettings):
    """Validation of an explicit mapping, without reading the process environment."""

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: Any, init_settings: Any, *args: Any, **kwargs: Any
    ) -> tuple[Any, ...]:
        return (init_settings,)


def _describe(exc: ValidationError, flags: Mapping[str, Any]) -> str:
    lines = []
    for err in exc.errors():
        field = str(err["loc"][0]) if err["loc"] else "?"
        where = env_name(field)
        if field in flags:
            where = f"{flag_name(field)} ({where})"
        msg = err["msg"]
        if "input" in err and not isinstance(err["input"], dict):
            msg += f" (got {err['input']!r})"
        lines.append(f"{where}: {msg}")
    return "; ".join(lines)
