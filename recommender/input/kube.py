"""Reads pods, ReplicaSets, ReplicationControllers and Jobs from the Kubernetes API into an OwnerGraph (the
core resolver's facts, apiVersions included), with each pod's node, labels and container requests/limits (base
units), using the official client."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient, AppsV1Api, BatchV1Api, CoreV1Api

from podsizer.api import quantity
from podsizer.apierrors import KubeApiError, failing_as
from podsizer.kube.pages import pages
from podsizer.owners import UNCONTROLLED, ControllerRef, OwnerGraph, PodFacts, controller_ref
from recommender.model import SourceError
from recommender.model.raw import OwnerLink, PodInfo


@dataclass(frozen=True)
class KubeInventory:
    """One read of the cluster's pods and their controllers."""

    pods: tuple[PodInfo, ...]
    owners: tuple[OwnerLink, ...]
    graph: OwnerGraph


def _paged(list_fn: Callable[..., Any], what: str, timeout: float) -> Iterator[Any]:
    """Every object of a typed list call, page by page (podsizer.kube.pages); SourceError when it fails."""

    def fetch(paging: dict[str, Any]) -> Mapping[str, Any]:
        with failing_as(f"Kubernetes API: listing {what} failed"):
            page = list_fn(_request_timeout=timeout, **paging)
        token = page.metadata._continue if page.metadata is not None else None
        return {"items": page.items or [], "metadata": {"continue": token}}

    try:
        for page in pages(fetch):
            yield from page["items"]
    except KubeApiError as exc:
        raise SourceError(str(exc)) from None


def _controller(meta: Any) -> ControllerRef | None:
    for r in meta.owner_references or []:
        ref = controller_ref(r.controller, r.api_version, r.kind, r.name)
        if ref is not None:
            return ref
    return None


def _resources(
    containers: list[Any] | None, subject: str
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    requests: dict[str, dict[str, float]] = {}
    limits: dict[str, dict[str, float]] = {}
    for c in containers or []:
        res = c.resources
        for target, values in (
            (requests, res.requests if res else None),
            (limits, res.limits if res else None),
        ):
            parsed: dict[str, float] = {}
            for name, value in (values or {}).items():
                try:
                    parsed[name] = quantity.parse(value)
                except ValueError as exc:
                    raise SourceError(f"{subject}: container {c.name}: {name}: {exc}") from None
            if parsed:
                target[c.name] = parsed
    return requests, limits


def _pod(pod: Any) -> tuple[PodInfo, PodFacts]:
    meta, spec = pod.metadata, pod.spec
    subject = f"pod {meta.namespace}/{meta.name}"
    containers = list(spec.containers or []) if spec else []
    init = list(spec.init_containers or []) if spec else []
    requests, limits = _resources(containers + init, subject)
    owner = _controller(meta)
    info = PodInfo(
        namespace=str(meta.namespace),
        name=str(meta.name),
        node=str(spec.node_name or "") if spec else "",
        owner_kind=owner.kind if owner else None,
        owner_name=owner.name if owner else None,
        labels=dict(meta.labels or {}),
        annotations=dict(meta.annotations or {}),
        requests=requests,
        limits=limits,
        init_containers=tuple(str(c.name) for c in init),
    )
    return info, PodFacts(info.namespace, info.name, owner, info.labels, info.annotations)


def _links(items: Iterator[Any], kind: str) -> list[tuple[str, str, str, ControllerRef]]:
    """Each object's controller; a Job without one is listed as UNCONTROLLED (its own workload)."""
    out = []
    for item in items:
        owner = _controller(item.metadata)
        if owner is None and kind == "Job":
            owner = UNCONTROLLED
        if owner is not None:
            out.append((str(item.metadata.namespace), kind, str(item.metadata.name), owner))
    return out


def _lister(
    fn_all: Callable[..., Any], fn_ns: Callable[..., Any], namespace: str | None
) -> Callable[..., Any]:
    """The cluster-wide list call, or the namespaced one bound to `namespace`."""
    if namespace is None:
        return fn_all
    return lambda **kw: fn_ns(namespace, **kw)


def _controller_links(
    api_client: ApiClient, namespace: str | None, timeout: float
) -> list[tuple[str, str, str, ControllerRef]]:
    """The controller links of every ReplicaSet, ReplicationController and Job (paged), cluster-wide or of
    one namespace."""
    core, apps, batch = CoreV1Api(api_client), AppsV1Api(api_client), BatchV1Api(api_client)
    listers = (
        (
            "ReplicaSet",
            "replicasets",
            apps.list_replica_set_for_all_namespaces,
            apps.list_namespaced_replica_set,
        ),
        (
            "ReplicationController",
            "replicationcontrollers",
            core.list_replication_controller_for_all_namespaces,
            core.list_namespaced_replication_controller,
        ),
        ("Job", "jobs", batch.list_job_for_all_namespaces, batch.list_namespaced_job),
    )
    links: list[tuple[str, str, str, ControllerRef]] = []
    for kind, what, fn_all, fn_ns in listers:
        links += _links(_paged(_lister(fn_all, fn_ns, namespace), what, timeout), kind)
    return links


def _owner_links(links: list[tuple[str, str, str, ControllerRef]]) -> tuple[OwnerLink, ...]:
    return tuple(OwnerLink(ns, kind, name, ref.kind, ref.name) for ns, kind, name, ref in links)


def load_inventory(api_client: ApiClient, *, timeout: float = 60.0) -> KubeInventory:
    """List every pod, ReplicaSet, ReplicationController and Job (paged) and build the OwnerGraph.

    Failed pods stay in: their metrics history still belongs to their workload."""
    pods = [_pod(p) for p in _paged(CoreV1Api(api_client).list_pod_for_all_namespaces, "pods", timeout)]
    links = _controller_links(api_client, None, timeout)
    return KubeInventory(
        tuple(info for info, _ in pods),
        _owner_links(links),
        OwnerGraph.of((facts for _, facts in pods), links),
    )


@dataclass(frozen=True)
class NamespaceInventory:
    """One namespace's pods and their controllers' links, and the containers whose last termination was an
    OOM kill (the kubelet's containerStatuses[].lastState.terminated.reason, or the current state's)."""

    pods: tuple[PodInfo, ...]
    owners: tuple[OwnerLink, ...]
    oom_killed: frozenset[tuple[str, str, str]]


def _oom_killed(pod: Any) -> set[tuple[str, str, str]]:
    meta, status = pod.metadata, pod.status
    out = set()
    for cs in (status.container_statuses or []) if status else []:
        for state in (cs.last_state, cs.state):
            terminated = state.terminated if state else None
            if terminated is not None and terminated.reason == "OOMKilled":
                out.add((str(meta.namespace), str(meta.name), str(cs.name)))
    return out


def load_namespace(api_client: ApiClient, namespace: str, *, timeout: float = 60.0) -> NamespaceInventory:
    """The pods of one namespace (paged) with their ReplicaSet, ReplicationController and Job links and OOM
    kills: what kube-state-metrics' series would say about it (for a store without them)."""
    core = CoreV1Api(api_client)
    lister = _lister(core.list_pod_for_all_namespaces, core.list_namespaced_pod, namespace)
    raw = list(_paged(lister, f"pods in {namespace}", timeout))
    return NamespaceInventory(
        tuple(_pod(p)[0] for p in raw),
        _owner_links(_controller_links(api_client, namespace, timeout)),
        frozenset(k for p in raw for k in _oom_killed(p)),
    )
