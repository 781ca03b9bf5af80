"""The watched running pods, kept slim: only the fields the updater's decision and owner resolution read."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

_META = ("name", "namespace", "uid", "labels", "annotations", "ownerReferences", "creationTimestamp")
_CONTAINER = ("name", "resources", "resizePolicy", "restartPolicy")
_STATUS = ("phase", "conditions", "startTime", "resize")


def _pick(obj: object, keys: Iterable[str]) -> dict[str, Any]:
    return {k: obj[k] for k in keys if k in obj} if isinstance(obj, Mapping) else {}


def slim(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod with metadata, containers' resources and policies, and status phase/conditions only."""
    meta = _pick(pod.get("metadata"), (*_META, "deletionTimestamp"))
    raw = pod.get("spec")
    spec_in: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    spec: dict[str, Any] = _pick(spec_in, ("restartPolicy", "nodeName", "resources"))
    for section in ("containers", "initContainers"):
        items = spec_in.get(section)
        if isinstance(items, list):
            spec[section] = [_pick(c, _CONTAINER) for c in items]
    return {"metadata": meta, "spec": spec, "status": _pick(pod.get("status"), _STATUS)}


def _key(pod: Mapping[str, Any]) -> tuple[str, str]:
    raw = pod.get("metadata")
    meta: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


class PodCache:
    """Informer handler: (namespace, name) -> slim pod; `pods()` is a consistent list for one pass."""

    def __init__(self) -> None:
        self._pods: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def pods(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._pods.values())

    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        fresh = {_key(p): slim(p) for p in items}
        with self._lock:
            self._pods = fresh

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        with self._lock:
            if kind == "DELETED":
                self._pods.pop(_key(obj), None)
            else:
                self._pods[_key(obj)] = slim(obj)
