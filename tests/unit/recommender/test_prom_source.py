"""PrometheusSource on canned answers: NaN samples, unknown owner kinds and empty results are skipped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

import httpx
import orjson
import pytest

from podsizer.api import WorkloadRef
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.input.prometheus.queries import MARK

END = datetime(2026, 12, 1, tzinfo=UTC)
START = END - timedelta(days=1)


def series(pod: str, container: str, value: str) -> dict[str, object]:
    """One range-query series over the day at 5-minute steps, every point `value`."""
    ts = range(int(START.timestamp()), int(END.timestamp()) + 1, 300)
    return {
        "metric": {"namespace": "ns", "pod": pod, "container": container},
        "values": [[t, value] for t in ts],
    }


def count(pod: str, container: str, n: int) -> dict[str, object]:
    return {
        "metric": {"namespace": "ns", "pod": pod, "container": container, MARK: "count"},
        "value": [0, str(n)],
    }


_PODS = (("web-1", "ReplicaSet", "web-abc"), ("web-2", "ReplicaSet", "web-abc"), ("job-1", "Job", "x"))
OWNERS = [
    {"__name__": "kube_pod_owner", "namespace": "ns", "pod": p, "owner_kind": k, "owner_name": n,
     "owner_is_controller": "true"}
    for p, k, n in _PODS
] + [
    {"__name__": "kube_replicaset_owner", "namespace": "ns", "replicaset": "web-abc",
     "owner_kind": "Deployment", "owner_name": "web", "owner_is_controller": "true"},
]  # fmt: skip


def fake_prometheus(req: httpx.Request) -> httpx.Response:
    if req.url.path.endswith("/values"):
        return httpx.Response(200, content=orjson.dumps({"status": "success", "data": ["ns"]}))
    form = parse_qs(req.content.decode())
    if req.url.path.endswith("/series"):
        return httpx.Response(200, content=orjson.dumps({"status": "success", "data": OWNERS}))
    query = form["query"][0]
    if req.url.path.endswith("query_range"):
        matrix: list[dict[str, object]] = []
        if query.startswith("rate(container_cpu_usage_seconds_total"):
            matrix = [
                series("web-1", "app", "0.2"),
                series("web-2", "app", "NaN"),
                series("web-1", "sidecar", "NaN"),
                series("job-1", "run", "1"),
            ]
        elif query.startswith("max_over_time(container_memory_working_set_bytes"):
            pods = (("web-1", "app"), ("web-2", "app"), ("web-1", "sidecar"), ("job-1", "run"))
            matrix = [series(p, c, "1e8") for p, c in pods]
        data = {"resultType": "matrix", "result": matrix}
        return httpx.Response(200, content=orjson.dumps({"status": "success", "data": data}))
    result: list[dict[str, object]] = []
    if "count_over_time(container_memory_working_set_bytes" in query:
        result = [count("web-1", "app", 1440), count("web-2", "app", 1440), count("job-1", "run", 1440)]
    return httpx.Response(
        200, content=orjson.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})
    )


def test_nan_samples_and_unknown_owner_kinds_become_skipped_entries() -> None:
    calls: list[tuple[int, int, str]] = []
    with PromClient("http://prom", transport=httpx.MockTransport(fake_prometheus)) as c:
        snap = PrometheusSource(c).collect(START, END, lambda d, t, w: calls.append((d, t, w)))
    (web,) = snap.containers
    assert web.workload == WorkloadRef("ns", "Deployment", "web")
    # web-2's CPU is NaN throughout: its working set still counts, its CPU adds nothing
    assert web.pods == 2 and web.cpu_cores.p99 == 0.2 and web.memory_bytes.mean == 1e8
    assert (web.samples, web.first_seen, web.last_seen) == (2 * 1440, START, END)
    skipped = {s.subject: s.reason for s in snap.skipped}
    assert skipped["ns/Deployment/web/container/sidecar"] == "no finite cpu samples"
    assert "owner Job/x has no known controller" in skipped["ns/pod/job-1"]
    assert (snap.gpus, snap.autoscalers, snap.nodes) == ((), (), ())
    assert calls[-1][0] == calls[-1][1] == 3


def test_empty_answers_give_an_empty_snapshot_with_a_reason() -> None:
    def empty(req: httpx.Request) -> httpx.Response:
        data: object = {"resultType": "vector", "result": []}
        if req.url.path.endswith(("/values", "/series")):
            data = []
        if req.url.path.endswith("query_range"):
            data = {"resultType": "matrix", "result": []}
        return httpx.Response(200, content=orjson.dumps({"status": "success", "data": data}))

    with PromClient("http://prom", transport=httpx.MockTransport(empty)) as c:
        snap = PrometheusSource(c, namespaces=["quiet"]).collect(START, END)
    assert snap.containers == () and snap.demand == ()
    assert [s.subject for s in snap.skipped] == ["namespace/quiet"]


def test_demand_step_finer_than_the_resolution_is_rejected() -> None:
    match = r"demand_step_s \(60\) must be at least resolution_s \(300\)"
    with (
        PromClient("http://prom", transport=httpx.MockTransport(fake_prometheus)) as c,
        pytest.raises(ValueError, match=match),
    ):
        PrometheusSource(c, demand_step_s=60)
