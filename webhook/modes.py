"""Opt-outs and the effective mode (off | dry-run | auto): pod/workload annotation over namespace label."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Literal, Protocol

from podsizer.api import WorkloadRef
from webhook.cluster import ObjectMeta

log = logging.getLogger("podsizer.webhook")

Mode = Literal["off", "dry-run", "auto"]
MODES: tuple[Mode, ...] = ("off", "dry-run", "auto")
MODE_KEY = "podsizer.io/mode"
EXCLUDE_KEY = "podsizer.io/exclude"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


class MetadataLookup(Protocol):
    def namespace(self, name: str) -> ObjectMeta | None: ...

    def workload(self, ref: WorkloadRef) -> ObjectMeta | None: ...


class NoMetadata:
    """Standalone: no cluster to watch; only the pod itself and configuration decide."""

    def namespace(self, name: str) -> ObjectMeta | None:
        return None

    def workload(self, ref: WorkloadRef) -> ObjectMeta | None:
        return None


def excluded(*maps: Mapping[str, str] | None) -> bool:
    return any(m is not None and m.get(EXCLUDE_KEY, "").strip().lower() == "true" for m in maps)


def _valid(value: str | None, where: str) -> Mode | None:
    if value is None:
        return None
    v = value.strip().lower()
    if v in MODES:
        return v
    log.warning("ignoring %s=%r on %s: expected one of %s", MODE_KEY, value, where, ", ".join(MODES))
    return None


def effective_mode(
    default: Mode,
    pod_annotations: Mapping[str, str],
    workload: ObjectMeta | None,
    namespace: ObjectMeta | None,
    where: Iterable[str] = ("pod", "workload", "namespace"),
) -> Mode:
    """Pod template annotation, then the workload's annotation, then the namespace label, then the default.

    An invalid value is logged and ignored (the next level decides).
    """
    w_pod, w_wl, w_ns = tuple(where)
    for value, src in (
        (pod_annotations.get(MODE_KEY), w_pod),
        (workload.annotations.get(MODE_KEY) if workload else None, w_wl),
        (namespace.labels.get(MODE_KEY) if namespace else None, w_ns),
    ):
        mode = _valid(value, src)
        if mode is not None:
            return mode
    return default
