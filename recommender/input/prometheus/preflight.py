"""The connectivity check at start: one request, and one line naming the setting to change when it fails."""

from __future__ import annotations

import re
import socket
import ssl
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TypeVar

import httpx
import orjson

from podsizer.settings.names import where
from podsizer.settings.roles import MetricsSourceSettings
from recommender.input.prometheus.client import Probe, PromClient
from recommender.input.prometheus.connection import effective
from recommender.model import MetricsSource, Progress, SourceError, UsageSnapshot

T = TypeVar("T")
BUILDINFO = "/api/v1/status/buildinfo"
QUERY = "/api/v1/query"
TENANT_HINT = (
    f"; a multi-tenant backend (Mimir, Cortex, Thanos) also needs its tenant header in "
    f"{where('prometheus_headers')}, e.g. X-Scope-OrgID=team-a"
)


class ConnectionCheckFailed(SourceError):
    """The connectivity check failed; the message is one line naming the setting(s) to change."""


def check_connection(client: PromClient, settings: MetricsSourceSettings) -> None:
    """Asks /api/v1/status/buildinfo, then (not every backend serves it: Thanos, VictoriaMetrics, AMP) the
    instant query `1`; ConnectionCheckFailed with one line about the query's answer when neither answers
    like Prometheus."""
    s = effective(settings)
    url = client.base_url
    try:
        if _is_api(client.probe(BUILDINFO, [], get=True)):
            return
        # not served, or not allowed on this path (a gateway may pass only the query paths): the query
        second = client.probe(QUERY, [("query", "1")])
    except httpx.TimeoutException as exc:
        raise ConnectionCheckFailed(
            f"cannot reach Prometheus at {url}: timed out, no answer within "
            f"{s.prometheus_timeout_seconds:g}s ({type(exc).__name__}): check the host and port of "
            f"{where('prometheus_url')} (a firewall that drops packets looks the same) or raise "
            f"{where('prometheus_timeout_seconds')}"
        ) from exc
    except httpx.HTTPError as exc:
        raise ConnectionCheckFailed(f"cannot reach Prometheus at {url}: {_unreachable(exc, s)}") from exc
    if _is_api(second):
        return
    raise ConnectionCheckFailed(_answer_problem(url, second, s))


def _is_api(probe: Probe) -> bool:
    if probe.status != 200:
        return False
    try:
        body = orjson.loads(probe.body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(body, dict) and body.get("status") == "success"


def _snippet(probe: Probe) -> str:
    text = probe.body[:2000].decode("utf-8", "replace")
    title = re.search(r"<title>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    text = title.group(1) if title else text
    return " ".join(text.split())[:120]


def _credentials(s: MetricsSourceSettings) -> str:
    if s.prometheus_basic_auth_user is not None:
        return f"{where('prometheus_basic_auth_user')} and {where('prometheus_basic_auth_password_file')}"
    if s.prometheus_bearer_token_file is not None:
        return f"the token in {where('prometheus_bearer_token_file')} ({s.prometheus_bearer_token_file})"
    if s.prometheus_sigv4_region is not None:
        return f"the AWS credentials and {where('prometheus_sigv4_region')} ({s.prometheus_sigv4_region})"
    return ""


def _refused(url: str, path: str, probe: Probe, s: MetricsSourceSettings) -> str:
    said = f"HTTP {probe.status} for {path}" + (f" ({_snippet(probe)})" if _snippet(probe) else "")
    creds = _credentials(s)
    if probe.status == 401:
        fix = (
            f"check {creds}"
            if creds
            else f"set credentials: {where('prometheus_bearer_token_file')}, "
            f"{where('prometheus_basic_auth_user')} with {where('prometheus_basic_auth_password_file')}, "
            f"or {where('prometheus_sigv4_region')}"
        )
        return f"Prometheus at {url} refused the credentials: {said}: {fix}{TENANT_HINT}"
    who = creds or "the anonymous request"
    return (
        f"Prometheus at {url} refused access: {said}: {who} is not allowed to query (OpenShift: bind the "
        f"cluster-monitoring-view cluster role to the service account){TENANT_HINT}"
    )


NOT_AN_API = frozenset({501, 505})
"""5xx answers that mean "this server does not do that" (a plain web server refusing the query's POST), not
a Prometheus in trouble."""


def _answer_problem(url: str, probe: Probe, s: MetricsSourceSettings) -> str:
    if probe.status in (401, 403):
        return _refused(url, QUERY, probe, s)
    base = f"set {where('prometheus_url')} to the API's base URL, without /api/v1"
    if probe.status == 404:
        return (
            f"no Prometheus API at {url}: HTTP 404 for {QUERY}: {base} (VictoriaMetrics cluster: "
            "http://vmselect:8481/select/<tenant>/prometheus)"
        )
    kind = probe.content_type.split(";")[0].strip() or "no content type"
    said = f"HTTP {probe.status} {kind}" + (f" ({_snippet(probe)})" if _snippet(probe) else "")
    if probe.status >= 500 and probe.status not in NOT_AN_API:
        return (
            f"Prometheus at {url} failed the connectivity check: {said} for {QUERY}: the server is in trouble"
        )
    return (
        f"{url} does not answer like the Prometheus API: {said} for {QUERY}: {base} (a login page means a "
        "proxy wants credentials)"
    )


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def _unreachable(exc: httpx.HTTPError, s: MetricsSourceSettings) -> str:
    url = where("prometheus_url")
    for cause in _chain(exc):
        if isinstance(cause, ssl.SSLCertVerificationError):
            return _verify_failed(cause, s)
        if isinstance(cause, ssl.SSLError):
            return _tls_failed(cause, s)
        if isinstance(cause, socket.gaierror):
            return f"host name not found ({cause.strerror or cause}): check the host of {url}"
        if isinstance(cause, ConnectionRefusedError):
            return f"connection refused: check the host and port of {url}"
    text = str(exc) or type(exc).__name__
    if "CERTIFICATE_REQUIRED" in text.upper():
        return _tls_text_failed(text, s)
    closed = isinstance(exc, httpx.RemoteProtocolError) or any(
        isinstance(c, ConnectionResetError) for c in _chain(exc)
    )
    if closed and s.prometheus_url.lower().startswith("http://"):
        return f"the server closed the connection without an answer: if it speaks TLS, use https:// in {url}"
    if closed:
        return f"the server closed the connection without an answer: check {url}"
    return f"{text}: check {url}"


def _verify_failed(cause: ssl.SSLCertVerificationError, s: MetricsSourceSettings) -> str:
    why = cause.verify_message or cause.reason or str(cause)
    said = f"certificate verify failed ({why})"
    if "hostname" in str(why).lower():
        return f"{said}: use a host name the certificate names in {where('prometheus_url')}"
    if s.prometheus_ca_file is not None:
        return (
            f"{said}: the CA in {where('prometheus_ca_file')} ({s.prometheus_ca_file}) did not sign it: "
            "set it to the CA that did"
        )
    return (
        f"{said}: set {where('prometheus_ca_file')} to the CA that signed it, or "
        f"{where('prometheus_insecure_skip_verify')} to not verify it (tests only)"
    )


def _tls_failed(cause: ssl.SSLError, s: MetricsSourceSettings) -> str:
    return _tls_text_failed(f"{cause.reason or ''} {cause}", s)


def _tls_text_failed(text: str, s: MetricsSourceSettings) -> str:
    upper = text.upper()
    cert, key = where("prometheus_client_cert_file"), where("prometheus_client_key_file")
    if "WRONG_VERSION_NUMBER" in upper or "RECORD_LAYER_FAILURE" in upper:
        return (
            f"TLS handshake failed (the server does not speak TLS): use http:// in {where('prometheus_url')}"
        )
    client_alerts = (
        "CERTIFICATE_REQUIRED",
        "HANDSHAKE_FAILURE",
        "UNKNOWN_CA",
        "BAD_CERTIFICATE",
        "DECRYPT_ERROR",
    )
    if any(a in upper for a in client_alerts):
        if s.prometheus_client_cert_file is None:
            return f"the server requires a client certificate ({_short(text)}): set {cert} and {key}"
        return (
            f"the server refused the client certificate {s.prometheus_client_cert_file} ({_short(text)}): "
            f"set {cert} and {key} to a certificate its client CA signed"
        )
    return (
        f"TLS handshake failed ({_short(text)}): check {where('prometheus_url')} and "
        f"{where('prometheus_ca_file')}"
    )


def _short(text: str) -> str:
    found = re.search(r"\[SSL: [A-Z0-9_]+\] ([^(]+)", text)
    return (found.group(1) if found else text).strip()[:120]


class CheckedSource:
    """A source whose first collect waits for the connectivity check (run again each try until it passes,
    so `podsizer run` logs the same line and keeps retrying with its backoff)."""

    def __init__(self, inner: MetricsSource, check: Callable[[], None]) -> None:
        self.inner = inner
        self.name: str = getattr(inner, "name", "source")
        self._check = check
        self._passed = False

    def ensure_checked(self) -> None:
        """The check, until it has passed once; ConnectionCheckFailed while it fails."""
        if not self._passed:
            self._check()
            self._passed = True

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        self.ensure_checked()
        return self.inner.collect(start, end, progress)


def client_of(source: object) -> PromClient | None:
    """The PromClient of a Prometheus source (also inside a namespace filter or a CheckedSource)."""
    inner = getattr(source, "inner", source)
    client = getattr(inner, "client", None)
    return client if isinstance(client, PromClient) else None


def check_source(source: object, settings: MetricsSourceSettings) -> None:
    """check_connection when `source` talks to Prometheus; nothing for the other sources."""
    client = client_of(source)
    if client is not None:
        check_connection(client, settings)


def checked(source: MetricsSource, settings: MetricsSourceSettings) -> MetricsSource:
    """`source` with the connectivity check before its first collect (Prometheus sources only)."""
    client = client_of(source)
    if client is None:
        return source
    return CheckedSource(source, lambda: check_connection(client, settings))


def after_check(
    source: MetricsSource, settings: MetricsSourceSettings, fn: Callable[[datetime, datetime], T]
) -> Callable[[datetime, datetime], T]:
    """`fn`, called after the connectivity check of `source` until that passes once (no check for sources
    that are not Prometheus): the loop's per-cycle cluster listing, its first request of a cycle."""
    wrapped = checked(source, settings)
    if not isinstance(wrapped, CheckedSource):
        return fn

    def first_checked(start: datetime, end: datetime) -> T:
        wrapped.ensure_checked()
        return fn(start, end)

    return first_checked
