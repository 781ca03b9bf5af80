"""Deadlines over whole exchanges: a read or write never waits past the exchange's deadline, reads wake for a
stop request, answers that come in time are unchanged, and a proxy the environment names is used."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpcore
import httpx
import pytest

from recommender.input.deadline import Deadlines, DeadlineTransport, ExchangeStopped
from tests.support.trickle import Phase, TrickleServer

# the trickle would last this long: every bound below is far under it
LASTING = 60.0


class Ticks:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_wait_for_is_the_operations_timeout_cut_to_what_is_left_of_the_exchange() -> None:
    clock = Ticks()
    d = Deadlines(clock)
    assert d.wait_for(30.0, httpcore.ReadTimeout) == 30.0  # no exchange: the operation's own
    with d.exchange(4.0):
        assert d.wait_for(30.0, httpcore.ReadTimeout) == 4.0
        clock.t += 3.0
        assert d.wait_for(None, httpcore.ReadTimeout) == pytest.approx(1.0)
        with d.exchange(10.0):  # a nested exchange never outlives the outer one
            assert d.wait_for(30.0, httpcore.ReadTimeout) == pytest.approx(1.0)
        clock.t += 1.0
        with pytest.raises(httpcore.ReadTimeout):
            d.wait_for(30.0, httpcore.ReadTimeout)
    assert d.wait_for(None, httpcore.ReadTimeout) is None


def test_a_stop_request_ends_every_wait_and_refuses_new_exchanges() -> None:
    d = Deadlines(Ticks())
    d.stop()
    with pytest.raises(ExchangeStopped):
        d.wait_for(30.0, httpcore.ReadTimeout)
    with pytest.raises(ExchangeStopped), d.exchange(4.0):
        pass


def _client(d: Deadlines) -> httpx.Client:
    # httpx's own timeout far above the deadline: only the deadline can end the trickle early
    return httpx.Client(transport=DeadlineTransport(d), timeout=LASTING)


@pytest.mark.parametrize("phase", ["headers", "body"])
def test_a_trickling_answer_ends_at_the_exchanges_deadline(phase: Phase) -> None:
    d = Deadlines()
    with TrickleServer(every=0.5, phase=phase, lasting=LASTING) as server, _client(d) as http:
        t0 = time.monotonic()
        with pytest.raises(httpx.ReadTimeout), d.exchange(2.0):
            http.get(server.url).read()
        took = time.monotonic() - t0
    assert 1.5 < took < 10, f"{phase}: {took:.1f}s against a trickle of {LASTING:.0f}s"


def test_a_stop_request_ends_a_read_in_progress_within_seconds() -> None:
    d = Deadlines()
    outcome: list[BaseException] = []

    def read(http: httpx.Client, url: str) -> None:
        try:
            with d.exchange(LASTING):
                http.get(url).read()
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    with TrickleServer(every=0.5, lasting=LASTING) as server, _client(d) as http:
        reader = threading.Thread(target=read, args=(http, server.url))
        reader.start()
        _wait_until(lambda: server.answering == 1, "the server to start trickling")
        t0 = time.monotonic()
        d.stop()
        reader.join(LASTING)
        took = time.monotonic() - t0
    assert outcome and isinstance(outcome[0], ExchangeStopped), outcome
    assert took < 5, f"the read ended {took:.1f}s after the stop request"


class _Answers(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[str] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        body = b'{"status":"success"}' * 1000
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def answering() -> Iterator[tuple[str, list[str]]]:
    class Handler(_Answers):
        seen: list[str] = []

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", Handler.seen
    finally:
        server.shutdown()
        server.server_close()


def test_answers_in_time_are_read_whole_on_reused_connections(answering: tuple[str, list[str]]) -> None:
    url, seen = answering
    d = Deadlines()
    with _client(d) as http:
        for k in range(3):
            with d.exchange(10.0):
                resp = http.get(f"{url}/q{k}")
            assert resp.status_code == 200 and resp.content == b'{"status":"success"}' * 1000
    assert seen == ["/q0", "/q1", "/q2"]


def test_a_refused_connection_is_httpxs_connect_error() -> None:
    with socket.socket() as bound:  # bound, not listening: connections are refused
        bound.bind(("127.0.0.1", 0))
        d = Deadlines()
        with _client(d) as http, pytest.raises(httpx.ConnectError), d.exchange(5.0):
            http.get(f"http://127.0.0.1:{bound.getsockname()[1]}")


def test_the_proxy_the_environment_names_is_used(
    answering: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from recommender.input.deadline import environment_proxy

    proxy, seen = answering
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.removeprefix("http://"))  # host:port, as many set it
    d = Deadlines()
    target = "http://prometheus.invalid:9090"
    with httpx.Client(transport=DeadlineTransport(d, proxy=environment_proxy(target))) as http:
        assert http.get(f"{target}/api/v1/query").status_code == 200
    assert seen == [f"{target}/api/v1/query"]
    monkeypatch.setenv("NO_PROXY", "prometheus.invalid")
    assert environment_proxy(target) is None


def _wait_until(check: object, what: str, stall: float = 30.0) -> None:
    assert callable(check)
    ends = time.monotonic() + stall
    while not check():
        if time.monotonic() > ends:
            raise AssertionError(f"waited {stall:.0f}s for {what}")
        time.sleep(0.05)
