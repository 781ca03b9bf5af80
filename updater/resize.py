"""In-place resize (KEP-1287): the pod's resize status, what forbids a change in place, the patch body."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from podsizer.kube.times import read_time
from podsizer.podspec import Change, Section, container_slots, quantity
from podsizer.resources import CPU, CPU_MEMORY, MEMORY
from updater.podstate import mapping

ResizeState = Literal["none", "pending", "in-progress", "deferred", "infeasible"]
_OLD_STATUS: Mapping[str, ResizeState] = {  # status.resize, 1.27-1.32 (removed in 1.33)
    "Proposed": "pending",
    "InProgress": "in-progress",
    "Deferred": "deferred",
    "Infeasible": "infeasible",
}


@dataclass(frozen=True)
class ResizeStatus:
    """Where the kubelet is with the pod's last resize; `since`: when it entered that state (if known)."""

    state: ResizeState = "none"
    since: datetime | None = None
    message: str = ""


def _conditions(pod: Mapping[str, object]) -> list[Mapping[str, Any]]:
    raw = mapping(pod.get("status")).get("conditions")
    return [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else []


def resize_status(pod: Mapping[str, object]) -> ResizeStatus:
    """From the PodResizePending (reason Deferred | Infeasible) and PodResizeInProgress conditions (1.33+),
    else the older status.resize field."""
    for cond in _conditions(pod):
        if cond.get("status") != "True":
            continue
        since, message = read_time(cond.get("lastTransitionTime")), str(cond.get("message") or "")
        if cond.get("type") == "PodResizePending":
            state: ResizeState = "infeasible" if cond.get("reason") == "Infeasible" else "deferred"
            return ResizeStatus(state, since, message)
        if cond.get("type") == "PodResizeInProgress":
            return ResizeStatus("in-progress", since, message)
    old = mapping(pod.get("status")).get("resize")
    return ResizeStatus(_OLD_STATUS.get(str(old), "none")) if old else ResizeStatus()


def _containers(pod: Mapping[str, object], section: str) -> list[Mapping[str, Any]]:
    items = mapping(pod.get("spec")).get(section)
    return [c if isinstance(c, Mapping) else {} for c in items] if isinstance(items, list) else []


def resize_policy(container: Mapping[str, Any], resource: str) -> str:
    """The container's restartPolicy for `resource` on resize: NotRequired (the default) or
    RestartContainer."""
    raw = container.get("resizePolicy")
    for entry in raw if isinstance(raw, list) else ():
        if isinstance(entry, Mapping) and entry.get("resourceName") == resource:
            return str(entry.get("restartPolicy") or "NotRequired")
    return "NotRequired"


def restarts(pod: Mapping[str, object], changes: Sequence[Change]) -> tuple[str, ...]:
    """Containers whose resizePolicy restarts them for one of the changes (the kubelet honours it)."""
    out: list[str] = []
    for c in changes:
        listed = _containers(pod, c.section)
        container = listed[c.index] if c.index < len(listed) else {}
        if resize_policy(container, c.resource) == "RestartContainer" and c.container not in out:
            out.append(c.container)
    return tuple(out)


def _resources(pod: Mapping[str, object]) -> list[tuple[Mapping[str, object], Mapping[str, object]]]:
    return [(s.requests, s.limits) for s in container_slots(pod) if s.section == "containers"]


def qos_class(containers: Sequence[tuple[Mapping[str, object], Mapping[str, object]]]) -> str:
    """BestEffort, Guaranteed or Burstable from (requests, limits) per app container (cpu and memory)."""
    if all(not req.get(r) and not lim.get(r) for req, lim in containers for r in CPU_MEMORY):
        return "BestEffort"
    for req, lim in containers:
        for r in CPU_MEMORY:
            limit = quantity(lim.get(r))
            request = quantity(req.get(r)) if req.get(r) is not None else limit
            if limit is None or request != limit:
                return "Burstable"
    return "Guaranteed"


def after(pod: Mapping[str, object], changes: Sequence[Change]) -> dict[str, Any]:
    """A copy of the pod's spec containers with the changes applied (for the QoS check)."""
    out = [(dict(req), dict(lim)) for req, lim in _resources(pod)]
    for c in changes:
        if c.section != "containers" or c.index >= len(out):
            continue
        target = out[c.index][0 if c.field == "requests" else 1]
        if c.new is None:
            target.pop(c.resource, None)
        else:
            target[c.resource] = c.new
    return {"containers": out}


def in_place_blocker(
    pod: Mapping[str, object], changes: Sequence[Change], usage: Mapping[str, Decimal] | None
) -> str | None:
    """Why these changes cannot be made in place (the reason names the rule), or None.

    GPU count or MIG changes never are (only recreation); the QoS class may not change; a pod with
    restartPolicy Never cannot restart a container its resizePolicy would restart; a memory limit is never
    lowered below the container's current usage, and not in place while that usage is unknown."""
    if any(c.resource not in CPU_MEMORY for c in changes):
        return "gpu-change"
    before = qos_class(_resources(pod))
    if qos_class(after(pod, changes)["containers"]) != before:
        return "qos-change"
    if mapping(pod.get("spec")).get("restartPolicy") == "Never" and restarts(pod, changes):
        return "restart-not-allowed"
    return memory_floor(changes, usage)


def memory_floor(changes: Sequence[Change], usage: Mapping[str, Decimal] | None) -> str | None:
    """A memory limit lowered in place: "memory-below-usage" under the container's current usage,
    "memory-usage-unknown" when usage is not known; None when every lowered limit stays above usage."""
    for c in changes:
        if c.resource != MEMORY or c.field != "limits":
            continue
        old, new = quantity(c.old), quantity(c.new)
        if old is not None and (new is None or new >= old):
            continue  # raised: always safe
        used = (usage or {}).get(c.container)
        if used is None:
            return "memory-usage-unknown"
        if new is not None and new < used:
            return "memory-below-usage"
    return None


def resize_body(pod: Mapping[str, object], changes: Sequence[Change]) -> dict[str, Any]:
    """The strategic merge patch of the `resize` subresource: each changed container's full cpu/memory
    requests and limits after the changes (containers by name; sidecars under initContainers)."""
    slots = {(s.section, s.index): s for s in container_slots(pod)}
    touched: dict[tuple[Section, int], dict[str, dict[str, str | None]]] = {}
    for c in changes:
        slot = slots.get((c.section, c.index))
        if slot is None or c.resource not in (CPU, MEMORY):
            continue
        res = touched.setdefault((c.section, c.index), {"requests": {}, "limits": {}})
        res[c.field][c.resource] = c.new
    spec: dict[str, list[dict[str, Any]]] = {}
    for (section, index), res in sorted(touched.items()):
        resources = {f: values for f, values in res.items() if values}
        spec.setdefault(section, []).append({"name": slots[(section, index)].name, "resources": resources})
    return {"spec": spec}
