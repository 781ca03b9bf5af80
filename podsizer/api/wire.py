"""The Recommendation's wire form: strict pydantic models with camelCase aliases, used only at the edge.

The models check every contract rule of DESIGN.md "Recommendation" (quantities finite, non-negative,
int64-safe and well formed; resource names; min <= max; confidence in [0, 1]; strict JSON types) and
ignore unknown fields, so a newer writer's extra fields never break an older reader. Field order is the
order the codec writes, so a dump is byte-identical to what the store has always held.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, PlainSerializer, PlainValidator, model_validator
from pydantic.alias_generators import to_camel

from podsizer.api.identity import SUPPORTED_KINDS, recommendation_name
from podsizer.api.quantity import INT64_MAX, as_decimal, checked_quantity
from podsizer.api.resource_name import check_resource_name
from podsizer.kube.times import format_time, parse_time
from podsizer.untrusted import shown

API_GROUP = "podsizer.io"
API_VERSION = "v1alpha1"
KIND = "Recommendation"
GROUP_VERSION = f"{API_GROUP}/{API_VERSION}"


class FieldPathError(ValueError):
    """A rule broken below the field whose validator raised it; `path` is appended to that field's path."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def _type_name(value: object) -> str:
    return type(value).__name__


def _number(value: object) -> int | float:
    """A finite, non-negative JSON number (int or float kept as given, so it is written back the same)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {_type_name(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r}")
    if value < 0:
        raise ValueError(f"expected a non-negative number, got {value!r}")
    return value


def _fraction(value: object) -> int | float:
    number = _number(value)
    if number > 1:
        raise ValueError(f"expected a number in [0, 1], got {number!r}")
    return number


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {_type_name(value)} {value!r}")
    if not 0 <= value <= INT64_MAX:
        raise ValueError(f"expected an integer in [0, 2^63-1], got {value!r}")
    return value


def _time(value: object) -> datetime:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected an RFC 3339 time string, got {_type_name(value)}")
    return parse_time(value)


def _quantity(resource: str, value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise FieldPathError(resource, f"expected a quantity string or integer, got {_type_name(value)}")
    text = str(value)
    try:
        checked_quantity(resource, text)
    except ValueError as exc:
        raise FieldPathError(resource, str(exc)) from exc
    return text


def _quantities(value: object) -> dict[str, str]:
    """{resource name: quantity}; an integer quantity is kept as its decimal string."""
    if not isinstance(value, Mapping):
        raise ValueError(f"expected an object, got {_type_name(value)}")
    out: dict[str, str] = {}
    for key, quantity in value.items():
        if not isinstance(key, str):
            raise FieldPathError(str(key), f"invalid resource name {key!r}")
        try:
            check_resource_name(key)
        except ValueError as exc:
            raise FieldPathError(key, str(exc)) from exc
        out[key] = _quantity(key, quantity)
    return out


def _resource_name(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a resource name string, got {_type_name(value)}")
    return check_resource_name(value)


def _workload_kind(value: object) -> str:
    if value not in SUPPORTED_KINDS:
        raise ValueError(f"unsupported workload kind {value!r}; expected one of {', '.join(SUPPORTED_KINDS)}")
    return str(value)


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


_SHOWN_NAME_CHARS = 64  # a refused name is shown this far: enough to recognise it, never a flood


def _kubernetes_name(pattern: re.Pattern[str], longest: int, what: str) -> Callable[[object], str]:
    """A check of a name Kubernetes validates as `pattern` (a DNS-1123 label or subdomain)."""

    def check(value: object) -> str:
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {_type_name(value)}")
        if len(value) > longest or not pattern.fullmatch(value):
            raise ValueError(
                f"{shown(value, _SHOWN_NAME_CHARS)} is not a Kubernetes name ({what}, {longest} at most)"
            )
        return value

    return check


_dns_label = _kubernetes_name(_DNS_LABEL, 63, "lower-case letters, digits and '-'")
_dns_subdomain = _kubernetes_name(_DNS_SUBDOMAIN, 253, "lower-case letters, digits, '-' and '.'")


def container_name_problem(name: str) -> str | None:
    """Why `name` cannot be a container's name in a Recommendation (the codec's own words), or None."""
    try:
        _dns_label(name)
    except ValueError as exc:
        return str(exc)
    return None


def _container_or_wildcard(value: object) -> str:
    return "*" if value == "*" else _dns_label(value)


DnsLabel = Annotated[str, PlainValidator(_dns_label)]
DnsSubdomain = Annotated[str, PlainValidator(_dns_subdomain)]
ContainerOrWildcard = Annotated[str, PlainValidator(_container_or_wildcard)]
Number = Annotated[float, PlainValidator(_number)]
Fraction = Annotated[float, PlainValidator(_fraction)]
Count = Annotated[int, PlainValidator(_count)]
Time = Annotated[datetime, PlainValidator(_time), PlainSerializer(format_time, return_type=str)]
Quantities = Annotated[dict[str, str], PlainValidator(_quantities)]
ResourceName = Annotated[str, PlainValidator(_resource_name)]
WorkloadKind = Annotated[str, PlainValidator(_workload_kind)]


class Wire(BaseModel):
    """Strict JSON types, camelCase on the wire, unknown fields ignored."""

    model_config = ConfigDict(
        strict=True, extra="ignore", frozen=True, alias_generator=to_camel, populate_by_name=True
    )


class WindowWire(Wire):
    start: Time
    end: Time
    samples: Count = 0


class ContainerWire(Wire):
    name: DnsLabel
    requests: Quantities | None = None
    limits: Quantities | None = None
    confidence: Fraction = 0.0
    low_confidence: bool = False
    reason: str = ""


class GpuWire(Wire):
    model: str = ""
    allocated: Count = 0
    sm_active_p95: Fraction = 0.0
    fb_used_max_bytes: Count = 0
    idle: bool = False
    activity_signal: str = "SM_ACTIVE"
    idle_since: Time | None = None
    suggested_resource: ResourceName | None = None
    hourly_cost: Number | None = None
    wasted_hourly_cost: Number | None = None


class ForecastWire(Wire):
    horizon_days: Number = 7
    cpu_cores_peak: Number = 0.0
    memory_bytes_peak: Count = 0
    method: str = ""


class StatusWire(Wire):
    cluster: str | None = None
    generated_at: Time
    window: WindowWire
    sizing_mode: Literal["static", "autopilot"]
    reason: str = ""
    containers: list[ContainerWire] | None = None
    gpu: GpuWire | None = None
    forecast: ForecastWire | None = None


class PolicyWire(Wire):
    container_name: ContainerOrWildcard = "*"
    min_allowed: Quantities | None = None
    max_allowed: Quantities | None = None

    @model_validator(mode="after")
    def _min_not_above_max(self) -> Self:
        lows, highs = self.min_allowed or {}, self.max_allowed or {}
        for resource, low in lows.items():
            high = highs.get(resource)
            if high is not None and as_decimal(low) > as_decimal(high):
                raise FieldPathError(f"minAllowed.{resource}", f"{low} is above maxAllowed.{resource} {high}")
        return self


class ResourcePolicyWire(Wire):
    containers: list[PolicyWire] | None = None


class TargetRefWire(Wire):
    api_version: str | None = None
    kind: WorkloadKind
    name: DnsSubdomain


class SpecWire(Wire):
    target_ref: TargetRefWire
    resource_policy: ResourcePolicyWire | None = None


class MetadataWire(Wire):
    name: DnsSubdomain | None = None
    namespace: DnsLabel
    resource_version: str | None = None


class RecommendationWire(Wire):
    """One Recommendation object as the apiserver and the JSON file store hold it."""

    api_version: Literal["podsizer.io/v1alpha1"] = "podsizer.io/v1alpha1"
    kind: Literal["Recommendation"] = "Recommendation"
    metadata: MetadataWire
    spec: SpecWire
    status: StatusWire

    @model_validator(mode="after")
    def _the_workloads_own(self) -> Self:
        """One Recommendation per workload, named <kind-lowercase>-<name>: another object for the same
        workload must not shadow it (whichever was read last would win)."""
        ref = self.spec.target_ref
        expected = recommendation_name(ref.kind, ref.name)
        if self.metadata.name is not None and self.metadata.name != expected:
            raise FieldPathError(
                "metadata.name",
                f"{shown(self.metadata.name, _SHOWN_NAME_CHARS)} is not the Recommendation of "
                f"{ref.kind} {ref.name}, which is named {expected!r}",
            )
        return self
