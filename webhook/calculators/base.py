"""What calculators share: the Change value, container slots, usable recommendations, change -> patch."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Literal, Protocol

from recommender.api import ContainerRecommendation, Recommendation
from recommender.api.quantity import as_decimal
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


@dataclass(frozen=True)
class Change:
    """One resource value of one container: old -> new (new None removes the key)."""

    section: Section
    index: int
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


@dataclass(frozen=True)
class ContainerSlot:
    """A container of the incoming pod with its current requests/limits (quantities as sent)."""

    section: Section
    index: int
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
    spec = _mapping(pod.get("spec"))
    for section in SECTIONS:
        items = spec.get(section)
        if not isinstance(items, list):
            continue
        for i, c in enumerate(items):
            if not isinstance(c, Mapping) or not isinstance(c.get("name"), str):
                continue
            res = _mapping(c.get("resources"))
            yield ContainerSlot(
                section, i, c["name"], _mapping(res.get("requests")), _mapping(res.get("limits"))
            )


def usable(rec: Recommendation, name: str, opts: CalcOptions) -> ContainerRecommendation | None:
    """The container's recommendation unless missing or low-confidence (those are never applied)."""
    cr = rec.container(name)
    if cr is None or cr.low_confidence or cr.confidence < opts.min_confidence:
        return None
    return cr


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
