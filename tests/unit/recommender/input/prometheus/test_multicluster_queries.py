"""Multi-cluster queries: every PromQL text, series matcher and label lookup a scoped run sends carries
`<cluster_label>="<cluster>"`; the dataset's workloads carry the cluster; dcgm labels keep it."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

import httpx
import numpy as np
import orjson

from podsizer.api import WorkloadRef
from recommender.input.dcgm import gpu_samples, normalize_labels
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.input.prometheus import queries as q
from tests.support.remoteread import read_request, selector

END = datetime(2026, 12, 1, tzinfo=UTC)
START = END - timedelta(days=1)
EAST = 'cluster="east"'

OWNERS = [
    {"__name__": "kube_pod_owner", "namespace": "ns", "pod": "web-1", "owner_kind": "ReplicaSet",
     "owner_name": "web-abc", "owner_is_controller": "true", "cluster": "east"},
    {"__name__": "kube_replicaset_owner", "namespace": "ns", "replicaset": "web-abc",
     "owner_kind": "Deployment", "owner_name": "web", "owner_is_controller": "true", "cluster": "east"},
]  # fmt: skip


def _matrix(labels: dict[str, str], value: str) -> dict[str, object]:
    ts = range(int(START.timestamp()), int(END.timestamp()) + 1, 300)
    return {"metric": labels, "values": [[t, value] for t in ts]}


def _range_answer(query: str) -> list[dict[str, object]]:
    pod = {"namespace": "ns", "pod": "web-1", "container": "app", "cluster": "east"}
    if query.startswith("rate("):
        return [_matrix(pod, "0.2")]
    if query.startswith("max_over_time(container_memory"):
        return [_matrix(pod, "1e8")]
    if "DCGM" in query:
        gpu = {"Hostname": "n1", "UUID": "GPU-1", "gpu": "0", "modelName": "A100", **pod}
        return [_matrix({**gpu, q.MARK: q.SM_ACTIVE}, "0.5"), _matrix({**gpu, q.MARK: q.FB_USED}, "100")]
    return []


def _instant_answer(query: str) -> list[dict[str, object]]:
    if "kube_horizontalpodautoscaler" in query:
        info = {"namespace": "ns", "horizontalpodautoscaler": "web", "scaletargetref_kind": "Deployment",
                "scaletargetref_name": "web", q.MARK: "info"}  # fmt: skip
        return [{"metric": info, "value": [0, "1"]}]
    return []


class Recorder:
    """A fake Prometheus that records every PromQL text and matcher it is sent."""

    def __init__(self) -> None:
        self.texts: list[tuple[str, str]] = []  # (endpoint, text)

    def __call__(self, req: httpx.Request) -> httpx.Response:
        path = req.url.path
        if path == "/api/v1/read":  # the raw reads' selectors are recorded too, then not offered (as Thanos)
            self.texts.append((path, selector(read_request(req.content)[0])))
            return httpx.Response(404, text="404 page not found")
        form = parse_qs(req.content.decode()) if req.method == "POST" else parse_qs(req.url.query.decode())
        data: object
        if path == "/api/v1/export":
            self.texts += [(path, m) for m in form["match[]"]]
            return httpx.Response(404, text="404 page not found")
        if path.endswith("/values"):
            self.texts += [(path, m) for m in form["match[]"]]
            data = ["east", "west"] if "/label/cluster/" in path else ["ns"]
        elif path.endswith("/series"):
            self.texts += [(path, m) for m in form["match[]"]]
            data = OWNERS
        else:
            query = form["query"][0]
            self.texts.append((path, query))
            kind = "matrix" if path.endswith("query_range") else "vector"
            result = _range_answer(query) if kind == "matrix" else _instant_answer(query)
            data = {"resultType": kind, "result": result}
        return httpx.Response(200, content=orjson.dumps({"status": "success", "data": data}))


def _source(recorder: Recorder, cluster: str = "east") -> PrometheusSource:
    client = PromClient("http://prom", transport=httpx.MockTransport(recorder))
    return PrometheusSource(client, cluster_label="cluster", cluster=cluster)


BRACES = re.compile(r"\{[^{}]*\}")
# a metric name not followed by a selector would read every cluster's series (dcgm-exporter metrics are
# selected by {__name__=~...}, which BRACES checks)
BARE_METRIC = re.compile(r"\b(?:kube|container)_\w+\b(?!\{)")


def test_every_text_a_scoped_run_sends_carries_the_cluster_matcher() -> None:
    recorder = Recorder()
    _source(recorder).dataset(START, END)
    endpoints = {path.rsplit("/", 1)[-1] for path, _ in recorder.texts}
    assert {"values", "series", "query", "query_range", "read", "export"} <= endpoints  # every kind asked
    for _, text in recorder.texts:
        selectors = BRACES.findall(text)
        assert selectors, text
        assert all(EAST in s for s in selectors), text
        assert not BARE_METRIC.findall(text), text


def test_cluster_discovery_reads_the_label_over_the_window() -> None:
    recorder = Recorder()
    assert _source(recorder).clusters(START, END) == ["east", "west"]
    ((path, match),) = recorder.texts
    assert path == "/api/v1/label/cluster/values"
    assert match == q.containers_match()  # every cluster's container series, unscoped


def test_a_scoped_dataset_puts_every_workload_in_its_cluster() -> None:
    source = _source(Recorder())
    raw = source.dataset(START, END)
    assert raw.cluster == "east"
    snap = source.usage(raw)
    web = WorkloadRef("ns", "Deployment", "web", "east")
    assert [c.workload for c in snap.containers] == [web]
    assert [a.workload for a in snap.autoscalers] == [web]
    assert {g.workload for g in snap.gpus} == {web}


def test_for_cluster_scopes_a_copy_and_keeps_the_client() -> None:
    source = _source(Recorder(), cluster="")
    west = source.for_cluster("west")
    assert (west.cluster, west.scope.matcher, west.client) == ("west", 'cluster="west"', source.client)
    assert source.cluster == "" and source.scope.matcher == 'cluster=""'


def test_unscoped_queries_are_the_single_cluster_texts() -> None:
    w = q.Window(3600)
    selector = 'container_cpu_usage_seconds_total{container!="",container!="POD",namespace="ns"}'
    assert q.cpu_rate("ns", w) == f"rate({selector}[120s])"
    assert "{}" not in q.nodes(w) + q.autoscalers(w) + q.gpu_series(300)
    assert "kube_node_labels[3600s]" in q.nodes(w)
    assert q.identity_series("ns")[0] == 'kube_pod_owner{namespace="ns"}'


def test_the_cluster_name_is_quoted() -> None:
    scope = q.Scope("cluster", 'a"b\\c')
    assert scope.matcher == 'cluster="a\\"b\\\\c"'
    assert q.nodes(q.Window(60), scope).count(scope.matcher) == 3


def test_dcgm_labels_keep_the_cluster_label_and_nothing_else_takes_its_place() -> None:
    labels = {"Hostname": "n1", "UUID": "GPU-1", "exported_namespace": "ns", "exported_pod": "p",
              "exported_container": "c", "namespace": "gpu-operator", "pod": "dcgm-exporter-x",
              "cluster": "east", "Cluster": "ignored"}  # fmt: skip
    canonical = normalize_labels(labels, "cluster")
    assert canonical["cluster"] == "east"
    assert (canonical["namespace"], canonical["pod"]) == ("ns", "p")
    assert "cluster" not in normalize_labels(labels)  # without a cluster label nothing is kept as one
    assert normalize_labels({**labels, "k8s_cluster": "west"}, "k8s_cluster")["cluster"] == "west"


def test_two_clusters_gpus_with_the_same_uuid_stay_two() -> None:
    ts, vs = np.array([0.0, 300.0]), np.array([0.5, 0.6])
    base = {"hostname": "n1", "uuid": "GPU-1", "namespace": "ns", "pod": "p", "container": "c"}
    series = [(q.SM_ACTIVE, {**base, "cluster": c}, ts, vs) for c in ("east", "west")]
    assert len(gpu_samples(series)) == 2
