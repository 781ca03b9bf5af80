"""What a running pod's JSON says about its state: times, age, phase, readiness, termination."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 time of the API (Z or an offset), as an aware datetime; None when unreadable."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def name_of(pod: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name)."""
    meta = mapping(pod.get("metadata"))
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def pod_age(pod: Mapping[str, Any], now: datetime) -> timedelta | None:
    """Since status.startTime, else metadata.creationTimestamp; None when neither is readable."""
    started = parse_time(mapping(pod.get("status")).get("startTime"))
    started = started or parse_time(mapping(pod.get("metadata")).get("creationTimestamp"))
    return None if started is None else now - started


def terminating(pod: Mapping[str, Any]) -> bool:
    return bool(mapping(pod.get("metadata")).get("deletionTimestamp"))


def running(pod: Mapping[str, Any]) -> bool:
    """Phase Running and not being deleted: the pods the updater looks at."""
    return mapping(pod.get("status")).get("phase") == "Running" and not terminating(pod)


def ready(pod: Mapping[str, Any]) -> bool:
    """Running, not terminating, and its Ready condition True."""
    if not running(pod):
        return False
    conditions = mapping(pod.get("status")).get("conditions")
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            return c.get("status") == "True"
    return False
