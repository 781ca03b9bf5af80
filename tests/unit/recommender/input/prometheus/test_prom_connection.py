"""Connection settings of Prometheus: URL, headers, conflicts, the OpenShift preset, TLS, basic auth, SigV4,
and the one client factory every command and the console use."""

from __future__ import annotations

import base64
import re
import ssl
import sys
from pathlib import Path

import httpx
import pytest

from podsizer.settings import RecommenderSettings, SettingsError, load
from recommender.input.prometheus.auth import BasicAuthFile, SigV4Auth
from recommender.input.prometheus.connection import (
    OPENSHIFT_SERVICE_CA,
    OPENSHIFT_THANOS_URL,
    OPENSHIFT_TOKEN_FILE,
    build_prom_client,
    effective,
    tls_context,
)

URL = "http://prom.example:9090"


def settings(**env: str) -> RecommenderSettings:
    return load(RecommenderSettings, env={f"PODSIZER_{k.upper()}": v for k, v in env.items()})


def write(path: Path, text: str) -> Path:
    path.write_text(text + "\n", encoding="utf-8")
    return path


# --- settings ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bare", ["prom:9090", "prom.example", "localhost:9090/prometheus", "ftp://x"])
def test_a_url_without_an_http_scheme_is_a_settings_error_with_the_fix(bare: str) -> None:
    with pytest.raises(SettingsError) as err:
        settings(prometheus_url=bare)
    assert str(err.value).startswith(
        "PODSIZER_PROMETHEUS_URL (--prometheus-url): not an http:// or https:// URL"
    )
    assert f"(got '{bare}')" in str(err.value)


def test_https_and_http_urls_are_accepted_as_given() -> None:
    assert settings(prometheus_url="https://thanos:9091/").prometheus_url == "https://thanos:9091/"
    assert settings(prometheus_url=" http://vm:8481/select/0/prometheus").prometheus_url.startswith(
        "http://vm"
    )


def test_headers_are_comma_separated_name_value_pairs() -> None:
    got = settings(prometheus_headers="X-Scope-OrgID=team-a, X-Extra = b=c ,")
    assert got.prometheus_headers == (("X-Scope-OrgID", "team-a"), ("X-Extra", "b=c"))


@pytest.mark.parametrize("bad", ["X-Scope-OrgID", "X Scope=a", "=a", "Bad:Name=x"])
def test_a_header_without_a_valid_name_is_a_settings_error(bad: str) -> None:
    with pytest.raises(SettingsError, match=r"^PODSIZER_PROMETHEUS_HEADERS \(--prometheus-headers\): "):
        settings(prometheus_headers=bad)


@pytest.mark.parametrize(
    ("env", "first", "second"),
    [
        (
            {
                "prometheus_basic_auth_user": "u",
                "prometheus_basic_auth_password_file": "/p",
                "prometheus_bearer_token_file": "/t",
            },
            "BASIC_AUTH_USER",
            "BEARER_TOKEN_FILE",
        ),
        ({"prometheus_bearer_token_file": "/t", "prometheus_sigv4_region": "eu-west-1"}, "BEARER", "SIGV4"),
        ({"prometheus_basic_auth_user": "u"}, "BASIC_AUTH_USER", "BASIC_AUTH_PASSWORD_FILE"),
        ({"prometheus_client_cert_file": "/c"}, "CLIENT_CERT_FILE", "CLIENT_KEY_FILE"),
        ({"prometheus_client_key_file": "/k"}, "CLIENT_KEY_FILE", "CLIENT_CERT_FILE"),
        ({"prometheus_insecure_skip_verify": "true", "prometheus_ca_file": "/ca"}, "INSECURE", "CA_FILE"),
        (
            {"prometheus_headers": "Authorization=Bearer x", "prometheus_bearer_token_file": "/t"},
            "BEARER",
            "HEADERS",
        ),
    ],
)
def test_conflicting_options_are_a_settings_error_naming_both(
    env: dict[str, str], first: str, second: str
) -> None:
    with pytest.raises(SettingsError) as err:
        settings(**env)
    text = str(err.value)
    assert re.search(
        rf"PODSIZER_PROMETHEUS_{first}\w* \(--[a-z0-9-]+\) and PODSIZER_PROMETHEUS_{second}", text
    ) or (
        re.search(rf"PODSIZER_PROMETHEUS_{second}\w* \(--[a-z0-9-]+\) and PODSIZER_PROMETHEUS_{first}", text)
    ), text


# --- the OpenShift preset ------------------------------------------------------------------------

IN_POD = {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}


def test_the_openshift_preset_in_a_pod_is_thanos_querier_with_the_sa_token_and_service_ca() -> None:
    got = effective(settings(prometheus_preset="OpenShift"), IN_POD)
    assert (
        got.prometheus_url == OPENSHIFT_THANOS_URL == "https://thanos-querier.openshift-monitoring.svc:9091"
    )
    assert got.prometheus_bearer_token_file == OPENSHIFT_TOKEN_FILE
    assert got.prometheus_ca_file == OPENSHIFT_SERVICE_CA
    assert str(OPENSHIFT_SERVICE_CA) == "/var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt"


def test_explicit_settings_win_over_the_preset(tmp_path: Path) -> None:
    given = settings(
        prometheus_preset="openshift",
        prometheus_url="https://thanos.example:9091",
        prometheus_bearer_token_file=str(tmp_path / "t"),
        prometheus_ca_file=str(tmp_path / "ca"),
    )
    got = effective(given, IN_POD)
    assert (got.prometheus_url, got.prometheus_bearer_token_file, got.prometheus_ca_file) == (
        "https://thanos.example:9091",
        tmp_path / "t",
        tmp_path / "ca",
    )


def test_the_preset_sends_no_token_when_basic_auth_is_set(tmp_path: Path) -> None:
    given = settings(
        prometheus_preset="openshift",
        prometheus_basic_auth_user="u",
        prometheus_basic_auth_password_file=str(tmp_path / "p"),
    )
    assert effective(given, IN_POD).prometheus_bearer_token_file is None


def test_the_preset_outside_a_cluster_needs_the_route_url() -> None:
    with pytest.raises(SettingsError, match=r"^PODSIZER_PROMETHEUS_URL \(--prometheus-url\): required with "):
        effective(settings(prometheus_preset="openshift"), {})


def test_no_preset_changes_nothing() -> None:
    given = settings(prometheus_url=URL)
    assert effective(given, IN_POD) is given


# --- TLS -----------------------------------------------------------------------------------------


def test_no_tls_setting_keeps_httpx_default_verification() -> None:
    assert tls_context(settings()) is True


def test_insecure_skip_verify_verifies_nothing() -> None:
    ctx = tls_context(settings(prometheus_insecure_skip_verify="true"))
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_NONE and not ctx.check_hostname


def test_an_unreadable_ca_file_is_a_settings_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(
        SettingsError, match=r"^PODSIZER_PROMETHEUS_CA_FILE \(--prometheus-ca-file\): cannot read"
    ):
        tls_context(settings(prometheus_ca_file=str(tmp_path / "absent.pem")))


def test_a_bad_client_certificate_is_a_settings_error_naming_it(tmp_path: Path) -> None:
    cert, key = write(tmp_path / "c.pem", "not a cert"), write(tmp_path / "k.pem", "not a key")
    with pytest.raises(
        SettingsError, match=r"^PODSIZER_PROMETHEUS_CLIENT_CERT_FILE \(--prometheus-client-cert"
    ):
        tls_context(settings(prometheus_client_cert_file=str(cert), prometheus_client_key_file=str(key)))


# --- the factory: headers, basic auth --------------------------------------------------------------

BUILDINFO = {"status": "success", "data": {"version": "2.53.0"}}


def test_the_factory_sends_the_headers_and_basic_auth_and_rereads_a_changed_password(tmp_path: Path) -> None:
    password = write(tmp_path / "password", "one")
    seen: list[tuple[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.headers["X-Scope-OrgID"], request.headers["Authorization"]))
        return httpx.Response(200, json=BUILDINFO)

    given = settings(
        prometheus_url=URL,
        prometheus_headers="X-Scope-OrgID=team-a",
        prometheus_basic_auth_user="me",
        prometheus_basic_auth_password_file=str(password),
    )
    with build_prom_client(given, transport=httpx.MockTransport(handler)) as client:
        client.probe("/api/v1/status/buildinfo", [], get=True)
        write(tmp_path / "new", "two-longer").replace(password)
        client.probe("/api/v1/status/buildinfo", [], get=True)
    basic = ["Basic " + base64.b64encode(f"me:{p}".encode()).decode() for p in ("one", "two-longer")]
    assert seen == [("team-a", basic[0]), ("team-a", basic[1])]


def test_a_401_rereads_the_password_file_and_retries_once(tmp_path: Path) -> None:
    password = write(tmp_path / "password", "old")
    auth = BasicAuthFile("me", password)
    auth.token()
    good = "Basic " + base64.b64encode(b"me:new").decode()
    password.write_text("new\n")  # same size and maybe the same mtime tick: only the 401 finds it
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.headers["Authorization"])
        return httpx.Response(200 if request.headers["Authorization"] == good else 401)

    with httpx.Client(transport=httpx.MockTransport(handler), auth=auth) as http:
        assert http.get("http://prom/api/v1/query").status_code == 200
    assert calls[-1] == good


def test_a_missing_password_file_is_a_settings_error_naming_it(tmp_path: Path) -> None:
    given = settings(
        prometheus_basic_auth_user="me", prometheus_basic_auth_password_file=str(tmp_path / "no")
    )
    with pytest.raises(
        SettingsError, match=r"^PODSIZER_PROMETHEUS_BASIC_AUTH_PASSWORD_FILE \(--prometheus-basic"
    ):
        build_prom_client(given)


def test_insecure_skip_verify_logs_a_warning_at_start(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="podsizer"):
        build_prom_client(
            settings(prometheus_url="https://prom:9091", prometheus_insecure_skip_verify="1")
        ).close()
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "PODSIZER_PROMETHEUS_INSECURE_SKIP_VERIFY is on"
    ]


# --- SigV4 ---------------------------------------------------------------------------------------


def _frozen(token: str | None = None) -> object:
    from botocore.credentials import ReadOnlyCredentials

    return ReadOnlyCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_sigv4_signs_like_botocore_itself(method: str) -> None:
    pytest.importorskip("botocore")
    from botocore.auth import SigV4Auth as BotoSigV4
    from botocore.awsrequest import AWSRequest

    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=BUILDINFO)

    auth = SigV4Auth("us-east-1", "aps", credentials=_frozen)
    base = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1"
    form: list[tuple[str, str | int | float | bool | None]] = [
        ("match[]", 'up{job="a b"}'),
        ("start", "1.000"),
    ]
    with httpx.Client(transport=httpx.MockTransport(handler), auth=auth) as http:
        if method == "GET":
            http.get(f"{base}/api/v1/label/pod/values", params=form)
        else:
            http.post(f"{base}/api/v1/query", data=dict(form))
    request = sent[0]
    header = request.headers["Authorization"]
    stamp = request.headers["X-Amz-Date"]
    shape = (
        r"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/(\d{8})/us-east-1/aps/aws4_request, "
        r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})"
    )
    found = re.fullmatch(shape, header)
    assert found is not None, header
    assert found.group(1) == stamp[:8] and "host" in found.group(2).split(";")
    # botocore, given the request as sent and the same time, computes the same signature
    kind = {"Content-Type": request.headers["Content-Type"]} if "Content-Type" in request.headers else {}
    again = AWSRequest(method=method, url=str(request.url), data=request.content, headers=kind)
    again.headers["X-Amz-Date"] = stamp
    again.context["timestamp"] = stamp
    signer = BotoSigV4(_frozen(), "aps", "us-east-1")
    string_to_sign = signer.string_to_sign(again, signer.canonical_request(again))
    assert signer.signature(string_to_sign, again) == found.group(3)
    assert "%20" in str(request.url) or method == "POST"  # the query as SigV4 canonicalises it


def test_sigv4_sends_the_session_token_of_temporary_credentials() -> None:
    pytest.importorskip("botocore")
    sent: list[httpx.Request] = []
    auth = SigV4Auth("eu-west-1", credentials=lambda: _frozen("SESSION"))

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200)

    with httpx.Client(transport=httpx.MockTransport(handler), auth=auth) as http:
        http.get("https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1/api/v1/query?query=1")
    assert sent[0].headers["X-Amz-Security-Token"] == "SESSION"
    assert "x-amz-security-token" in sent[0].headers["Authorization"]


def test_sigv4_without_botocore_is_a_settings_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "botocore.auth", None)  # import fails as if not installed
    with pytest.raises(SettingsError) as err:
        build_prom_client(settings(prometheus_sigv4_region="us-east-1"))
    assert str(err.value).startswith(
        "PODSIZER_PROMETHEUS_SIGV4_REGION (--prometheus-sigv4-region): SigV4 signing needs botocore: "
        "pip install 'podsizer[aws]'"
    )
