"""The updater's writes and reads against the API: pods/resize, pods/eviction, Events, pod memory usage."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Literal, Protocol

from podsizer.api import WorkloadRef
from podsizer.apierrors import KubeApiError, status_code
from podsizer.kube.events import event_body
from podsizer.kube.objects import CustomObjectClient
from podsizer.kube.resources import POD_METRICS
from podsizer.podspec import quantity

log = logging.getLogger("podsizer.updater.kube")

Outcome = Literal["done", "pdb-blocked", "gone", "rejected", "forbidden", "error"]
EventType = Literal["Normal", "Warning"]


@dataclass(frozen=True)
class Subject:
    """What an Event is about: a pod or a workload."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""

    @staticmethod
    def of_pod(pod: Mapping[str, Any]) -> Subject:
        meta = pod.get("metadata") or {}
        return Subject(
            "v1", "Pod", str(meta.get("namespace", "")), str(meta.get("name", "")), meta.get("uid", "")
        )

    @staticmethod
    def of_workload(ref: WorkloadRef) -> Subject:
        return Subject(ref.api_version, ref.kind, ref.namespace, ref.name)


class UpdaterApi(Protocol):
    """The calls the updater makes; KubeApi is the real one, tests use fakes."""

    def resize(self, namespace: str, name: str, body: Mapping[str, Any]) -> tuple[Outcome, str]: ...

    def evict(self, namespace: str, name: str) -> tuple[Outcome, str]: ...

    def event(self, subject: Subject, type_: EventType, reason: str, message: str) -> None: ...

    def usage(self, namespace: str, name: str) -> Mapping[str, Decimal] | None: ...


def _outcome(exc: Exception) -> tuple[Outcome, str]:
    status = status_code(exc)
    body = str(getattr(exc, "body", "") or exc)[:500]
    if status == 429:
        return "pdb-blocked", body  # the Eviction API's answer when a PodDisruptionBudget forbids it
    if status in (404, 409):
        return "gone", body
    if status in (400, 422):
        return "rejected", body  # the apiserver refused this change (e.g. a QoS class or resource it forbids)
    if status == 403:
        return "forbidden", body  # RBAC (or an admission policy): not this pod's fault, not remembered
    return "error", body


class KubeApi:
    """UpdaterApi over the kubernetes client (CoreV1Api; metrics.k8s.io through podsizer.kube.objects)."""

    def __init__(
        self,
        api_client: Any,
        component: str = "podsizer-updater",
        instance: str = "",
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        from kubernetes import client

        self.core = client.CoreV1Api(api_client)
        self.metrics = CustomObjectClient.of(api_client, POD_METRICS)
        self.component = component
        self.instance = instance
        self.clock = clock

    def resize(self, namespace: str, name: str, body: Mapping[str, Any]) -> tuple[Outcome, str]:
        try:
            self.core.patch_namespaced_pod_resize(name, namespace, dict(body))
        except Exception as exc:
            return _outcome(exc)
        return "done", ""

    def evict(self, namespace: str, name: str) -> tuple[Outcome, str]:
        body: Any = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        try:
            self.core.create_namespaced_pod_eviction(name, namespace, body)
        except Exception as exc:
            return _outcome(exc)
        return "done", ""

    def event(self, subject: Subject, type_: EventType, reason: str, message: str) -> None:
        involved = {"apiVersion": subject.api_version, "kind": subject.kind, "name": subject.name}
        involved["namespace"] = subject.namespace
        if subject.uid:
            involved["uid"] = subject.uid
        body: Any = event_body(  # the client sends a dict as it is
            involved,
            type_,
            reason,
            message,
            component=self.component,
            instance=self.instance or self.component,
            now=self.clock(),
        )
        try:
            self.core.create_namespaced_event(subject.namespace, body)
        except Exception as exc:  # an event lost is logged, never fatal
            log.warning("event %s on %s/%s: %s", reason, subject.namespace, subject.name, exc)

    def usage(self, namespace: str, name: str) -> Mapping[str, Decimal] | None:
        """Memory working set per container from metrics.k8s.io (metrics-server); None when unavailable."""
        try:
            found = self.metrics.get(namespace, name)
        except KubeApiError as exc:
            log.debug("usage of %s/%s: %s", namespace, name, exc)
            return None
        return container_memory(found)


def container_memory(pod_metrics: object) -> Mapping[str, Decimal] | None:
    """A PodMetrics object -> container name -> memory bytes (None when it has no readable container)."""
    containers = pod_metrics.get("containers") if isinstance(pod_metrics, Mapping) else None
    out: dict[str, Decimal] = {}
    for c in containers if isinstance(containers, list) else ():
        usage = c.get("usage") if isinstance(c, Mapping) else None
        memory = quantity(usage.get("memory")) if isinstance(usage, Mapping) else None
        if memory is not None and isinstance(c.get("name"), str):
            out[c["name"]] = memory
    return out or None
