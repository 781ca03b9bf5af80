"""Remote read on a real Prometheus: its XOR chunks decode to the samples the query API returns, the raw read
gives the range queries' series, and `auto` takes it."""

from __future__ import annotations

from datetime import timedelta

import httpx
import numpy as np
import pytest

from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.input.prometheus import queries as q
from recommender.input.prometheus.caps import Origin
from recommender.input.prometheus.reads import GridSpec, UsageReads
from recommender.input.prometheus.remoteread import CONTENT_TYPE, REQUEST_HEADERS, Matcher, RemoteReadCodec
from tests.integration.readpaths.agree import assert_raw_read_agrees_with_queries
from tests.support.remoteread import decode_chunks

from .conftest import Served

pytestmark = pytest.mark.integration


def _namespace(served: Served) -> str:
    return served.history.containers[0].namespace


def test_the_chunks_decode_to_the_samples_the_query_api_returns(served: Served) -> None:
    ns, end = _namespace(served), served.history.end.timestamp()
    start = end - 6 * 3600
    codec = RemoteReadCodec()
    body = codec.request(
        [Matcher("__name__", q.CPU_METRIC), Matcher("namespace", ns)], round(start * 1000), round(end * 1000)
    )
    answer = httpx.post(f"{served.server.url}/api/v1/read", content=body, headers=REQUEST_HEADERS, timeout=60)
    assert answer.status_code == 200 and answer.headers["Content-Type"] == CONTENT_TYPE
    found = codec.answer(answer.content, Origin(served.server.url, "/api/v1/read", "remote read"))
    decoded = {}
    for k, labels in enumerate(found.labels):
        mine = np.flatnonzero(found.series_of == k).tolist()
        d = decode_chunks([bytes(found.data[found.starts[c] : found.starts[c + 1]]) for c in mine])
        inside = (d.timestamps_ms >= start * 1000) & (d.timestamps_ms <= end * 1000)
        decoded[tuple(sorted(labels.items()))] = (d.timestamps_ms[inside], d.values[inside])
    form = {"query": f'{q.CPU_METRIC}{{namespace="{ns}"}}[6h]', "time": f"{end:.3f}"}
    result = httpx.post(f"{served.server.url}/api/v1/query", data=form, timeout=60).json()["data"]["result"]
    assert len(decoded) == len(result) > 0
    for s in result:
        ts, vs = decoded[tuple(sorted({"__name__": q.CPU_METRIC, **s["metric"]}.items()))]
        assert ts.tolist() == [round(float(t) * 1000) for t, _ in s["values"]]
        assert vs.tolist() == [float(v) for _, v in s["values"]]


def test_the_raw_read_gives_the_range_queries_series(served: Served) -> None:
    end = served.history.end.timestamp()
    spec = GridSpec(end - 2 * 86400, end, 60.0, 60)
    assert_raw_read_agrees_with_queries(served.server.url, "remote-read", _namespace(served), spec)


def test_auto_reads_prometheus_by_remote_read_and_sizes_alike(served: Served) -> None:
    end = served.history.end
    window = (end - timedelta(days=2), end)
    snaps = {}
    for read in ("auto", "query"):
        with PromClient(served.server.url, timeout=120) as client:
            source = PrometheusSource(client, read=read)  # type: ignore[arg-type]
            snaps[read] = {(c.workload, c.container): c for c in source.collect(*window).containers}
            assert source.reads.chosen == ("remote-read" if read == "auto" else "query")
    raw, query = snaps["auto"], snaps["query"]
    assert raw.keys() == query.keys() and raw
    for key, c in raw.items():
        other = query[key]
        assert c.memory_bytes.max == other.memory_bytes.max, key
        # both rates over the default 2-minute window: the same points but for Prometheus' extrapolation
        # at a window's edge (the histogram's p95 may tie between neighbouring points)
        assert c.cpu_cores.max == pytest.approx(other.cpu_cores.max, rel=1e-9), key
        assert c.cpu_cores.p95 == pytest.approx(other.cpu_cores.p95, rel=0.01), key
        # raw working-set counts (count_over_time) split where chunks meet by each path's points: one apart
        assert abs(c.samples - other.samples) <= 1, key


def test_a_forced_remote_read_of_a_namespace_without_series_is_empty_not_an_error(served: Served) -> None:
    end = served.history.end.timestamp()
    with PromClient(served.server.url, timeout=60) as client:
        usage = UsageReads(client, "remote-read").usage(
            "no-such-namespace", q.UNSCOPED, GridSpec(end - 3600, end, 60, 120)
        )
    assert usage.grid.keys == [] and not usage.slow
