"""PromClient's timeout bounds each request as a whole: a server that trickles its header or body bytes gets a
clear error naming the server, the path and the deadline in about the timeout; stop() ends a read in
progress; each complete answer is reported (liveness)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx
import orjson
import pytest

from recommender.input.prometheus.client import PromClient
from recommender.model import SourceError
from tests.support.trickle import Phase, TrickleServer

TIMEOUT = 2.0
LASTING = 60.0  # how long the trickle would last: every bound below is far under it

CALLS: dict[str, tuple[str, Callable[[PromClient], object]]] = {
    "query": ("/api/v1/query", lambda c: c.query("up", 0)),
    "range": ("/api/v1/query_range", lambda c: c.query_range("up", 0, 600, 60)),
    "remote read": ("/api/v1/read", lambda c: c.raw_read("/api/v1/read", b"x", {}, "remote read")),
}


@pytest.mark.parametrize("phase", ["headers", "body"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_trickling_answer_fails_in_about_the_timeout_naming_server_path_and_deadline(
    phase: Phase, call: str
) -> None:
    path, ask = CALLS[call]
    with TrickleServer(every=0.5, phase=phase, lasting=LASTING) as server:
        t0 = time.monotonic()
        with PromClient(server.url, timeout=TIMEOUT) as client, pytest.raises(SourceError) as err:
            ask(client)
        took = time.monotonic() - t0
    assert took < 10, f"{took:.1f}s against a trickle of {LASTING:.0f}s"
    where = "headers not complete" if phase == "headers" else "body not complete"
    assert (f"Prometheus at {server.url} timed out: no complete answer to {path} within 2s ({where})") in str(
        err.value
    )
    assert "PODSIZER_PROMETHEUS_TIMEOUT_SECONDS" in str(err.value)


def test_the_connectivity_probe_is_bounded_by_the_timeout_too() -> None:
    with TrickleServer(every=0.5, lasting=LASTING) as server:
        t0 = time.monotonic()
        with PromClient(server.url, timeout=TIMEOUT) as client, pytest.raises(httpx.TimeoutException):
            client.probe("/api/v1/status/buildinfo", [], get=True)
        assert time.monotonic() - t0 < 10


def test_stop_ends_a_read_in_progress_promptly_and_refuses_the_next() -> None:
    errors: list[SourceError] = []
    with TrickleServer(every=0.5, lasting=LASTING) as server:
        client = PromClient(server.url, timeout=LASTING)

        def read() -> None:
            try:
                client.query("up", 0)
            except SourceError as exc:
                errors.append(exc)

        reader = threading.Thread(target=read)
        reader.start()
        ends = time.monotonic() + 30
        while server.answering == 0 and time.monotonic() < ends:  # the read is in progress
            time.sleep(0.05)
        t0 = time.monotonic()
        client.stop()
        reader.join(LASTING)
        took = time.monotonic() - t0
        assert took < 5, f"the read ended {took:.1f}s after stop()"
        assert len(errors) == 1 and "abandoned: the recommender is stopping" in str(errors[0])
        asked = server.accepted
        with pytest.raises(SourceError, match="stopping"):
            client.query("up", 0)
        assert server.accepted == asked  # refused before connecting
        client.close()


def test_every_complete_answer_is_reported_and_a_failed_one_is_not() -> None:
    answers: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/api/v1/series":
            return httpx.Response(200, content=orjson.dumps({"status": "success", "data": []}))
        raise httpx.ReadTimeout("slow", request=req)

    client = PromClient("http://prom.example:9090", transport=httpx.MockTransport(handler))
    client.on_answer(answers.append)
    assert client.series(["up"], 0, 60) == []
    with pytest.raises(SourceError):
        client.query("up", 0)
    assert answers == ["an answer to /api/v1/series"]
