"""The Recommendation resource (podsizer.io/v1alpha1): frozen domain values and their one wire codec."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, cast

from podsizer.api.identity import SUPPORTED_KINDS, WorkloadRef
from podsizer.api.quantity import parse

API_GROUP = "podsizer.io"
API_VERSION = "v1alpha1"
KIND = "Recommendation"
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
    """Predicted demand over the forecast horizon (workload totals)."""

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
    def name(self) -> str:
        return self.target.recommendation_name

    @property
    def namespace(self) -> str:
        return self.target.namespace

    def container(self, name: str) -> ContainerRecommendation | None:
        return next((c for c in self.containers if c.name == name), None)


def _rfc3339(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _parse_time(value: Any, where: str) -> datetime:
    if not isinstance(value, str):
        raise RecommendationError(f"{where}: expected an RFC 3339 time string, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise RecommendationError(f"{where}: invalid RFC 3339 time {value!r}") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def _bounds_to_wire(values: Mapping[str, float]) -> dict[str, str]:
    from podsizer.api.quantity import format_resource

    return {k: format_resource(k, v) for k, v in values.items()}


def recommendation_to_resource(rec: Recommendation) -> dict[str, Any]:
    """Domain value -> the Kubernetes object (also the JSON file store's element)."""
    status: dict[str, Any] = {
        "generatedAt": _rfc3339(rec.generated_at),
        "window": {
            "start": _rfc3339(rec.window.start),
            "end": _rfc3339(rec.window.end),
            "samples": rec.window.samples,
        },
        "sizingMode": rec.sizing_mode,
        "reason": rec.reason,
        "containers": [
            {
                "name": c.name,
                "requests": dict(c.requests),
                "limits": dict(c.limits),
                "confidence": round(c.confidence, 4),
                "lowConfidence": c.low_confidence,
                "reason": c.reason,
            }
            for c in rec.containers
        ],
    }
    if rec.gpu is not None:
        g = rec.gpu
        gpu: dict[str, Any] = {
            "model": g.model,
            "allocated": g.allocated,
            "smActiveP95": round(g.sm_active_p95, 4),
            "fbUsedMaxBytes": g.fb_used_max_bytes,
            "idle": g.idle,
            "activitySignal": g.activity_signal,
        }
        if g.idle_since is not None:
            gpu["idleSince"] = _rfc3339(g.idle_since)
        if g.suggested_resource is not None:
            gpu["suggestedResource"] = g.suggested_resource
        if g.hourly_cost is not None:
            gpu["hourlyCost"] = round(g.hourly_cost, 6)
        if g.wasted_hourly_cost is not None:
            gpu["wastedHourlyCost"] = round(g.wasted_hourly_cost, 6)
        status["gpu"] = gpu
    if rec.forecast is not None:
        f = rec.forecast
        status["forecast"] = {
            "horizonDays": f.horizon_days,
            "cpuCoresPeak": round(f.cpu_cores_peak, 6),
            "memoryBytesPeak": int(f.memory_bytes_peak),
            "method": f.method,
        }
    spec: dict[str, Any] = {
        "targetRef": {
            "apiVersion": rec.target.api_version,
            "kind": rec.target.kind,
            "name": rec.target.name,
        }
    }
    if rec.policy:
        spec["resourcePolicy"] = {
            "containers": [
                {
                    "containerName": p.container,
                    **({"minAllowed": _bounds_to_wire(p.min_allowed)} if p.min_allowed else {}),
                    **({"maxAllowed": _bounds_to_wire(p.max_allowed)} if p.max_allowed else {}),
                }
                for p in rec.policy
            ]
        }
    metadata: dict[str, Any] = {"name": rec.name, "namespace": rec.namespace}
    if rec.resource_version:
        metadata["resourceVersion"] = rec.resource_version
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": KIND,
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }


def _mapping(obj: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(obj, Mapping):
        raise RecommendationError(f"{where}: expected an object, got {type(obj).__name__}")
    return cast(Mapping[str, Any], obj)


def _quantities(obj: Any, where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in _mapping(obj or {}, where).items():
        try:
            parse(value)
        except ValueError as exc:
            raise RecommendationError(f"{where}.{key}: {exc}") from exc
        out[str(key)] = str(value)
    return out


def _bounds(obj: Any, where: str) -> dict[str, float]:
    return {k: parse(v) for k, v in _quantities(obj, where).items()}


def recommendation_from_resource(obj: Any) -> Recommendation:
    """The Kubernetes object -> domain value; RecommendationError names the first bad field."""
    root = _mapping(obj, "Recommendation")
    if root.get("kind", KIND) != KIND:
        raise RecommendationError(f"kind: expected {KIND!r}, got {root.get('kind')!r}")
    meta = _mapping(root.get("metadata"), "metadata")
    namespace = meta.get("namespace")
    if not isinstance(namespace, str) or not namespace:
        raise RecommendationError("metadata.namespace: required")
    spec = _mapping(root.get("spec"), "spec")
    ref = _mapping(spec.get("targetRef"), "spec.targetRef")
    kind, name = ref.get("kind"), ref.get("name")
    if kind not in SUPPORTED_KINDS:
        raise RecommendationError(f"spec.targetRef.kind: unsupported workload kind {kind!r}")
    if not isinstance(name, str) or not name:
        raise RecommendationError("spec.targetRef.name: required")
    target = WorkloadRef(namespace, str(kind), name)

    policies: list[ContainerPolicy] = []
    rp = spec.get("resourcePolicy")
    if rp is not None:
        for i, p in enumerate(_mapping(rp, "spec.resourcePolicy").get("containers") or []):
            where = f"spec.resourcePolicy.containers[{i}]"
            p = _mapping(p, where)
            policies.append(
                ContainerPolicy(
                    container=str(p.get("containerName", "*")),
                    min_allowed=_bounds(p.get("minAllowed"), f"{where}.minAllowed"),
                    max_allowed=_bounds(p.get("maxAllowed"), f"{where}.maxAllowed"),
                )
            )

    status = _mapping(root.get("status"), "status")
    window = _mapping(status.get("window"), "status.window")
    mode = status.get("sizingMode")
    if mode not in ("static", "autopilot"):
        raise RecommendationError(f"status.sizingMode: expected static or autopilot, got {mode!r}")
    containers: list[ContainerRecommendation] = []
    raw_containers = status.get("containers") or []
    if not isinstance(raw_containers, Sequence) or isinstance(raw_containers, str):
        raise RecommendationError("status.containers: expected a list")
    for i, c in enumerate(raw_containers):
        where = f"status.containers[{i}]"
        c = _mapping(c, where)
        cname = c.get("name")
        if not isinstance(cname, str) or not cname:
            raise RecommendationError(f"{where}.name: required")
        confidence = c.get("confidence", 0.0)
        if not isinstance(confidence, int | float) or not 0.0 <= float(confidence) <= 1.0:
            raise RecommendationError(f"{where}.confidence: expected a number in [0, 1], got {confidence!r}")
        containers.append(
            ContainerRecommendation(
                name=cname,
                requests=_quantities(c.get("requests"), f"{where}.requests"),
                limits=_quantities(c.get("limits"), f"{where}.limits"),
                confidence=float(confidence),
                reason=str(c.get("reason", "")),
                low_confidence=bool(c.get("lowConfidence", False)),
            )
        )
    gpu = None
    if status.get("gpu") is not None:
        g = _mapping(status["gpu"], "status.gpu")
        gpu = GpuRecommendation(
            model=str(g.get("model", "")),
            allocated=int(g.get("allocated", 0)),
            sm_active_p95=float(g.get("smActiveP95", 0.0)),
            fb_used_max_bytes=int(g.get("fbUsedMaxBytes", 0)),
            idle=bool(g.get("idle", False)),
            idle_since=_parse_time(g["idleSince"], "status.gpu.idleSince") if g.get("idleSince") else None,
            suggested_resource=g.get("suggestedResource"),
            hourly_cost=float(g["hourlyCost"]) if g.get("hourlyCost") is not None else None,
            wasted_hourly_cost=(
                float(g["wastedHourlyCost"]) if g.get("wastedHourlyCost") is not None else None
            ),
            activity_signal=str(g.get("activitySignal", "SM_ACTIVE")),
        )
    forecast = None
    if status.get("forecast") is not None:
        f = _mapping(status["forecast"], "status.forecast")
        forecast = Forecast(
            horizon_days=float(f.get("horizonDays", 7)),
            cpu_cores_peak=float(f.get("cpuCoresPeak", 0.0)),
            memory_bytes_peak=float(f.get("memoryBytesPeak", 0.0)),
            method=str(f.get("method", "")),
        )
    return Recommendation(
        target=target,
        generated_at=_parse_time(status.get("generatedAt"), "status.generatedAt"),
        window=Window(
            start=_parse_time(window.get("start"), "status.window.start"),
            end=_parse_time(window.get("end"), "status.window.end"),
            samples=int(window.get("samples", 0)),
        ),
        sizing_mode=cast(SizingMode, mode),
        containers=tuple(containers),
        reason=str(status.get("reason", "")),
        gpu=gpu,
        forecast=forecast,
        policy=tuple(policies),
        resource_version=meta.get("resourceVersion"),
    )
