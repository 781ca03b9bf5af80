"""Nodes' allocatable in the recommender: read from kube-state-metrics in the cluster-wide node query, carried
by the demo data set, and the largest node lowers (never raises) the configured ceilings of the sizing."""

from __future__ import annotations

from urllib.parse import parse_qs

import httpx
import numpy as np
import orjson

from podsizer.plausibility import Ceilings
from podsizer.resources import GPU
from recommender.input.demo_cluster import build_demo_dataset
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.input.prometheus.queries import MARK
from recommender.model import NodeInfo
from tests.unit.recommender.input.prometheus.test_prom_source import END, RAW_READS, START, fake_prometheus
from tests.unit.recommender.sizing.test_plausibility import _only, _run, _usage

GIB = 2.0**30


def _ksm(node: str, part: str, value: str, **labels: str) -> dict[str, object]:
    return {"metric": {"node": node, MARK: part, **labels}, "value": [0, value]}


NODE_ANSWER = [
    _ksm("cpu-1", "labels", "1", label_node_kubernetes_io_instance_type="m6i.4xlarge"),
    _ksm("cpu-1", "allocatable", "15.89", resource="cpu", unit="core"),
    _ksm("cpu-1", "allocatable", str(57 * 2**30), resource="memory", unit="byte"),
    _ksm("cpu-1", "allocatable", "110", resource="pods", unit="integer"),  # not a sized resource
    _ksm("gpu-1", "labels", "1"),
    _ksm("gpu-1", "allocatable", "191.45", resource="cpu", unit="core"),
    _ksm("gpu-1", "allocatable", "8", resource="nvidia_com_gpu", unit="integer"),
    _ksm("gpu-1", "allocatable", "NaN", resource="memory", unit="byte"),  # unreadable: left out
]


def _with_nodes(queries: list[str]) -> httpx.MockTransport:
    def handle(req: httpx.Request) -> httpx.Response:
        if req.url.path in RAW_READS:
            return fake_prometheus(req)
        form = parse_qs(req.content.decode())
        query = form.get("query", [""])[0]
        queries.append(query)
        if "kube_node_labels" in query and not req.url.path.endswith("query_range"):
            data = {"resultType": "vector", "result": NODE_ANSWER}
            return httpx.Response(200, content=orjson.dumps({"status": "success", "data": data}))
        return fake_prometheus(req)

    return httpx.MockTransport(handle)


def test_the_prometheus_source_fills_allocatable_from_kube_node_status_allocatable() -> None:
    queries: list[str] = []
    with PromClient("http://prom", transport=_with_nodes(queries)) as c:
        snap = PrometheusSource(c).collect(START, END)
    got = {n.name: dict(n.allocatable) for n in snap.nodes}
    assert got == {
        "cpu-1": {"cpu": 15.89, "memory": 57 * GIB},
        "gpu-1": {"cpu": 191.45, GPU: 8.0},
    }
    assert {n.name: n.instance_type for n in snap.nodes}["cpu-1"] == "m6i.4xlarge"


def test_allocatable_comes_from_the_one_cluster_wide_node_query() -> None:
    queries: list[str] = []
    with PromClient("http://prom", transport=_with_nodes(queries)) as c:
        PrometheusSource(c).collect(START, END)
    (node_query,) = [q for q in queries if "kube_node" in q]
    assert "kube_node_labels" in node_query and "kube_node_status_allocatable" in node_query
    assert 'resource=~"cpu|memory|nvidia_com_gpu"' in node_query


def test_the_demo_nodes_report_allocatable_cpu_memory_and_their_gpus() -> None:
    nodes = build_demo_dataset(END).nodes
    assert nodes and all({"cpu", "memory"} <= n.allocatable.keys() for n in nodes)
    assert all(n.allocatable.get(GPU, 0.0) == n.gpu_count for n in nodes)
    assert any(n.gpu_count for n in nodes)


def test_the_recommender_clamps_to_the_largest_nodes_allocatable() -> None:
    nodes = (
        NodeInfo("small", None, "on-demand", allocatable={"cpu": 8.0, "memory": 32 * GIB}),
        NodeInfo("big", None, "on-demand", allocatable={"cpu": 48.0, "memory": 192 * GIB}),
    )
    c = _only(_run(_usage(np.full(5000, 1e300), np.full(5000, 1e300)), nodes=nodes))
    assert (c.requests["cpu"], c.requests["memory"]) == ("48000m", "196608Mi")
    assert "capped at node allocatable" in c.reason


def test_a_node_above_the_configured_ceiling_does_not_raise_it() -> None:
    huge = [{"cpu": 4096.0, "memory": 2.0**70, GPU: 64.0}, {"cpu": 8.0}]
    assert Ceilings().from_nodes(huge) == Ceilings()
    lowered = Ceilings().from_nodes([{"cpu": 4096.0, "memory": 64 * GIB}])
    assert (lowered.cpu_cores, lowered.memory_bytes, lowered.gpus) == (256.0, 64 * GIB, 16.0)
    assert lowered.where == "node allocatable"
