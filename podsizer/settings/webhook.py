"""`podsizer webhook`'s settings: listener, TLS, admission scope, limits on hostile and heavy clients."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from podsizer.settings.base import SharedSettings
from podsizer.settings.duration import HOUR
from podsizer.settings.group import SettingsGroup
from podsizer.settings.names import where
from podsizer.settings.types import CommaList, OptionalPath

MAX_BODY_BYTES = 64 * 1024**2
OLM_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # where OLM mounts tls.crt / tls.key


class ListenerSettings(SettingsGroup):
    """Where the webhook listens and which namespaces it leaves alone."""

    heading = "webhook listener and admission"
    host: str = Field(default="0.0.0.0", description="address to listen on")
    port: int = Field(default=8443, ge=1, le=65535, description="HTTPS port")
    store_poll_interval: float = Field(
        default=5.0,
        gt=0,
        le=HOUR,
        description="seconds between checks of the json store file (at most an hour)",
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
        default=1.0,
        gt=0,
        le=HOUR,
        description="seconds between checks of the certificate files for rotation (at most an hour: a "
        "renewed certificate must be served before the old one expires)",
    )
    client_ca_file: OptionalPath = Field(
        default=None,
        description="CA (PEM) that must have signed the apiserver's client certificate (empty: none asked)",
    )
    client_allowed_names: CommaList = Field(
        default=(),
        description="comma-separated client certificate CN/DNS SAN allowed (empty: any the CA signed); "
        "needs client_ca_file",
    )

    @model_validator(mode="after")
    def _names_need_a_ca(self) -> TlsSettings:
        """Allowed names without a client CA would ask no certificate at all: /mutate open to anyone."""
        if self.client_allowed_names and self.client_ca_file is None:
            raise PydanticCustomError(
                "conflict",
                "{names} is set but {ca} is not: without a client CA no client certificate is asked for and "
                "/mutate would answer any caller; set {ca} to the CA that signed the API server's client "
                "certificate, or leave {names} empty",
                {"names": where("client_allowed_names"), "ca": where("client_ca_file")},
            )
        return self


class RequestLimitSettings(SettingsGroup):
    """Hostile and heavy clients: sizes, timeouts, the decision cache, large reviews off the loop."""

    heading = "webhook request limits"
    max_body_bytes: int = Field(
        default=5_000_000,
        ge=1024,
        le=MAX_BODY_BYTES,
        description="larger request bodies get HTTP 413 (at most 64Mi: the API server stores objects of "
        "at most 1.5 MiB, a review holds two)",
    )
    decision_cache_bytes: int = Field(
        default=32 * 1024 * 1024,
        ge=0,
        le=1024**3,
        description="approximate bytes of cached decisions (0: no cache; at most 1Gi, twice the chart's "
        "memory limit)",
    )
    max_header_bytes: int = Field(
        default=64 * 1024,
        ge=4096,
        le=1024**2,
        description="larger request lines plus headers get HTTP 431 (at most 1Mi: the API server sends "
        "a few hundred bytes)",
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
        default=256 * 1024,
        ge=0,
        le=MAX_BODY_BYTES,
        description="reviews larger than this are decoded and decided in a thread (at most 64Mi, the "
        "largest body)",
    )
    offload_concurrency: int = Field(
        default=1,
        ge=1,
        le=64,
        description="large reviews decided at once (others wait, small ones do not; at most 64: each "
        "holds its body in memory)",
    )


class WebhookSettings(ListenerSettings, TlsSettings, RequestLimitSettings, SharedSettings):
    """`podsizer webhook`: listener, TLS, exclusions, limits on requests."""
