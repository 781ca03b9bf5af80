"""CPU and memory: requests from the Recommendation within the workload's bounds, limits per policy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Any

from podsizer.api import Recommendation
from podsizer.api.quantity import format_resource
from webhook.calculators.base import CalcOptions, Change, ContainerSlot, container_slots, quantity, usable

RESOURCES = ("cpu", "memory")
Bounds = dict[str, tuple[float | None, float | None]]
NO_BOUNDS: Bounds = {r: (None, None) for r in RESOURCES}


def _bounds(rec: Recommendation, container: str) -> Bounds:
    """minAllowed/maxAllowed per resource: the container's own entry wins over "*"."""
    if not rec.policy:
        return NO_BOUNDS
    specific = next((p for p in rec.policy if p.container == container), None)
    wildcard = next((p for p in rec.policy if p.container == "*"), None)
    out: Bounds = {}
    for resource in RESOURCES:
        lo = hi = None
        for p in (wildcard, specific):
            if p is None:
                continue
            lo = p.min_allowed.get(resource, lo)
            hi = p.max_allowed.get(resource, hi)
        out[resource] = (lo, hi)
    return out


@lru_cache(maxsize=4096)
def _fmt_cached(resource: str, value: float) -> tuple[str, Decimal]:
    text = format_resource(resource, value)
    parsed = quantity(text)
    assert parsed is not None
    return text, parsed


def _fmt(resource: str, value: Decimal | float) -> tuple[str, Decimal]:
    """Canonical text (millicores, Mi) and its exact value; memoised, pods repeat the same values."""
    return _fmt_cached(resource, float(value))


class ResourcesCalculator:
    """Requests set to the recommendation; limits: keep-ratio | cap | leave (see docs/webhook.md)."""

    name = "resources"

    def changes(self, pod: Mapping[str, Any], rec: Recommendation, opts: CalcOptions) -> list[Change]:
        return self.changes_for(container_slots(pod), rec, opts)

    def changes_for(
        self, slots: Sequence[ContainerSlot], rec: Recommendation, opts: CalcOptions
    ) -> list[Change]:
        out: list[Change] = []
        for slot in slots:
            cr = usable(rec, slot.name, opts)
            if cr is None:
                continue
            bounds: Bounds | None = None
            for resource in RESOURCES:
                target = quantity(cr.requests.get(resource))
                if target is None or target <= 0:
                    continue
                if bounds is None:
                    bounds = _bounds(rec, slot.name)
                out.extend(self._one(slot, resource, target, bounds[resource], opts))
        return out

    def _one(
        self,
        slot: ContainerSlot,
        resource: str,
        target: Decimal,
        bounds: tuple[float | None, float | None],
        opts: CalcOptions,
    ) -> list[Change]:
        old_req_s, old_lim_s = slot.current("requests", resource), slot.current("limits", resource)
        old_req, old_lim = quantity(old_req_s), quantity(old_lim_s)
        if (old_req_s is not None and old_req is None) or (old_lim_s is not None and old_lim is None):
            return []  # a value we cannot read is left exactly as it is
        lo, hi = bounds
        value = float(target)
        if lo is not None:
            value = max(value, lo)
        if hi is not None:
            value = min(value, hi)
        new_req_s, new_req = _fmt(resource, value)
        new_lim_s: str | None = None
        policy = opts.limit_policy
        if old_lim is not None:
            if policy == "leave":
                if new_req > old_lim:  # a request above its limit is invalid: stop at the limit
                    new_req_s, new_req = str(old_lim_s), old_lim
            elif policy == "cap":
                if new_req > old_lim:
                    new_lim_s = new_req_s
            else:  # keep-ratio; a missing request defaults to the limit, so the ratio is 1
                base = old_req if old_req is not None else old_lim
                if base > 0:
                    new_lim_s, _ = _fmt(resource, max(new_req * old_lim / base, new_req))
                elif new_req > old_lim:
                    new_lim_s = new_req_s
        out: list[Change] = []
        if old_req is None or new_req != old_req:
            out.append(
                Change(slot.section, slot.index, slot.name, "requests", resource, old_req_s, new_req_s)
            )
        if new_lim_s is not None and quantity(new_lim_s) != old_lim:
            out.append(Change(slot.section, slot.index, slot.name, "limits", resource, old_lim_s, new_lim_s))
        return out
