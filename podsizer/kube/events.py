"""The one core/v1 Event body of every role that reports on an object (the updater's actions, the webhook's
certificate warnings)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from podsizer.kube.times import format_seconds

MESSAGE_LIMIT = 1024
"""An Event's message is cut to this many characters."""


def event_body(
    involved: Mapping[str, str],
    type_: str,
    reason: str,
    message: str,
    *,
    component: str,
    instance: str,
    now: datetime,
    host: str | None = None,
) -> dict[str, object]:
    """A new Event about `involved` (its apiVersion, kind, namespace, name and, where known, uid): named
    after it (generateName), counted once at `now` (whole seconds), the message cut to MESSAGE_LIMIT,
    reported by `component` (and `instance`; `host` in the source where given)."""
    stamp = format_seconds(now)
    source = {"component": component} if host is None else {"component": component, "host": host}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{involved['name']}.", "namespace": involved["namespace"]},
        "involvedObject": dict(involved),
        "type": type_,
        "reason": reason,
        "message": message[:MESSAGE_LIMIT],
        "source": source,
        "reportingComponent": component,
        "reportingInstance": instance,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
