"""What calculators share: the Change value, container slots, usable recommendations, change -> patch."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

from podsizer.api import ContainerRecommendation, Recommendation
from podsizer.api.quantity import as_decimal
from webhook.patch import PatchBuilder

Section = Literal["containers", "initContainers"]
Field = Literal["requests", "limits"]
LimitPolicy = Literal["keep-ratio", "cap", "leave"]
LIMIT_POLICIES: tuple[LimitPolicy, ...] = ("keep-ratio", "cap", "leave")
SECTIONS: tuple[Section, ...] = ("initContainers", "containers")


@dataclass(frozen=True)
class CalcOptions:
    """Knobs from configuration that shape the patch."""

    limit_policy: LimitPolicy = "keep-ratio"
    allow_mig_swap: bool = False
    min_confidence: float = 0.0


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

    def to_json(self) -> dict[str, Any]:
        return {
            "container": self.container,
            "containerType": self.section,
            "field": self.field,
            "resource": self.resource,
            "from": self.old,
            "to": self.new,
        }


class ContainerSlot(NamedTuple):
    """A container of the incoming pod with its current requests/limits (quantities as sent)."""

    section: Section
    index: int  # type: ignore[assignment]  # shadows tuple.index, which nothing here calls
    name: str
    requests: Mapping[str, Any]
    limits: Mapping[str, Any]

    def current(self, field: Field, resource: str) -> str | None:
        value = (self.requests if field == "requests" else self.limits).get(resource)
        return None if value is None else str(value)


def _mapping(value: Any) -> Mapping[str, Any]:
    if type(value) is dict:  # what JSON decoding gives: skip the slower ABC check
        return value
    return value if isinstance(value, Mapping) else {}


def pod_containers(pod: Mapping[str, Any]) -> Iterator[ContainerSlot]:
    """Init containers and app containers (sidecars are init containers with restartPolicy Always)."""
    yield from container_slots(pod)


def container_slots(pod: Mapping[str, Any]) -> list[ContainerSlot]:
    """`pod_containers` as a list, in one walk; the admission path hands it to every calculator."""
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


def containers_shape(pod: Mapping[str, Any]) -> Hashable | None:
    """What the built-in calculators and `changes_to_patch` read of the pod's containers, as a hashable key.

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


def usable(rec: Recommendation, name: str, opts: CalcOptions) -> ContainerRecommendation | None:
    """The container's recommendation unless missing or low-confidence (those are never applied)."""
    for cr in rec.containers:  # Recommendation.container, without a generator per call
        if cr.name == name:
            return None if cr.low_confidence or cr.confidence < opts.min_confidence else cr
    return None


def quantity(value: Any) -> Decimal | None:
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


class Calculator(Protocol):
    """Given the pod and its workload's Recommendation, the changes for one concern."""

    name: str

    def changes(self, pod: Mapping[str, Any], rec: Recommendation, opts: CalcOptions) -> list[Change]: ...


@runtime_checkable
class SlotCalculator(Calculator, Protocol):
    """A calculator that reads only the pod's container slots: the admission path walks the pod once."""

    def changes_for(
        self, slots: Sequence[ContainerSlot], rec: Recommendation, opts: CalcOptions
    ) -> list[Change]: ...


def changes_to_patch(builder: PatchBuilder, changes: Sequence[Change]) -> None:
    """Append the ops for `changes`; missing (or non-object) `resources`, `requests`, `limits` are created.

    The container itself exists (calculators only name containers they found in the pod).
    """
    spec = _mapping(builder.doc.get("spec"))
    parents: dict[tuple[str, int, str], str] = {}
    created: set[tuple[str, int]] = set()
    for ch in changes:
        key = (ch.section, ch.index, ch.field)
        parent = parents.get(key)
        if parent is None:
            container = _mapping(spec[ch.section][ch.index])
            res_ptr = f"/spec/{ch.section}/{ch.index}/resources"
            resources = container.get("resources")
            if (ch.section, ch.index) in created:
                resources = {}
            elif not isinstance(resources, Mapping):
                builder.add_raw(res_ptr, {})
                created.add((ch.section, ch.index))
                resources = {}
            parent = parents[key] = f"{res_ptr}/{ch.field}"
            if not isinstance(resources.get(ch.field), Mapping):
                builder.add_raw(parent, {})
        if ch.new is None:
            builder.remove_under(parent, ch.resource)
        else:
            builder.set_under(parent, ch.resource, ch.new)
