"""Cluster policy for the pod plan: LimitRange, pod-level resources and ResourceQuota headroom (pure).

`fit(pod, changes, slots, cluster)` adjusts or drops cpu/memory changes so the patched pod is never
rejected by the LimitRange admission plugin, pod-level `spec.resources` validation or a ResourceQuota:

- Container LimitRange items: requests and limits clamped into [min, max]; limit/request kept within
  maxLimitRequestRatio by raising the request (never above max) or else lowering the limit (never below
  min or the request); when neither works the container's changes for that resource are dropped.
- Pod LimitRange items, pod-level resources and quota headroom: when the pod's aggregate moves past a
  bound, the changes moving that way are dropped (the pod keeps its own values there), each with a reason.

Dropping always restores the pod's own values for a (container, resource), request and limit together,
so a pod the cluster accepted without podsizer is accepted with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any, Literal, Protocol, runtime_checkable

from podsizer.podspec import Change, ContainerSlot, Field, Section, quantity, sidecar_indexes
from podsizer.resources import CPU, CPU_MEMORY, MEMORY

Amounts = Mapping[str, Decimal]
LimitType = Literal["Container", "Pod"]
QUOTA_KEYS = {
    CPU: "requests.cpu",
    MEMORY: "requests.memory",
    "requests.cpu": "requests.cpu",
    "requests.memory": "requests.memory",
    "limits.cpu": "limits.cpu",
    "limits.memory": "limits.memory",
}
_MIB = 2**20


def _amounts(raw: object) -> dict[str, Decimal]:
    """cpu and memory of a quantity map (what this step changes); unreadable values are ignored."""
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, Decimal] = {}
    for resource in CPU_MEMORY:
        value = quantity(raw.get(resource))
        if value is not None and value >= 0:
            out[resource] = value
    return out


@dataclass(frozen=True)
class LimitRangeItem:
    """One `spec.limits[]` entry with the apiserver's defaulting (defaultRequest <- default <- max)."""

    type: LimitType
    min: Amounts = field(default_factory=dict)
    max: Amounts = field(default_factory=dict)
    default: Amounts = field(default_factory=dict)
    default_request: Amounts = field(default_factory=dict)
    max_ratio: Amounts = field(default_factory=dict)

    @staticmethod
    def of(raw: Mapping[str, Any]) -> LimitRangeItem | None:
        kind = raw.get("type")
        if kind not in ("Container", "Pod"):
            return None  # PersistentVolumeClaim and others do not constrain cpu/memory of pods
        mx = _amounts(raw.get("max"))
        default = {**mx, **_amounts(raw.get("default"))}
        return LimitRangeItem(
            kind,
            _amounts(raw.get("min")),
            mx,
            default,
            {**default, **_amounts(raw.get("defaultRequest"))},
            _amounts(raw.get("maxLimitRequestRatio")),
        )


def limit_range_items(objects: Iterable[Mapping[str, Any]]) -> tuple[LimitRangeItem, ...]:
    """Every Container/Pod item of the namespace's LimitRange objects (all of them apply)."""
    out: list[LimitRangeItem] = []
    for obj in objects:
        spec = obj.get("spec")
        limits = spec.get("limits") if isinstance(spec, Mapping) else None
        for raw in limits if isinstance(limits, list) else []:
            item = LimitRangeItem.of(raw) if isinstance(raw, Mapping) else None
            if item is not None:
                out.append(item)
    return tuple(out)


def quota_headroom(objects: Iterable[Mapping[str, Any]]) -> dict[str, Decimal]:
    """hard - used per quota key (requests.cpu, limits.memory, ...), the smallest over the quotas.

    Every quota counts, scoped or not (conservative). `used` not reported yet counts as zero.
    """
    out: dict[str, Decimal] = {}
    for obj in objects:
        status, spec = obj.get("status"), obj.get("spec")
        status = status if isinstance(status, Mapping) else {}
        spec = spec if isinstance(spec, Mapping) else {}
        hard = status.get("hard") or spec.get("hard")
        used = status.get("used")
        if not isinstance(hard, Mapping):
            continue
        used = used if isinstance(used, Mapping) else {}
        for key, value in hard.items():
            name = QUOTA_KEYS.get(str(key))
            limit = quantity(value)
            if name is None or limit is None:
                continue
            room = max(limit - (quantity(used.get(key)) or Decimal(0)), Decimal(0))
            out[name] = min(room, out.get(name, room))
    return out


@dataclass(frozen=True)
class ClusterPolicy:
    """What the namespace's cluster objects allow: LimitRange items and ResourceQuota headroom."""

    limit_ranges: tuple[LimitRangeItem, ...] = ()
    quota_headroom: Amounts = field(default_factory=dict)

    @staticmethod
    def of(limit_ranges: Iterable[Mapping[str, Any]], quotas: Iterable[Mapping[str, Any]]) -> ClusterPolicy:
        return ClusterPolicy(limit_range_items(limit_ranges), quota_headroom(quotas))

    def bound(
        self, kind: LimitType, which: Literal["min", "max", "max_ratio"], resource: str
    ) -> Decimal | None:
        """The tightest value over every item of `kind`: the largest min, the smallest max and ratio."""
        amounts: list[Amounts] = [getattr(i, which) for i in self.limit_ranges if i.type == kind]
        values = [a[resource] for a in amounts if resource in a]
        if not values:
            return None
        return max(values) if which == "min" else min(values)

    def default(self, field_: Field, resource: str) -> Decimal | None:
        """What the LimitRanger writes into a container missing it (the first Container item with one)."""
        for item in self.limit_ranges:
            if item.type == "Container":
                value = (item.default_request if field_ == "requests" else item.default).get(resource)
                if value is not None:
                    return value
        return None


@runtime_checkable
class ClusterPolicyLookup(Protocol):
    """The namespace's ClusterPolicy from a watched cache (None: no LimitRange or ResourceQuota there).

    A value is replaced, never changed, when the namespace's objects change: callers may key on identity."""

    def cluster_policy(self, namespace: str) -> ClusterPolicy | None: ...


NO_CLUSTER_POLICY = ClusterPolicy()  # nothing known of the cluster: only the pod's own spec.resources count


@dataclass(frozen=True)
class Fitted:
    """The changes that fit the cluster's policy and why the others were changed or dropped."""

    changes: tuple[Change, ...]
    reasons: tuple[str, ...] = ()


UnitKey = tuple[Section, int, str]  # (section, index, resource)


@dataclass
class _Unit:
    """One container's request and limit of one resource: the pod's own values and the planned ones."""

    slot: ContainerSlot
    resource: str
    old_req: Decimal | None
    old_lim: Decimal | None
    req: Decimal | None
    lim: Decimal | None
    changes: dict[Field, Change]

    def moves(self, up: bool) -> bool:
        """True when the planned request or limit is above (`up`) or below the pod's own."""
        pairs = ((self.req, self.old_req), (self.lim, self.old_lim))
        zero = Decimal(0)
        return any(
            ((n or zero) > (o or zero)) if up else ((n or zero) < (o or zero)) for n, o in pairs if n != o
        )


def fmt(resource: str, value: Decimal, up: bool) -> str:
    """Quantity text for an exact value, rounded to millicores / bytes in the safe direction."""
    rounding = ROUND_CEILING if up else ROUND_FLOOR
    if resource == CPU:
        millis = int((value * 1000).to_integral_value(rounding))
        return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"
    n = int(value.to_integral_value(rounding))
    return f"{n // _MIB}Mi" if n % _MIB == 0 and n > 0 else str(n)


def admitted(
    slot: ContainerSlot, resource: str, cluster: ClusterPolicy
) -> tuple[Decimal | None, Decimal | None]:
    """The container's request and limit as the cluster admits them: a missing limit gets the
    LimitRange's default, a missing request its own limit, else the default request, as the apiserver
    and the LimitRanger do."""
    req = quantity(slot.current("requests", resource))
    given = quantity(slot.current("limits", resource))
    lim = given if given is not None else cluster.default("limits", resource)
    if req is None:  # the pod's own limit (API defaulting), else defaultRequest (itself defaulted to default)
        req = given if given is not None else cluster.default("requests", resource)
        req = req if req is not None else lim
    return req, lim


def _units(
    changes: Sequence[Change], slots: Sequence[ContainerSlot], cluster: ClusterPolicy
) -> dict[UnitKey, _Unit]:
    by_slot = {(s.section, s.index): s for s in slots}
    units: dict[UnitKey, _Unit] = {}
    for ch in changes:
        key = (ch.section, ch.index, ch.resource)
        unit = units.get(key)
        if unit is None:
            slot = by_slot[(ch.section, ch.index)]
            old_req, old_lim = admitted(slot, ch.resource, cluster)
            unit = units[key] = _Unit(slot, ch.resource, old_req, old_lim, old_req, old_lim, {})
        unit.changes[ch.field] = ch
        if ch.field == "requests":
            unit.req = quantity(ch.new)
        else:
            unit.lim = quantity(ch.new)
    return units


def _container_fit(unit: _Unit, cluster: ClusterPolicy) -> str | None:
    """Clamp into [min, max] and the ratio; the reason when the unit cannot fit (then it is dropped)."""
    r = unit.resource
    mn, mx = cluster.bound("Container", "min", r), cluster.bound("Container", "max", r)
    ratio = cluster.bound("Container", "max_ratio", r)
    req, lim = unit.req, unit.lim
    if req is not None:
        req = _clamp(r, req, mn, mx)
    if lim is not None:
        lim = _clamp(r, lim, mn, mx)
        if req is not None and lim < req:
            lim = req
    if (
        ratio is not None
        and ratio > 0
        and req is not None
        and lim is not None
        and req > 0
        and lim / req > ratio
    ):
        need = quantity(fmt(r, lim / ratio, up=True))
        cap = quantity(fmt(r, req * ratio, up=False))
        if need is not None and need <= lim and (mx is None or need <= mx):
            req = need
        elif cap is not None and cap >= req and (mn is None or cap >= mn):
            lim = cap
        else:
            return f"{unit.slot.name}: {r} limit/request ratio over the LimitRange's {ratio}"
    if mn is not None and mx is not None and mn > mx:
        return f"{unit.slot.name}: the LimitRange's {r} min {mn} is above its max {mx}"
    unit.req, unit.lim = req, lim
    return None


def _clamp(resource: str, value: Decimal, mn: Decimal | None, mx: Decimal | None) -> Decimal:
    if mn is not None and value < mn:
        value = quantity(fmt(resource, mn, up=True)) or mn
    if mx is not None and value > mx:
        value = quantity(fmt(resource, mx, up=False)) or mx
    return value


def aggregate(
    slots: Sequence[ContainerSlot], value: Callable[[ContainerSlot], Decimal | None], sidecars: frozenset[int]
) -> Decimal:
    """The pod's effective amount, as Kubernetes computes it: app containers and sidecars add up, an init
    container counts with the sidecars started before it, and the pod needs the larger of the two."""
    zero = Decimal(0)
    running = sum((value(s) or zero for s in slots if s.section == "containers"), zero)
    started, init_peak = zero, zero
    for s in (s for s in slots if s.section == "initContainers"):
        v = value(s) or zero
        if s.index in sidecars:
            running += v
            started += v
        else:
            init_peak = max(init_peak, v + started)
    return max(running, init_peak)


def _pod_bounds(pod: Mapping[str, Any]) -> tuple[Amounts, Amounts]:
    """Pod-level `spec.resources` (Kubernetes 1.32+): requests and limits."""
    spec = pod.get("spec")
    res = spec.get("resources") if isinstance(spec, Mapping) else None
    if not isinstance(res, Mapping):
        return {}, {}
    return _amounts(res.get("requests")), _amounts(res.get("limits"))


def _has_pod_resources(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec")
    return isinstance(spec, Mapping) and spec.get("resources") is not None


class _Pod:
    """The pod with the planned values, for aggregate checks."""

    def __init__(
        self,
        pod: Mapping[str, Any],
        slots: Sequence[ContainerSlot],
        units: dict[UnitKey, _Unit],
        cluster: ClusterPolicy,
    ):
        self.slots = slots
        self.units = units
        self.cluster = cluster
        self.sidecars = sidecar_indexes(pod)
        self.requests, self.limits = _pod_bounds(pod)

    def _value(
        self, field_: Field, resource: str, planned: bool
    ) -> Callable[[ContainerSlot], Decimal | None]:
        def value(slot: ContainerSlot) -> Decimal | None:
            unit = self.units.get((slot.section, slot.index, resource))
            if unit is not None:
                if field_ == "requests":
                    return unit.req if planned else unit.old_req
                return unit.lim if planned else unit.old_lim
            req, lim = admitted(slot, resource, self.cluster)  # unchanged: what the LimitRanger leaves
            return req if field_ == "requests" else lim

        return value

    def total(self, field_: Field, resource: str, planned: bool = True) -> Decimal:
        return aggregate(self.slots, self._value(field_, resource, planned), self.sidecars)

    def drop(self, resource: str, up: bool | None) -> list[_Unit]:
        """Remove the units of `resource` moving up (True), down (False) or all (None); returns them."""
        gone = [u for k, u in self.units.items() if k[2] == resource and (up is None or u.moves(up))]
        for u in gone:
            del self.units[(u.slot.section, u.slot.index, resource)]
        return gone


def _aggregate_checks(pod: _Pod, cluster: ClusterPolicy, resource: str) -> list[str]:
    """Pod LimitRange items, pod-level resources and quota headroom for one resource; drops what breaks."""
    reasons: list[str] = []
    r = resource

    def over(label: str, field_: Field, bound: Decimal | None, up: bool = True) -> None:
        if bound is None:
            return
        total = pod.total(field_, r)
        broken = total > bound if up else total < bound
        if broken and pod.drop(r, up):
            side = "above" if up else "below"
            reasons.append(
                f"{r} {field_} {fmt(r, total, up=True)} {side} {label} {fmt(r, bound, up=True)}: "
                f"{'increases' if up else 'decreases'} skipped"
            )

    for _ in range(3):  # each pass only removes changes; stop when nothing more breaks
        before = len(pod.units)
        over("the LimitRange's Pod max", "requests", cluster.bound("Pod", "max", r))
        over("the LimitRange's Pod max", "limits", cluster.bound("Pod", "max", r))
        over("the LimitRange's Pod min", "requests", cluster.bound("Pod", "min", r), up=False)
        ratio = cluster.bound("Pod", "max_ratio", r)
        req, lim = pod.total("requests", r), pod.total("limits", r)
        if ratio is not None and req > 0 and lim / req > ratio and pod.drop(r, None):
            reasons.append(f"{r} pod limit/request ratio over the LimitRange's {ratio}: changes skipped")
        pod_req, pod_lim = pod.requests.get(r), pod.limits.get(r)
        cap = min((v for v in (pod_req, pod_lim) if v is not None), default=None)
        over("the pod-level resources' limit" if cap == pod_lim else "the pod-level request", "requests", cap)
        if pod_lim is not None:
            over("the pod-level limit", "limits", pod_lim)
        over("the ResourceQuota's headroom", "requests", cluster.quota_headroom.get(f"requests.{r}"))
        over("the ResourceQuota's headroom", "limits", cluster.quota_headroom.get(f"limits.{r}"))
        if len(pod.units) == before:
            break
    return reasons


def _container_limits_under_pod(pod: _Pod, resource: str) -> list[str]:
    """Pod-level resources: no container's limit may be above the pod-level limit."""
    pod_lim = pod.limits.get(resource)
    if pod_lim is None:
        return []
    reasons: list[str] = []
    for key, unit in list(pod.units.items()):
        if key[2] == resource and unit.lim is not None and unit.lim > pod_lim and unit.moves(True):
            del pod.units[key]
            reasons.append(f"{unit.slot.name}: {resource} limit above the pod-level limit: changes skipped")
    return reasons


def _emit(unit: _Unit) -> list[Change]:
    """The unit's final values as changes from the pod's own text (kept where the plan's value stands)."""
    out: list[Change] = []
    for field_, value, before in (("requests", unit.req, unit.old_req), ("limits", unit.lim, unit.old_lim)):
        f: Field = "requests" if field_ == "requests" else "limits"
        own = unit.slot.current(f, unit.resource)  # absent: `before` is what the LimitRanger writes
        planned = unit.changes.get(f)
        if value is None:
            if planned is not None:
                out.append(planned)
            continue
        if planned is not None and quantity(planned.new) == value:
            out.append(planned)
        elif before != value:
            s = unit.slot
            out.append(
                Change(s.section, s.index, s.name, f, unit.resource, own, fmt(unit.resource, value, True))
            )
    return out


def fit(
    pod: Mapping[str, Any], changes: Sequence[Change], slots: Sequence[ContainerSlot], cluster: ClusterPolicy
) -> Fitted:
    """The cpu/memory changes adjusted or dropped so the patched pod passes the cluster's policy.

    Changes of other resources pass through untouched. The order of the result follows the input.
    """
    if not cluster.limit_ranges and not cluster.quota_headroom and not _has_pod_resources(pod):
        return Fitted(tuple(changes))
    mine = [c for c in changes if c.resource in CPU_MEMORY]
    others = [c for c in changes if c.resource not in CPU_MEMORY]
    units = _units(mine, slots, cluster)
    reasons: list[str] = []
    for key, unit in list(units.items()):
        why = _container_fit(unit, cluster)
        if why is not None:
            del units[key]
            reasons.append(f"{why}: changes skipped")
    pod_view = _Pod(pod, slots, units, cluster)
    for resource in CPU_MEMORY:
        reasons.extend(_container_limits_under_pod(pod_view, resource))
        reasons.extend(_aggregate_checks(pod_view, cluster, resource))
    first: dict[UnitKey, int] = {}
    for i, c in enumerate(mine):
        first.setdefault((c.section, c.index, c.resource), i)
    kept = [c for unit in units.values() for c in _emit(unit)]
    kept.sort(key=lambda c: (first[(c.section, c.index, c.resource)], c.field != "requests"))
    return Fitted(tuple(kept + others), tuple(reasons))
