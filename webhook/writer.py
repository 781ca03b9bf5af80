"""The plan onto the pod: JSON Patch ops for its changes, and the podsizer.io/applied | dry-run record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import orjson

from podsizer.api import Recommendation
from podsizer.plan import APPLIED_KEY, DRY_RUN_KEY, change_record
from podsizer.podspec import Change
from webhook.patch import PatchBuilder

__all__ = ["APPLIED_KEY", "DRY_RUN_KEY", "changes_to_patch", "write_record"]


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def changes_to_patch(builder: PatchBuilder, changes: Sequence[Change]) -> None:
    """Append the ops for `changes`; missing (or non-object) `resources`, `requests`, `limits` are created.

    The container itself exists (the plan only names containers it found in the pod).
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


def write_record(
    builder: PatchBuilder, changes: Sequence[Change], rec: Recommendation, mode: Literal["auto", "dry-run"]
) -> None:
    """One annotation, compact JSON with sorted keys: exactly the plan's changes and their Recommendation."""
    key = APPLIED_KEY if mode == "auto" else DRY_RUN_KEY
    value = orjson.dumps(change_record(changes, rec), option=orjson.OPT_SORT_KEYS).decode()
    builder.set(["metadata", "annotations", key], value)
