"""The connectivity check: buildinfo with the `1` query as fallback, one line per failure naming the setting,
run before the first collect (the loop retries it), and the console's check before its first build."""

from __future__ import annotations

import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest

from console.sources import source_dataset
from podsizer.settings import ConsoleSettings, RecommenderSettings, load
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.input.prometheus.preflight import (
    CheckedSource,
    ConnectionCheckFailed,
    after_check,
    check_connection,
    checked,
)
from recommender.model import UsageSnapshot
from recommender.output.store.jsonfile import JsonFileStore
from recommender.runner import Runner

URL = "http://prom.example:9090"
HEADERS_HINT = (
    "; a multi-tenant backend (Mimir, Cortex, Thanos) also needs its tenant header in "
    "PODSIZER_PROMETHEUS_HEADERS (--prometheus-headers), e.g. X-Scope-OrgID=team-a"
)
OK = {"status": "success", "data": {"resultType": "scalar", "result": [0, "1"]}}
SETTINGS = load(RecommenderSettings, env={"PODSIZER_PROMETHEUS_URL": URL})


def probe_with(
    answers: dict[str, httpx.Response], seen: list[httpx.Request] | None = None
) -> Callable[[], None]:
    """check_connection against a fake server answering per path (404 elsewhere)."""

    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return answers.get(request.url.path, httpx.Response(404, text="404 page not found"))

    client = PromClient(URL, transport=httpx.MockTransport(handler))
    return lambda: check_connection(client, SETTINGS)


def failure(check: Callable[[], None]) -> str:
    with pytest.raises(ConnectionCheckFailed) as err:
        check()
    return str(err.value)


def test_buildinfo_answering_is_one_request() -> None:
    seen: list[httpx.Request] = []
    probe_with({"/api/v1/status/buildinfo": httpx.Response(200, json=OK)}, seen)()
    assert [(r.method, r.url.path) for r in seen] == [("GET", "/api/v1/status/buildinfo")]


def test_without_buildinfo_the_instant_query_1_is_asked_as_queries_are_sent() -> None:
    seen: list[httpx.Request] = []
    probe_with({"/api/v1/query": httpx.Response(200, json=OK)}, seen)()
    assert [(r.method, r.url.path) for r in seen] == [
        ("GET", "/api/v1/status/buildinfo"),
        ("POST", "/api/v1/query"),
    ]
    assert parse_qs(seen[1].content.decode()) == {"query": ["1"]}


def test_a_gateway_refusing_buildinfo_but_passing_queries_passes() -> None:
    answers = {
        "/api/v1/status/buildinfo": httpx.Response(403, text="forbidden"),
        "/api/v1/query": httpx.Response(200, json=OK),
    }
    probe_with(answers)()


def test_403_names_the_role_and_the_tenant_header() -> None:
    forbidden = httpx.Response(403, text="forbidden")
    check = probe_with({"/api/v1/status/buildinfo": forbidden, "/api/v1/query": forbidden})
    assert failure(check) == (
        f"Prometheus at {URL} refused access: HTTP 403 for /api/v1/query (forbidden): the "
        "anonymous request is not allowed to query (OpenShift: bind the cluster-monitoring-view cluster role "
        f"to the service account){HEADERS_HINT}"
    )


def test_no_api_at_the_url_names_the_url_setting() -> None:
    assert failure(probe_with({})) == (
        f"no Prometheus API at {URL}: HTTP 404 for /api/v1/query: set PODSIZER_PROMETHEUS_URL "
        "(--prometheus-url) to the API's base URL, without /api/v1 (VictoriaMetrics cluster: "
        "http://vmselect:8481/select/<tenant>/prometheus)"
    )


def test_a_server_error_is_reported_as_the_servers_trouble() -> None:
    check = probe_with({"/api/v1/query": httpx.Response(503, text="upstream down")})
    assert failure(check) == (
        f"Prometheus at {URL} failed the connectivity check: HTTP 503 text/plain (upstream down) for "
        "/api/v1/query: the server is in trouble"
    )


def test_501_is_a_server_that_is_not_prometheus_not_one_in_trouble() -> None:
    check = probe_with({"/api/v1/query": httpx.Response(501, text="Unsupported method ('POST')")})
    assert failure(check) == (
        f"{URL} does not answer like the Prometheus API: HTTP 501 text/plain (Unsupported method ('POST')) "
        "for /api/v1/query: set PODSIZER_PROMETHEUS_URL (--prometheus-url) to the API's base URL, without "
        "/api/v1 (a login page means a proxy wants credentials)"
    )


def test_a_timeout_names_the_url_and_the_timeout_setting() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    client = PromClient(URL, transport=httpx.MockTransport(handler))
    assert failure(lambda: check_connection(client, SETTINGS)) == (
        f"cannot reach Prometheus at {URL}: timed out, no answer within 30s (ReadTimeout): check the host "
        "and port of PODSIZER_PROMETHEUS_URL (--prometheus-url) (a firewall that drops packets looks the "
        "same) or raise PODSIZER_PROMETHEUS_TIMEOUT_SECONDS (--prometheus-timeout-seconds)"
    )


def test_an_unknown_host_names_the_url_setting() -> None:
    """The resolver's own error as httpx raises it (no lookup leaves the machine)."""

    def handler(request: httpx.Request) -> httpx.Response:
        try:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        except socket.gaierror as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc

    client = PromClient("http://nosuch.invalid:9090", transport=httpx.MockTransport(handler))
    text = failure(lambda: check_connection(client, SETTINGS))
    assert text.startswith("cannot reach Prometheus at http://nosuch.invalid:9090: host name not found (")
    assert text.endswith("): check the host of PODSIZER_PROMETHEUS_URL (--prometheus-url)")


# --- where the check runs ------------------------------------------------------------------------

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Recorded:
    name = "fake"

    def __init__(self) -> None:
        self.collects = 0

    def collect(self, start: datetime, end: datetime, progress: object = None) -> UsageSnapshot:
        self.collects += 1
        return UsageSnapshot(start, end, ())


def test_the_first_collect_waits_for_the_check_and_a_passed_check_is_not_repeated() -> None:
    inner, outcomes = Recorded(), [ConnectionCheckFailed("down"), None, ConnectionCheckFailed("again")]
    calls: list[int] = []

    def check() -> None:
        calls.append(1)
        outcome = outcomes[len(calls) - 1]
        if outcome is not None:
            raise outcome

    source = CheckedSource(inner, check)
    with pytest.raises(ConnectionCheckFailed, match="down"):
        source.collect(T0, T0)
    assert inner.collects == 0
    source.collect(T0, T0)
    source.collect(T0, T0)
    assert (len(calls), inner.collects) == (2, 2)


def test_the_loop_logs_the_check_line_as_a_source_error_and_backs_off(tmp_path: Path) -> None:
    line = "cannot reach Prometheus at http://x:1: connection refused: check the host and port of ..."

    def fail() -> None:
        raise ConnectionCheckFailed(line)

    runner = Runner(
        CheckedSource(Recorded(), fail),
        JsonFileStore(tmp_path / "recs.json"),
        lambda snapshot, bounds, now: pytest.fail("sized without a connection"),
        clock=lambda: T0,
        jitter=lambda: 0.0,
        backoff_initial_seconds=10.0,
    )
    result = runner.run_once()
    assert (result.ok, result.retry) == (False, True)
    assert [(e.kind, e.message) for e in result.errors] == [("source", line)]
    assert runner.next_delay(result) == 5.0  # initial x (0.5 + 0.5 x jitter): backoff, not the interval


def test_only_prometheus_sources_are_checked() -> None:
    other = Recorded()
    assert checked(other, SETTINGS) is other
    prom = PrometheusSource(PromClient(URL))
    wrapped = checked(prom, SETTINGS)
    assert isinstance(wrapped, CheckedSource) and wrapped.inner is prom


def test_the_console_checks_the_connection_before_its_first_build(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
        env = {"PODSIZER_CONSOLE_SOURCE": "prometheus", "PODSIZER_PROMETHEUS_URL": url}
        dataset, _ = source_dataset(load(ConsoleSettings, env=env))
        with pytest.raises(ConnectionCheckFailed) as err:
            dataset(T0 - timedelta(days=1), T0)
    assert str(err.value) == (
        f"cannot reach Prometheus at {url}: connection refused: check the host and port of "
        "PODSIZER_PROMETHEUS_URL (--prometheus-url)"
    )


def test_the_loops_cluster_listing_waits_for_the_check_until_it_passes() -> None:
    answers: dict[str, httpx.Response] = {}
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.get(request.url.path, httpx.Response(404, text="404 page not found"))

    prom = PrometheusSource(PromClient(URL, transport=httpx.MockTransport(handler)))
    listed: list[datetime] = []

    def listing(start: datetime, end: datetime) -> list[str]:
        listed.append(start)
        return ["c"]

    clusters = after_check(prom, SETTINGS, listing)
    with pytest.raises(ConnectionCheckFailed, match="no Prometheus API"):
        clusters(T0, T0)
    assert listed == []
    answers["/api/v1/status/buildinfo"] = httpx.Response(200, json=OK)
    assert clusters(T0, T0) == ["c"] and clusters(T0, T0) == ["c"]
    assert len(listed) == 2
    assert [r.url.path for r in seen].count("/api/v1/status/buildinfo") == 2  # not asked once passed
