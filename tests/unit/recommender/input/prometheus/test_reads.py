"""The usage read path: auto takes remote read where it is answered, else the export API, else range
queries, once per source; a forced path the server does not offer is an error naming the setting."""

from __future__ import annotations

import logging
import tracemalloc
from collections.abc import Callable
from urllib.parse import parse_qs

import httpx
import numpy as np
import orjson
import pytest
from orjson import loads as orjson_loads

from recommender.input.prometheus import PromClient, export, xorchunks
from recommender.input.prometheus import queries as q
from recommender.input.prometheus import reads as reads_module
from recommender.input.prometheus.caps import IMPOSSIBLE_TIME, OverCycleBudget
from recommender.input.prometheus.client import NON_FINITE, AnswerTooLarge
from recommender.input.prometheus.export import export_line as _export_line
from recommender.input.prometheus.reads import SLOW_SCRAPE_WINDOW_S, GridSpec, UsageReads
from recommender.input.prometheus.remoteread import CONTENT_TYPE
from recommender.model import SourceError
from tests.support.remoteread import chunked_answer, grid_ms, read_request
from tests.support.steady_prometheus import HONEST, NAIVE_BOMB, Chunks, SteadyPrometheus

LO = 1_764_547_200.0
SPEC = GridSpec(LO, LO + 3600, 60.0, 120)
POD = {"namespace": "ns", "pod": "web-1", "container": "app"}


def _series(metric: str) -> list[tuple[dict[str, str], list[int], list[float]]]:
    ts = grid_ms(LO - 900, LO + 3600, 60).tolist()
    if metric == q.CPU_METRIC:
        return [({"__name__": metric, **POD}, ts, [0.25 * 60 * i for i in range(len(ts))])]
    return [({"__name__": metric, **POD}, ts, [1e8 + i for i in range(len(ts))])]


class Peer:
    """A fake server that offers the paths named, recording what it is asked."""

    def __init__(self, *offers: str) -> None:
        self.offers, self.asked = offers, []  # type: tuple[str, ...], list[str]

    def __call__(self, req: httpx.Request) -> httpx.Response:
        path = req.url.path
        self.asked.append(path)
        if path == "/api/v1/read" and "remote-read" in self.offers:
            matchers, _, _, types = read_request(req.content)
            assert types == [1]  # streamed XOR chunks only
            metric = dict((n, v) for n, op, v in matchers if op == "=")["__name__"]
            return httpx.Response(
                200, content=chunked_answer(_series(metric)), headers={"Content-Type": CONTENT_TYPE}
            )
        if path == "/api/v1/export" and "export" in self.offers:
            metric = q.CPU_METRIC if q.CPU_METRIC in req.content.decode() else q.MEM_METRIC
            lines = [
                orjson.dumps({"metric": labels, "values": vs, "timestamps": ts})
                for labels, ts, vs in _series(metric)
            ]
            return httpx.Response(
                200, content=b"\n".join(lines), headers={"Content-Type": "application/stream+json"}
            )
        if path == "/api/v1/query_range" and "query" in self.offers:
            ts = np.arange(LO, LO + 3601, 60)
            value = "0.25" if parse_qs(req.content.decode())["query"][0].startswith("rate(") else "1e8"
            result = [{"metric": POD, "values": [[t, value] for t in ts.tolist()]}]
            data = {"resultType": "matrix", "result": result}
            return httpx.Response(200, content=orjson.dumps({"status": "success", "data": data}))
        return httpx.Response(404, text="404 page not found")


def _reads(peer: Peer, path: str = "auto") -> UsageReads:
    return UsageReads(PromClient("http://prom", transport=httpx.MockTransport(peer)), path)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("offers", "chosen"),
    [
        (("remote-read", "export", "query"), "remote-read"),
        (("export", "query"), "export"),
        (("query",), "query"),
    ],
)
def test_auto_takes_the_cheapest_path_offered_and_keeps_it(offers: tuple[str, ...], chosen: str) -> None:
    peer = Peer(*offers)
    reads = _reads(peer)
    first = reads.usage("ns", q.UNSCOPED, SPEC)
    assert reads.chosen == chosen
    peer.asked.clear()
    second = reads.usage("other", q.UNSCOPED, SPEC)
    endpoint = {"remote-read": "/api/v1/read", "export": "/api/v1/export", "query": "/api/v1/query_range"}
    assert set(peer.asked) == {endpoint[chosen]}  # nothing else is tried again
    for usage in (first, second):
        grid = usage.grid
        assert grid.keys == [("ns", "web-1", "app")] and (grid.lo, grid.step) == (LO, 60.0)
        assert grid.cpu.shape == grid.memory.shape == (1, 61)  # every step of the hour has both
        assert grid.cpu[0].tolist() == pytest.approx([0.25] * 61)
        assert grid.memory[0].min() >= 1e8


def test_a_forced_path_the_server_lacks_is_an_error_naming_the_setting() -> None:
    with pytest.raises(SourceError, match=r"PODSIZER_PROMETHEUS_READ.*remote-read.*HTTP 404.*auto or query"):
        _reads(Peer("query"), "remote-read").usage("ns", q.UNSCOPED, SPEC)


def test_auto_says_which_path_it_took(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, "podsizer"):
        _reads(Peer("export", "query")).usage("ns", q.UNSCOPED, SPEC)
    assert "remote-read is not offered" in caplog.text and "read by export" in caplog.text


def test_a_server_error_is_not_taken_for_a_missing_path() -> None:
    def broken(req: httpx.Request) -> httpx.Response:
        return httpx.Response(503, text="overloaded")

    reads = UsageReads(PromClient("http://prom", transport=httpx.MockTransport(broken)))
    with pytest.raises(
        SourceError, match=r"^Prometheus at http://prom/api/v1/read answered remote .* HTTP 503"
    ):
        reads.usage("ns", q.UNSCOPED, SPEC)


def test_remote_read_asks_for_the_namespaces_containers_of_the_scope_with_the_lookback_of_a_rate() -> None:
    asked: list[tuple[list[tuple[str, str, str]], int, int]] = []

    def peer(req: httpx.Request) -> httpx.Response:
        matchers, start, end, _ = read_request(req.content)
        asked.append((matchers, start, end))
        return httpx.Response(200, content=b"", headers={"Content-Type": CONTENT_TYPE})

    reads = UsageReads(PromClient("http://prom", transport=httpx.MockTransport(peer)), "remote-read")
    reads.usage("shop", q.Scope("cluster", "east"), SPEC)
    (cpu, cpu_lo, hi), (mem, mem_lo, mem_hi) = asked
    assert ("__name__", "=", q.CPU_METRIC) in cpu and ("__name__", "=", q.MEM_METRIC) in mem
    for matchers in (cpu, mem):
        assert {("namespace", "=", "shop"), ("cluster", "=", "east")} <= set(matchers)
        assert {("container", "!=", ""), ("container", "!=", "POD")} <= set(matchers)
    assert hi == mem_hi == round(SPEC.hi * 1000)
    assert mem_lo == round((SPEC.lo - 60) * 1000)  # the first step's (lo - res, lo]
    assert cpu_lo == round((SPEC.lo - 60 - SLOW_SCRAPE_WINDOW_S) * 1000)  # and the interval ending in it


def test_non_finite_raw_samples_are_counted_like_a_querys() -> None:
    def peer(req: httpx.Request) -> httpx.Response:
        ts = grid_ms(LO, LO + 120, 60).tolist()
        body = chunked_answer([({"__name__": "m", **POD}, ts, [1.0, float("inf"), 3.0])])
        return httpx.Response(200, content=body, headers={"Content-Type": CONTENT_TYPE})

    client = PromClient("http://prom", transport=httpx.MockTransport(peer))
    UsageReads(client, "remote-read").usage("ns", q.UNSCOPED, SPEC)
    assert client.rejections.counts() == {NON_FINITE: 2}  # one in each of the two answers


def test_a_slow_scrape_gets_its_cpu_from_the_wide_window() -> None:
    def peer(req: httpx.Request) -> httpx.Response:
        ts = grid_ms(LO - 900, LO + 3600, 300).tolist()  # every 5 minutes: no interval within 120 s
        metric = dict((n, v) for n, op, v in read_request(req.content)[0] if op == "=")["__name__"]
        vs = [30.0 * i for i in range(len(ts))] if metric == q.CPU_METRIC else [1e8] * len(ts)
        body = chunked_answer([({"__name__": metric, **POD}, ts, vs)])
        return httpx.Response(200, content=body, headers={"Content-Type": CONTENT_TYPE})

    usage = UsageReads(PromClient("http://prom", transport=httpx.MockTransport(peer)), "remote-read").usage(
        "ns", q.UNSCOPED, SPEC
    )
    assert usage.slow == {("ns", "web-1", "app")}
    cpu = usage.grid.cpu[0][np.isfinite(usage.grid.cpu[0])]
    # rate(...[10m]) at every step: each minute's window holds one or two of the 5-minute intervals
    assert cpu.tolist() == pytest.approx([0.1] * cpu.size) and cpu.size == SPEC.grid.n


def test_a_raw_answer_over_the_cap_is_asked_again_over_halves_with_the_same_result() -> None:
    def peer(req: httpx.Request) -> httpx.Response:
        _, start, end, _ = read_request(req.content)
        ts = [t for t in grid_ms(LO - 900, LO + 3600, 15).tolist() if start <= t <= end]  # what was asked
        body = chunked_answer([({"__name__": "m", **POD}, ts, [float(t // 1000) for t in ts])], per_chunk=30)
        return httpx.Response(200, content=body, headers={"Content-Type": CONTENT_TYPE})

    def usage(cap: int) -> list[list[float]]:
        client = PromClient("http://prom", transport=httpx.MockTransport(peer), max_response_bytes=cap)
        found = UsageReads(client, "remote-read").usage("ns", q.UNSCOPED, SPEC).grid
        return [row.tolist() for row in (*found.cpu, *found.memory)]

    whole = usage(10 * 2**20)
    assert usage(4096) == whole and whole  # pieces of at most 4 KiB, joined
    with pytest.raises(AnswerTooLarge, match=r"even over 1/\d+ of the time range"):
        usage(64)  # a sixteenth of the range is still over: the namespace cannot be read


def test_an_export_line_is_read_into_arrays_bare_infinities_included() -> None:
    """VictoriaMetrics writes +Inf, -Inf and NaN as bare words (not JSON): they are read, then counted as
    rejected like any non-finite sample; a line laid out otherwise is read whole; a broken run is refused."""
    line = (
        b'{"metric":{"__name__":"m","pod":"p"},"values":[1,2.5e-05,+Inf,-Inf,NaN],"timestamps":[1,2,3,4,5]}'
    )
    labels, ts, vs = _export_line(line)
    assert labels == {"__name__": "m", "pod": "p"} and ts.tolist() == [1, 2, 3, 4, 5]
    assert vs[:4].tolist() == [1.0, 2.5e-05, float("inf"), float("-inf")] and np.isnan(vs[4])
    reordered = b'{"timestamps":[7,8],"values":[3,null],"metric":{"pod":"q"}}'
    labels, ts, vs = _export_line(reordered)
    assert labels == {"pod": "q"} and ts.tolist() == [7, 8] and vs[0] == 3.0 and np.isnan(vs[1])
    with pytest.raises(ValueError):
        _export_line(b'{"metric":{"pod":"p"},"values":[1,2a],"timestamps":[1,2]}')
    with pytest.raises(ValueError, match="2 timestamps and 1 values"):
        _export_line(b'{"metric":{"pod":"p"},"values":[1],"timestamps":[1,2]}')


def _remote(answer: Callable[[httpx.Request], bytes]) -> UsageReads:
    def peer(req: httpx.Request) -> httpx.Response:
        if req.url.path != "/api/v1/read":
            return httpx.Response(404)
        return httpx.Response(200, content=answer(req), headers={"Content-Type": CONTENT_TYPE})

    return UsageReads(PromClient("http://prom:9090", transport=httpx.MockTransport(peer)), "remote-read")


def _steady_answer(req: httpx.Request, chunks: Chunks, series: int = 3) -> bytes:
    return SteadyPrometheus(series, chunks).answer(req.content)


def test_a_decompression_bomb_is_refused_before_it_is_decoded_naming_the_server_path_and_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(*args: object) -> None:
        raise AssertionError("a bomb's chunks were decoded")

    monkeypatch.setattr(reads_module, "decode_range", never)
    reads = _remote(lambda req: _steady_answer(req, NAIVE_BOMB))
    with pytest.raises(SourceError) as refused:
        reads.usage("bomb", q.UNSCOPED, SPEC)
    text = str(refused.value)
    assert text.startswith("Prometheus at http://prom:9090/api/v1/read answered remote read of container_cpu")
    assert "65,535 samples" in text and "at most 4,096" in text and "decompression bomb" in text
    assert "raise" not in text


def test_a_plausible_answer_of_millions_of_samples_is_decoded_in_bounded_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Samples one a second (the most a series may hold) over half a day: decoded and folded a batch at a
    time, so memory holds about a batch and the grid, not the answer's samples."""
    monkeypatch.setattr(xorchunks, "BATCH_SAMPLES", 1 << 14)
    half_day = GridSpec(LO, LO + 43_200, 60.0, 120)
    answers: dict[bytes, bytes] = {}

    def answer(req: httpx.Request) -> bytes:
        return answers.setdefault(req.content, _steady_answer(req, Chunks("dense", 120, 1000), series=24))

    reads = _remote(answer)
    reads.usage("bomb", q.UNSCOPED, half_day)  # the answers built once, before memory is traced
    tracemalloc.start()
    try:
        usage = reads.usage("bomb", q.UNSCOPED, half_day)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    decoded = 2 * 24 * 43_200 * 16  # bytes of the samples (timestamp and value) at the least
    assert peak < decoded / 4, (peak, decoded)
    assert usage.grid.keys == sorted(("bomb", f"p{i}", "c") for i in range(24))
    assert (usage.grid.memory == 1e8).all() and (usage.grid.cpu == 0.0).all()


def test_the_cycles_samples_are_counted_before_they_are_decoded_and_past_the_budget_the_read_fails() -> None:
    reads = _remote(lambda req: _steady_answer(req, HONEST, series=50))
    with reads.cycle() as budget:
        reads.usage("bomb", q.UNSCOPED, SPEC)
    once = budget.used
    assert once > 2 * 50 * 60  # both metrics, every series, at least one sample a minute
    reads.max_samples_per_cycle = once * 3 // 2
    with reads.cycle():
        reads.usage("bomb", q.UNSCOPED, SPEC)
        with pytest.raises(
            OverCycleBudget, match=r"PODSIZER_PROMETHEUS_MAX_SAMPLES_PER_CYCLE.*raise it"
        ) as over:
            reads.usage("other", q.UNSCOPED, SPEC)  # the second namespace of the cycle
    assert str(over.value).startswith("Prometheus at http://prom:9090/api/v1/read: remote read of")
    reads.usage("bomb", q.UNSCOPED, SPEC)  # outside a cycle: each read its own budget


def test_impossible_timestamps_are_left_out_and_counted_under_their_own_reason() -> None:
    def answer(req: httpx.Request) -> bytes:
        ts = [-60_000, *grid_ms(LO, LO + 120, 60).tolist(), round(LO * 1000) + 90_000, 32_503_680_000_000]
        return chunked_answer([({"__name__": "m", **POD}, ts, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])], per_chunk=6)

    reads = _remote(answer)
    usage = reads.usage("ns", q.UNSCOPED, SPEC)
    # per answer: 1969, a step back within its chunk, the year 3000; CPU and memory alike
    assert reads.client.rejections.counts() == {IMPOSSIBLE_TIME: 6}
    assert usage.grid.memory[0][np.isfinite(usage.grid.memory[0])].tolist() == [2.0, 3.0, 4.0]


def test_auto_finds_the_way_again_when_the_server_stops_offering_the_one_it_took(
    caplog: pytest.LogCaptureFixture,
) -> None:
    peer = Peer("remote-read", "query")
    reads = _reads(peer)
    reads.usage("ns", q.UNSCOPED, SPEC)
    first = reads.chosen
    peer.offers = ("query",)  # remote read turned off
    with caplog.at_level(logging.WARNING, "podsizer"):
        usage = reads.usage("ns", q.UNSCOPED, SPEC)
    assert (first, reads.chosen) == ("remote-read", "query") and usage.grid.keys == [("ns", "web-1", "app")]
    assert "remote-read is no longer offered by http://prom" in caplog.text


def test_a_connection_cut_on_remote_read_while_finding_the_way_falls_back_to_the_next() -> None:
    peer = Peer("export", "query")

    def cutting(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/api/v1/read":
            raise httpx.ReadError("connection reset by peer", request=req)
        return peer(req)

    reads = UsageReads(PromClient("http://prom", transport=httpx.MockTransport(cutting)))
    reads.usage("ns", q.UNSCOPED, SPEC)
    assert reads.chosen == "export"

    def refusing(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=req)

    with pytest.raises(SourceError, match="unreachable"):  # not reached at all: no other way would be
        UsageReads(PromClient("http://prom", transport=httpx.MockTransport(refusing))).usage(
            "ns", q.UNSCOPED, SPEC
        )


def _export(*lines: bytes) -> UsageReads:
    def peer(req: httpx.Request) -> httpx.Response:
        body = b"\n".join(lines)
        return httpx.Response(200, content=body, headers={"Content-Type": "application/stream+json"})

    return UsageReads(PromClient("http://vm:8428", transport=httpx.MockTransport(peer)), "export")


@pytest.mark.parametrize(
    "line",
    [
        b"[1, 2, 3]",  # not an object
        b'{"metric":["a"],"values":[1],"timestamps":[1]}',  # labels not an object
        b'{"metric":{"pod":"p"},"values":[1],"timestamps":[100000000000000000000000]}',  # past an int64
        b'{"metric":{"pod":"p"},"values":[[1]],"timestamps":[1]}',  # a list for a number
        b'{"metric":{"pod":"p"},"values":1,"timestamps":[1]}',
        b'{"metric":{"pod":"p"},"values":[1,2a],"timestamps":[1,2]}',
    ],
)
def test_a_malformed_export_line_is_an_error_naming_the_server_and_the_path(line: bytes) -> None:
    with pytest.raises(
        SourceError, match=r"^Prometheus at http://vm:8428/api/v1/export sent a malformed export"
    ):
        _export(line).usage("ns", q.UNSCOPED, SPEC)


def test_an_export_line_past_what_one_series_of_the_range_holds_is_refused_before_it_is_parsed() -> None:
    """The CPU read spans 4,260 s: a series holds at most 4,261 samples (one a second), in at most 64 KiB of
    labels and 64 bytes a sample."""
    many = ",".join(["1"] * 5000).encode()
    line = b'{"metric":{"pod":"p"},"values":[' + many + b'],"timestamps":[' + many + b"]}"
    with pytest.raises(SourceError, match=r"with a series of 5,000 samples, but one series .* at most 4,261"):
        _export(line).usage("ns", q.UNSCOPED, SPEC)
    huge = b'{"metric":{"pod":"' + b"p" * 400_000 + b'"},"values":[1],"timestamps":[1]}'
    with pytest.raises(SourceError, match=r"with a line of 400,\d+ bytes"):
        _export(huge).usage("ns", q.UNSCOPED, SPEC)


def test_a_long_export_line_is_read_by_numpy_not_into_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export, "ORJSON_BYTES", 64)
    ts = grid_ms(LO - 600, LO + 3600, 15).tolist()
    line = orjson.dumps(
        {"metric": {"__name__": q.MEM_METRIC, **POD}, "values": [1e8] * len(ts), "timestamps": ts}
    )

    parsed: list[int] = []

    def loads(data: bytes) -> object:
        parsed.append(len(data))
        return orjson_loads(data)

    monkeypatch.setattr(orjson, "loads", loads)
    usage = _export(line).usage("ns", q.UNSCOPED, SPEC)
    assert (usage.grid.memory[0] == 1e8).all()
    assert parsed and max(parsed) < 200  # the labels only
