"""Cluster-mode caches fed by informers: controller owners, namespace/workload metadata, and the CRD store."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any

from podsizer.api import API_GROUP, API_VERSION, PLURAL, Recommendation, WorkloadRef
from podsizer.owners import ControllerRef, controller_of
from webhook.informer import Informer, WatchLike
from webhook.store import RecommendationSnapshot, SnapshotHolder, parse_items

log = logging.getLogger("podsizer.webhook.cluster")


@dataclass(frozen=True)
class ObjectMeta:
    """The labels and annotations podsizer reads (mode, exclude)."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str]


def _meta_of(obj: Mapping[str, Any]) -> ObjectMeta:
    m = obj.get("metadata") or {}
    labels = m.get("labels") or {}
    ann = m.get("annotations") or {}
    return ObjectMeta(
        MappingProxyType({str(k): str(v) for k, v in labels.items()}),
        MappingProxyType({str(k): str(v) for k, v in ann.items()}),
    )


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    m = obj.get("metadata") or {}
    return str(m.get("namespace", "")), str(m.get("name", ""))


class OwnerCache:
    """(namespace, kind, name) of a ReplicaSet/ReplicationController -> its controller owner."""

    def __init__(self) -> None:
        self._by_kind: dict[str, dict[tuple[str, str], ControllerRef]] = {}

    def get(self, namespace: str, kind: str, name: str) -> ControllerRef | None:
        return self._by_kind.get(kind, {}).get((namespace, name))

    def handler(self, kind: str) -> _OwnerHandler:
        return _OwnerHandler(self, kind)

    def _replace(self, kind: str, items: list[dict[str, Any]]) -> None:
        new: dict[tuple[str, str], ControllerRef] = {}
        for obj in items:
            ref = controller_of(obj)
            if ref is not None:
                new[_key(obj)] = ref
        self._by_kind[kind] = new  # swap: readers see the old or the new map, never a half-built one

    def _event(self, kind: str, etype: str, obj: dict[str, Any]) -> None:
        current = self._by_kind.setdefault(kind, {})
        ref = controller_of(obj)
        if etype == "DELETED" or ref is None:
            current.pop(_key(obj), None)
        else:
            current[_key(obj)] = ref


@dataclass(frozen=True)
class _OwnerHandler:
    cache: OwnerCache
    kind: str

    def replace(self, items: list[dict[str, Any]]) -> None:
        self.cache._replace(self.kind, items)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        self.cache._event(self.kind, kind, obj)


class MetadataCache:
    """Namespace labels/annotations and workload annotations, for podsizer.io/mode and podsizer.io/exclude."""

    def __init__(self) -> None:
        self._namespaces: dict[str, ObjectMeta] = {}
        self._workloads: dict[str, dict[tuple[str, str], ObjectMeta]] = {}

    def namespace(self, name: str) -> ObjectMeta | None:
        return self._namespaces.get(name)

    def workload(self, ref: WorkloadRef) -> ObjectMeta | None:
        return self._workloads.get(ref.kind, {}).get((ref.namespace, ref.name))

    def handler(self, kind: str) -> _MetaHandler:
        return _MetaHandler(self, kind)

    def _replace(self, kind: str, items: list[dict[str, Any]]) -> None:
        if kind == "Namespace":
            self._namespaces = {_key(o)[1]: _meta_of(o) for o in items}
        else:
            self._workloads[kind] = {_key(o): _meta_of(o) for o in items}

    def _event(self, kind: str, etype: str, obj: dict[str, Any]) -> None:
        if kind == "Namespace":
            name = _key(obj)[1]
            if etype == "DELETED":
                self._namespaces.pop(name, None)
            else:
                self._namespaces[name] = _meta_of(obj)
            return
        current = self._workloads.setdefault(kind, {})
        if etype == "DELETED":
            current.pop(_key(obj), None)
        else:
            current[_key(obj)] = _meta_of(obj)


@dataclass(frozen=True)
class _MetaHandler:
    cache: MetadataCache
    kind: str

    def replace(self, items: list[dict[str, Any]]) -> None:
        self.cache._replace(self.kind, items)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        self.cache._event(self.kind, kind, obj)


class CrdWatchLoader:
    """Recommendations from the podsizer.io/v1alpha1 CRD: list+watch, each change swaps a new snapshot."""

    def __init__(self, holder: SnapshotHolder, clock: Callable[[], datetime]) -> None:
        self.holder = holder
        self.clock = clock
        self._items: dict[tuple[str, str], Recommendation] = {}
        self._lock = threading.Lock()

    def _publish(self, skipped: list[str]) -> None:
        self.holder.swap(RecommendationSnapshot.of(self._items.values(), self.clock(), "crd", skipped))

    def replace(self, items: list[dict[str, Any]]) -> None:
        recs, skipped = parse_items(items, "recommendations")
        with self._lock:
            self._items = {(r.namespace, r.name): r for r in recs}
            self._publish(skipped)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        key = _key(obj)
        with self._lock:
            if kind == "DELETED":
                self._items.pop(key, None)
                self._publish([])
                return
            recs, skipped = parse_items([obj], "recommendations")
            if recs:
                self._items[key] = recs[0]
            else:
                self._items.pop(key, None)  # an invalid update must not keep serving stale values
            self._publish(skipped)


def start_cluster_watches(
    api_client: Any,
    holder: SnapshotHolder,
    owners: OwnerCache,
    metadata: MetadataCache,
    clock: Callable[[], datetime],
    stop: threading.Event,
    watch_factory: Callable[[], WatchLike] | None = None,
) -> list[Informer]:
    """Start one informer thread per watched resource; returns them (for readiness and tests)."""
    from kubernetes import client, watch

    factory: Callable[[], WatchLike] = watch_factory or watch.Watch
    core = client.CoreV1Api(api_client)
    apps = client.AppsV1Api(api_client)
    custom = client.CustomObjectsApi(api_client)

    def custom_lister(group: str, version: str, plural: str) -> Callable[..., Any]:
        def list_fn(**kwargs: Any) -> Any:
            return custom.list_cluster_custom_object(group, version, plural, **kwargs)

        list_fn.__doc__ = "Custom objects list; the watch treats it like any list_* call."
        return list_fn

    specs: list[tuple[str, Callable[..., Any], Any]] = [
        ("recommendations", custom_lister(API_GROUP, API_VERSION, PLURAL), CrdWatchLoader(holder, clock)),
        ("replicasets", apps.list_replica_set_for_all_namespaces, owners.handler("ReplicaSet")),
        (
            "replicationcontrollers",
            core.list_replication_controller_for_all_namespaces,
            owners.handler("ReplicationController"),
        ),
        ("namespaces", core.list_namespace, metadata.handler("Namespace")),
        ("deployments", apps.list_deployment_for_all_namespaces, metadata.handler("Deployment")),
        ("statefulsets", apps.list_stateful_set_for_all_namespaces, metadata.handler("StatefulSet")),
        ("daemonsets", apps.list_daemon_set_for_all_namespaces, metadata.handler("DaemonSet")),
        ("rollouts", custom_lister("argoproj.io", "v1alpha1", "rollouts"), metadata.handler("Rollout")),
        (
            "deploymentconfigs",
            custom_lister("apps.openshift.io", "v1", "deploymentconfigs"),
            metadata.handler("DeploymentConfig"),
        ),
    ]
    informers = [Informer(name, fn, handler, factory, stop) for name, fn, handler in specs]
    for inf in informers:
        inf.start()
    return informers
