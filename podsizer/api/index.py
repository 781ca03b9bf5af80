"""Recommendation objects decoded one by one and indexed by object (namespace, name), kept current by a
list (replace) and watch events (apply): the part the webhook's CRD loader and the console's watched store
share."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from podsizer.api.resource import (
    Recommendation,
    RecommendationError,
    object_name,
    recommendation_from_resource,
)

log = logging.getLogger("podsizer.api.index")

ObjectKey = tuple[str, str]  # (namespace, name) of a Recommendation object


def parse_items(items: Iterable[Any], where: str) -> tuple[list[Recommendation], list[str]]:
    """Decode Recommendation objects; a bad one is skipped with the reason (and logged), the rest kept."""
    recs: list[Recommendation] = []
    skipped: list[str] = []
    for i, item in enumerate(items):
        try:
            recs.append(recommendation_from_resource(item))
        except (RecommendationError, ValueError, TypeError, KeyError) as exc:
            reason = f"{where}[{i}] ({object_name(item)}): {exc}"
            # A Recommendation is created first and its status written next: no status yet is normal.
            pending = isinstance(item, dict) and item.get("status") is None
            level = logging.DEBUG if pending else logging.WARNING
            log.log(level, "store: skipping recommendation %s", reason)
            skipped.append(reason)
    return recs, skipped


def object_key(obj: Any) -> ObjectKey:
    """(namespace, name) of a raw object ("" for what it lacks)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


class RecommendationIndex:
    """Decoded Recommendations per object, and per object the reason it could not be decoded (kept until
    that object changes or is deleted). Not locked: its owner serialises replace/apply against reads."""

    def __init__(self) -> None:
        self._items: dict[ObjectKey, Recommendation] = {}
        self._skipped: dict[ObjectKey, str] = {}

    def replace(self, objects: Iterable[dict[str, Any]]) -> None:
        """A full list: the index becomes exactly these objects (built aside, then swapped in)."""
        items: dict[ObjectKey, Recommendation] = {}
        skipped: dict[ObjectKey, str] = {}
        for obj in objects:
            self._parse_into(obj, items, skipped)
        self._items, self._skipped = items, skipped

    def apply(self, etype: str, obj: dict[str, Any]) -> None:
        """One watch event (ADDED, MODIFIED, DELETED): O(1), touching that one object only."""
        if etype == "DELETED":
            key = object_key(obj)
            self._items.pop(key, None)
            self._skipped.pop(key, None)
        else:
            self._parse_into(obj, self._items, self._skipped)

    @staticmethod
    def _parse_into(
        obj: dict[str, Any], items: dict[ObjectKey, Recommendation], skipped: dict[ObjectKey, str]
    ) -> None:
        key = object_key(obj)
        parsed, why = parse_items([obj], "recommendations")
        if parsed:
            items[key] = parsed[0]
            skipped.pop(key, None)
        else:
            items.pop(key, None)  # an invalid update must not keep serving stale values
            skipped[key] = why[0] if why else f"recommendations ({key[0]}/{key[1]}): unreadable"

    def recommendations(self) -> list[Recommendation]:
        return list(self._items.values())

    def skipped(self) -> list[str]:
        return list(self._skipped.values())

    def __len__(self) -> int:
        return len(self._items)
