"""Cluster-mode caches fed by informers: controller owners, namespace/workload metadata, the namespaces'
LimitRanges and ResourceQuotas (the pod plan's ClusterPolicy), the nodes' allocatable, and the CRD store."""

from __future__ import annotations

import logging
import math
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Protocol

from podsizer.api import WorkloadRef
from podsizer.api.index import RecommendationIndex
from podsizer.api.quantity import parse
from podsizer.keys import ours
from podsizer.kube.resources import DEPLOYMENT_CONFIGS, RECOMMENDATIONS, ROLLOUTS
from podsizer.kube.watch import Informer, WatchLike, custom_object_lister
from podsizer.limitrange import ClusterPolicy, limit_range_items, quota_headroom
from podsizer.owners import UNCONTROLLED, ControllerRef, controller_of
from podsizer.plausibility import largest_allocatable
from podsizer.podspec import CurrentResources
from podsizer.resources import CPU, CPU_MEMORY, GPU, MEMORY
from podsizer.snapshot import RecommendationSnapshot, SnapshotHolder

log = logging.getLogger("podsizer.cluster")


@dataclass(frozen=True)
class ObjectMeta:
    """The labels and annotations podsizer reads (mode, exclude): only its own `podsizer.io/` keys; a
    workload's spec.replicas where it has one (the updater's single-replica rule) and its pod template's
    cpu and memory requests and limits (the change budget's base: podsizer.baseline); None: no template."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    replicas: int | None = None
    template: tuple[CurrentResources, ...] | None = None


def _template_spec(kind: str, spec: object) -> Mapping[str, Any] | None:
    """The pod template's spec: spec.jobTemplate.spec.template.spec of a CronJob, else spec.template.spec."""
    if kind == "CronJob":
        job = spec.get("jobTemplate") if isinstance(spec, Mapping) else None
        spec = job.get("spec") if isinstance(job, Mapping) else None
    template = spec.get("template") if isinstance(spec, Mapping) else None
    pod = template.get("spec") if isinstance(template, Mapping) else None
    return pod if isinstance(pod, Mapping) else None


_NO_AMOUNTS: Mapping[str, str] = MappingProxyType({})


def _amounts_text(raw: object) -> Mapping[str, str]:
    if not isinstance(raw, Mapping):
        return _NO_AMOUNTS
    kept = {r: str(raw[r]) for r in CPU_MEMORY if isinstance(raw.get(r), str | int | float)}
    return MappingProxyType(kept) if kept else _NO_AMOUNTS


def template_resources(kind: str, obj: Mapping[str, Any]) -> tuple[CurrentResources, ...] | None:
    """The cpu and memory requests and limits of a workload's pod template, per container (None: the
    object has no template, e.g. a Rollout with a workloadRef, or a Namespace)."""
    pod = _template_spec(kind, obj.get("spec"))
    if pod is None:
        return None
    out: list[CurrentResources] = []
    for section, init in (("initContainers", True), ("containers", False)):
        items = pod.get(section)
        for c in items if isinstance(items, list) else ():
            name = c.get("name") if isinstance(c, Mapping) else None
            if not isinstance(name, str):
                continue
            res = c.get("resources")
            res = res if isinstance(res, Mapping) else {}
            requests, limits = _amounts_text(res.get("requests")), _amounts_text(res.get("limits"))
            out.append(CurrentResources(sys.intern(name), requests, limits, init))
    return tuple(out)


def _meta_of(obj: Mapping[str, Any], kind: str = "Namespace") -> ObjectMeta:
    m = obj.get("metadata") or {}
    spec = obj.get("spec")
    replicas = spec.get("replicas") if isinstance(spec, Mapping) else None
    count = replicas if type(replicas) is int else None
    template = None if kind == "Namespace" else template_resources(kind, obj)
    return ObjectMeta(ours(m.get("labels")), ours(m.get("annotations")), count, template)


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    m = obj.get("metadata") or {}
    return str(m.get("namespace", "")), str(m.get("name", ""))


def _compact(ref: ControllerRef | None) -> ControllerRef | None:
    """The same reference with interned text: 20,000 ReplicaSets share a handful of apiVersions, kinds
    and Deployment names instead of holding a copy each."""
    if ref is None:
        return None
    api = sys.intern(ref.api_version) if ref.api_version is not None else None
    return ControllerRef(api, sys.intern(ref.kind), sys.intern(ref.name))


def _owner_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    ns, name = _key(obj)
    return sys.intern(ns), name


def _owner_of(kind: str, obj: Mapping[str, Any]) -> ControllerRef | None:
    """The object's controller, compacted; a Job without one is UNCONTROLLED (its own workload), so the
    resolver can tell a bare Job from one the cache has not seen yet."""
    ref = _compact(controller_of(obj))
    return UNCONTROLLED if ref is None and kind == "Job" else ref


class _KindCache(Protocol):
    """A cache that keeps several kinds apart (owners, policies, metadata): fed one kind per informer."""

    def _replace(self, kind: str, items: Iterable[dict[str, Any]]) -> None: ...

    def _event(self, kind: str, etype: str, obj: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class _KindHandler:
    """The list+watch reader's Handler for one kind of a _KindCache (the kind bound to every call)."""

    cache: _KindCache
    kind: str

    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        self.cache._replace(self.kind, items)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        self.cache._event(self.kind, kind, obj)


class OwnerCache:
    """(namespace, kind, name) of a ReplicaSet/ReplicationController/Job -> its controller owner; only that
    reference is kept of each object (what the resolver reads)."""

    def __init__(self) -> None:
        self._by_kind: dict[str, dict[tuple[str, str], ControllerRef]] = {}

    def get(self, namespace: str, kind: str, name: str) -> ControllerRef | None:
        return self._by_kind.get(kind, {}).get((namespace, name))

    def handler(self, kind: str) -> _KindHandler:
        return _KindHandler(self, kind)

    def _replace(self, kind: str, items: Iterable[dict[str, Any]]) -> None:
        new: dict[tuple[str, str], ControllerRef] = {}
        for obj in items:
            ref = _owner_of(kind, obj)
            if ref is not None:
                new[_owner_key(obj)] = ref
        self._by_kind[kind] = new  # swap: readers see the old or the new map, never a half-built one

    def _event(self, kind: str, etype: str, obj: dict[str, Any]) -> None:
        current = self._by_kind.setdefault(kind, {})
        ref = _owner_of(kind, obj)
        if etype == "DELETED" or ref is None:
            current.pop(_key(obj), None)
        else:
            current[_owner_key(obj)] = ref


class PolicyCache:
    """Per namespace: what its LimitRanges and ResourceQuotas allow, as one ClusterPolicy object.

    Only the parsed items and headroom are kept, not the objects. The ClusterPolicy of a namespace is
    rebuilt when one of its objects changes (a new object, so decisions cached under the old one are not
    served); a namespace with neither has none.
    """

    def __init__(self) -> None:
        # kind -> namespace -> object name -> that one object's policy
        self._objects: dict[str, dict[str, dict[str, ClusterPolicy]]] = {
            "LimitRange": {},
            "ResourceQuota": {},
        }
        self._policies: dict[str, ClusterPolicy] = {}
        self._lock = threading.Lock()

    def cluster_policy(self, namespace: str) -> ClusterPolicy | None:
        return self._policies.get(namespace)

    def handler(self, kind: str) -> _KindHandler:
        return _KindHandler(self, kind)

    def _store(self, kind: str) -> dict[str, dict[str, ClusterPolicy]]:
        return self._objects.setdefault(kind, {})

    @staticmethod
    def _parsed(kind: str, obj: Mapping[str, Any]) -> ClusterPolicy:
        if kind == "LimitRange":
            return ClusterPolicy(limit_range_items([obj]))
        return ClusterPolicy(quota_headroom=MappingProxyType(quota_headroom([obj])))

    def _rebuild(self, namespace: str) -> None:
        parts = [
            p
            for kind in sorted(self._objects)
            for _, p in sorted(self._store(kind).get(namespace, {}).items())
        ]
        if not parts:
            self._policies.pop(namespace, None)
            return
        headroom: dict[str, Decimal] = {}
        for part in parts:
            for key, value in part.quota_headroom.items():
                headroom[key] = min(value, headroom.get(key, value))
        items = tuple(i for part in parts for i in part.limit_ranges)
        self._policies[namespace] = ClusterPolicy(items, MappingProxyType(headroom))

    def _replace(self, kind: str, objects: Iterable[dict[str, Any]]) -> None:
        fresh: dict[str, dict[str, ClusterPolicy]] = {}
        for obj in objects:
            ns, name = _key(obj)
            fresh.setdefault(ns, {})[name] = self._parsed(kind, obj)
        with self._lock:
            store = self._store(kind)
            touched = set(store) | set(fresh)
            store.clear()
            store.update(fresh)
            for ns in touched:
                self._rebuild(ns)

    def _event(self, kind: str, etype: str, obj: dict[str, Any]) -> None:
        ns, name = _key(obj)
        parsed = None if etype == "DELETED" else self._parsed(kind, obj)
        with self._lock:
            in_ns = self._store(kind).setdefault(ns, {})
            if parsed is None:
                in_ns.pop(name, None)
            else:
                in_ns[name] = parsed
            if not in_ns:
                self._store(kind).pop(ns, None)
            self._rebuild(ns)


_NODE_RESOURCES = (CPU, MEMORY, GPU)
_EMPTY_AMOUNTS: Mapping[str, float] = MappingProxyType({})


def node_allocatable(obj: Mapping[str, Any]) -> Mapping[str, float]:
    """A Node's allocatable cpu cores, memory bytes and GPUs (unreadable or non-positive: left out)."""
    status = obj.get("status")
    raw = status.get("allocatable") if isinstance(status, Mapping) else None
    out: dict[str, float] = {}
    for resource in _NODE_RESOURCES:
        value = raw.get(resource) if isinstance(raw, Mapping) else None
        if not isinstance(value, str | int | float):
            continue
        try:
            amount = parse(value)
        except (ValueError, ArithmeticError):
            continue
        if math.isfinite(amount) and amount > 0:
            out[resource] = amount
    return MappingProxyType(out)


class NodeCache:
    """Per node: its allocatable cpu, memory and GPUs only; and the largest per resource over all nodes.

    `largest()` is a new object whenever it changes (callers may key on identity); empty: no node known."""

    def __init__(self) -> None:
        self._nodes: dict[str, Mapping[str, float]] = {}
        self._largest: Mapping[str, float] = _EMPTY_AMOUNTS
        self._lock = threading.Lock()

    def largest(self) -> Mapping[str, float]:
        return self._largest

    def handler(self) -> _NodeHandler:
        return _NodeHandler(self)

    def _rebuild(self) -> None:
        best = largest_allocatable(self._nodes.values())
        if best != self._largest:
            self._largest = MappingProxyType(best)

    def _replace(self, items: Iterable[dict[str, Any]]) -> None:
        fresh = {_key(o)[1]: node_allocatable(o) for o in items}
        with self._lock:
            self._nodes = fresh
            self._rebuild()

    def _event(self, etype: str, obj: dict[str, Any]) -> None:
        name = _key(obj)[1]
        with self._lock:
            if etype == "DELETED":
                self._nodes.pop(name, None)
            else:
                self._nodes[name] = node_allocatable(obj)
            self._rebuild()


@dataclass(frozen=True)
class _NodeHandler:
    cache: NodeCache

    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        self.cache._replace(items)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        self.cache._event(kind, obj)


class MetadataCache:
    """Namespace labels/annotations and workload annotations, for podsizer.io/mode and podsizer.io/exclude;
    `policies` holds the namespaces' LimitRanges and ResourceQuotas (`cluster_policy`), `nodes` the nodes'
    allocatable (`largest_allocatable`)."""

    def __init__(self) -> None:
        self._namespaces: dict[str, ObjectMeta] = {}
        self._workloads: dict[str, dict[tuple[str, str], ObjectMeta]] = {}
        self.policies = PolicyCache()
        self.nodes = NodeCache()

    def cluster_policy(self, namespace: str) -> ClusterPolicy | None:
        """The namespace's LimitRanges and quota headroom (None: it has neither)."""
        return self.policies.cluster_policy(namespace)

    def largest_allocatable(self) -> Mapping[str, float]:
        """The largest node's allocatable cpu cores, memory bytes and GPUs (empty: no node known)."""
        return self.nodes.largest()

    def namespace(self, name: str) -> ObjectMeta | None:
        return self._namespaces.get(name)

    def workload(self, ref: WorkloadRef) -> ObjectMeta | None:
        return self._workloads.get(ref.kind, {}).get((ref.namespace, ref.name))

    def replicas(self, ref: WorkloadRef) -> int | None:
        """The workload's spec.replicas (None: unknown, or a kind without it: DaemonSet, Job)."""
        meta = self.workload(ref)
        return None if meta is None else meta.replicas

    def template(self, ref: WorkloadRef) -> tuple[CurrentResources, ...] | None:
        """The workload's pod template's cpu/memory requests and limits (None: unknown)."""
        meta = self.workload(ref)
        return None if meta is None else meta.template

    def handler(self, kind: str) -> _KindHandler:
        return _KindHandler(self, kind)

    def _replace(self, kind: str, items: Iterable[dict[str, Any]]) -> None:
        if kind == "Namespace":
            self._namespaces = {_key(o)[1]: _meta_of(o) for o in items}
        else:
            self._workloads[kind] = {_key(o): _meta_of(o, kind) for o in items}

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
            current[_key(obj)] = _meta_of(obj, kind)


@dataclass(frozen=True)
class _JobHandler:
    """batch/v1 Jobs feed two caches from one watch: the owner chain (Job -> CronJob, or a bare Job) and
    the workload metadata of bare Jobs (their podsizer.io/ annotations)."""

    owners: _KindHandler
    metadata: _KindHandler

    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        jobs = list(items)
        self.owners.replace(jobs)
        self.metadata.replace(jobs)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        self.owners.event(kind, obj)
        self.metadata.event(kind, obj)


Schedule = Callable[[float, Callable[[], None]], None]


def _timer(delay: float, fn: Callable[[], None]) -> None:
    t = threading.Timer(delay, fn)
    t.daemon = True
    t.start()


class CrdWatchLoader:
    """Recommendations from the podsizer.io/v1alpha1 CRD: list+watch into a dict, published as snapshots.

    A list publishes at once. A watch event is O(1): it updates the dict (and the skipped reasons of that
    one object) and, unless one is pending, schedules a publish `debounce` seconds later; a burst of events
    costs one rebuild of the immutable snapshot, not one per event. `rebuilds` counts the publishes.
    """

    DEBOUNCE_SECONDS = 0.2

    def __init__(
        self,
        holder: SnapshotHolder,
        clock: Callable[[], datetime],
        debounce: float = DEBOUNCE_SECONDS,
        schedule: Schedule = _timer,
    ) -> None:
        self.holder = holder
        self.clock = clock
        self.debounce = debounce
        self.schedule = schedule
        self.rebuilds = 0
        self._index = RecommendationIndex()  # per object: one bad object's reason until it changes
        self._pending = False
        self._lock = threading.Lock()

    def _publish(self) -> None:
        self._pending = False
        self.rebuilds += 1
        index, cluster = self._index, self.holder.cluster_name  # this cluster's Recommendations only
        snapshot = RecommendationSnapshot.of(
            index.recommendations(), self.clock(), "crd", index.skipped(), cluster
        )
        self.holder.swap(snapshot)

    def flush(self) -> None:
        """Publish what the events changed (the scheduled call; tests call it directly)."""
        with self._lock:
            if self._pending:
                self._publish()

    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        with self._lock:
            self._index.replace(items)
            self._publish()

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self._index.apply(kind, obj)
            if self._pending:
                return
            self._pending = True
        if self.debounce <= 0:
            self.flush()
        else:
            self.schedule(self.debounce, self.flush)


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
    batch = client.BatchV1Api(api_client)
    specs: list[tuple[str, Callable[..., Any], Any]] = [
        ("recommendations", custom_object_lister(api_client, RECOMMENDATIONS), CrdWatchLoader(holder, clock)),
        ("replicasets", apps.list_replica_set_for_all_namespaces, owners.handler("ReplicaSet")),
        (
            "replicationcontrollers",
            core.list_replication_controller_for_all_namespaces,
            owners.handler("ReplicationController"),
        ),
        ("namespaces", core.list_namespace, metadata.handler("Namespace")),
        ("nodes", core.list_node, metadata.nodes.handler()),
        ("limitranges", core.list_limit_range_for_all_namespaces, metadata.policies.handler("LimitRange")),
        (
            "resourcequotas",
            core.list_resource_quota_for_all_namespaces,
            metadata.policies.handler("ResourceQuota"),
        ),
        ("deployments", apps.list_deployment_for_all_namespaces, metadata.handler("Deployment")),
        ("statefulsets", apps.list_stateful_set_for_all_namespaces, metadata.handler("StatefulSet")),
        ("daemonsets", apps.list_daemon_set_for_all_namespaces, metadata.handler("DaemonSet")),
        ("rollouts", custom_object_lister(api_client, ROLLOUTS), metadata.handler("Rollout")),
        (
            "jobs",  # a CronJob's new Job pods resolve from memory, never an API call per admission
            batch.list_job_for_all_namespaces,
            _JobHandler(owners.handler("Job"), metadata.handler("Job")),
        ),
        ("cronjobs", batch.list_cron_job_for_all_namespaces, metadata.handler("CronJob")),
        (
            "deploymentconfigs",
            custom_object_lister(api_client, DEPLOYMENT_CONFIGS),
            metadata.handler("DeploymentConfig"),
        ),
    ]
    informers = [Informer(name, fn, handler, factory, stop) for name, fn, handler in specs]
    for inf in informers:
        inf.start()
    return informers
