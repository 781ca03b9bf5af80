"""Renewal of the chart's generated certificate: a new serving cert from the CA in a Secret, before expiry.

The CA (ca.crt, ca.key) lives in its own Secret that only the renewal job reads; the webhook's Secret holds
ca.crt (the caBundle: the current CA first, then still-valid previous CAs), tls.crt and tls.key. When the
serving certificate expires within `renew_before`, a new one is issued. The CA is replaced too when it is
missing, unreadable, or would expire before the new serving certificate; then the new CA is saved first,
the MutatingWebhookConfiguration's caBundle gets new + old CA (pods still serving the old certificate keep
verifying), and only then the webhook's Secret is updated (the webhook reloads it without a restart).
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from certs.expiry import not_after
from certs.generate import KeyPair, ca_from_pem, generate_ca, issue_serving_cert, service_dns_names

log = logging.getLogger("podsizer.certs")

DEFAULT_WEBHOOK_NAME = "mutate-pods.podsizer.io"
MAX_PREVIOUS_CAS = 2


class RenewError(Exception):
    """The renewal cannot proceed (a Secret missing or unreadable, the API refusing a write)."""


@dataclass(frozen=True)
class SecretData:
    """A Secret's decoded data plus what a replace must carry over."""

    data: Mapping[str, bytes]
    resource_version: str = ""
    type: str = "Opaque"
    labels: Mapping[str, str] | None = None
    annotations: Mapping[str, str] | None = None


class CertApi(Protocol):
    """The three calls the renewal makes; KubeCertApi implements them with the kubernetes client."""

    def read_secret(self, namespace: str, name: str) -> SecretData | None: ...

    def replace_secret(
        self, namespace: str, name: str, old: SecretData, data: Mapping[str, bytes]
    ) -> None: ...

    def patch_ca_bundle(self, configuration: str, webhooks: Sequence[str], ca_bundle_b64: str) -> None: ...


@dataclass(frozen=True)
class RenewConfig:
    """What to renew and when."""

    namespace: str
    service: str
    secret: str
    ca_secret: str
    webhook_configuration: str
    webhooks: tuple[str, ...] = (DEFAULT_WEBHOOK_NAME,)
    renew_before: dt.timedelta = dt.timedelta(days=60)
    days: int = 365
    ca_days: int = 3650


@dataclass(frozen=True)
class RenewResult:
    """What the run did."""

    renewed: bool
    ca_rotated: bool
    not_after: dt.datetime | None
    message: str


def _serving_not_after(tls: SecretData) -> dt.datetime | None:
    try:
        return not_after(tls.data["tls.crt"])
    except (KeyError, ValueError):
        return None


def _stored_ca(ca_secret: SecretData | None) -> KeyPair | None:
    if ca_secret is None or "ca.crt" not in ca_secret.data or "ca.key" not in ca_secret.data:
        return None
    try:
        return ca_from_pem(ca_secret.data["ca.crt"], ca_secret.data["ca.key"], "the CA Secret")
    except ValueError as exc:
        log.warning("certs renew: %s; a new CA will be made", exc)
        return None


def ca_bundle(current: bytes, previous: bytes, now: dt.datetime) -> bytes:
    """`current` CA first, then the CAs in `previous` that are still valid and not `current` (at most 2)."""
    try:
        old = x509.load_pem_x509_certificates(previous) if previous.strip() else []
    except ValueError:
        old = []
    head = x509.load_pem_x509_certificate(current)
    kept = [c for c in old if c != head and c.not_valid_after_utc > now][:MAX_PREVIOUS_CAS]
    return current + b"".join(c.public_bytes(serialization.Encoding.PEM) for c in kept)


def renew(api: CertApi, cfg: RenewConfig, now: dt.datetime) -> RenewResult:
    """Renew the serving certificate (and the CA when needed) if it expires within cfg.renew_before."""
    tls = api.read_secret(cfg.namespace, cfg.secret)
    if tls is None:
        raise RenewError(f"Secret {cfg.namespace}/{cfg.secret} not found")
    expires = _serving_not_after(tls)
    if expires is not None and expires - now > cfg.renew_before:
        days = (expires - now).total_seconds() / 86400
        return RenewResult(False, False, expires, f"serving certificate valid for {days:.0f} more days")
    ca_secret = api.read_secret(cfg.namespace, cfg.ca_secret)
    ca = _stored_ca(ca_secret)
    rotate = ca is None or not_after(ca.cert_pem) < now + dt.timedelta(days=cfg.days)
    if ca is None or rotate:
        if ca_secret is None:
            raise RenewError(f"CA Secret {cfg.namespace}/{cfg.ca_secret} not found (the chart creates it)")
        ca = generate_ca(common_name=f"{cfg.service}-ca", days=max(cfg.ca_days, cfg.days + 1))
    serving = issue_serving_cert(ca, service_dns_names(cfg.service, cfg.namespace), days=cfg.days)
    bundle = ca_bundle(ca.cert_pem, tls.data.get("ca.crt", b""), now)
    if rotate and ca_secret is not None:
        api.replace_secret(
            cfg.namespace, cfg.ca_secret, ca_secret, {"ca.crt": ca.cert_pem, "ca.key": ca.key_pem}
        )
        api.patch_ca_bundle(cfg.webhook_configuration, cfg.webhooks, base64.b64encode(bundle).decode("ascii"))
    api.replace_secret(
        cfg.namespace,
        cfg.secret,
        tls,
        {"ca.crt": bundle, "tls.crt": serving.cert_pem, "tls.key": serving.key_pem},
    )
    new_expiry = not_after(serving.cert_pem)
    what = "serving certificate and CA renewed" if rotate else "serving certificate renewed"
    return RenewResult(True, rotate, new_expiry, f"{what}; valid until {new_expiry.isoformat()}")
