"""kube.load_inventory: API list responses (real JSON shapes, deserialised by the real client) become
an OwnerGraph with pod requests/limits; pages are followed; API errors become SourceError."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlparse

import numpy as np
import orjson
import pytest
import urllib3
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.rest import RESTResponse

from podsizer.api import WorkloadRef
from podsizer.owners import Skipped
from recommender.input.kube import KubeInventory, load_inventory
from recommender.model import SourceError
from recommender.model.aggregate import aggregate
from recommender.model.raw import ContainerSamples, RawDataset

_API_VERSIONS = {
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Deployment": "apps/v1",
    "Rollout": "argoproj.io/v1alpha1",
    "DeploymentConfig": "apps.openshift.io/v1",
    "Experiment": "argoproj.io/v1alpha1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
}


def _ref(kind: str, name: str, controller: bool = True) -> dict[str, Any]:
    api = _API_VERSIONS.get(kind, "v1")
    return {"apiVersion": api, "kind": kind, "name": name, "uid": f"uid-{name}", "controller": controller}


def _pod(
    ns: str,
    name: str,
    owner: tuple[str, str] | None,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": ns, "name": name, "labels": labels or {}}
    if annotations:
        meta["annotations"] = annotations
    if owner:
        meta["ownerReferences"] = [_ref(*owner)]
    spec: dict[str, Any] = {
        "nodeName": "node-1",
        "containers": containers or [{"name": "main", "image": "x"}],
    }
    if init:
        spec["initContainers"] = init
    return {"metadata": meta, "spec": spec, "status": {"phase": "Running"}}


def _owned(ns: str, name: str, owner: tuple[str, str], controller: bool = True) -> dict[str, Any]:
    meta = {"namespace": ns, "name": name, "ownerReferences": [_ref(*owner, controller)]}
    if owner[0] == "DeploymentConfig":
        spec: dict[str, Any] = {"replicas": 1, "selector": {"deploymentconfig": owner[1]}}
    else:
        spec = {"replicas": 1, "selector": {"matchLabels": {"app": owner[1]}}}
    return {"metadata": meta, "spec": spec, "status": {"replicas": 1}}


PODS = [
    _pod(
        "shop",
        "web-7d9f-abcde",
        ("ReplicaSet", "web-7d9f"),
        containers=[
            {
                "name": "web",
                "image": "x",
                "resources": {
                    "requests": {"cpu": "250m", "memory": "512Mi"},
                    "limits": {"memory": "1Gi", "nvidia.com/gpu": "1"},
                },
            }
        ],
        init=[{"name": "migrate", "image": "x", "resources": {"requests": {"cpu": "100m"}}}],
        annotations={"podsizer.io/gpu": "resize", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
    ),
    _pod(
        "shop", "canary-6b5-xyzab", ("ReplicaSet", "canary-6b5"), labels={"rollouts-pod-template-hash": "6b5"}
    ),
    _pod("legacy", "cart-3-q8w7e", ("ReplicationController", "cart-3"), labels={"deploymentconfig": "cart"}),
    _pod(
        "legacy",
        "cart-3-deploy",
        ("ReplicationController", "cart-3"),
        labels={"openshift.io/deployer-pod-for.name": "cart-3"},
    ),
    _pod(
        "legacy",
        "cart-3-hook-pre",
        None,
        labels={"openshift.io/deployer-pod.type": "hook-pre", "openshift.io/deployer-pod-for.name": "cart-3"},
    ),
    _pod("shop", "db-0", ("StatefulSet", "db")),
    _pod("kube-system", "node-exporter-abcde", ("DaemonSet", "node-exporter")),
    _pod("shop", "exp-1-abcde", ("ReplicaSet", "exp-1")),
    _pod("shop", "bare", None),
    _pod("batch", "report-29467800-abcde", ("Job", "report-29467800")),
    _pod("batch", "train-fghij", ("Job", "train")),
]
REPLICASETS = [
    _owned("shop", "web-7d9f", ("Deployment", "web")),
    _owned("shop", "canary-6b5", ("Rollout", "canary")),
    _owned("shop", "exp-1", ("Experiment", "exp")),
    _owned("shop", "adopted", ("Deployment", "other"), controller=False),
]
RCS = [_owned("legacy", "cart-3", ("DeploymentConfig", "cart"))]
_JOB_SPEC = {"template": {"spec": {"containers": [{"name": "main", "image": "x"}], "restartPolicy": "Never"}}}
JOBS = [
    {**_owned("batch", "report-29467800", ("CronJob", "report")), "spec": _JOB_SPEC, "status": {}},
    {"metadata": {"namespace": "batch", "name": "train"}, "spec": _JOB_SPEC},  # no controller
]


class FakeApiClient(ApiClient):  # type: ignore[misc]
    """Answers list calls from canned items, `page` items at a time, through the client's own decoding."""

    def __init__(self, page: int = 2, fail: int | None = None) -> None:
        super().__init__(Configuration(host="http://fake"))
        self.page = page
        self.fail = fail
        self.requests: list[str] = []
        self.items = {
            "/api/v1/pods": ("PodList", PODS),
            "/apis/apps/v1/replicasets": ("ReplicaSetList", REPLICASETS),
            "/api/v1/replicationcontrollers": ("ReplicationControllerList", RCS),
            "/apis/batch/v1/jobs": ("JobList", JOBS),
        }

    def call_api(self, method: str, url: str, *args: Any, **kwargs: Any) -> RESTResponse:
        self.requests.append(url)
        parsed = urlparse(url)
        if self.fail is not None:
            body, status = b'{"kind":"Status","message":"forbidden"}', self.fail
        else:
            query = parse_qs(parsed.query)
            kind, items = self.items[parsed.path]
            start = int(query.get("continue", ["0"])[0])
            limit = int(query["limit"][0])
            assert limit >= self.page
            chunk = items[start : start + self.page]
            nxt = start + self.page
            meta = {"continue": str(nxt)} if nxt < len(items) else {}
            body, status = (
                orjson.dumps({"kind": kind, "apiVersion": "v1", "metadata": meta, "items": chunk}),
                200,
            )
        resp = urllib3.HTTPResponse(
            body=body,
            status=status,
            headers={"content-type": "application/json"},
            preload_content=True,
            reason="OK" if status == 200 else "Forbidden",
        )
        out = RESTResponse(resp)
        out.read()
        return out


@pytest.fixture(scope="module")
def inv() -> KubeInventory:
    return load_inventory(FakeApiClient())


@pytest.mark.parametrize(
    ("ns", "pod", "expected"),
    [
        ("shop", "web-7d9f-abcde", WorkloadRef("shop", "Deployment", "web")),
        ("shop", "canary-6b5-xyzab", WorkloadRef("shop", "Rollout", "canary")),
        ("legacy", "cart-3-q8w7e", WorkloadRef("legacy", "DeploymentConfig", "cart")),
        ("shop", "db-0", WorkloadRef("shop", "StatefulSet", "db")),
        ("kube-system", "node-exporter-abcde", WorkloadRef("kube-system", "DaemonSet", "node-exporter")),
        ("batch", "report-29467800-abcde", WorkloadRef("batch", "CronJob", "report")),
        ("batch", "train-fghij", WorkloadRef("batch", "Job", "train")),
    ],
)
def test_pods_resolve_through_listed_owners(
    inv: KubeInventory, ns: str, pod: str, expected: WorkloadRef
) -> None:
    assert inv.graph.resolve(ns, pod) == expected


@pytest.mark.parametrize(
    ("ns", "pod", "reason"),
    [
        ("legacy", "cart-3-deploy", "deployer or hook"),
        ("legacy", "cart-3-hook-pre", "deployer or hook"),
        ("shop", "exp-1-abcde", "unsupported kind Experiment"),
        ("shop", "bare", "no controller"),
    ],
)
def test_non_workload_pods_skip(inv: KubeInventory, ns: str, pod: str, reason: str) -> None:
    result = inv.graph.resolve(ns, pod)
    assert isinstance(result, Skipped) and reason in result.reason


def test_requests_limits_and_init_containers(inv: KubeInventory) -> None:
    web = next(p for p in inv.pods if p.name == "web-7d9f-abcde")
    assert web.requests == {"web": {"cpu": 0.25, "memory": 512 * 1024 * 1024.0}, "migrate": {"cpu": 0.1}}
    assert web.limits == {"web": {"memory": 1024**3 * 1.0, "nvidia.com/gpu": 1.0}}
    assert web.init_containers == ("migrate",)
    assert web.node == "node-1"
    assert (web.owner_kind, web.owner_name) == ("ReplicaSet", "web-7d9f")


def test_non_controller_owner_refs_are_ignored(inv: KubeInventory) -> None:
    assert inv.owners
    assert all(o.name != "adopted" for o in inv.owners)


def test_all_pages_are_read() -> None:
    fake = FakeApiClient(page=2)
    inv = load_inventory(fake)
    assert len(inv.pods) == len(PODS)
    assert sum("/api/v1/pods" in u for u in fake.requests) == 6  # 11 pods, 2 per page


def test_api_error_is_a_source_error() -> None:
    with pytest.raises(SourceError, match=r"listing pods failed: HTTP 403"):
        load_inventory(FakeApiClient(fail=403))


def test_the_pods_podsizer_annotations_reach_the_snapshot(inv: KubeInventory) -> None:
    """The Kubernetes API source's pods give the plan the same template metadata as every other source."""
    end = datetime(2026, 12, 1, tzinfo=UTC)
    ts = np.array([end.timestamp() - 60.0])
    samples = (ContainerSamples("shop", "web-7d9f-abcde", "web", ts, np.ones(1), np.ones(1)),)
    raw = RawDataset(end - timedelta(hours=1), end, inv.pods, inv.owners, samples)
    snap = aggregate(raw, source="kube", resolve=inv.graph.resolve)
    web = WorkloadRef("shop", "Deployment", "web")
    assert snap.pod_annotations == {web: {"podsizer.io/gpu": "resize"}}
    assert snap.pod_meta(web).annotations == {"podsizer.io/gpu": "resize"}
