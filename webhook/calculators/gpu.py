"""GPUs: the recommended nvidia.com/gpu count, or the suggested MIG slice when swapping is allowed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from podsizer.api import Recommendation
from webhook.calculators.base import (
    CalcOptions,
    Change,
    ContainerSlot,
    Field,
    container_slots,
    quantity,
    usable,
)

GPU = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
FIELDS: tuple[Field, ...] = ("requests", "limits")


class GpuCalculator:
    """Only containers that already hold GPUs; whole counts >= 1 with requests == limits."""

    name = "gpu"

    def changes(self, pod: Mapping[str, Any], rec: Recommendation, opts: CalcOptions) -> list[Change]:
        return self.changes_for(container_slots(pod), rec, opts)

    def changes_for(
        self, slots: Sequence[ContainerSlot], rec: Recommendation, opts: CalcOptions
    ) -> list[Change]:
        for slot in slots:
            if slot.requests.get(GPU) is not None or slot.limits.get(GPU) is not None:
                break
        else:
            return []  # only containers that already hold GPUs change: none does
        out: list[Change] = []
        suggested = rec.gpu.suggested_resource if rec.gpu is not None else None
        swap = bool(opts.allow_mig_swap and suggested and suggested.startswith(MIG_PREFIX))
        for slot in slots:
            cr = usable(rec, slot.name, opts)
            if cr is None:
                continue
            wanted = quantity(cr.limits.get(GPU, cr.requests.get(GPU)))
            if wanted is None or wanted < 1 or wanted != wanted.to_integral_value():
                continue
            held_req, held_lim = slot.current("requests", GPU), slot.current("limits", GPU)
            if held_req is None and held_lim is None:
                continue
            if quantity(held_req) is None and quantity(held_lim) is None:
                continue
            count = str(int(wanted))
            resource = suggested if swap and suggested else GPU
            if resource != GPU:
                for field in FIELDS:
                    held = slot.current(field, GPU)
                    if held is not None:
                        out.append(Change(slot.section, slot.index, slot.name, field, GPU, held, None))
            for field in FIELDS:
                current = slot.current(field, resource)
                if current is None or quantity(current) != wanted:
                    out.append(Change(slot.section, slot.index, slot.name, field, resource, current, count))
        return out
