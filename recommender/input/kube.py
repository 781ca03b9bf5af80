"""Reads pods, ReplicaSets, ReplicationControllers and Jobs from the Kubernetes API into an OwnerGraph (the
core resolver's facts, apiVersions included), with each pod's node, labels and container requests/limits (base
units), using the official client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient, AppsV1Api, BatchV1Api, CoreV1Api
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from podsizer.api import quantity
from podsizer.owners import UNCONTROLLED, ControllerRef, OwnerGraph, PodFacts, controller_ref
from recommender.model import SourceError
from recommender.model.raw import OwnerLink, PodInfo

PAGE_SIZE = 500


@dataclass(frozen=True)
class KubeInventory:
    """One read of the cluster's pods and their controllers."""

    pods: tuple[PodInfo, ...]
    owners: tuple[OwnerLink, ...]
    graph: OwnerGraph


def _paged(list_fn: Callable[..., Any], what: str, timeout: float) -> Iterator[Any]:
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"limit": PAGE_SIZE, "_request_timeout": timeout}
        if token:
            kwargs["_continue"] = token
        try:
            page = list_fn(**kwargs)
        except ApiException as exc:
            raise SourceError(
                f"Kubernetes API: listing {what} failed: HTTP {exc.status} {exc.reason}"
            ) from None
        except (HTTPError, OSError) as exc:
            raise SourceError(f"Kubernetes API: listing {what} failed: {type(exc).__name__}: {exc}") from None
        yield from page.items or []
        token = page.metadata._continue if page.metadata is not None else None
        if not token:
            return


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


def load_inventory(api_client: ApiClient, *, timeout: float = 60.0) -> KubeInventory:
    """List every pod, ReplicaSet, ReplicationController and Job (paged) and build the OwnerGraph.

    Failed pods stay in: their metrics history still belongs to their workload."""
    core, apps = CoreV1Api(api_client), AppsV1Api(api_client)
    pods = [_pod(p) for p in _paged(core.list_pod_for_all_namespaces, "pods", timeout)]
    links = _links(_paged(apps.list_replica_set_for_all_namespaces, "replicasets", timeout), "ReplicaSet")
    links += _links(
        _paged(core.list_replication_controller_for_all_namespaces, "replicationcontrollers", timeout),
        "ReplicationController",
    )
    links += _links(_paged(BatchV1Api(api_client).list_job_for_all_namespaces, "jobs", timeout), "Job")
    return KubeInventory(
        tuple(info for info, _ in pods),
        tuple(OwnerLink(ns, kind, name, ref.kind, ref.name) for ns, kind, name, ref in links),
        OwnerGraph.of((facts for _, facts in pods), links),
    )
