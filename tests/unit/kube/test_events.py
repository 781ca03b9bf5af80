"""podsizer.kube.events: the one Event body, as the updater and the webhook's certificate warning post it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from certs.events import event_body as certificate_event
from certs.expiry import PodRef
from podsizer.kube.events import MESSAGE_LIMIT, event_body
from updater.kube import KubeApi, Subject

T0 = datetime(2026, 12, 4, 21, 30, 5, 120000, tzinfo=UTC)


def test_an_event_names_its_object_and_is_counted_once_in_whole_seconds() -> None:
    involved = {"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "web-1", "uid": "u1"}
    body = event_body(involved, "Normal", "Resized", "x" * 5000, component="c", instance="i", now=T0)
    assert body["metadata"] == {"generateName": "web-1.", "namespace": "shop"}
    assert body["involvedObject"] == involved and body["source"] == {"component": "c"}
    assert body["firstTimestamp"] == body["lastTimestamp"] == "2026-12-04T21:30:05Z" and body["count"] == 1
    assert body["message"] == "x" * MESSAGE_LIMIT
    assert (body["reportingComponent"], body["reportingInstance"]) == ("c", "i")


def test_the_updater_and_the_certificate_warning_post_the_same_event_shape() -> None:
    posted: list[Any] = []
    api = KubeApi(client.ApiClient(client.Configuration()), instance="updater-0", clock=lambda: T0)
    api.core = type("Core", (), {"create_namespaced_event": lambda _, ns, body: posted.append(body)})()
    api.event(Subject("v1", "Pod", "shop", "web-1"), "Warning", "Evicted", "m")
    (updater,) = posted
    webhook = certificate_event(PodRef("podsizer", "webhook-0"), "CertificateExpiring", "m", T0)
    assert updater.keys() == webhook.keys()
    pod = {"apiVersion": "v1", "kind": "Pod", "name": "web-1", "namespace": "shop"}
    assert updater["involvedObject"] == pod
    assert {k: updater[k] for k in ("type", "message", "firstTimestamp", "count")} == {
        k: webhook[k] for k in ("type", "message", "firstTimestamp", "count")
    }
    assert webhook["source"]["host"] and updater["source"] == {"component": "podsizer-updater"}
