"""Webhook configuration: every setting a PODSIZER_ environment variable and a flag, with defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from webhook.calculators.base import LimitPolicy
from webhook.modes import Mode

ENV_PREFIX = "PODSIZER_"
OLM_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # where OLM mounts tls.crt / tls.key


class WebhookSettings(BaseSettings):
    """Defaults are safe: dry-run, kube-system and the webhook's own namespace excluded."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    host: str = Field("0.0.0.0", description="address to listen on")
    port: int = Field(8443, ge=1, le=65535, description="HTTPS port")
    tls_cert_file: Path = Field(OLM_CERT_DIR / "tls.crt", description="serving certificate (PEM)")
    tls_key_file: Path = Field(OLM_CERT_DIR / "tls.key", description="serving key (PEM)")
    tls_reload_interval: float = Field(
        1.0, gt=0, description="seconds between checks of the certificate files for rotation"
    )
    store: Literal["crd", "file"] = Field(
        "crd",
        description="where Recommendations come from: crd (watch) or file (standalone; 'json' also accepted)",
    )
    store_file: Path = Field(Path("recommendations.json"), description="JSON RecommendationList (store=file)")
    store_poll_interval: float = Field(5.0, gt=0, description="seconds between checks of the store file")
    kubeconfig: Path | None = Field(None, description="kubeconfig for store=crd; in-cluster config if unset")
    default_mode: Mode = Field("dry-run", description="mode when neither workload nor namespace sets one")
    namespace: str = Field("podsizer", min_length=1, description="the webhook's own namespace (excluded)")
    excluded_namespaces: str = Field("kube-system", description="comma-separated namespaces never mutated")
    limit_policy: LimitPolicy = Field("keep-ratio", description="limits: keep-ratio, cap or leave")
    allow_mig_swap: bool = Field(
        False, description="replace nvidia.com/gpu with the suggested MIG resource when there is one"
    )
    min_confidence: float = Field(
        0.0, ge=0.0, le=1.0, description="container recommendations below this confidence are not applied"
    )
    max_body_bytes: int = Field(5_000_000, ge=1024, description="larger request bodies get HTTP 413")
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="log level")
    access_log: bool = Field(False, description="uvicorn access log")
    bench_endpoints: bool = Field(False, description="register /mutate-baseline (benchmarks only)")

    @field_validator("store", mode="before")
    @classmethod
    def _json_is_file(cls, value: Any) -> Any:
        # The recommender calls the standalone store "json"; one PODSIZER_STORE then configures both.
        return "file" if isinstance(value, str) and value.strip().lower() == "json" else value

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower_log_level(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @property
    def excluded_namespace_set(self) -> frozenset[str]:
        names = {n.strip() for n in self.excluded_namespaces.split(",") if n.strip()}
        return frozenset(names | {self.namespace})


class SettingsError(ValueError):
    """Bad configuration; the message names the environment variable and flag."""


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def flag_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def load_settings(overrides: dict[str, object] | None = None) -> WebhookSettings:
    """Environment + explicit overrides (flags win); SettingsError names every bad variable."""
    try:
        return WebhookSettings(**(overrides or {}))  # type: ignore[arg-type]
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "?"
            lines.append(f"{env_name(field)} ({flag_name(field)}): {err['msg']} (got {err.get('input')!r})")
        raise SettingsError("invalid webhook configuration:\n  " + "\n  ".join(lines)) from None
