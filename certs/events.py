"""A Warning Event on the webhook's own pod (namespace/name from the downward API)."""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
from collections.abc import Callable, Mapping
from typing import Protocol

from kubernetes import client

from certs.expiry import PodRef
from podsizer.kube.events import event_body as kube_event_body

log = logging.getLogger("podsizer.certs")

COMPONENT = "podsizer-webhook"


def pod_from_env(env: Mapping[str, str] | None = None) -> PodRef | None:
    """The pod this process runs in, from POD_NAMESPACE and POD_NAME; None outside a cluster."""
    env = os.environ if env is None else env
    namespace, name = env.get("POD_NAMESPACE", "").strip(), env.get("POD_NAME", "").strip()
    return PodRef(namespace, name) if namespace and name else None


class CreateEvent(Protocol):
    """CoreV1Api.create_namespaced_event, or a test's stand-in."""

    def __call__(self, namespace: str, body: dict[str, object]) -> object: ...


def event_body(pod: PodRef, reason: str, message: str, now: dt.datetime) -> dict[str, object]:
    """A core/v1 Event of type Warning about `pod`, reported by the webhook (podsizer.kube.events)."""
    involved = {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace, "name": pod.name}
    return kube_event_body(
        involved,
        "Warning",
        reason,
        message,
        component=COMPONENT,
        instance=pod.name,
        now=now,
        host=socket.gethostname(),
    )


class PodEventSink:
    """Posts Warning Events about the webhook's pod (an EventSink for certs.expiry.ExpiryWarner)."""

    def __init__(self, pod: PodRef, create: CreateEvent, clock: Callable[[], dt.datetime]) -> None:
        self.pod = pod
        self._create = create
        self._clock = clock

    def warn(self, reason: str, message: str) -> None:
        self._create(self.pod.namespace, event_body(self.pod, reason, message, self._clock()))
        log.info("tls: posted a %s event on pod %s/%s", reason, self.pod.namespace, self.pod.name)


def _event_model(pod: PodRef, body: Mapping[str, object], now: dt.datetime) -> client.CoreV1Event:
    """The kubernetes client's CoreV1Event with event_body()'s fields."""
    return client.CoreV1Event(
        metadata=client.V1ObjectMeta(generate_name=f"{pod.name}.", namespace=pod.namespace),
        involved_object=client.V1ObjectReference(
            api_version="v1", kind="Pod", namespace=pod.namespace, name=pod.name
        ),
        type=str(body["type"]),
        reason=str(body["reason"]),
        message=str(body["message"]),
        source=client.V1EventSource(component=COMPONENT, host=socket.gethostname()),
        first_timestamp=now,
        last_timestamp=now,
        count=1,
        reporting_component=COMPONENT,
        reporting_instance=pod.name,
    )


def in_cluster_sink(
    clock: Callable[[], dt.datetime], env: Mapping[str, str] | None = None
) -> PodEventSink | None:
    """A PodEventSink with the in-cluster kubernetes client; None (logged) outside a cluster or without
    the client, so the warning is then only a log line."""
    pod = pod_from_env(env)
    if pod is None:
        return None
    try:
        from podsizer.kube.client import kube_api_client

        api = client.CoreV1Api(kube_api_client(None))
    except Exception as exc:
        log.info("tls: no in-cluster Kubernetes client (%s); expiry warnings are log lines only", exc)
        return None

    def create(namespace: str, body: dict[str, object]) -> object:
        return api.create_namespaced_event(namespace, _event_model(pod, body, clock()))

    return PodEventSink(pod, create, clock)
