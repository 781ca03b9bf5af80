"""One change budget per workload: the values a pod had before podsizer changed it, so a re-invoked webhook,
an in-place resize and an evicted pod's replacement all measure the maximum change factor from the same
values and reach the same bounded target in one step (docs/webhook.md "One change budget per workload").

The original of a value, first found wins: the `from` of the pod's `podsizer.io/applied` record (written at
its first admission, so a second call or a later resize still knows it); the workload's pod template as
the apiserver admits it (LimitRange defaults; the updater knows templates, admission sees the template
itself); else the pod's own value.

The record is the pod's own annotation, which whoever may write the pod can write too: it is believed only
while the target it gives stays within what the trusted original allows (the template's value where the
caller knows the template, else the pod's own value): `Baseline.widened`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from podsizer.keys import APPLIED_KEY
from podsizer.limitrange import NO_CLUSTER_POLICY, ClusterPolicy, admitted
from podsizer.plausibility import Ceilings
from podsizer.podspec import FIELDS, Change, ContainerSlot, CurrentResources, Field, Section, quantity
from podsizer.resources import CPU_MEMORY

MAX_RECORD_CHARS = 256 * 1024  # the apiserver's annotation limit: a longer value is not a record of ours

Key = tuple[Section, str, Field, str]
"""(section, container name, field, resource) of one value."""


def key_of(change: Change) -> Key:
    return change.section, change.container, change.field, change.resource


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _record_key(change: object) -> Key | None:
    """The key of one change of a record; None when it is not one podsizer writes."""
    if not isinstance(change, dict):
        return None
    section, name, field_, resource = (
        change.get(k) for k in ("containerType", "container", "field", "resource")
    )
    old = change.get("from")
    if section not in ("containers", "initContainers") or field_ not in FIELDS:
        return None
    if (
        not isinstance(name, str)
        or not isinstance(resource, str)
        or not (old is None or isinstance(old, str))
    ):
        return None
    return section, name, field_, resource


def recorded(annotations: Mapping[str, str], recommendation: str) -> dict[Key, str | None]:
    """The `from` value of each change in the pod's podsizer.io/applied record of `recommendation`
    (another Recommendation's record, or one that does not parse, gives nothing)."""
    raw = annotations.get(APPLIED_KEY)
    if raw is None or len(raw) > MAX_RECORD_CHARS:
        return {}
    try:
        record = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(record, dict) or record.get("recommendation") != recommendation:
        return {}
    changes = record.get("changes")
    out: dict[Key, str | None] = {}
    for c in changes if isinstance(changes, list) else ():
        key = _record_key(c)
        if key is not None:
            out.setdefault(key, _text(c.get("from")))
    return out


def from_template(
    template: Iterable[CurrentResources], cluster: ClusterPolicy | None = None
) -> dict[Key, str | None]:
    """The template's cpu and memory requests and limits as the apiserver admits them: a missing limit
    gets the LimitRange's default, a missing request the limit or the default request; a value the
    template and the LimitRanges leave absent is not known (the pod's own counts)."""
    out: dict[Key, str | None] = {}
    policy = cluster or NO_CLUSTER_POLICY
    for c in template:
        section: Section = "initContainers" if c.init else "containers"
        slot = ContainerSlot(section, 0, c.name, c.requests, c.limits)
        for resource in CPU_MEMORY:
            req, lim = admitted(slot, resource, policy)
            pairs: tuple[tuple[Field, object], ...] = (("requests", req), ("limits", lim))
            for field_, value in pairs:
                given = c.current(field_, resource)
                if given is not None or value is not None:  # absent: another admission plugin may add it
                    out[(section, c.name, field_, resource)] = given if given is not None else str(value)
    return out


@dataclass(frozen=True)
class Baseline:
    """The original of each value the record or the template names (None: the value was absent);
    `trusted`: the template's alone (the record is the pod's own annotation: anyone who may write the pod
    may write it)."""

    values: Mapping[Key, str | None]
    trusted: Mapping[Key, str | None] = field(default_factory=dict)

    @staticmethod
    def of(
        pod_annotations: Mapping[str, str],
        recommendation: str,
        template: Iterable[CurrentResources] | None = None,
        cluster: ClusterPolicy | None = None,
    ) -> Baseline:
        trusted = from_template(template, cluster) if template is not None else {}
        values = {**trusted, **recorded(pod_annotations, recommendation)}  # the record wins
        return Baseline(values, trusted)

    @property
    def from_record(self) -> frozenset[tuple[Section, str]]:
        """The containers whose originals the record names otherwise than the template."""
        return frozenset(
            (section, name)
            for (section, name, field_, resource), v in self.values.items()
            if (section, name, field_, resource) not in self.trusted
            or not _same(v, self.trusted[(section, name, field_, resource)])
        )

    def without_record(self) -> Baseline:
        """The originals from the template alone (the pod's own values where it has none)."""
        return Baseline(self.trusted, self.trusted)

    def widened(
        self,
        current: Sequence[ContainerSlot],
        changes: Sequence[Change],
        factor: float | None,
        ceilings: Ceilings,
    ) -> str | None:
        """The first value of a container the record names whose target (the pod `current` with `changes`)
        lies beyond what its trusted original allows (the template's, else the pod's own value), described;
        None when the record narrows at most. Beyond: removed, outside [original / factor, original x
        factor], or above both the original and the ceiling."""
        named = self.from_record
        target = {(c.section, c.container, c.field, c.resource): c.new for c in changes}
        for slot in current:
            if (slot.section, slot.name) not in named:
                continue
            resources = sorted({*CPU_MEMORY, *(k[3] for k in target if k[:2] == (slot.section, slot.name))})
            for field_ in FIELDS:
                for resource in resources:
                    key = (slot.section, slot.name, field_, resource)
                    now = slot.current(field_, resource)
                    original = self.trusted.get(key, now)
                    value = target.get(key, now)
                    if _beyond(resource, quantity(value), quantity(original), factor, ceilings):
                        return f"{slot.name} {field_}.{resource} {original} -> {value or 'none'}"
        return None

    def _by_container(self) -> dict[tuple[Section, str], dict[Field, dict[str, str | None]]]:
        out: dict[tuple[Section, str], dict[Field, dict[str, str | None]]] = {}
        for (section, name, field_, resource), value in self.values.items():
            out.setdefault((section, name), {}).setdefault(field_, {})[resource] = value
        return out

    def restored(
        self, slots: Sequence[ContainerSlot]
    ) -> dict[tuple[Section, int], dict[Field, dict[str, object]]]:
        """Per container whose values are not all original: its requests and limits with the originals
        put back (empty: the pod is as it was)."""
        if not self.values:
            return {}
        originals = self._by_container()
        out: dict[tuple[Section, int], dict[Field, dict[str, object]]] = {}
        for slot in slots:
            mine = originals.get((slot.section, slot.name))
            if mine is None:
                continue
            fields: dict[Field, dict[str, object]] = {}
            for field_, values in mine.items():
                current = dict(slot.requests if field_ == "requests" else slot.limits)
                changed = [r for r, v in values.items() if not _same(current.get(r), v)]
                for resource in changed:
                    value = values[resource]
                    if value is None:
                        current.pop(resource, None)
                    else:
                        current[resource] = value
                if changed:
                    fields[field_] = current
            if fields:
                out[(slot.section, slot.index)] = fields
        return out


def original_pod(
    pod: Mapping[str, object], restored: Mapping[tuple[Section, int], Mapping[Field, Mapping[str, object]]]
) -> dict[str, object]:
    """A shallow copy of `pod` whose containers hold the `restored` values (nothing else differs)."""
    raw = pod.get("spec")
    spec: dict[str, object] = dict(raw) if isinstance(raw, Mapping) else {}
    for (section, index), fields in restored.items():
        items = list(spec[section])  # type: ignore[call-overload]
        container = dict(items[index])
        resources = dict(container.get("resources") or {})
        resources.update({field_: dict(values) for field_, values in fields.items()})
        container["resources"] = resources
        items[index] = container
        spec[section] = items
    return {**pod, "spec": spec}


def _beyond(
    resource: str, value: Decimal | None, original: Decimal | None, factor: float | None, ceilings: Ceilings
) -> bool:
    """Whether `value` is wider than `original` allows: removed (cpu, memory), outside the factor, or above
    both the original and the ceiling (None original: nothing to widen)."""
    if original is None:
        return False
    if value is None:
        return resource in CPU_MEMORY
    if factor is not None and original > 0:
        f = Decimal(repr(factor))
        if not original / f <= value <= original * f:
            return True
    ceiling = ceilings.of(resource)
    return ceiling is not None and value > max(original, Decimal(repr(ceiling)))


def _same(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is None and b is None
    qa, qb = quantity(a), quantity(b)
    return qa == qb if qa is not None and qb is not None else str(a) == str(b)


def rebase(
    planned: Sequence[Change],
    original: Sequence[ContainerSlot],
    current: Sequence[ContainerSlot],
    managed: frozenset[tuple[Section, int]],
) -> tuple[Change, ...]:
    """The changes that bring the pod as it is now to the target planned from its original: the planned
    value where the plan changed one, else (cpu and memory of the `managed` containers) the original."""
    target: dict[tuple[Section, int, Field, str], str | None] = {
        (c.section, c.index, c.field, c.resource): c.new for c in planned
    }
    by_index = {(s.section, s.index): s for s in current}
    for slot in original:
        if (slot.section, slot.index) not in managed:
            continue
        for field_ in FIELDS:
            for resource in CPU_MEMORY:
                target.setdefault(
                    (slot.section, slot.index, field_, resource), slot.current(field_, resource)
                )
    out: list[Change] = []
    for (section, index, field_, resource), new in target.items():
        slot = by_index[(section, index)]
        old = slot.current(field_, resource)
        if not _same(old, new):
            out.append(Change(section, index, slot.name, field_, resource, old, new))
    return tuple(out)
