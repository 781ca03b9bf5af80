"""The webhook over real TLS on 127.0.0.1: CA-verified, TLS >= 1.2, certificate rotation without failures."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import orjson
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from certs.generate import generate_bundle, generate_ca, write_bundle
from podsizer.api import recommendation_to_resource
from tests.integration.webhook.conftest import Served, free_port, install_secret
from tests.unit.webhook.builders import apply_reply, recommendation, replicaset_pod, review

pytestmark = pytest.mark.integration


def _served_der(port: int, ca_file: Path) -> bytes:
    ctx = ssl.create_default_context(cafile=str(ca_file))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
        assert der is not None
        return der


def test_mutate_over_verified_tls(served: Served) -> None:
    pod = replicaset_pod()
    with httpx.Client(verify=served.client_context(), base_url=served.url) as c:
        r = c.post("/mutate", content=orjson.dumps(review(pod, uid="tls-1")))
        assert r.status_code == 200
        patched = apply_reply(pod, r.json())
        assert patched["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "250m"
        assert c.get("/readyz").status_code == 200
        assert "podsizer_webhook_reviews_total" in c.get("/metrics").text


def test_unknown_ca_is_refused(served: Served, tmp_path: Path) -> None:
    other = tmp_path / "other-ca.crt"
    other.write_bytes(generate_ca().cert_pem)
    with (
        pytest.raises(httpx.ConnectError),
        httpx.Client(verify=ssl.create_default_context(cafile=str(other))) as c,
    ):
        c.get(served.url + "/healthz")


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion:DeprecationWarning")
def test_tls_below_1_2_is_refused_and_1_2_accepted(served: Served) -> None:
    ok = served.client_context()
    ok.maximum_version = ssl.TLSVersion.TLSv1_2
    with (
        socket.create_connection(("127.0.0.1", served.port), timeout=5) as raw,
        ok.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.version() == "TLSv1.2"
    old = served.client_context()
    old.set_ciphers("DEFAULT:@SECLEVEL=0")
    old.minimum_version = ssl.TLSVersion.TLSv1
    old.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises(ssl.SSLError), socket.create_connection(("127.0.0.1", served.port), timeout=5) as raw:
        old.wrap_socket(raw, server_hostname="127.0.0.1")


def test_rotation_under_load_has_zero_failures_and_serves_the_new_certificate(served: Served) -> None:
    body = orjson.dumps(review(replicaset_pod()))
    before = _served_der(served.port, served.ca_file)
    stop = threading.Event()
    ok = [0, 0, 0]
    failures: list[str] = []

    def load(i: int, keep_alive: bool) -> None:
        ctx = served.client_context()
        client = httpx.Client(verify=ctx, base_url=served.url) if keep_alive else None
        try:
            while not stop.is_set():
                try:
                    if client is not None:
                        r = client.post("/mutate", content=body)
                    else:  # a fresh connection (and handshake) per request
                        with httpx.Client(verify=ctx, base_url=served.url) as once:
                            r = once.post("/mutate", content=body)
                    if r.status_code != 200 or r.json()["response"]["allowed"] is not True:
                        failures.append(f"HTTP {r.status_code}")
                    else:
                        ok[i] += 1
                except Exception as exc:
                    failures.append(repr(exc))
        finally:
            if client is not None:
                client.close()

    threads = [threading.Thread(target=load, args=(i, i == 0)) for i in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.7)
    # cert-manager / service-ca renewal: same CA, new serving pair; the Secret volume swaps ..data.
    renewed = generate_bundle("podsizer-webhook", "podsizer", ["localhost"], ["127.0.0.1"], ca=served.ca)
    install_secret(served.secret_dir, "2026_12_02_v2", renewed)
    time.sleep(1.0)
    during = list(ok)
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(timeout=10)
    assert failures == [], failures[:5]
    assert all(n > 0 for n in during), f"every load thread made progress before the end: {during}"
    assert sum(ok) > sum(during) > 0
    after = _served_der(served.port, served.ca_file)
    assert after != before
    assert after == x509.load_pem_x509_certificate(renewed.serving.cert_pem).public_bytes(
        serialization.Encoding.DER
    )
    assert served.tls.reloads == 1


def test_cli_serves_from_a_file_store(tmp_path: Path) -> None:
    """`python -m webhook` as a process: file store, TLS from files, ready once the store is loaded."""
    bundle = generate_bundle("podsizer-webhook", "podsizer", ["localhost"], ["127.0.0.1"])
    write_bundle(bundle, tmp_path / "certs")
    store = tmp_path / "recs.json"
    store.write_bytes(
        orjson.dumps(
            {
                "apiVersion": "podsizer.io/v1alpha1",
                "kind": "RecommendationList",
                "items": [recommendation_to_resource(recommendation())],
            }
        )
    )
    port = free_port()
    env_args = [
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--store",
        "file",
        "--store-file",
        str(store),
        "--tls-cert-file",
        str(tmp_path / "certs" / "tls.crt"),
        "--tls-key-file",
        str(tmp_path / "certs" / "tls.key"),
        "--default-mode",
        "auto",
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen([sys.executable, "-m", "webhook", *env_args], cwd=Path(__file__).parents[3])
    try:
        ctx = ssl.create_default_context(cafile=str(tmp_path / "certs" / "ca.crt"))
        deadline = time.monotonic() + 20
        with httpx.Client(verify=ctx, base_url=f"https://127.0.0.1:{port}") as c:
            while True:
                try:
                    if c.get("/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert proc.poll() is None, "webhook exited"
                assert time.monotonic() < deadline, "webhook not ready in 20 s"
                time.sleep(0.1)
            r = c.post("/mutate", content=orjson.dumps(review(replicaset_pod(), uid="cli")))
            assert r.json()["response"]["uid"] == "cli"
            assert r.json()["response"]["patchType"] == "JSONPatch"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
