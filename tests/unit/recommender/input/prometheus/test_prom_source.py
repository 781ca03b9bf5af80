"""PrometheusSource on canned answers: NaN samples, unknown owner kinds and empty results are skipped."""

from __future__ import annotations

import itertools
import re
import threading
import time
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

import httpx
import orjson
import pytest

from podsizer.api import WorkloadRef
from podsizer.subject import Subject
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.input.prometheus import queries as q
from recommender.input.prometheus.queries import MARK
from recommender.input.prometheus.remoteread import CONTENT_TYPE
from recommender.input.prometheus.source import SLOW_SCRAPE_WINDOW_S
from recommender.model import SourceError
from tests.support.remoteread import chunked_answer, grid_ms, read_request

END = datetime(2026, 12, 1, tzinfo=UTC)
START = END - timedelta(days=1)


def series(
    pod: str, container: str, value: str, span: tuple[float, float] = (START.timestamp(), END.timestamp())
) -> dict[str, object]:
    """One range-query series over the asked span (the day) at 5-minute steps, every point `value`."""
    ts = range(int(span[0]), int(span[1]) + 1, 300)
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


RAW_READS = ("/api/v1/read", "/api/v1/export")


def fake_prometheus(req: httpx.Request) -> httpx.Response:
    """A server with the query API only (as Thanos): remote read and the export API are not found, so auto
    reads by range queries."""
    if req.url.path in RAW_READS:
        return httpx.Response(404, text="404 page not found")
    if req.url.path.endswith("/values"):
        return httpx.Response(200, content=orjson.dumps({"status": "success", "data": ["ns"]}))
    form = parse_qs(req.content.decode())
    if req.url.path.endswith("/series"):
        return httpx.Response(200, content=orjson.dumps({"status": "success", "data": OWNERS}))
    query = form["query"][0]
    if req.url.path.endswith("query_range"):
        span = (float(form["start"][0]), float(form["end"][0]))
        matrix: list[dict[str, object]] = []
        if query.startswith("rate(container_cpu_usage_seconds_total"):
            matrix = [
                series("web-1", "app", "0.2", span),
                series("web-2", "app", "NaN", span),
                series("web-1", "sidecar", "NaN", span),
                series("job-1", "run", "1", span),
            ]
        elif query.startswith("max_over_time(container_memory_working_set_bytes"):
            pods = (("web-1", "app"), ("web-2", "app"), ("web-1", "sidecar"), ("job-1", "run"))
            matrix = [series(p, c, "1e8", span) for p, c in pods]
        data = {"resultType": "matrix", "result": matrix}
        return httpx.Response(200, content=orjson.dumps({"status": "success", "data": data}))
    result: list[dict[str, object]] = []
    if "count_over_time(container_memory_working_set_bytes" in query:
        # a sample at every 5-minute point, counted over the closed span (as Prometheus counts them)
        n = int(re.search(r"\[(\d+)s\]", query).group(1)) // 300 + 1  # type: ignore[union-attr]
        result = [count("web-1", "app", n), count("web-2", "app", n), count("job-1", "run", n)]
    return httpx.Response(
        200, content=orjson.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})
    )


def test_a_cold_start_chunk_of_part_of_an_hour_is_rejected() -> None:
    with (
        PromClient("http://prom", transport=httpx.MockTransport(fake_prometheus)) as c,
        pytest.raises(ValueError, match=r"chunk_s must be a whole number of hours, got 5400 s"),
    ):
        PrometheusSource(c, chunk_s=5400)


def test_chunks_after_the_first_hold_about_the_points_asked_for() -> None:
    """The first chunk is chunk_s; the next ones are sized from the series the batch has: 4 series at 60 s
    and 4 * 60 * 60 points asked for: one hour each."""
    spans: list[tuple[float, float]] = []

    def recording(req: httpx.Request) -> httpx.Response:
        if req.url.path in RAW_READS:
            return fake_prometheus(req)
        form = parse_qs(req.content.decode())
        if req.url.path.endswith("query_range") and form["query"][0].startswith("max_over_time("):
            spans.append((float(form["start"][0]), float(form["end"][0])))
        return fake_prometheus(req)

    with PromClient("http://prom", transport=httpx.MockTransport(recording)) as c:
        source = PrometheusSource(c, namespaces=["ns"], chunk_s=7200, points_per_chunk=4 * 60)
        snap = source.collect(START, END)
    hours = [round((b - a) / 3600) for a, b in spans]
    assert hours == [2] + [1] * 22
    assert all(b == a2 for (_, b), (a2, _) in itertools.pairwise(spans))
    (web,) = snap.containers
    assert web.samples == 2 * 289  # every point once, however the day was cut


def test_nan_samples_and_unknown_owner_kinds_become_skipped_entries() -> None:
    calls: list[tuple[int, int, str]] = []
    with PromClient("http://prom", transport=httpx.MockTransport(fake_prometheus)) as c:
        snap = PrometheusSource(c).collect(START, END, lambda d, t, w: calls.append((d, t, w)))
    (web,) = snap.containers
    assert web.workload == WorkloadRef("ns", "Deployment", "web")
    # web-2's CPU is NaN throughout: its working set still counts, its CPU adds nothing
    assert web.pods == 2 and web.cpu_cores.p99 == 0.2 and web.memory_bytes.mean == 1e8
    assert (web.samples, web.first_seen, web.last_seen) == (2 * 289, START, END)  # each point once
    skipped = {str(s.subject): s.reason for s in snap.skipped}
    assert skipped["ns/Deployment/web/container/sidecar"] == "no finite cpu samples"
    assert "owner Job/x has no known controller" in skipped["ns/pod/job-1"]
    assert (snap.gpus, snap.autoscalers, snap.nodes) == ((), (), ())
    # a first 6 h chunk, then the rest of the day in one (4 series: far under CHUNK_POINTS), the cluster
    assert calls[-1][0] == calls[-1][1] and len(calls) == 2 + 1


def test_empty_answers_give_an_empty_snapshot_with_a_reason() -> None:
    def empty(req: httpx.Request) -> httpx.Response:
        if req.url.path in RAW_READS:
            return fake_prometheus(req)
        data: object = {"resultType": "vector", "result": []}
        if req.url.path.endswith(("/values", "/series")):
            data = []
        if req.url.path.endswith("query_range"):
            data = {"resultType": "matrix", "result": []}
        return httpx.Response(200, content=orjson.dumps({"status": "success", "data": data}))

    with PromClient("http://prom", transport=httpx.MockTransport(empty)) as c:
        snap = PrometheusSource(c, namespaces=["quiet"]).collect(START, END)
    assert snap.containers == () and snap.demand == ()
    assert [s.subject for s in snap.skipped] == [Subject.of_namespace("quiet")]


def test_a_rate_window_shorter_than_the_step_is_rejected() -> None:
    with (
        PromClient("http://prom", transport=httpx.MockTransport(fake_prometheus)) as c,
        pytest.raises(ValueError, match=r"rate_s \(60\) must be at least resolution_s \(300\)"),
    ):
        PrometheusSource(c, resolution_s=300, rate_s=60)


def test_range_queries_step_at_the_query_step_and_rate_over_the_window() -> None:
    seen: list[tuple[str, str]] = []

    def recording(req: httpx.Request) -> httpx.Response:
        if req.url.path in RAW_READS:
            return fake_prometheus(req)
        if req.url.path.endswith("query_range"):
            form = parse_qs(req.content.decode())
            seen.append((form["query"][0], form["step"][0]))
        return fake_prometheus(req)

    with PromClient("http://prom", transport=httpx.MockTransport(recording)) as c:
        PrometheusSource(c, namespaces=["shop"], resolution_s=60, rate_s=180).collect(START, END)
    cpu = [(query, step) for query, step in seen if query.startswith("rate(")]
    mem = [query for query, _ in seen if query.startswith("max_over_time(")]
    assert cpu and {float(step) for _, step in cpu} == {60.0}
    assert cpu[0][0].endswith("[180s])")
    assert mem and all(query.endswith("[59999ms])") for query in mem)  # one step, open at its start


def test_containers_scraped_too_seldom_for_the_window_get_the_slow_scrape_rate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """web-2/app has working-set points but no CPU rate over the set window (as when cAdvisor is scraped
    every 5 minutes and the window is 2): its CPU comes from the rate over SLOW_SCRAPE_WINDOW_S."""
    windows: list[str] = []

    def slow(req: httpx.Request) -> httpx.Response:
        if req.url.path in RAW_READS:
            return fake_prometheus(req)
        if req.url.path.endswith("query_range"):
            query = parse_qs(req.content.decode())["query"][0]
            if query.startswith("rate("):
                windows.append(query.rsplit("[", 1)[1])
                if query.endswith(f"[{SLOW_SCRAPE_WINDOW_S}s])"):
                    data = {"resultType": "matrix", "result": [series("web-2", "app", "0.7")]}
                    return httpx.Response(200, content=orjson.dumps({"status": "success", "data": data}))
        return fake_prometheus(req)

    with PromClient("http://prom", transport=httpx.MockTransport(slow)) as c, caplog.at_level("WARNING"):
        snap = PrometheusSource(c, namespaces=["ns"]).collect(START, END)
    assert windows == ["120s])", f"{SLOW_SCRAPE_WINDOW_S}s])"] * 2  # in each of the two chunks
    (web,) = [u for u in snap.containers if u.container == "app"]
    assert web.cpu_cores.max == pytest.approx(0.7)  # web-2's rate over the wide window counts
    assert "PODSIZER_CPU_RATE_WINDOW" in caplog.text and "namespace ns: 2 containers" in caplog.text


@pytest.mark.parametrize("offers_remote_read", [True, False])
def test_a_raw_cold_start_reads_one_namespace_at_a_time(offers_remote_read: bool) -> None:
    """Read raw, the work is this process' (decoding and folding): never two namespaces' reads at once,
    whatever `concurrency` says (it is for range queries, whose work is the server's)."""
    lock, in_flight, most = threading.Lock(), [0], [0]
    reads: list[set[str]] = []

    def peer(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/api/v1/read" and offers_remote_read:
            matchers, start, end, _ = read_request(req.content)
            found = dict((n, v) for n, op, v in matchers if op == "=")
            reads.append({found["namespace"]})
            with lock:
                in_flight[0] += 1
                most[0] = max(most[0], in_flight[0])
            time.sleep(0.005)  # long enough for a second read to overlap, were one sent
            ts = [t for t in grid_ms(START.timestamp(), END.timestamp(), 300).tolist() if start <= t <= end]
            metric = found["__name__"]
            vs = [0.2 * t / 1000 for t in ts] if metric == q.CPU_METRIC else [1e8] * len(ts)
            labels = {"__name__": metric, "namespace": found["namespace"], "pod": "web-1", "container": "app"}
            with lock:
                in_flight[0] -= 1
            return httpx.Response(
                200, content=chunked_answer([(labels, ts, vs)]), headers={"Content-Type": CONTENT_TYPE}
            )
        if (
            req.url.path == "/api/v1/query_range"
            and "container_" in parse_qs(req.content.decode())["query"][0]
        ):
            reads.append(
                {v for v in re.findall(r'namespace="([^"]+)"', parse_qs(req.content.decode())["query"][0])}
            )
        return fake_prometheus(req)

    with PromClient("http://prom", transport=httpx.MockTransport(peer)) as c:
        source = PrometheusSource(c, namespaces=["a", "b", "c", "d"], concurrency=3, namespace_batch=2)
        source.collect(START, END)
    assert reads and all(len(r) == 1 for r in reads)  # a read names one namespace on either path
    assert source.reads.chosen == ("remote-read" if offers_remote_read else "query")
    if offers_remote_read:
        assert most[0] == 1


def test_a_cycles_reads_share_one_sample_budget_and_the_next_cycle_has_its_own() -> None:
    """Each chunk's read is far under the budget; the day's are over it together: the collect fails naming
    the setting, and a collect whose budget holds them reads the same day again from an empty budget."""
    with PromClient("http://prom", transport=httpx.MockTransport(fake_prometheus)) as c:
        tight = PrometheusSource(c, namespaces=["ns"], chunk_s=3600, max_samples_per_cycle=1500)
        with pytest.raises(SourceError, match=r"PODSIZER_PROMETHEUS_MAX_SAMPLES_PER_CYCLE"):
            tight.collect(START, END)
        enough = PrometheusSource(c, namespaces=["ns"], chunk_s=3600, max_samples_per_cycle=5000)
        for _ in range(2):
            (web,) = enough.collect(START, END).containers
            assert web.memory_bytes.mean == 1e8
