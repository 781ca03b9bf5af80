"""The one PromClient factory: URL, TLS (CA bundle, client certificate, insecure), auth, headers, presets."""

from __future__ import annotations

import logging
import os
import ssl
from collections.abc import Mapping
from pathlib import Path

import httpx

from podsizer.settings import env_name, setting_error
from podsizer.settings.roles import MetricsSourceSettings
from recommender.input.prometheus.auth import BasicAuthFile, BearerTokenFile, SigV4Auth
from recommender.input.prometheus.client import PromClient
from recommender.model import SourceError

log = logging.getLogger("podsizer")

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
OPENSHIFT_THANOS_URL = "https://thanos-querier.openshift-monitoring.svc:9091"
OPENSHIFT_TOKEN_FILE = SERVICE_ACCOUNT / "token"
OPENSHIFT_SERVICE_CA = SERVICE_ACCOUNT / "service-ca.crt"


def in_cluster(env: Mapping[str, str] | None = None) -> bool:
    """True inside a pod (the kubelet sets KUBERNETES_SERVICE_HOST)."""
    return bool((os.environ if env is None else env).get("KUBERNETES_SERVICE_HOST"))


def effective(settings: MetricsSourceSettings, env: Mapping[str, str] | None = None) -> MetricsSourceSettings:
    """The settings with the preset's values filled in where no setting was given explicitly.

    openshift, in a cluster: thanos-querier of openshift-monitoring, the pod's service-account token (unless
    another way to authenticate is set) and the service CA (unless a CA file is set or verification is off).
    Outside a cluster the URL (the thanos-querier Route) and the token file must be set: SettingsError."""
    if settings.prometheus_preset != "openshift":
        return settings
    given = settings.model_fields_set
    if "prometheus_url" not in given and not in_cluster(env):
        raise setting_error(
            "prometheus_url",
            f"required with {env_name('prometheus_preset')}=openshift outside a cluster: the thanos-querier "
            "Route, e.g. https://$(oc -n openshift-monitoring get route thanos-querier -o "
            "jsonpath='{.spec.host}')",
        )
    fill: dict[str, object] = {}
    if "prometheus_url" not in given:
        fill["prometheus_url"] = OPENSHIFT_THANOS_URL
    other_auth = settings.prometheus_basic_auth_user or settings.prometheus_sigv4_region
    if settings.prometheus_bearer_token_file is None and not other_auth:
        fill["prometheus_bearer_token_file"] = OPENSHIFT_TOKEN_FILE
    if (
        settings.prometheus_ca_file is None
        and not settings.prometheus_insecure_skip_verify
        and in_cluster(env)
    ):
        fill["prometheus_ca_file"] = OPENSHIFT_SERVICE_CA
    return settings.model_copy(update=fill)


def tls_context(settings: MetricsSourceSettings) -> ssl.SSLContext | bool:
    """httpx's `verify`: True (system CAs) unless a CA bundle, a client certificate or insecure is set."""
    s = settings
    if (
        s.prometheus_ca_file is None
        and s.prometheus_client_cert_file is None
        and not s.prometheus_insecure_skip_verify
    ):
        return True
    try:
        ctx = ssl.create_default_context(cafile=str(s.prometheus_ca_file) if s.prometheus_ca_file else None)
    except (OSError, ssl.SSLError) as exc:
        raise setting_error(
            "prometheus_ca_file", f"cannot read the CA bundle {s.prometheus_ca_file}: {exc}"
        ) from exc
    if s.prometheus_insecure_skip_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if s.prometheus_client_cert_file is not None:
        try:
            ctx.load_cert_chain(s.prometheus_client_cert_file, s.prometheus_client_key_file)
        except (OSError, ssl.SSLError) as exc:
            raise setting_error(
                "prometheus_client_cert_file",
                f"cannot load {s.prometheus_client_cert_file} with the key "
                f"{s.prometheus_client_key_file}: {exc}",
            ) from exc
    return ctx


def auth_for(settings: MetricsSourceSettings) -> httpx.Auth | None:
    """The auth hook the settings ask for (at most one: the settings refuse two); its file read once now,
    so a missing file is a settings error at start."""
    s = settings
    if s.prometheus_sigv4_region is not None:
        return _sigv4(s.prometheus_sigv4_region, s.prometheus_sigv4_service)
    auth: BasicAuthFile | BearerTokenFile
    if s.prometheus_basic_auth_user is not None and s.prometheus_basic_auth_password_file is not None:
        auth, field = (
            BasicAuthFile(s.prometheus_basic_auth_user, s.prometheus_basic_auth_password_file),
            ("prometheus_basic_auth_password_file"),
        )
    elif s.prometheus_bearer_token_file is not None:
        auth, field = BearerTokenFile(s.prometheus_bearer_token_file), "prometheus_bearer_token_file"
    else:
        return None
    try:
        auth.token()
    except SourceError as exc:
        raise setting_error(field, str(exc)) from exc
    return auth


def _sigv4(region: str, service: str) -> httpx.Auth:
    try:
        return SigV4Auth(region, service)
    except ImportError as exc:
        raise setting_error(
            "prometheus_sigv4_region", f"SigV4 signing needs botocore: pip install 'podsizer[aws]' ({exc})"
        ) from exc
    except SourceError as exc:
        raise setting_error("prometheus_sigv4_region", str(exc)) from exc


def build_prom_client(
    settings: MetricsSourceSettings, transport: httpx.BaseTransport | None = None
) -> PromClient:
    """The PromClient every command and the console use, built from the connection settings (preset
    applied); SettingsError naming the setting when a file it names cannot be used."""
    s = effective(settings)
    if s.prometheus_insecure_skip_verify:
        log.warning(
            "%s is on: Prometheus' certificate at %s is not verified (anyone on the path can read and "
            "change the answers); set %s instead",
            env_name("prometheus_insecure_skip_verify"),
            s.prometheus_url,
            env_name("prometheus_ca_file"),
        )
    return PromClient(
        s.prometheus_url,
        transport=transport,
        timeout=s.prometheus_timeout_seconds,
        headers=dict(s.prometheus_headers),
        auth=auth_for(s),
        max_response_bytes=s.prometheus_max_response_bytes,
        verify=tls_context(s),
    )
