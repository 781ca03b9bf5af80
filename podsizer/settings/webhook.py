"""`podsizer webhook`'s settings: listener, TLS, admission scope, limits on hostile and heavy clients."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from podsizer.settings.base import SharedSettings
from podsizer.settings.group import SettingsGroup
from podsizer.settings.types import CommaList, OptionalPath

OLM_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # where OLM mounts tls.crt / tls.key


class ListenerSettings(SettingsGroup):
    """Where the webhook listens and which namespaces it leaves alone."""

    heading = "webhook listener and admission"
    host: str = Field(default="0.0.0.0", description="address to listen on")
    port: int = Field(default=8443, ge=1, le=65535, description="HTTPS port")
    store_poll_interval: float = Field(
        default=5.0, gt=0, description="seconds between checks of the json store file"
    )
    namespace: str = Field(
        default="podsizer", min_length=1, description="the webhook's own namespace (excluded)"
    )
    excluded_namespaces: CommaList = Field(
        default=("kube-system",),
        description="comma-separated namespaces never mutated; glob patterns allowed (openshift-*, kube-*)",
    )
    access_log: bool = Field(default=False, description="uvicorn access log")
    bench_endpoints: bool = Field(default=False, description="register /mutate-baseline (benchmarks only)")

    @property
    def excluded_namespace_set(self) -> frozenset[str]:
        return frozenset({*self.excluded_namespaces, self.namespace})


class TlsSettings(SettingsGroup):
    """The serving certificate and the client certificates asked of the apiserver."""

    heading = "webhook TLS"
    tls_cert_file: Path = Field(default=OLM_CERT_DIR / "tls.crt", description="serving certificate (PEM)")
    tls_key_file: Path = Field(default=OLM_CERT_DIR / "tls.key", description="serving key (PEM)")
    tls_reload_interval: float = Field(
        default=1.0, gt=0, description="seconds between checks of the certificate files for rotation"
    )
    client_ca_file: OptionalPath = Field(
        default=None,
        description="CA (PEM) that must have signed the apiserver's client certificate (empty: none asked)",
    )
    client_allowed_names: CommaList = Field(
        default=(),
        description="comma-separated client certificate CN/DNS SAN allowed (empty: any the CA signed)",
    )


class RequestLimitSettings(SettingsGroup):
    """Hostile and heavy clients: sizes, timeouts, the decision cache, large reviews off the loop."""

    heading = "webhook request limits"
    max_body_bytes: int = Field(default=5_000_000, ge=1024, description="larger request bodies get HTTP 413")
    decision_cache_bytes: int = Field(
        default=32 * 1024 * 1024, ge=0, description="approximate bytes of cached decisions (0: no cache)"
    )
    max_header_bytes: int = Field(
        default=64 * 1024, ge=4096, description="larger request lines plus headers get HTTP 431"
    )
    header_timeout_seconds: float = Field(
        default=10.0, gt=0, le=300, description="a connection must send a request's headers within this"
    )
    body_timeout_seconds: float = Field(
        default=10.0, gt=0, le=300, description="a request's body must arrive within this (HTTP 408)"
    )
    keep_alive_timeout_seconds: int = Field(
        default=30, ge=1, le=3600, description="an idle keep-alive connection is closed after this"
    )
    offload_body_bytes: int = Field(
        default=256 * 1024, ge=0, description="reviews larger than this are decoded and decided in a thread"
    )
    offload_concurrency: int = Field(
        default=1, ge=1, description="large reviews decided at once (others wait, small ones do not)"
    )


class WebhookSettings(ListenerSettings, TlsSettings, RequestLimitSettings, SharedSettings):
    """`podsizer webhook`: listener, TLS, exclusions, limits on requests."""
