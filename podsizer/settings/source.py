"""The metrics source's settings, read alike by the recommender and the console: connection, scope, window."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from podsizer.knobs import Unit
from podsizer.settings.base import SharedSettings
from podsizer.settings.connection import checked_url, conflicts, parsed_headers
from podsizer.settings.duration import DAY, seconds
from podsizer.settings.group import SettingsGroup
from podsizer.settings.names import where
from podsizer.settings.profiles import Profile, profile_help
from podsizer.settings.types import (
    CommaList,
    Lowered,
    OptionalPath,
    OptionalText,
    WholeBytes,
    WholeSeconds,
    comma_list,
    empty_is_none,
)

MAX_WINDOW_DAYS = 90
SourceName = Literal["prometheus", "demo", "file", "dcgm"]
ReadPath = Literal["auto", "remote-read", "export", "query"]
"""How the Prometheus source reads usage samples (recommender/input/prometheus/reads.py)."""
DEFAULT_MAX_SAMPLES_PER_CYCLE = 1_000_000_000
"""Raw samples one cycle may decode: 10,000 containers' CPU and working set over 7 days at a 15 s scrape
(806 M) fit; a larger cluster raises it (recommender/input/prometheus/caps.py)."""
MIN_MAX_SAMPLES_PER_CYCLE = 1_000_000
MAX_MAX_SAMPLES_PER_CYCLE = 100_000_000_000


def _conflict(text: str) -> PydanticCustomError:
    return PydanticCustomError("conflict", "{text}", {"text": text})


class PrometheusSettings(SettingsGroup):
    """Which source, and how to reach Prometheus (docs/connections.md; rules in settings/connection.py)."""

    heading = "metrics source and Prometheus connection"
    source: SourceName = Field(
        default="prometheus", description="metrics source: prometheus, demo (built-in data set), file, dcgm"
    )
    source_file: OptionalPath = Field(default=None, description="data file read by --source file")
    prometheus_url: Annotated[str, BeforeValidator(checked_url)] = Field(
        default="http://localhost:9090", description="Prometheus (or Thanos) base URL"
    )
    prometheus_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=600,
        description="timeout of one Prometheus request (at most 600: a cycle must not wait longer on one)",
    )
    prometheus_bearer_token_file: OptionalPath = Field(
        default=None,
        description="file holding a bearer token sent to Prometheus (e.g. a service account token)",
    )
    prometheus_max_response_bytes: WholeBytes = Field(
        default=64 * 1024 * 1024,
        ge=1024,
        le=1024**3,
        description="most bytes read of one Prometheus answer (bytes or e.g. 64Mi); larger answers are "
        "re-asked over shorter time ranges, else the namespace is skipped (at most 1Gi: an answer is held "
        "in memory, decoded, several times over)",
    )
    prometheus_max_samples_per_cycle: int = Field(
        default=DEFAULT_MAX_SAMPLES_PER_CYCLE,
        ge=MIN_MAX_SAMPLES_PER_CYCLE,
        le=MAX_MAX_SAMPLES_PER_CYCLE,
        description="most samples one cycle decodes from Prometheus' answers (remote read's chunks, export "
        "lines, range-query points; the default holds 10,000 containers over 7 days at a 15 s scrape), "
        "counted before decoding: past it the cycle fails and the stored recommendations stay",
    )
    prometheus_basic_auth_user: OptionalText = Field(
        default=None, description="user name of HTTP basic auth to Prometheus (with the password file)"
    )
    prometheus_basic_auth_password_file: OptionalPath = Field(
        default=None, description="file holding the basic-auth password; re-read when it changes"
    )
    prometheus_headers: Annotated[tuple[tuple[str, str], ...], BeforeValidator(parsed_headers)] = Field(
        default=(),
        description="comma-separated Name=value headers sent to Prometheus (e.g. X-Scope-OrgID=team-a)",
    )
    prometheus_ca_file: OptionalPath = Field(
        default=None, description="CA bundle (PEM) that signed Prometheus' certificate (not the system's)"
    )
    prometheus_client_cert_file: OptionalPath = Field(
        default=None, description="client certificate (PEM) presented to Prometheus (with its key file)"
    )
    prometheus_client_key_file: OptionalPath = Field(
        default=None, description="key (PEM) of the client certificate"
    )
    prometheus_insecure_skip_verify: bool = Field(
        default=False, description="do not verify Prometheus' certificate (a warning at start; tests only)"
    )
    prometheus_sigv4_region: OptionalText = Field(
        default=None, description="AWS region: SigV4-sign requests (AWS Managed Prometheus; podsizer[aws])"
    )
    prometheus_sigv4_service: str = Field(default="aps", min_length=1, description="SigV4 service name")
    prometheus_preset: Annotated[Literal["none", "openshift"], Lowered] = Field(
        default="none",
        description="none, or openshift: thanos-querier with the service-account token and service CA "
        "(explicit settings win)",
    )

    @model_validator(mode="after")
    def _source_conflicts(self) -> PrometheusSettings:
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
            raise _conflict("; ".join(f"{where(a)} and {where(b)}: {why}" for a, b, why in found))
        return self


def _selector(value: object) -> object:
    from podsizer.selector import parse

    if isinstance(value, str):
        parse(value)  # SelectorError (a ValueError) names the problem
        return value.strip()
    return value


def _kinds(value: object) -> object:
    from podsizer.scope import kind_named

    listed = comma_list(value)
    if isinstance(listed, tuple | list):
        return tuple(dict.fromkeys(kind_named(str(k)) for k in listed))
    return listed


def _clusters(value: object) -> object:
    """'all' (any case) or empty: every cluster found; else the names given."""
    listed = comma_list(value)
    if isinstance(listed, tuple) and [str(v).lower() for v in listed] == ["all"]:
        return ()
    return listed


class ScopeSettings(SettingsGroup):
    """Which workloads are sized: namespaces, labels, kinds, clusters."""

    heading = "scope"
    namespaces: CommaList = Field(
        default=(), description="comma-separated namespaces to size; globs allowed, e.g. team-* (empty: all)"
    )
    exclude_namespaces: CommaList = Field(
        default=(), description="comma-separated namespaces never sized; globs allowed: kube-*,openshift-*"
    )
    selector: Annotated[str, BeforeValidator(_selector)] = Field(
        default="",
        description="Kubernetes label selector matched against the workload's pod labels, e.g. "
        "app=web,tier!=cache,env in (prod,stage),!canary (empty: every workload)",
    )
    kinds: Annotated[tuple[str, ...], Unit.LIST, BeforeValidator(_kinds)] = Field(
        default=(), description="comma-separated workload kinds to size, any case: Deployment (empty: all)"
    )
    allow_empty: bool = Field(
        default=False,
        description="a namespace, selector or kind that matches no workload is a warning only (without it: "
        "also exit status 3 of recommend and explain)",
    )
    cluster_label: str = Field(
        default="",
        description="label naming the cluster on every series of a multi-cluster store, e.g. cluster "
        "(empty: one cluster, queries unscoped)",
    )
    clusters: Annotated[tuple[str, ...], Unit.LIST, BeforeValidator(_clusters)] = Field(
        default=(),
        description="with cluster_label: comma-separated clusters to size, or all (default: every value "
        "of cluster_label found in the window)",
    )


def _as_of(value: object) -> object:
    """RFC 3339 with a zone or unix seconds, in UTC; never in the future."""
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


def _half_life(value: object) -> object:
    off = isinstance(value, str) and value.strip().lower() in ("off", "none", "false")
    return 0.0 if off else seconds(value)


class WindowSettings(SettingsGroup):
    """The window read and the estimator's input: resolution, recency weight, profile."""

    heading = "window, sampling and profile"
    as_of: Annotated[datetime | None, BeforeValidator(_as_of)] = Field(
        default=None,
        description="end of the window (backtesting): RFC 3339 with a zone, e.g. 2026-05-01T00:00:00Z, or "
        "unix seconds; not in the future (empty: now)",
    )
    window_days: float = Field(
        default=7.0,
        gt=0,
        le=MAX_WINDOW_DAYS,
        description="days of history each run looks back (at most 90: older usage says little about "
        "today's, and a cold start reads all of it)",
    )
    query_step: WholeSeconds = Field(
        default=60,
        gt=0,
        le=3600,
        description="step of the Prometheus CPU and memory range queries, a duration (60s, 1m, 5m): one "
        "point per step per container (7 days at 1m: 10,081 points, queried in pieces of 11,000; at most "
        "1h: a coarser step misses the peaks)",
    )
    cpu_rate_window: WholeSeconds = Field(
        default=120,
        gt=0,
        le=6 * 3600,
        description="window of the CPU rate(), a duration (2m): at least the query step and two scrape "
        "intervals of cAdvisor; with raw reads, the longest scrape interval taken as a rate (at most 6h: "
        "two scrapes at the longest query step and room for a slow scrape; a longer rate flattens every "
        "burst)",
    )
    prometheus_read: Annotated[ReadPath, Lowered] = Field(
        default="auto",
        description="how CPU and memory samples are read: auto (the cheapest the server offers), "
        "remote-read (Prometheus' streamed chunks), export (VictoriaMetrics), query (range queries)",
    )
    recency_half_life: Annotated[float, Unit.SECONDS, BeforeValidator(_half_life)] = Field(
        default=86400.0,
        ge=0,
        le=MAX_WINDOW_DAYS * DAY,
        description="half-life of the weight of a usage sample in the percentiles, a duration (24h; 0 or "
        "off: every sample weighs alike; at most 90d, the longest window)",
    )
    profile: Annotated[Profile, Lowered] = Field(default="conservative", description=profile_help())

    @model_validator(mode="after")
    def _rate_covers_step(self) -> WindowSettings:
        if self.cpu_rate_window < self.query_step:
            raise _conflict(
                f"{where('cpu_rate_window')}: {self.cpu_rate_window}s is shorter than "
                f"{where('query_step')} {self.query_step}s: the CPU samples between steps would be skipped"
            )
        return self


class MetricsSourceSettings(PrometheusSettings, ScopeSettings, WindowSettings, SharedSettings):
    """The metrics source's connection, scope and window, read alike by the recommender and the console."""
