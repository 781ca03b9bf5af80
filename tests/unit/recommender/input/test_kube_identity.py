"""Without kube-state-metrics: one namespace's pods, owner links and OOM kills from the Kubernetes API (real
JSON shapes, deserialised by the real client), used only where kube-state-metrics knows no pod."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import orjson
import urllib3
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.rest import RESTResponse

from recommender.input.kube import load_namespace
from recommender.input.prometheus.ksm import Identity
from recommender.input.prometheus.kubeapi import ApiIdentity
from recommender.model.raw import OwnerLink, PodInfo

NS = "shop"
RS_REF = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f", "uid": "u1", "controller": True}
DEPLOY_REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u2", "controller": True}


def _status(name: str, last: str | None, now: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"name": name, "ready": True, "restartCount": 1, "image": "x", "imageID": "x"}
    if last:
        status["lastState"] = {"terminated": {"reason": last, "exitCode": 137}}
    status["state"] = {"terminated": {"reason": now, "exitCode": 137}} if now else {"running": {}}
    return status


PODS = [
    {
        "metadata": {"namespace": NS, "name": "web-7d9f-a", "ownerReferences": [RS_REF]},
        "spec": {
            "nodeName": "n1",
            "containers": [
                {
                    "name": "main",
                    "image": "x",
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                        "limits": {"memory": "256Mi"},
                    },
                },
                {"name": "sidecar", "image": "x"},
            ],
        },
        "status": {
            "phase": "Running",
            "containerStatuses": [_status("main", "OOMKilled"), _status("sidecar", "Error")],
        },
    },
    {
        "metadata": {"namespace": NS, "name": "web-7d9f-b", "ownerReferences": [RS_REF]},
        "spec": {"nodeName": "n1", "containers": [{"name": "main", "image": "x"}]},
        "status": {"phase": "Running", "containerStatuses": [_status("main", None, now="OOMKilled")]},
    },
]
REPLICASETS = [
    {
        "metadata": {"namespace": NS, "name": "web-7d9f", "ownerReferences": [DEPLOY_REF]},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }
]


class NamespacedApi(ApiClient):  # type: ignore[misc]
    """Answers the namespaced list calls from canned items through the client's own decoding."""

    def __init__(self) -> None:
        super().__init__(Configuration(host="http://fake"))
        self.paths: list[str] = []
        self.items = {
            f"/api/v1/namespaces/{NS}/pods": ("PodList", PODS),
            f"/apis/apps/v1/namespaces/{NS}/replicasets": ("ReplicaSetList", REPLICASETS),
            f"/api/v1/namespaces/{NS}/replicationcontrollers": ("ReplicationControllerList", []),
            f"/apis/batch/v1/namespaces/{NS}/jobs": ("JobList", []),
        }

    def call_api(self, method: str, url: str, *args: Any, **kwargs: Any) -> RESTResponse:
        path = urlparse(url).path
        self.paths.append(path)
        kind, items = self.items[path]
        body = orjson.dumps({"kind": kind, "apiVersion": "v1", "metadata": {}, "items": items})
        resp = urllib3.HTTPResponse(
            body=body,
            status=200,
            headers={"content-type": "application/json"},
            preload_content=True,
            reason="OK",
        )
        out = RESTResponse(resp)
        out.read()
        return out


def test_a_namespace_reads_pods_owner_links_and_oom_kills_from_the_api() -> None:
    api = NamespacedApi()
    inv = load_namespace(api, NS)
    assert sorted(p.name for p in inv.pods) == ["web-7d9f-a", "web-7d9f-b"]
    web_a = next(p for p in inv.pods if p.name == "web-7d9f-a")
    assert (web_a.owner_kind, web_a.owner_name, web_a.node) == ("ReplicaSet", "web-7d9f", "n1")
    assert web_a.requests["main"] == {"cpu": 0.1, "memory": 128 * 2**20}
    assert inv.owners == (OwnerLink(NS, "ReplicaSet", "web-7d9f", "Deployment", "web"),)
    # the last termination (or the current one) an OOM kill; another reason is not
    assert inv.oom_killed == {(NS, "web-7d9f-a", "main"), (NS, "web-7d9f-b", "main")}
    assert all(path.startswith(("/api/v1/namespaces/shop/", "/apis/")) for path in api.paths)


def test_the_api_is_asked_only_where_kube_state_metrics_knows_no_pod() -> None:
    calls: list[int] = []

    def connect() -> ApiClient:
        calls.append(1)
        return NamespacedApi()

    source = ApiIdentity(connect)
    known = Identity([PodInfo(NS, "x", "n1", "ReplicaSet", "x-1")], [], set(), {})
    assert source.fill(NS, known) is known
    assert calls == []
    empty = Identity([], [], set(), {(NS, "web-7d9f-a", "main"): 42})
    filled = source.fill(NS, empty)
    assert [p.name for p in filled.pods] == ["web-7d9f-a", "web-7d9f-b"]
    assert filled.samples == empty.samples  # the counts are cAdvisor's, from Prometheus
    assert (NS, "web-7d9f-a", "main") in filled.oom_killed
    source.fill(NS, empty)
    assert calls == [1]  # one client for every namespace


def test_without_a_cluster_a_namespace_stays_as_kube_state_metrics_left_it() -> None:
    empty = Identity([], [], set(), {})
    assert ApiIdentity(lambda: None).fill(NS, empty) is empty
