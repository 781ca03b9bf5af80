"""A pod's containers as slots, the Change value, exact quantities, and the pod's cache shape."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Literal, NamedTuple

from podsizer.api.quantity import as_decimal, exact_quantity

Section = Literal["containers", "initContainers"]
Field = Literal["requests", "limits"]
SECTIONS: tuple[Section, ...] = ("initContainers", "containers")
FIELDS: tuple[Field, ...] = ("requests", "limits")


class Change(NamedTuple):
    """One resource value of one container: old -> new (new None removes the key).

    A NamedTuple, not a dataclass: reviews build many and frozen dataclass construction showed up.
    """

    section: Section
    index: int  # type: ignore[assignment]  # shadows tuple.index, which nothing here calls
    container: str
    field: Field
    resource: str
    old: str | None
    new: str | None

    def to_json(self) -> dict[str, str | None]:
        return {
            "container": self.container,
            "containerType": str(self.section),
            "field": str(self.field),
            "resource": self.resource,
            "from": self.old,
            "to": self.new,
        }


class ContainerSlot(NamedTuple):
    """A container of the pod (or template) with its current requests/limits (quantities as sent)."""

    section: Section
    index: int  # type: ignore[assignment]  # shadows tuple.index, which nothing here calls
    name: str
    requests: Mapping[str, object]
    limits: Mapping[str, object]

    def current(self, field: Field, resource: str) -> str | None:
        value = (self.requests if field == "requests" else self.limits).get(resource)
        return None if value is None else str(value)


def _mapping(value: object) -> Mapping[str, Any]:
    if type(value) is dict:  # what JSON decoding gives: skip the slower ABC check
        return value
    return value if isinstance(value, Mapping) else {}


def container_slots(pod: Mapping[str, object]) -> list[ContainerSlot]:
    """Init containers then app containers (sidecars are init containers with restartPolicy Always)."""
    spec = _mapping(pod.get("spec"))
    slots: list[ContainerSlot] = []
    for section in SECTIONS:
        items = spec.get(section)
        if not isinstance(items, list):
            continue
        for i, c in enumerate(items):
            # `type(x) is dict` first: that is what JSON decoding gives, and the ABC check is slow
            if type(c) is not dict and not isinstance(c, Mapping):
                continue
            name = c.get("name")
            if not isinstance(name, str):
                continue
            raw = c.get("resources")
            res: Mapping[str, Any] | None = None
            if type(raw) is dict or isinstance(raw, Mapping):
                res = raw
            req, lim = (None, None) if res is None else (res.get("requests"), res.get("limits"))
            slots.append(ContainerSlot(section, i, name, _mapping(req), _mapping(lim)))
    return slots


class _Unkeyable(Exception):
    """A part of the pod the shape cannot hold faithfully (not plain JSON types): do not cache."""


def _members(value: Any) -> tuple[tuple[str, str], ...] | None:
    """requests/limits as a key: None when not an object; only text members (1 and "1" must differ)."""
    if type(value) is not dict:
        if isinstance(value, Mapping):
            raise _Unkeyable
        return None
    items = tuple(value.items())
    for k, v in items:
        if type(k) is not str or type(v) is not str:
            raise _Unkeyable
    return items


def containers_shape(pod: Mapping[str, object]) -> Hashable | None:
    """What the pod plan and the patch writer read of the pod's containers, as a hashable key.

    Per container: section, index, name, whether resources/requests/limits are objects and their members.
    None when something is not of the plain types JSON decoding gives (then the caller does not cache).
    """
    try:
        spec = pod.get("spec")
        if type(spec) is not dict:
            if isinstance(spec, Mapping):
                raise _Unkeyable
            return ()
        shape: list[tuple[Any, ...]] = []
        for section in SECTIONS:
            items = spec.get(section)
            if type(items) is not list:
                if isinstance(items, list):
                    raise _Unkeyable
                continue
            for i, c in enumerate(items):
                if type(c) is not dict:
                    if isinstance(c, Mapping):
                        raise _Unkeyable
                    continue
                name = c.get("name")
                if type(name) is not str:
                    if isinstance(name, str):
                        raise _Unkeyable
                    continue
                res = c.get("resources")
                if type(res) is not dict:
                    if isinstance(res, Mapping):
                        raise _Unkeyable
                    shape.append((section, i, name))
                else:
                    shape.append(
                        (section, i, name, _members(res.get("requests")), _members(res.get("limits")))
                    )
        return tuple(shape)
    except _Unkeyable:
        return None


def quantity(value: object) -> Decimal | None:
    """Exact value of a quantity; None when absent or not parseable (then the value is left alone)."""
    if value is None or isinstance(value, bool):
        return None
    return _parse_cached(str(value))


@lru_cache(maxsize=4096)
def _parse_cached(text: str) -> Decimal | None:
    """Pods repeat a handful of quantity strings; Decimal values are immutable, so memoising is safe."""
    try:
        d = as_decimal(text)
    except (ValueError, TypeError, ArithmeticError, InvalidOperation):
        return None
    return d if d.is_finite() else None


@dataclass(frozen=True)
class CurrentResources:
    """One container's requests and limits today, as quantity strings (for a synthetic pod template)."""

    name: str
    requests: Mapping[str, str]
    limits: Mapping[str, str]
    init: bool = False

    @staticmethod
    def of(
        name: str, requests: Mapping[str, float], limits: Mapping[str, float], init: bool = False
    ) -> CurrentResources:
        """From values in base units (what metrics sources report), as exact quantity text."""
        return CurrentResources(
            name,
            {r: exact_quantity(r, v) for r, v in requests.items()},
            {r: exact_quantity(r, v) for r, v in limits.items()},
            init,
        )

    def current(self, field: Field, resource: str) -> str | None:
        return (self.requests if field == "requests" else self.limits).get(resource)


def pod_template(
    containers: Sequence[CurrentResources],
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, object]:
    """A pod built from current requests/limits, so `recommend` and the console can run the pod plan."""

    def one(c: CurrentResources) -> dict[str, object]:
        return {"name": c.name, "resources": {"requests": dict(c.requests), "limits": dict(c.limits)}}

    spec: dict[str, object] = {"containers": [one(c) for c in containers if not c.init]}
    init = [one(c) for c in containers if c.init]
    if init:
        spec["initContainers"] = init
    meta = {"annotations": dict(annotations or {}), "labels": dict(labels or {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def sidecar_indexes(pod: Mapping[str, Any]) -> frozenset[int]:
    """Indexes of init containers that are sidecars (restartPolicy Always): they run with the app."""
    spec = pod.get("spec")
    items = spec.get("initContainers") if isinstance(spec, Mapping) else None
    if not isinstance(items, list):
        return frozenset()
    return frozenset(
        i for i, c in enumerate(items) if isinstance(c, Mapping) and c.get("restartPolicy") == "Always"
    )
