"""Each role's settings: the shared ones plus its own (PODSIZER_<NAME> and --<name> for every field)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field, JsonValue, field_validator, model_validator
from pydantic_core import PydanticCustomError

from podsizer.api.quantity import parse as parse_quantity
from podsizer.settings.base import SharedSettings, comma_list, empty_is_none, lowered
from podsizer.settings.connection import checked_url, conflicts, parsed_headers
from podsizer.settings.profiles import Profile, profile_help, with_profile
from podsizer.sizing_policy import SizingPolicy

_POLICY = SizingPolicy()
OLM_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # where OLM mounts tls.crt / tls.key


def old_flags(*flags: str) -> dict[str, JsonValue]:
    """Extra spellings of a field's flag kept from before the one loader (json_schema_extra)."""
    return {"flags": list(flags)}


SourceName = Literal["prometheus", "demo", "file", "dcgm"]


def whole_seconds(value: object) -> object:
    """A duration setting (60, 60s, 1m) as whole seconds; ValueError for a fraction of a second."""
    from podsizer.settings.duration import seconds

    value = seconds(empty_is_none(value))
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, float):
        raise ValueError(f"{value:g}s is not a whole number of seconds")
    return value


class MetricsSourceSettings(SharedSettings):
    """The metrics source's connection and window, read alike by the recommender and the console."""

    source: SourceName = Field(
        default="prometheus", description="metrics source: prometheus, demo (built-in data set), file, dcgm"
    )
    prometheus_url: str = Field(
        default="http://localhost:9090", description="Prometheus (or Thanos) base URL"
    )
    prometheus_timeout_seconds: float = Field(
        default=30.0, gt=0, description="timeout of one Prometheus request"
    )
    prometheus_bearer_token_file: Path | None = Field(
        default=None,
        description="file holding a bearer token sent to Prometheus (e.g. a service account token)",
    )
    prometheus_max_response_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1024,
        description="most bytes read of one Prometheus answer (bytes or e.g. 64Mi); larger answers are "
        "re-asked over shorter time ranges, else the namespace is skipped",
    )
    # Connection options (docs/connections.md); rules in podsizer/settings/connection.py
    prometheus_basic_auth_user: str | None = Field(
        default=None, description="user name of HTTP basic auth to Prometheus (with the password file)"
    )
    prometheus_basic_auth_password_file: Path | None = Field(
        default=None, description="file holding the basic-auth password; re-read when it changes"
    )
    prometheus_headers: tuple[tuple[str, str], ...] = Field(
        default=(),
        description="comma-separated Name=value headers sent to Prometheus (e.g. X-Scope-OrgID=team-a)",
    )
    prometheus_ca_file: Path | None = Field(
        default=None, description="CA bundle (PEM) that signed Prometheus' certificate (not the system's)"
    )
    prometheus_client_cert_file: Path | None = Field(
        default=None, description="client certificate (PEM) presented to Prometheus (with its key file)"
    )
    prometheus_client_key_file: Path | None = Field(
        default=None, description="key (PEM) of the client certificate"
    )
    prometheus_insecure_skip_verify: bool = Field(
        default=False, description="do not verify Prometheus' certificate (a warning at start; tests only)"
    )
    prometheus_sigv4_region: str | None = Field(
        default=None, description="AWS region: SigV4-sign requests (AWS Managed Prometheus; podsizer[aws])"
    )
    prometheus_sigv4_service: str = Field(default="aps", min_length=1, description="SigV4 service name")
    prometheus_preset: Literal["none", "openshift"] = Field(
        default="none",
        description="none, or openshift: thanos-querier with the service-account token and service CA "
        "(explicit settings win)",
    )

    @field_validator("prometheus_url", mode="before")
    @classmethod
    def _source_url(cls, value: object) -> object:
        return checked_url(value)

    @field_validator("prometheus_headers", mode="before")
    @classmethod
    def _source_headers(cls, value: object) -> object:
        return parsed_headers(value)

    @field_validator(
        "prometheus_basic_auth_user",
        "prometheus_basic_auth_password_file",
        "prometheus_ca_file",
        "prometheus_client_cert_file",
        "prometheus_client_key_file",
        "prometheus_sigv4_region",
        mode="before",
    )
    @classmethod
    def _source_optional(cls, value: object) -> object:
        return empty_is_none(value)

    @field_validator("prometheus_preset", mode="before")
    @classmethod
    def _source_preset(cls, value: object) -> object:
        return lowered(value)

    @model_validator(mode="after")
    def _source_conflicts(self) -> MetricsSourceSettings:
        from podsizer.settings.loader import where

        found = conflicts(
            basic_user=self.prometheus_basic_auth_user,
            basic_password_file=self.prometheus_basic_auth_password_file,
            bearer_token_file=self.prometheus_bearer_token_file,
            sigv4_region=self.prometheus_sigv4_region,
            headers=self.prometheus_headers,
            ca_file=self.prometheus_ca_file,
            cert_file=self.prometheus_client_cert_file,
            key_file=self.prometheus_client_key_file,
            insecure=self.prometheus_insecure_skip_verify,
        )
        if found:
            text = "; ".join(f"{where(a)} and {where(b)}: {why}" for a, b, why in found)
            raise PydanticCustomError("conflict", "{text}", {"text": text})
        return self

    source_file: Path | None = Field(default=None, description="data file read by --source file")
    namespaces: tuple[str, ...] = Field(
        default=(), description="comma-separated namespaces to size; globs allowed, e.g. team-* (empty: all)"
    )
    exclude_namespaces: tuple[str, ...] = Field(
        default=(), description="comma-separated namespaces never sized; globs allowed: kube-*,openshift-*"
    )
    selector: str = Field(
        default="",
        description="Kubernetes label selector matched against the workload's pod labels, e.g. "
        "app=web,tier!=cache,env in (prod,stage),!canary (empty: every workload)",
    )
    kinds: tuple[str, ...] = Field(
        default=(), description="comma-separated workload kinds to size, any case: Deployment (empty: all)"
    )
    allow_empty: bool = Field(
        default=False,
        description="a namespace, selector or kind that matches no workload is a warning only (without it: "
        "also exit status 3 of recommend and explain)",
    )
    as_of: datetime | None = Field(
        default=None,
        description="end of the window (backtesting): RFC 3339 with a zone, e.g. 2026-05-01T00:00:00Z, or "
        "unix seconds; not in the future (empty: now)",
    )

    @field_validator("exclude_namespaces", mode="before")
    @classmethod
    def _scope_comma_list(cls, value: object) -> object:
        return comma_list(value)

    @field_validator("selector", mode="before")
    @classmethod
    def _scope_selector(cls, value: object) -> object:
        from podsizer.selector import parse

        if isinstance(value, str):
            parse(value)  # SelectorError (a ValueError) names the problem
            return value.strip()
        return value

    @field_validator("kinds", mode="before")
    @classmethod
    def _scope_kinds(cls, value: object) -> object:
        from podsizer.scope import kind_named

        listed = comma_list(value)
        if isinstance(listed, tuple | list):
            return tuple(dict.fromkeys(kind_named(str(k)) for k in listed))
        return listed

    @field_validator("as_of", mode="before")
    @classmethod
    def _as_of(cls, value: object) -> object:
        """RFC 3339 with a zone or unix seconds, in UTC; never in the future."""
        import re
        from datetime import UTC

        value = empty_is_none(value)
        if value is None or isinstance(value, datetime):
            when = value
        elif isinstance(value, int | float) or (
            isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?", value.strip())
        ):
            when = datetime.fromtimestamp(float(value), UTC)
        elif isinstance(value, str):
            try:
                when = datetime.fromisoformat(value.strip())
            except ValueError:
                raise ValueError(f"not an RFC 3339 time or unix seconds: {value!r}") from None
        else:
            return value
        if when is not None and when.tzinfo is None:
            raise ValueError(f"{value!r} has no timezone: add Z or an offset such as +02:00")
        if when is not None and when > datetime.now(UTC):
            raise ValueError(f"{when.isoformat()} is in the future")
        return when.astimezone(UTC) if when is not None else None

    window_days: float = Field(default=7.0, gt=0, description="days of history each run looks back")
    # Estimator input (issue 14): the resolution of the usage series and how samples weigh by age.
    query_step: int = Field(
        default=60,
        gt=0,
        description="step of the Prometheus CPU and memory range queries, a duration (60s, 1m, 5m): one "
        "point per step per container (7 days at 1m: 10,081 points, queried in pieces of 11,000)",
    )
    cpu_rate_window: int = Field(
        default=120,
        gt=0,
        description="window of the CPU rate(), a duration (2m): at least the query step and two scrape "
        "intervals of cAdvisor",
    )
    recency_half_life: float = Field(
        default=86400.0,
        ge=0,
        description="half-life of the weight of a usage sample in the percentiles, a duration (24h; 0 or "
        "off: every sample weighs alike)",
    )

    @field_validator("query_step", "cpu_rate_window", mode="before")
    @classmethod
    def _whole_seconds(cls, value: object) -> object:
        return whole_seconds(value)

    @field_validator("recency_half_life", mode="before")
    @classmethod
    def _half_life(cls, value: object) -> object:
        from podsizer.settings.duration import seconds

        off = isinstance(value, str) and value.strip().lower() in ("off", "none", "false")
        return 0.0 if off else seconds(value)

    @model_validator(mode="after")
    def _rate_covers_step(self) -> MetricsSourceSettings:
        from podsizer.settings.loader import where

        if self.cpu_rate_window < self.query_step:
            text = (
                f"{where('cpu_rate_window')}: {self.cpu_rate_window}s is shorter than "
                f"{where('query_step')} {self.query_step}s: the CPU samples between steps would be skipped"
            )
            raise PydanticCustomError("conflict", "{text}", {"text": text})
        return self

    profile: Profile = Field(
        default="conservative",
        description=profile_help(),
    )

    @field_validator("profile", mode="before")
    @classmethod
    def _profile_name(cls, value: object) -> object:
        return lowered(value)

    cluster_label: str = Field(
        default="",
        description="label naming the cluster on every series of a multi-cluster store, e.g. cluster "
        "(empty: one cluster, queries unscoped)",
    )
    clusters: tuple[str, ...] = Field(
        default=(),
        description="with cluster_label: comma-separated clusters to size, or all (default: every value "
        "of cluster_label found in the window)",
    )

    @field_validator("clusters", mode="before")
    @classmethod
    def _clusters_list(cls, value: object) -> object:
        """'all' (any case) or empty: every cluster found; else the names given."""
        listed = comma_list(value)
        if isinstance(listed, tuple) and [str(v).lower() for v in listed] == ["all"]:
            return ()
        return listed

    @field_validator("namespaces", mode="before")
    @classmethod
    def _source_comma_list(cls, value: object) -> object:
        return comma_list(value)

    @field_validator("prometheus_max_response_bytes", mode="before")
    @classmethod
    def _source_quantity(cls, value: object) -> object:
        if isinstance(value, str) and value.strip():
            return parse_quantity(value.strip())
        return value

    @field_validator("prometheus_bearer_token_file", "source_file", mode="before")
    @classmethod
    def _source_empty(cls, value: object) -> object:
        return empty_is_none(value)


class RecommenderSettings(MetricsSourceSettings):
    """`podsizer recommend` and `podsizer run`: metrics source, loop, sizing policy, operations."""

    # Metrics source (the shared part: MetricsSourceSettings)
    dcgm_urls: tuple[str, ...] = Field(
        default=(), description="comma-separated dcgm-exporter /metrics URLs for --source dcgm"
    )
    dcgm_scrape_interval_seconds: float = Field(
        default=30.0, gt=0, description="seconds between dcgm-exporter scrapes"
    )
    dcgm_store_path: Path | None = Field(
        default=None, description="journal of scraped DCGM samples, replayed at start (empty: memory only)"
    )
    # Loop
    interval_seconds: float = Field(
        default=3600.0, gt=0, description="seconds between runs of `podsizer run`"
    )
    backoff_initial_seconds: float = Field(
        default=10.0, gt=0, description="first retry delay after the source failed (doubles per failure)"
    )
    backoff_max_seconds: float = Field(default=600.0, gt=0, description="cap of the retry delay")
    # Incremental cycles (issue 15): a usage model kept between cycles, checkpointed
    incremental: bool = Field(
        default=True,
        description="`podsizer run` with the prometheus source keeps a usage model (decaying histograms) "
        "between cycles and reads only the samples since the last one (false: every cycle reads the "
        "whole window)",
    )
    checkpoint_store: Literal["auto", "crd", "file", "none"] = Field(
        default="auto",
        description="where the usage model is checkpointed after every cycle: crd (a UsageCheckpoint per "
        "workload), file (checkpoint_file), none (memory only: a restart reads the whole window again); "
        "auto: crd with store=crd, else file when checkpoint_file is set, else none",
    )
    checkpoint_file: Path | None = Field(
        default=None, description="the usage checkpoint file (checkpoint_store file or auto)"
    )
    cold_start_chunk: int = Field(
        default=21600,
        ge=3600,
        description="a cold start reads the window in chunks of this duration (whole hours: 6h), folding "
        "each into the model before the next: memory holds one chunk",
    )
    from_checkpoint: bool = Field(
        default=False,
        description="`podsizer recommend`: start from the usage checkpoint and read only the samples since "
        "it was written (default: read the whole window)",
    )

    @field_validator("cold_start_chunk", mode="before")
    @classmethod
    def _whole_hours(cls, value: object) -> object:
        out = whole_seconds(value)
        if isinstance(out, int) and out % 3600:
            raise ValueError(f"{out}s is not a whole number of hours")
        return out

    # Sizing policy (SizingPolicy fields; quantities accept Kubernetes units)
    cpu_percentile: float = Field(default=_POLICY.cpu_percentile, gt=0, le=1, description="CPU percentile")
    memory_percentile: float = Field(
        default=_POLICY.memory_percentile, gt=0, le=1, description="memory percentile"
    )
    cpu_margin: float = Field(
        default=_POLICY.cpu_margin, ge=0, description="CPU safety margin (0.15 = +15 %)"
    )
    memory_margin: float = Field(default=_POLICY.memory_margin, ge=0, description="memory safety margin")
    cpu_min_cores: float = Field(default=_POLICY.cpu_min_cores, ge=0, description="CPU floor (cores or 10m)")
    memory_min_bytes: float = Field(
        default=_POLICY.memory_min_bytes, ge=0, description="memory floor (bytes or 32Mi)"
    )
    oom_bump_factor: float = Field(
        default=_POLICY.oom_bump_factor, ge=1, description="memory x after an OOM kill"
    )
    oom_bump_min_bytes: float = Field(
        default=_POLICY.oom_bump_min_bytes,
        ge=0,
        description="at least this much more memory after an OOM kill",
    )
    memory_limit_factor: float = Field(
        default=_POLICY.memory_limit_factor, ge=1, description="memory limit = request x this"
    )
    cpu_limit_factor: float | None = Field(
        default=_POLICY.cpu_limit_factor, ge=1, description="CPU limit = request x this (empty: no CPU limit)"
    )
    confidence_threshold: float = Field(
        default=_POLICY.confidence_threshold,
        ge=0,
        le=1,
        description="below it a recommendation is low-confidence",
    )
    confidence_full_days: float = Field(
        default=_POLICY.confidence_full_days, gt=0, description="days of history for full confidence"
    )
    confidence_full_samples: int = Field(
        default=_POLICY.confidence_full_samples, gt=0, description="samples for full confidence"
    )
    cronjob_full_runs: int = Field(
        default=_POLICY.cronjob_full_runs,
        gt=0,
        description="CronJob/Job runs seen for full confidence (batch work: runs, not days or samples)",
    )
    confidence_multiplier: float = Field(
        default=_POLICY.confidence_multiplier, ge=0, description="widening for thin history: multiplier"
    )
    confidence_exponent: float = Field(
        default=_POLICY.confidence_exponent, ge=0, description="widening for thin history: exponent"
    )
    confidence_max_widening: float = Field(
        default=_POLICY.confidence_max_widening, ge=1, description="widening cap"
    )
    gpu_effective_use_threshold: float = Field(
        default=_POLICY.gpu_effective_use_threshold, gt=0, le=1, description="SM activity counted as full use"
    )
    mig_memory_headroom: float = Field(
        default=_POLICY.mig_memory_headroom, ge=0, description="framebuffer headroom for a MIG slice"
    )
    mig_usable_memory_fraction: float = Field(
        default=_POLICY.mig_usable_memory_fraction,
        gt=0,
        le=1,
        description="usable part of a MIG slice's memory",
    )
    mig_activity_ceiling: float = Field(
        default=_POLICY.mig_activity_ceiling, gt=0, le=1, description="max activity rescaled to a MIG slice"
    )
    gpu_idle_threshold: float = Field(
        default=_POLICY.gpu_idle_threshold, ge=0, le=1, description="GPU activity below this is idle"
    )
    gpu_idle_window_hours: float = Field(
        default=_POLICY.gpu_idle_window_hours, gt=0, description="hours idle before a GPU pod is flagged"
    )
    forecast_horizon_days: float = Field(
        default=_POLICY.forecast_horizon_days, gt=0, description="forecast horizon in days"
    )
    forecast_feed_days: float = Field(
        default=_POLICY.forecast_feed_days,
        ge=0,
        le=30,
        description="a certain rising trend of daily peaks raises the request to cover this many days "
        "ahead (0: off); never lowers it",
    )
    cpu_burst_path: bool = Field(
        default=_POLICY.cpu_burst_path,
        description="bursty CPU (short bursts far above its sustained level) is requested at the sustained "
        "level; bursts run on node headroom or under the CPU limit (--profile balanced and aggressive: on)",
    )
    cpu_burst_ratio: float = Field(
        default=_POLICY.cpu_burst_ratio,
        gt=1,
        description="burst path: bursty when the CPU p99 is at least this x the sustained level",
    )
    cpu_burst_max_share: float = Field(
        default=_POLICY.cpu_burst_max_share,
        gt=0,
        le=0.5,
        description="burst path: the sustained level (p95, p90 or p50) leaves at most this share of the "
        "time above it",
    )
    cpu_burst_min_cores: float = Field(
        default=_POLICY.cpu_burst_min_cores,
        ge=0,
        description="burst path: the CPU p99 is at least this far above the sustained level (cores or 100m)",
    )

    @model_validator(mode="before")
    @classmethod
    def _profile_presets(cls, data: object) -> object:
        """The profile's presets fill the estimator settings not given explicitly (env or flag)."""
        return with_profile(data, frozenset(cls.model_fields))

    default_gpu_hourly_price: float = Field(
        default=_POLICY.default_gpu_hourly_price, ge=0, description="$/GPU-hour for unknown instance types"
    )
    spot_discount: float = Field(
        default=_POLICY.spot_discount,
        ge=0,
        lt=1,
        description="spot price = on-demand x (1 - this) if unknown",
    )
    price_file: Path | None = Field(
        default=None, description="CSV of instance prices merged over the shipped table"
    )

    # Operations
    metrics_port: int = Field(
        default=8080, ge=0, le=65535, description="port of /metrics for `podsizer run` (0: off)"
    )
    metrics_host: str = Field(default="0.0.0.0", description="address /metrics listens on")
    liveness_grace_seconds: float = Field(
        default=300.0,
        gt=0,
        description="/livez fails when no cycle started or ended for the wait + one interval + this",
    )
    readiness_source_failure_seconds: float = Field(
        default=1800.0, gt=0, description="/readyz fails once the metrics source has failed for this long"
    )
    leader_election: bool = Field(default=False, description="elect a leader through a Lease (in a cluster)")
    lease_name: str = Field(default="podsizer-recommender", min_length=1, description="name of the Lease")
    lease_namespace: str | None = Field(
        default=None, description="namespace of the Lease (empty: the pod's namespace, else default)"
    )
    lease_duration_seconds: int = Field(default=15, gt=0, description="Lease duration")
    lease_renew_deadline_seconds: int = Field(
        default=10, gt=0, description="leader gives up if not renewed within"
    )
    lease_retry_period_seconds: float = Field(default=2.0, gt=0, description="seconds between Lease attempts")
    identity: str | None = Field(
        default=None, description="holder identity in the Lease (empty: POD_NAME or hostname)"
    )

    @field_validator("dcgm_urls", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        return comma_list(value)

    @field_validator(
        "cpu_min_cores",
        "memory_min_bytes",
        "oom_bump_min_bytes",
        "cpu_burst_min_cores",
        mode="before",
    )
    @classmethod
    def _quantity(cls, value: object) -> object:
        if isinstance(value, str) and value.strip():
            return parse_quantity(value.strip())
        return value

    @field_validator(
        "cpu_limit_factor",
        "dcgm_store_path",
        "price_file",
        "lease_namespace",
        "identity",
        mode="before",
    )
    @classmethod
    def _empty(cls, value: object) -> object:
        return empty_is_none(value)

    def to_sizing_policy(self) -> SizingPolicy:
        """The SizingPolicy these settings describe (every SizingPolicy field has a setting of that name)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(SizingPolicy)}
        return SizingPolicy(**values)


class WebhookSettings(SharedSettings):
    """`podsizer webhook`: listener, TLS, exclusions, limits on requests."""

    host: str = Field(default="0.0.0.0", description="address to listen on")
    port: int = Field(default=8443, ge=1, le=65535, description="HTTPS port")
    tls_cert_file: Path = Field(default=OLM_CERT_DIR / "tls.crt", description="serving certificate (PEM)")
    tls_key_file: Path = Field(default=OLM_CERT_DIR / "tls.key", description="serving key (PEM)")
    tls_reload_interval: float = Field(
        default=1.0, gt=0, description="seconds between checks of the certificate files for rotation"
    )
    store_poll_interval: float = Field(
        default=5.0, gt=0, description="seconds between checks of the json store file"
    )
    namespace: str = Field(
        default="podsizer", min_length=1, description="the webhook's own namespace (excluded)"
    )
    excluded_namespaces: str = Field(
        default="kube-system",
        description="comma-separated namespaces never mutated; glob patterns allowed (openshift-*, kube-*)",
    )
    max_body_bytes: int = Field(default=5_000_000, ge=1024, description="larger request bodies get HTTP 413")
    access_log: bool = Field(default=False, description="uvicorn access log")
    bench_endpoints: bool = Field(default=False, description="register /mutate-baseline (benchmarks only)")

    # Hostile and heavy clients
    client_ca_file: Path | None = Field(
        default=None,
        description="CA (PEM) that must have signed the apiserver's client certificate (empty: none asked)",
    )
    client_allowed_names: tuple[str, ...] = Field(
        default=(),
        description="comma-separated client certificate CN/DNS SAN allowed (empty: any the CA signed)",
    )
    decision_cache_bytes: int = Field(
        default=32 * 1024 * 1024, ge=0, description="approximate bytes of cached decisions (0: no cache)"
    )
    max_header_bytes: int = Field(
        default=64 * 1024, ge=4096, description="larger request lines plus headers get HTTP 431"
    )
    header_timeout_seconds: float = Field(
        default=10.0, gt=0, le=300, description="a connection must send a request's headers within this"
    )
    body_timeout_seconds: float = Field(
        default=10.0, gt=0, le=300, description="a request's body must arrive within this (HTTP 408)"
    )
    keep_alive_timeout_seconds: int = Field(
        default=30, ge=1, le=3600, description="an idle keep-alive connection is closed after this"
    )
    offload_body_bytes: int = Field(
        default=256 * 1024, ge=0, description="reviews larger than this are decoded and decided in a thread"
    )
    offload_concurrency: int = Field(
        default=1, ge=1, description="large reviews decided at once (others wait, small ones do not)"
    )

    @field_validator("client_allowed_names", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        return comma_list(value)

    @field_validator("client_ca_file", mode="before")
    @classmethod
    def _empty(cls, value: object) -> object:
        return empty_is_none(value)

    @property
    def excluded_namespace_set(self) -> frozenset[str]:
        names = {n.strip() for n in self.excluded_namespaces.split(",") if n.strip()}
        return frozenset(names | {self.namespace})


ConsoleSource = Literal["demo", "file", "prometheus"]


class ConsoleSettings(MetricsSourceSettings):
    """`podsizer console`: where the read-only web console listens and what it shows."""

    console_host: str = Field(
        default="127.0.0.1",
        min_length=1,
        description="address to listen on",
        json_schema_extra=old_flags("--host"),
    )
    console_port: int = Field(
        default=8080, ge=1, le=65535, description="port to listen on", json_schema_extra=old_flags("--port")
    )
    console_source: ConsoleSource | None = Field(
        default=None,
        description="where the data comes from: demo, file or prometheus (empty: PODSIZER_SOURCE / "
        "--source when set, else prometheus when PODSIZER_PROMETHEUS_URL / --prometheus-url is given, else "
        "demo, the built-in data set)",
    )
    console_refresh_seconds: float = Field(
        default=300.0, gt=0, description="seconds between rebuilds of the data from the source and store"
    )

    @field_validator("console_source", mode="before")
    @classmethod
    def _console_empty(cls, value: object) -> object:
        return empty_is_none(lowered(value))

    def chosen_source(self) -> tuple[str, str]:
        """(source, the setting that chose it): console_source, else source when set, else Prometheus when
        its URL was given, else the demo."""
        if self.console_source is not None:
            return self.console_source, "console_source"
        if "source" in self.model_fields_set:
            return self.source, "source"
        if "prometheus_url" in self.model_fields_set:
            return "prometheus", "prometheus_url"
        return "demo", "console_source"


UpdateModeSetting = Literal["off", "initial", "recreate", "in-place-or-recreate"]  # podsizer.modes.UpdateMode


class UpdaterSettings(SharedSettings):
    """`podsizer updater`: brings running pods to their recommendation (docs/updater.md)."""

    update_mode: UpdateModeSetting = Field(
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
        allow_inf_nan=False,
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
    updater_excluded_namespaces: tuple[str, ...] = Field(
        default=("kube-system",), description="comma-separated namespaces never updated; globs allowed"
    )
    updater_metrics_port: int = Field(default=8080, ge=0, le=65535, description="port of /metrics (0: off)")
    updater_metrics_host: str = Field(default="0.0.0.0", description="address /metrics listens on")
    updater_leader_election: bool = Field(
        default=False, description="elect a leader through a Lease (in a cluster; the chart turns it on)"
    )
    updater_lease_name: str = Field(default="podsizer-updater", min_length=1, description="name of the Lease")
    updater_lease_namespace: str | None = Field(
        default=None, description="namespace of the Lease (empty: the pod's namespace, else default)"
    )
    updater_identity: str | None = Field(
        default=None, description="holder identity in the Lease (empty: POD_NAME or hostname)"
    )

    @field_validator("update_mode", mode="before")
    @classmethod
    def _update_mode(cls, value: object) -> object:
        return lowered(value)

    @field_validator("updater_excluded_namespaces", mode="before")
    @classmethod
    def _updater_list(cls, value: object) -> object:
        return comma_list(value)

    @field_validator("updater_lease_namespace", "updater_identity", mode="before")
    @classmethod
    def _updater_empty(cls, value: object) -> object:
        return empty_is_none(value)


ROLES: tuple[type[SharedSettings], ...] = (
    RecommenderSettings,
    WebhookSettings,
    ConsoleSettings,
    UpdaterSettings,
)
