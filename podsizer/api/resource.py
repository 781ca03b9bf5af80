"""The Recommendation resource (podsizer.io/v1alpha1): frozen domain values and their one codec."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import format_resource, parse
from podsizer.api.wire import (
    KIND,
    ContainerWire,
    FieldPathError,
    ForecastWire,
    GpuWire,
    PolicyWire,
    RecommendationWire,
)
from podsizer.untrusted import MAX_SHOWN_CHARS, one_line

PLURAL = "recommendations"

SizingMode = Literal["static", "autopilot"]


class RecommendationError(ValueError):
    """A Recommendation object that does not match the contract; the message names the field."""


@dataclass(frozen=True)
class Window:
    """The span of history a recommendation was computed from."""

    start: datetime
    end: datetime
    samples: int


@dataclass(frozen=True)
class ContainerRecommendation:
    """Requests/limits for one container, as Kubernetes quantity strings."""

    name: str
    requests: Mapping[str, str]
    limits: Mapping[str, str]
    confidence: float
    reason: str
    low_confidence: bool = False


@dataclass(frozen=True)
class GpuRecommendation:
    """GPU sizing, idle-waste and cost findings for a workload."""

    model: str
    allocated: int
    sm_active_p95: float
    fb_used_max_bytes: int
    idle: bool = False
    idle_since: datetime | None = None
    suggested_resource: str | None = None
    hourly_cost: float | None = None
    wasted_hourly_cost: float | None = None
    activity_signal: str = "SM_ACTIVE"


@dataclass(frozen=True)
class Forecast:
    """Predicted demand over the forecast horizon (workload totals). The *_peak fields (named so on the wire,
    cpuCoresPeak and memoryBytesPeak) are the busiest hour's mean: the highest forecast hourly mean, not a
    sample peak, so they can sit below a p99 of the samples."""

    horizon_days: float
    cpu_cores_peak: float
    memory_bytes_peak: float
    method: str


@dataclass(frozen=True)
class ContainerPolicy:
    """User-set bounds for one container ("*" for all), from spec.resourcePolicy; base units."""

    container: str
    min_allowed: Mapping[str, float] = field(default_factory=dict)
    max_allowed: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Recommendation:
    """One workload's recommendation: spec (target, user policy) and status (what the recommender found)."""

    target: WorkloadRef
    generated_at: datetime
    window: Window
    sizing_mode: SizingMode
    containers: tuple[ContainerRecommendation, ...]
    reason: str = ""
    gpu: GpuRecommendation | None = None
    forecast: Forecast | None = None
    policy: tuple[ContainerPolicy, ...] = ()
    resource_version: str | None = None

    @property
    def cluster(self) -> str | None:
        """The cluster the workload runs in (status.cluster): the target's, None in a single-cluster setup."""
        return self.target.cluster or None

    @property
    def name(self) -> str:
        return self.target.recommendation_name

    @property
    def namespace(self) -> str:
        return self.target.namespace

    def container(self, name: str) -> ContainerRecommendation | None:
        return next((c for c in self.containers if c.name == name), None)


def _error(exc: ValidationError) -> RecommendationError:
    """The first error, as `path.to[0].field: what is wrong`."""
    detail: ErrorDetails = exc.errors(include_url=False)[0]
    # Input locations use aliases; the encoder's use Python names: camelCase both.
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{to_camel(p)}" for p in detail["loc"]).lstrip(".")
    cause = (detail.get("ctx") or {}).get("error")
    if isinstance(cause, FieldPathError):
        path = f"{path}.{cause.path}".lstrip(".")
    if isinstance(cause, ValueError):
        message = str(cause)
    elif detail["type"] == "missing":
        message = "required"
    elif detail["type"] in ("model_type", "dict_type"):
        message = f"expected an object, got {type(detail['input']).__name__}"
    else:
        message = f"{detail['msg']}, got {_short(detail['input'])}"
    return RecommendationError(f"{path or KIND}: {message}")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _validate(obj: Any) -> RecommendationWire:
    try:
        return RecommendationWire.model_validate(obj)
    except ValidationError as exc:
        raise _error(exc) from None


def _whole(value: float) -> int | float:
    """A float that holds a whole number as an int (what the wire carries); NaN and infinities stay as
    they are, for the wire model to reject with the field's name."""
    return int(value) if math.isfinite(value) else value


def _bounds_to_wire(values: Mapping[str, float]) -> dict[str, str] | None:
    return {k: format_resource(k, v) for k, v in values.items()} or None


def _container_fields(c: ContainerRecommendation) -> dict[str, Any]:
    return {
        "name": c.name,
        "requests": dict(c.requests),
        "limits": dict(c.limits),
        "confidence": round(c.confidence, 4),
        "low_confidence": c.low_confidence,
        "reason": c.reason,
    }


def _gpu_fields(g: GpuRecommendation) -> dict[str, Any]:
    return {
        "model": g.model,
        "allocated": g.allocated,
        "sm_active_p95": round(g.sm_active_p95, 4),
        "fb_used_max_bytes": g.fb_used_max_bytes,
        "idle": g.idle,
        "activity_signal": g.activity_signal,
        "idle_since": g.idle_since,
        "suggested_resource": g.suggested_resource,
        "hourly_cost": None if g.hourly_cost is None else round(g.hourly_cost, 6),
        "wasted_hourly_cost": None if g.wasted_hourly_cost is None else round(g.wasted_hourly_cost, 6),
    }


def _forecast_fields(f: Forecast) -> dict[str, Any]:
    return {
        "horizon_days": f.horizon_days,
        "cpu_cores_peak": round(f.cpu_cores_peak, 6),
        "memory_bytes_peak": _whole(f.memory_bytes_peak),
        "method": f.method,
    }


def _policy_fields(rec: Recommendation) -> dict[str, Any] | None:
    if not rec.policy:
        return None
    return {
        "containers": [
            {
                "container_name": p.container,
                "min_allowed": _bounds_to_wire(p.min_allowed),
                "max_allowed": _bounds_to_wire(p.max_allowed),
            }
            for p in rec.policy
        ]
    }


def _fields(rec: Recommendation) -> dict[str, Any]:
    """The wire model's fields (by their Python names) for a domain value, rounded as the wire keeps them."""
    t = rec.target
    return {
        "metadata": {
            "name": rec.name,
            "namespace": rec.namespace,
            "resource_version": rec.resource_version or None,
        },
        "spec": {
            "target_ref": {"api_version": t.api_version, "kind": t.kind, "name": t.name},
            "resource_policy": _policy_fields(rec),
        },
        "status": {
            "cluster": rec.cluster,
            "generated_at": rec.generated_at,
            "window": {"start": rec.window.start, "end": rec.window.end, "samples": rec.window.samples},
            "sizing_mode": rec.sizing_mode,
            "reason": rec.reason,
            "containers": [_container_fields(c) for c in rec.containers],
            "gpu": None if rec.gpu is None else _gpu_fields(rec.gpu),
            "forecast": None if rec.forecast is None else _forecast_fields(rec.forecast),
        },
    }


def _checked(rec: Recommendation) -> RecommendationWire:
    try:
        fields = _fields(rec)
    except (ValueError, OverflowError) as exc:  # a bound that cannot be formatted as a quantity (NaN, inf)
        raise RecommendationError(f"spec.resourcePolicy: {exc}") from exc
    return _validate(fields)


def check_recommendation(rec: Recommendation) -> None:
    """RecommendationError naming the field where `rec` breaks the contract (what no store could write);
    the check of recommendation_to_resource without building the object."""
    _checked(rec)


def recommendation_to_resource(rec: Recommendation) -> dict[str, Any]:
    """Domain value -> the Kubernetes object (also the JSON file store's element).

    The value is checked against the contract first: RecommendationError names the field it breaks.
    """
    return _checked(rec).model_dump(by_alias=True, exclude_none=True)


def _container(c: ContainerWire) -> ContainerRecommendation:
    return ContainerRecommendation(
        name=c.name,
        requests=dict(c.requests or {}),
        limits=dict(c.limits or {}),
        confidence=float(c.confidence),
        reason=c.reason,
        low_confidence=c.low_confidence,
    )


def _gpu(g: GpuWire) -> GpuRecommendation:
    return GpuRecommendation(
        model=g.model,
        allocated=g.allocated,
        sm_active_p95=float(g.sm_active_p95),
        fb_used_max_bytes=g.fb_used_max_bytes,
        idle=g.idle,
        idle_since=g.idle_since,
        suggested_resource=g.suggested_resource,
        hourly_cost=None if g.hourly_cost is None else float(g.hourly_cost),
        wasted_hourly_cost=None if g.wasted_hourly_cost is None else float(g.wasted_hourly_cost),
        activity_signal=g.activity_signal,
    )


def _forecast(f: ForecastWire) -> Forecast:
    return Forecast(
        horizon_days=float(f.horizon_days),
        cpu_cores_peak=float(f.cpu_cores_peak),
        memory_bytes_peak=float(f.memory_bytes_peak),
        method=f.method,
    )


def _policy(p: PolicyWire) -> ContainerPolicy:
    return ContainerPolicy(
        container=p.container_name,
        min_allowed={k: parse(v) for k, v in (p.min_allowed or {}).items()},
        max_allowed={k: parse(v) for k, v in (p.max_allowed or {}).items()},
    )


def recommendation_from_resource(obj: Any) -> Recommendation:
    """The Kubernetes object -> domain value; RecommendationError names the first bad field."""
    wire = _validate(obj)
    status, ref = wire.status, wire.spec.target_ref
    policy = wire.spec.resource_policy
    return Recommendation(
        target=WorkloadRef(wire.metadata.namespace, ref.kind, ref.name, status.cluster or ""),
        generated_at=status.generated_at,
        window=Window(status.window.start, status.window.end, status.window.samples),
        sizing_mode=status.sizing_mode,
        containers=tuple(_container(c) for c in status.containers or ()),
        reason=status.reason,
        gpu=None if status.gpu is None else _gpu(status.gpu),
        forecast=None if status.forecast is None else _forecast(status.forecast),
        policy=tuple(_policy(p) for p in (policy.containers if policy else None) or ()),
        resource_version=wire.metadata.resource_version,
    )


def object_name(obj: object) -> str:
    """`namespace/name` of a raw Recommendation object, for the log line that skips it: one line, bounded
    (the names are whatever the store holds)."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    parts = [meta.get(k) if isinstance(meta, Mapping) else None for k in ("namespace", "name")]
    return one_line("/".join(p if isinstance(p, str) and p else "?" for p in parts), MAX_SHOWN_CHARS)


def of_cluster(recs: Iterable[Recommendation], cluster_name: str) -> list[Recommendation]:
    """The recommendations a process of cluster `cluster_name` uses (webhook, console on a shared store).

    With a name: that cluster's, and those without a cluster (a single-cluster setup's) for workloads the
    cluster has none of its own. Without one: likewise for the one cluster the recommendations name, if
    they name at most one; when they name several, only those without a cluster (never another's).
    """
    recs = list(recs)
    if not cluster_name:
        named = {r.target.cluster for r in recs if r.target.cluster}
        if len(named) != 1:
            return [r for r in recs if not r.target.cluster]
        (cluster_name,) = named
    own = [r for r in recs if r.target.cluster == cluster_name]
    have = {r.target.in_cluster("") for r in own}
    return own + [r for r in recs if not r.target.cluster and r.target not in have]
