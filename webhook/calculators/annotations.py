"""The record on the pod: podsizer.io/applied in auto mode, podsizer.io/dry-run (same changes) otherwise."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from typing import Any, Literal

import orjson

from podsizer.api import Recommendation
from webhook.calculators.base import Change
from webhook.patch import PatchBuilder

APPLIED_KEY = "podsizer.io/applied"
DRY_RUN_KEY = "podsizer.io/dry-run"


def record(changes: Sequence[Change], rec: Recommendation) -> dict[str, Any]:
    return {
        "recommendation": rec.name,
        "generatedAt": rec.generated_at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "sizingMode": rec.sizing_mode,
        "changes": [c.to_json() for c in changes],
    }


class AnnotationsCalculator:
    """Runs last, over the other calculators' changes: one annotation, compact JSON."""

    name = "annotations"

    def apply(
        self,
        builder: PatchBuilder,
        changes: Sequence[Change],
        rec: Recommendation,
        mode: Literal["auto", "dry-run"],
    ) -> None:
        key = APPLIED_KEY if mode == "auto" else DRY_RUN_KEY
        value = orjson.dumps(record(changes, rec), option=orjson.OPT_SORT_KEYS).decode()
        builder.set(["metadata", "annotations", key], value)
