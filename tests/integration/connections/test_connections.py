"""Each connection option against the real Prometheus behind a reverse proxy: the accepted case gives the
expected recommendations, the refused case the one line a user sees (naming the setting) and exit 1/2."""

from __future__ import annotations

import argparse
import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from podsizer.settings import RecommenderSettings, load
from recommender.commands import add_run_arguments, run_loop
from recommender.input.prometheus.connection import build_prom_client
from recommender.input.prometheus.preflight import check_connection
from recommender.wiring import Wiring
from tests.integration.connections.conftest import Served, assert_cart_sized, recommend, write
from tests.integration.connections.proxy import TENANT_HEADER, Pki, Proxy, Rules, running_proxy

pytestmark = pytest.mark.integration

CA = "PODSIZER_PROMETHEUS_CA_FILE (--prometheus-ca-file)"
INSECURE = "PODSIZER_PROMETHEUS_INSECURE_SKIP_VERIFY (--prometheus-insecure-skip-verify)"
USER = "PODSIZER_PROMETHEUS_BASIC_AUTH_USER (--prometheus-basic-auth-user)"
PASSWORD = "PODSIZER_PROMETHEUS_BASIC_AUTH_PASSWORD_FILE (--prometheus-basic-auth-password-file)"
HEADERS = "PODSIZER_PROMETHEUS_HEADERS (--prometheus-headers)"
CERT = "PODSIZER_PROMETHEUS_CLIENT_CERT_FILE (--prometheus-client-cert-file)"
KEY = "PODSIZER_PROMETHEUS_CLIENT_KEY_FILE (--prometheus-client-key-file)"
URL = "PODSIZER_PROMETHEUS_URL (--prometheus-url)"
TOKEN = "PODSIZER_PROMETHEUS_BEARER_TOKEN_FILE (--prometheus-bearer-token-file)"
TENANT_HINT = (
    f"; a multi-tenant backend (Mimir, Cortex, Thanos) also needs its tenant header in {HEADERS}, "
    "e.g. X-Scope-OrgID=team-a"
)


@pytest.fixture
def tls_proxy(served: Served, pki: Pki) -> Iterator[Proxy]:
    with running_proxy(served.server.url, pki, Rules()) as proxy:
        yield proxy


# --- TLS with a private CA -----------------------------------------------------------------------


def test_a_private_ca_endpoint_is_verified_with_the_ca_file(
    served: Served, tls_proxy: Proxy, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_cart_sized(recommend(served, capsys, tls_proxy.url, f"--prometheus-ca-file={pki.ca_file}"))


def test_without_the_ca_file_verify_fails_naming_the_ca_setting(
    served: Served, tls_proxy: Proxy, capsys: pytest.CaptureFixture[str]
) -> None:
    got = recommend(served, capsys, tls_proxy.url)
    assert got.status == 1
    assert got.stderr == (
        f"podsizer recommend: cannot reach Prometheus at {tls_proxy.url}: certificate verify failed "
        f"(unable to get local issuer certificate): set {CA} to the CA that signed it, or {INSECURE} "
        "to not verify it (tests only)\n"
    )


def test_the_wrong_ca_file_says_it_did_not_sign_the_certificate(
    served: Served, tls_proxy: Proxy, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    got = recommend(served, capsys, tls_proxy.url, f"--prometheus-ca-file={pki.other_ca_file}")
    assert got.status == 1
    assert got.stderr == (
        f"podsizer recommend: cannot reach Prometheus at {tls_proxy.url}: certificate verify failed "
        f"(unable to get local issuer certificate): the CA in {CA} ({pki.other_ca_file}) did not sign "
        "it: set it to the CA that did\n"
    )


def test_insecure_skip_verify_is_accepted_with_a_warning(
    served: Served, tls_proxy: Proxy, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="podsizer"):
        got = recommend(served, capsys, tls_proxy.url, "--prometheus-insecure-skip-verify")
    assert_cart_sized(got)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(m.startswith("PODSIZER_PROMETHEUS_INSECURE_SKIP_VERIFY is on") for m in warnings), warnings


def test_plain_http_to_a_tls_port_says_to_use_https(
    served: Served, tls_proxy: Proxy, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tls_proxy.url.replace("https://", "http://")
    got = recommend(served, capsys, plain)
    assert got.status == 1
    assert got.stderr == (
        f"podsizer recommend: cannot reach Prometheus at {plain}: the server closed the connection without "
        f"an answer: if it speaks TLS, use https:// in {URL}\n"
    )


# --- client certificates -------------------------------------------------------------------------


@pytest.fixture
def mtls_proxy(served: Served, pki: Pki) -> Iterator[Proxy]:
    with running_proxy(served.server.url, pki, Rules(), client_cert=True) as proxy:
        yield proxy


def test_a_required_client_certificate_is_presented(
    served: Served, mtls_proxy: Proxy, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    got = recommend(
        served,
        capsys,
        mtls_proxy.url,
        f"--prometheus-ca-file={pki.ca_file}",
        f"--prometheus-client-cert-file={pki.client_cert_file}",
        f"--prometheus-client-key-file={pki.client_key_file}",
    )
    assert_cart_sized(got)


def test_a_missing_client_certificate_names_the_certificate_settings(
    served: Served, mtls_proxy: Proxy, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    got = recommend(served, capsys, mtls_proxy.url, f"--prometheus-ca-file={pki.ca_file}")
    assert got.status == 1
    assert got.stderr == (
        f"podsizer recommend: cannot reach Prometheus at {mtls_proxy.url}: the server requires a client "
        f"certificate (tlsv13 alert certificate required): set {CERT} and {KEY}\n"
    )


def test_a_certificate_without_its_key_is_a_settings_error(
    served: Served, mtls_proxy: Proxy, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    got = recommend(served, capsys, mtls_proxy.url, f"--prometheus-client-cert-file={pki.client_cert_file}")
    assert got.status == 2
    assert got.stderr == f"podsizer recommend: {CERT} and {KEY}: a certificate needs its key\n"


# --- basic auth ----------------------------------------------------------------------------------


@pytest.fixture
def basic_proxy(served: Served, pki: Pki) -> Iterator[Proxy]:
    with running_proxy(served.server.url, pki, Rules(basic=("12345", "s3cret"))) as proxy:
        yield proxy


def test_basic_auth_with_the_password_file_is_accepted(
    served: Served, basic_proxy: Proxy, pki: Pki, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    password = write(tmp_path / "password", "s3cret")
    got = recommend(
        served,
        capsys,
        basic_proxy.url,
        f"--prometheus-ca-file={pki.ca_file}",
        "--prometheus-basic-auth-user=12345",
        f"--prometheus-basic-auth-password-file={password}",
    )
    assert_cart_sized(got)


def test_a_wrong_password_is_a_401_naming_the_basic_auth_settings(
    served: Served, basic_proxy: Proxy, pki: Pki, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    password = write(tmp_path / "password", "wrong")
    got = recommend(
        served,
        capsys,
        basic_proxy.url,
        f"--prometheus-ca-file={pki.ca_file}",
        "--prometheus-basic-auth-user=12345",
        f"--prometheus-basic-auth-password-file={password}",
    )
    assert got.status == 1
    assert got.stderr == (
        f"podsizer recommend: Prometheus at {basic_proxy.url} refused the credentials: HTTP 401 for "
        f"/api/v1/query (invalid username or password): check {USER} and {PASSWORD}"
        f"{TENANT_HINT}\n"
    )


def test_basic_auth_and_a_bearer_token_together_are_a_settings_error(
    served: Served, basic_proxy: Proxy, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = write(tmp_path / "secret", "x")
    got = recommend(
        served,
        capsys,
        basic_proxy.url,
        "--prometheus-basic-auth-user=12345",
        f"--prometheus-basic-auth-password-file={secret}",
        f"--prometheus-bearer-token-file={secret}",
    )
    assert got.status == 2
    assert got.stderr == f"podsizer recommend: {USER} and {TOKEN}: one way to authenticate at a time\n"


# --- tenant header -------------------------------------------------------------------------------


@pytest.fixture
def tenant_proxy(served: Served, pki: Pki) -> Iterator[Proxy]:
    with running_proxy(served.server.url, pki, Rules(tenant="team-a")) as proxy:
        yield proxy


def test_the_tenant_header_is_sent(
    served: Served, tenant_proxy: Proxy, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    got = recommend(
        served,
        capsys,
        tenant_proxy.url,
        f"--prometheus-ca-file={pki.ca_file}",
        f"--prometheus-headers={TENANT_HEADER}=team-a",
    )
    assert_cart_sized(got)


def test_a_missing_tenant_header_names_the_headers_setting(
    served: Served, tenant_proxy: Proxy, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    got = recommend(served, capsys, tenant_proxy.url, f"--prometheus-ca-file={pki.ca_file}")
    assert got.status == 1
    assert got.stderr == (
        f"podsizer recommend: Prometheus at {tenant_proxy.url} refused the credentials: HTTP 401 for "
        f"/api/v1/query (no org id): set credentials: {TOKEN}, {USER} with {PASSWORD}, or "
        f"PODSIZER_PROMETHEUS_SIGV4_REGION (--prometheus-sigv4-region){TENANT_HINT}\n"
    )


# --- bearer token rotation -----------------------------------------------------------------------


def test_a_rotated_token_is_used_by_the_same_client_without_a_restart(
    served: Served, pki: Pki, tmp_path: Path
) -> None:
    token_file = write(tmp_path / "token", "first")
    rules = Rules(token="first")
    with running_proxy(served.server.url, pki, rules) as proxy:
        env = {
            "PODSIZER_PROMETHEUS_URL": proxy.url,
            "PODSIZER_PROMETHEUS_CA_FILE": str(pki.ca_file),
            "PODSIZER_PROMETHEUS_BEARER_TOKEN_FILE": str(token_file),
        }
        settings = load(RecommenderSettings, env=env)
        with build_prom_client(settings) as client:
            check_connection(client, settings)
            before = client.query("count(up) or vector(1)", served.history.end)
            rules.token = "second"  # the server rotates first: the old token is refused from now on
            write(tmp_path / "token.new", "second").replace(token_file)  # the kubelet's atomic swap
            after = client.query("count(up) or vector(1)", served.history.end)
    assert before == after
    assert rules.seen_auth[-1] == "Bearer second"
    assert "Bearer first" in rules.seen_auth


def test_a_stale_token_is_a_401_naming_the_token_file(
    served: Served, pki: Pki, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token_file = write(tmp_path / "token", "stale")
    with running_proxy(served.server.url, pki, Rules(token="fresh")) as proxy:
        got = recommend(
            served,
            capsys,
            proxy.url,
            f"--prometheus-ca-file={pki.ca_file}",
            f"--prometheus-bearer-token-file={token_file}",
        )
    assert got.status == 1
    assert got.stderr == (
        f"podsizer recommend: Prometheus at {proxy.url} refused the credentials: HTTP 401 for "
        f"/api/v1/query (invalid bearer token): check the token in {TOKEN} ({token_file})"
        f"{TENANT_HINT}\n"
    )


# --- the OpenShift preset ------------------------------------------------------------------------


def test_the_openshift_preset_with_its_paths_pointed_at_a_service_ca_and_token(
    served: Served,
    pki: Pki,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The proxy plays thanos-querier: TLS by the "service CA", the service account's bearer token."""
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")  # in a pod
    token_file = write(tmp_path / "token", "sa-token")
    with running_proxy(served.server.url, pki, Rules(token="sa-token")) as proxy:
        got = recommend(
            served,
            capsys,
            proxy.url,
            "--prometheus-preset=openshift",
            f"--prometheus-ca-file={pki.ca_file}",
            f"--prometheus-bearer-token-file={token_file}",
        )
    assert_cart_sized(got)


def test_the_openshift_preset_outside_a_cluster_without_a_token_file_names_it(
    served: Served, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_proxy(served.server.url, pki, Rules(token="sa-token")) as proxy:
        got = recommend(served, capsys, proxy.url, "--prometheus-preset=openshift")
    assert got.status == 2
    assert got.stderr == (
        f"podsizer recommend: {TOKEN}: cannot read the Prometheus bearer token file "
        "/var/run/secrets/kubernetes.io/serviceaccount/token: [Errno 2] No such file or directory: "
        "'/var/run/secrets/kubernetes.io/serviceaccount/token'\n"
    )


# --- URL, port, answers that are not the API -----------------------------------------------------


def test_a_url_without_a_scheme_is_a_settings_error(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = served.server.url.split("://", 1)[1]
    got = recommend(served, capsys, bare)
    assert got.status == 2
    assert got.stderr == (
        f"podsizer recommend: {URL}: not an http:// or https:// URL: write the scheme, e.g. http://{bare} "
        f"or https://{bare} (got '{bare}')\n"
    )


def test_a_wrong_port_is_connection_refused_naming_the_url(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"  # bound, not listening: refused
        got = recommend(served, capsys, closed)
    assert got.status == 1
    assert got.stderr == (
        f"podsizer recommend: cannot reach Prometheus at {closed}: connection refused: check the host and "
        f"port of {URL}\n"
    )


def test_a_login_page_instead_of_the_api_says_it_is_not_prometheus(
    served: Served, tls_proxy: Proxy, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"{tls_proxy.url}/login"
    got = recommend(served, capsys, url, f"--prometheus-ca-file={pki.ca_file}")
    assert got.status == 1
    assert got.stderr == (
        f"podsizer recommend: {url} does not answer like the Prometheus API: HTTP 200 text/html (Log in - "
        f"Monitoring) for /api/v1/query: set {URL} to the API's base URL, without /api/v1 (a login page "
        "means a proxy wants credentials)\n"
    )


def test_a_server_that_never_answers_times_out_naming_the_timeout_setting(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)  # the kernel accepts the connection; nothing ever answers
        silent = f"http://127.0.0.1:{s.getsockname()[1]}"
        got = recommend(served, capsys, silent, "--prometheus-timeout-seconds=1")
    assert got.status == 1
    assert got.stderr == (
        f"podsizer recommend: cannot reach Prometheus at {silent}: timed out, no answer within 1s "
        f"(ReadTimeout): check the host and port of {URL} (a firewall that drops packets looks the same) "
        "or raise PODSIZER_PROMETHEUS_TIMEOUT_SECONDS (--prometheus-timeout-seconds)\n"
    )


def test_run_once_reports_the_same_line_as_a_source_error(
    served: Served, tls_proxy: Proxy, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser(prog="podsizer run")
    add_run_arguments(parser)
    args = parser.parse_args(
        [
            "--once",
            "--source=prometheus",
            f"--prometheus-url={tls_proxy.url}",
            f"--store-file={tmp_path / 'r.json'}",
        ]
    )
    capsys.readouterr()
    assert run_loop(args, Wiring(clock=lambda: served.history.end)) == 1
    err = capsys.readouterr().err
    assert (
        f"podsizer run: source: prometheus: cannot reach Prometheus at {tls_proxy.url}: certificate verify "
        f"failed (unable to get local issuer certificate): set {CA} to the CA that signed it"
    ) in err


def test_https_to_a_plain_http_port_says_to_use_http(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    tls = served.server.url.replace("http://", "https://")
    got = recommend(served, capsys, tls)
    assert got.status == 1
    assert got.stderr == (
        f"podsizer recommend: cannot reach Prometheus at {tls}: TLS handshake failed (the server does not "
        f"speak TLS): use http:// in {URL}\n"
    )
