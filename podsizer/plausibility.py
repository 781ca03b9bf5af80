"""The plausibility guard: hard ceilings per resource and a maximum change factor, for plan and recommender.

Rules (docs/webhook.md "The pod plan", docs/recommender.md "Robust estimators"):
- A value that is not a finite, non-negative amount is invalid: dropped (no change for that resource).
- A value above its resource's ceiling is clamped to the ceiling (rounded down to whole millicores, MiB or
  GPUs). Ceilings are the configured ones, lowered to the largest node's allocatable where known.
- A new request more than `max_change_factor` times the current one, up or down, is clamped to that
  factor, unless the pod, workload or namespace sets `podsizer.io/allow-large-change: "true"`. A container
  without a current request (or limit) has nothing to compare against: only the ceiling applies.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, NamedTuple

from podsizer.api.quantity import MIB
from podsizer.resources import CPU, GPU, MEMORY

if TYPE_CHECKING:
    from podsizer.api import Recommendation
    from podsizer.podspec import Change, ContainerSlot, Section
    from podsizer.policy import LimitPolicy, PlanPolicy

DEFAULT_MAX_CPU_CORES = 256.0  # the largest common cloud nodes (e.g. 192-224 vCPU) fit below it
DEFAULT_MAX_MEMORY_BYTES = float(4 * 2**40)  # 4Ti: the largest common nodes hold 2-4 TiB
DEFAULT_MAX_GPUS = 16.0  # 8-GPU nodes are the norm; 16 leaves room for 16-GPU systems
DEFAULT_MAX_CHANGE_FACTOR = 4.0
# The least a configured ceiling may be: no node has less than a core or a GiB, and below them every
# request would be patched to the ceiling (PODSIZER_MAX_CPU_CORES=1e-9 made every CPU request 1m).
MIN_CEILING_CPU_CORES = 1.0
MIN_CEILING_MEMORY_BYTES = float(2**30)
# The most a configured ceiling may be: the largest machines sold have some 1,000 cores, 32 TiB and 16 GPUs
# (PODSIZER_MAX_MEMORY_BYTES=1Ei let any value through); a factor past 1000 is no limit (leave it empty).
MAX_CEILING_CPU_CORES = 4096.0
MAX_CEILING_MEMORY_BYTES = float(64 * 2**40)
MAX_CEILING_GPUS = 64.0
MAX_CHANGE_FACTOR_BOUND = 1000.0

Rule = Literal["invalid", "ceiling", "max-change"]
RULES: tuple[Rule, ...] = ("invalid", "ceiling", "max-change")
_UNIT: dict[str, Decimal] = {CPU: Decimal("0.001"), MEMORY: Decimal(MIB), GPU: Decimal(1)}


@dataclass(frozen=True)
class Ceilings:
    """The most one container may request per resource (cores, bytes, GPUs) and where that comes from."""

    cpu_cores: float = DEFAULT_MAX_CPU_CORES
    memory_bytes: float = DEFAULT_MAX_MEMORY_BYTES
    gpus: float = DEFAULT_MAX_GPUS
    source: str = "configured"

    def of(self, resource: str) -> float | None:
        """The ceiling of cpu, memory or nvidia.com/gpu; None for any other resource (not guarded)."""
        if resource == CPU:
            return self.cpu_cores
        if resource == MEMORY:
            return self.memory_bytes
        return self.gpus if resource == GPU else None

    @property
    def where(self) -> str:
        """Where the ceilings come from, for reasons: "node allocatable" or "the configured ceiling"."""
        return "the configured ceiling" if self.source == "configured" else "node allocatable"

    def from_nodes(self, allocatable: Iterable[Mapping[str, float]]) -> Ceilings:
        """Per resource, min(these ceilings, the largest node's allocatable) where any node reports it: a
        node can lower a configured ceiling, never raise it (a bogus node must not lift the guard)."""
        largest = largest_allocatable(allocatable)
        best = {r: largest[r] for r in (CPU, MEMORY, GPU) if r in largest}
        mine = {CPU: self.cpu_cores, MEMORY: self.memory_bytes, GPU: self.gpus}
        lowered = {r: v for r, v in best.items() if v < mine[r]}
        if not lowered:
            return self
        out = mine | lowered
        return Ceilings(out[CPU], out[MEMORY], out[GPU], "largest node's allocatable")


def largest_allocatable(allocatable: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Per resource, the largest finite, positive allocatable any of the nodes reports (nothing above it
    can be used by one container): the recommender's samples, the plan's ceilings and the clusters' node
    caches all read it so."""
    best: dict[str, float] = {}
    for node in allocatable:
        for resource, value in node.items():
            if math.isfinite(value) and value > 0:
                best[resource] = max(best.get(resource, 0.0), value)
    return best


class Guard(NamedTuple):
    """One value the guard refused or clamped: the webhook counts (resource, rule); people read describe()."""

    container: str
    field: str  # requests | limits
    resource: str
    rule: Rule
    value: str  # the value as planned (or as the Recommendation holds it)
    to: str | None  # the value written instead; None: dropped

    def describe(self) -> str:
        what = f"{self.resource} {self.field} {self.value} of container {self.container}"
        if self.to is None:
            return f"{what}: not a finite, non-negative amount: dropped"
        why = "above the ceiling" if self.rule == "ceiling" else "beyond the maximum change factor"
        return f"{what}: {why}: clamped to {self.to}"


def valid_amount(value: float) -> bool:
    """A finite, non-negative amount (what every quantity podsizer writes must be)."""
    return math.isfinite(value) and value >= 0


def round_down(resource: str, value: Decimal) -> Decimal:
    """Whole millicores, MiB or counts, rounded down (a ceiling rounded up could exceed the node)."""
    unit = _UNIT.get(resource, Decimal(1))
    return max(unit, (value / unit).to_integral_value(ROUND_FLOOR) * unit)


def round_up(resource: str, value: Decimal) -> Decimal:
    unit = _UNIT.get(resource, Decimal(1))
    return max(unit, (value / unit).to_integral_value(ROUND_CEILING) * unit)


@lru_cache(maxsize=8192)  # pods repeat a handful of values; Decimal arithmetic is not free
def bounded(
    resource: str, value: Decimal, current: Decimal | None, ceiling: float | None, factor: float | None
) -> tuple[Decimal, tuple[Rule, ...]]:
    """`value` within [current / factor, current x factor] (when both are known), then under the ceiling,
    which is hard and wins; with the rules that changed it."""
    rules: list[Rule] = []
    if factor is not None and current is not None and current > 0:
        f = Decimal(repr(factor))
        hi, lo = round_down(resource, current * f), round_up(resource, current / f)
        if value > hi or value < lo:
            value = hi if value > hi else lo
            rules.append("max-change")
    if ceiling is not None:
        top = round_down(resource, Decimal(repr(ceiling)))
        if value > top:
            value = top
            rules.append("ceiling")
    return value, tuple(rules)


class Replan(NamedTuple):
    """What the pod plan lends the guard: the request-and-limit step for one value (podsizer.plan._one)."""

    one: Callable[[ContainerSlot, str, float, Decimal | None, LimitPolicy], list[Change]]
    quantity: Callable[[object], Decimal | None]
    text: Callable[[str, Decimal], str]


@dataclass(frozen=True)
class PlanGuard:
    """The guard as the pod plan applies it: the policy's ceilings and factor (None: lifted by opt-in)."""

    ceilings: Ceilings
    factor: float | None
    limit_policy: LimitPolicy
    replan: Replan

    def apply(
        self, changes: Sequence[Change], slots: Sequence[ContainerSlot], rec: Recommendation
    ) -> tuple[list[Change], list[Guard]]:
        """The changes with every value within the rules, and what was refused or clamped."""
        guards = self._invalid(slots, rec)
        by_slot = {(s.section, s.index): s for s in slots}
        groups: dict[tuple[Section, int, str], list[Change]] = {}
        for c in changes:
            groups.setdefault((c.section, c.index, c.resource), []).append(c)
        out: list[Change] = []
        for (section, index, resource), group in groups.items():
            slot = by_slot.get((section, index))
            if slot is None or self.ceilings.of(resource) is None:
                out.extend(group)
            elif resource == GPU:
                out.extend(self._count(slot, group, guards))
            else:
                out.extend(self._sized(slot, resource, group, rec, guards))
        return out, guards

    def _invalid(self, slots: Sequence[ContainerSlot], rec: Recommendation) -> list[Guard]:
        """cpu/memory values of the Recommendation the plan cannot use (unreadable, negative, overflowing)."""
        names = {s.name for s in slots}
        out: list[Guard] = []
        for cr in rec.containers:
            if cr.name not in names:
                continue
            for field, values in (("requests", cr.requests), ("limits", cr.limits)):
                for resource in (CPU, MEMORY):
                    raw = values.get(resource)
                    parsed = self.replan.quantity(raw)
                    if raw is not None and (parsed is None or not valid_amount(float(parsed))):
                        out.append(Guard(cr.name, field, resource, "invalid", str(raw)[:64], None))
        return out

    def _current(self, slot: ContainerSlot, resource: str) -> Decimal | None:
        """The request the factor compares with: the current request, else the limit it defaults to."""
        q = self.replan.quantity
        req = q(slot.current("requests", resource))
        return req if req is not None else q(slot.current("limits", resource))

    def _sized(
        self,
        slot: ContainerSlot,
        resource: str,
        group: list[Change],
        rec: Recommendation,
        guards: list[Guard],
    ) -> list[Change]:
        """cpu/memory: the request within the rules (limits re-derived from it), then limits under the
        ceiling."""
        req = next((c for c in group if c.field == "requests" and c.new is not None), None)
        new = self.replan.quantity(req.new) if req is not None else None
        if req is not None and new is not None:
            value, rules = bounded(
                resource, new, self._current(slot, resource), self.ceilings.of(resource), self.factor
            )
            if rules:
                text = self.replan.text(resource, value)
                guards.extend(Guard(slot.name, "requests", resource, r, str(req.new), text) for r in rules)
                cr = rec.container(slot.name)
                recommended = self.replan.quantity(cr.limits.get(resource)) if cr is not None else None
                group = self.replan.one(slot, resource, float(value), recommended, self.limit_policy)
        return [self._limit(slot, c, guards) for c in group]

    def _limit(self, slot: ContainerSlot, change: Change, guards: list[Guard]) -> Change:
        ceiling = self.ceilings.of(change.resource)
        new = self.replan.quantity(change.new)
        if change.field != "limits" or ceiling is None or new is None:
            return change
        value, rules = bounded(change.resource, new, None, ceiling, None)
        if not rules:
            return change
        text = self.replan.text(change.resource, value)
        guards.append(Guard(slot.name, "limits", change.resource, "ceiling", str(change.new), text))
        return change._replace(new=text)

    def _count(self, slot: ContainerSlot, group: list[Change], guards: list[Guard]) -> list[Change]:
        """nvidia.com/gpu: requests and limits (equal) within the rules; a change back to the current
        value is no change."""
        out: list[Change] = []
        current = self._current(slot, GPU)
        for c in group:
            new = self.replan.quantity(c.new)
            if new is None:
                out.append(c)
                continue
            value, rules = bounded(GPU, new, current, self.ceilings.of(GPU), self.factor)
            if rules:
                text = str(int(value))
                guards.extend(Guard(slot.name, c.field, GPU, r, str(c.new), text) for r in rules)
                c = c._replace(new=text)
            if self.replan.quantity(c.old) != self.replan.quantity(c.new):
                out.append(c)
        return out


def guard_changes(
    changes: list[Change],
    slots: Sequence[ContainerSlot],
    rec: Recommendation,
    policy: PlanPolicy,
    allow_large_change: bool,
    replan: Replan,
    notes: list[str] | None,
    guarded: list[Guard] | None,
) -> list[Change]:
    """The pod plan's plausibility step: `changes` within the policy's ceilings and change factor (lifted
    by the opt-in), each refused or clamped value added to `guarded` and described in `notes`."""
    factor = None if allow_large_change else policy.max_change_factor
    out, guards = PlanGuard(policy.ceilings, factor, policy.limit_policy, replan).apply(changes, slots, rec)
    if notes is not None:
        notes.extend(g.describe() for g in guards)
    if guarded is not None:
        guarded.extend(guards)
    return out
