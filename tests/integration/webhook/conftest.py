"""Real TLS servers for webhook integration tests: certificates from certs/, uvicorn on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from certs.generate import Bundle, KeyPair, generate_bundle, generate_ca, write_bundle
from certs.reload import ReloadingTLS
from podsizer.cluster import OwnerCache
from podsizer.settings import WebhookSettings
from tests.unit.webhook.builders import holder_with, recommendation
from webhook.app import create_app
from webhook.server import ServerThread


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def install_secret(root: Path, version: str, bundle: Bundle) -> None:
    """Lay files out like a Secret volume and swap ..data atomically, as kubelet does."""
    write_bundle(bundle, root / f"..{version}")
    tmp = root / "..data_tmp"
    tmp.symlink_to(f"..{version}")
    os.replace(tmp, root / "..data")
    for name in ("tls.crt", "tls.key", "ca.crt"):
        if not (root / name).is_symlink():
            (root / name).symlink_to(f"..data/{name}")


@dataclass
class Served:
    url: str
    port: int
    ca_file: Path
    secret_dir: Path
    tls: ReloadingTLS
    registry: CollectorRegistry
    ca: KeyPair

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    ca = generate_ca()
    secret = tmp_path / "serving-certs"
    secret.mkdir()
    install_secret(
        secret,
        "2026_12_02_v1",
        generate_bundle("podsizer-webhook", "podsizer", ["localhost"], ["127.0.0.1"], ca=ca),
    )
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    tls = ReloadingTLS(secret / "tls.crt", secret / "tls.key", check_interval=0.2)
    registry = CollectorRegistry()
    settings = WebhookSettings(default_mode="auto")
    from datetime import UTC, datetime

    app = create_app(
        settings, holder_with(recommendation()), OwnerCache(), registry, lambda: datetime.now(UTC)
    )
    port = free_port()
    server = ServerThread(app, port, tls).start()
    try:
        yield Served(f"https://127.0.0.1:{port}", port, tmp_path / "ca.crt", secret, tls, registry, ca)
    finally:
        server.stop()
