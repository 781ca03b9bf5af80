"""The plan onto the pod: JSON Patch ops for its changes, and the podsizer.io/applied | dry-run record,
kept under the apiserver's annotation size limit (summarised when too big, never over)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import orjson

from podsizer.api import Recommendation
from podsizer.keys import APPLIED_KEY, DRY_RUN_KEY
from podsizer.plan import change_record
from podsizer.podspec import Change
from webhook.patch import PatchBuilder

__all__ = ["changes_to_patch", "record_text", "roomy", "write_record"]

log = logging.getLogger("podsizer.webhook")

ANNOTATIONS_LIMIT = 256 * 1024  # the apiserver's TotalAnnotationSizeLimitB: all keys + values of one object
MAX_RECORD_BYTES = 32 * 1024  # a record never takes more: it is the same for every pod with this much room
_LONGEST_KEY = max(len(APPLIED_KEY), len(DRY_RUN_KEY))


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


def _annotation_bytes(pod: Mapping[str, Any], skip: str | None = None) -> int:
    """Bytes of the pod's annotations (keys + values, as the apiserver counts), but the `skip` key's."""
    meta = pod.get("metadata")
    ann = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(ann, Mapping):
        return 0
    return sum(len(str(k).encode()) + len(str(v).encode()) for k, v in ann.items() if k != skip)


def roomy(pod: Mapping[str, Any]) -> bool:
    """True when the pod's annotations leave a full MAX_RECORD_BYTES record room under the limit (then the
    record does not depend on them, and a decision may be cached for pods that differ only there)."""
    return _annotation_bytes(pod) + _LONGEST_KEY + MAX_RECORD_BYTES <= ANNOTATIONS_LIMIT


def _dumps(value: object) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def record_text(changes: Sequence[Change], rec: Recommendation, budget: int) -> str | None:
    """The record as compact JSON in at most `budget` bytes: whole when it fits, else a summary (counts per
    field.resource, the first changes that fit, `"truncated": true`); None when not even that fits."""
    full = _dumps(change_record(changes, rec))
    if len(full) <= budget:
        return full.decode()
    counts = Counter(f"{c.field}.{c.resource}" for c in changes)
    summary = {**change_record((), rec), "truncated": True, "changeCount": len(changes), "counts": counts}
    room = budget - len(_dumps(summary))
    kept: list[Change] = []
    for change in changes:
        room -= len(_dumps(change.to_json())) + 1  # and the comma
        if room < 0:
            break
        kept.append(change)
    while True:
        text = _dumps({**summary, "changes": [c.to_json() for c in kept]})
        if len(text) <= budget:
            return text.decode()
        if not kept:
            return None
        kept.pop()


def write_record(
    builder: PatchBuilder, changes: Sequence[Change], rec: Recommendation, mode: Literal["auto", "dry-run"]
) -> None:
    """One annotation, compact JSON with sorted keys: the plan's changes and their Recommendation, within
    what the pod's other annotations leave of the apiserver's limit (and at most MAX_RECORD_BYTES)."""
    key = APPLIED_KEY if mode == "auto" else DRY_RUN_KEY
    budget = min(MAX_RECORD_BYTES, ANNOTATIONS_LIMIT - _annotation_bytes(builder.doc, key) - len(key))
    value = record_text(changes, rec, budget)
    if value is None:
        log.warning(
            "%s: no room left under the %d-byte annotation limit; not written", key, ANNOTATIONS_LIMIT
        )
        return
    if _mapping(_mapping(builder.doc.get("metadata")).get("annotations")).get(key) == value:
        return  # already there (a re-invoked webhook): no op
    builder.set(["metadata", "annotations", key], value)
