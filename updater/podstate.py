"""What a running pod's JSON says about its state: age, phase, readiness, termination."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from podsizer.kube.times import read_time


def mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def name_of(pod: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name)."""
    meta = mapping(pod.get("metadata"))
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def pod_age(pod: Mapping[str, Any], now: datetime) -> timedelta | None:
    """Since status.startTime, else metadata.creationTimestamp; None when neither is readable."""
    started = read_time(mapping(pod.get("status")).get("startTime"))
    started = started or read_time(mapping(pod.get("metadata")).get("creationTimestamp"))
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
