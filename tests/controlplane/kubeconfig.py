"""Kubeconfig files and kubernetes-client configurations for one identity on the test apiserver."""

from __future__ import annotations

from pathlib import Path

import yaml
from kubernetes import client

from tests.controlplane.pki import CertFiles


def write_kubeconfig(
    path: Path,
    server: str,
    ca_file: Path,
    user: str,
    cert: CertFiles | None = None,
    token: str | None = None,
) -> Path:
    """Writes a one-context kubeconfig authenticating with a client certificate or a bearer token."""
    if (cert is None) == (token is None):
        raise ValueError("write_kubeconfig needs exactly one of cert or token")
    credentials: dict[str, str] = (
        {"client-certificate": str(cert.cert), "client-key": str(cert.key)} if cert else {"token": str(token)}
    )
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "podsizer-test", "cluster": {"server": server, "certificate-authority": str(ca_file)}}
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": "podsizer-test", "context": {"cluster": "podsizer-test", "user": user}}],
        "current-context": "podsizer-test",
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)
    return path


def client_configuration(
    server: str, ca_file: Path, cert: CertFiles | None = None, token: str | None = None
) -> client.Configuration:
    """A kubernetes-client Configuration for the same identity a kubeconfig above would carry."""
    cfg = client.Configuration()
    cfg.host = server
    cfg.ssl_ca_cert = str(ca_file)
    cfg.verify_ssl = True
    if cert is not None:
        cfg.cert_file = str(cert.cert)
        cfg.key_file = str(cert.key)
    if token is not None:
        cfg.api_key = {"authorization": token}
        cfg.api_key_prefix = {"authorization": "Bearer"}
    return cfg
