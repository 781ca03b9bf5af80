"""KubeCertApi against a fake API server over HTTP: the requests a renewal makes, as the client sends them."""

from __future__ import annotations

import base64
import datetime as dt
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from certs.generate import generate_ca, issue_serving_cert, service_dns_names
from certs.kube import STRATEGIC_MERGE, KubeCertApi
from certs.renew import RenewConfig, renew

NS, SVC = "podsizer", "podsizer-webhook"
SECRETS = f"/api/v1/namespaces/{NS}/secrets/"
MWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"


class FakeApiServer:
    """Secrets by name, and every request as (method, path, content type, body)."""

    def __init__(self) -> None:
        self.secrets: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, str, Any]] = []

    def handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, code: int, doc: object) -> None:
                body = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _record(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                fake.requests.append((self.command, self.path, self.headers.get("Content-Type", ""), body))
                return body

            def do_GET(self) -> None:
                self._record()
                name = self.path.removeprefix(SECRETS)
                if name in fake.secrets:
                    self._reply(200, fake.secrets[name])
                else:
                    self._reply(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404})

            def do_PUT(self) -> None:
                body = self._record()
                body["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
                fake.secrets[self.path.removeprefix(SECRETS)] = body
                self._reply(200, body)

            def do_PATCH(self) -> None:
                self._record()
                doc = {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": "MutatingWebhookConfiguration",
                }
                self._reply(200, {**doc, "metadata": {"name": self.path.removeprefix(MWC)}})

            def log_message(self, format: str, *args: object) -> None:
                return None

        return Handler


@pytest.fixture
def fake_api(tmp_path: Path) -> Iterator[tuple[FakeApiServer, Path]]:
    fake = FakeApiServer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = tmp_path / "kubeconfig"
    url = f"http://127.0.0.1:{server.server_port}"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    try:
        yield fake, kubeconfig
    finally:
        server.shutdown()
        server.server_close()


def _secret(name: str, type_: str, data: dict[str, bytes]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": type_,
        "metadata": {
            "name": name,
            "namespace": NS,
            "resourceVersion": "5",
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "annotations": {"meta.helm.sh/release-name": "podsizer"},
        },
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }


def test_ca_rotation_reads_replaces_and_patches_as_the_api_expects(
    fake_api: tuple[FakeApiServer, Path],
) -> None:
    fake, kubeconfig = fake_api
    ca = generate_ca(days=10)
    serving = issue_serving_cert(ca, service_dns_names(SVC, NS), days=10)
    tls = {"ca.crt": ca.cert_pem, "tls.crt": serving.cert_pem, "tls.key": serving.key_pem}
    fake.secrets["podsizer-webhook-tls"] = _secret("podsizer-webhook-tls", "kubernetes.io/tls", tls)
    fake.secrets["podsizer-webhook-ca"] = _secret("podsizer-webhook-ca", "Opaque", {})
    cfg = RenewConfig(NS, SVC, "podsizer-webhook-tls", "podsizer-webhook-ca", SVC)

    result = renew(KubeCertApi(kubeconfig), cfg, dt.datetime.now(dt.UTC))

    assert result.renewed and result.ca_rotated
    writes = [(m, p) for m, p, _, _ in fake.requests if m != "GET"]
    assert writes == [
        ("PUT", SECRETS + "podsizer-webhook-ca"),
        ("PATCH", MWC + SVC),
        ("PUT", SECRETS + "podsizer-webhook-tls"),
    ]
    # webhooks merge by name only under a strategic merge patch (a JSON merge patch would replace the list)
    assert [ct for m, _, ct, _ in fake.requests if m == "PATCH"] == [STRATEGIC_MERGE]
    put_tls = fake.secrets["podsizer-webhook-tls"]
    assert put_tls["type"] == "kubernetes.io/tls"
    assert put_tls["metadata"]["annotations"] == {"meta.helm.sh/release-name": "podsizer"}
    assert put_tls["metadata"]["resourceVersion"] == "6"  # the PUT carried the read's version
    patch = next(b for m, _, _, b in fake.requests if m == "PATCH")
    (hook,) = patch["webhooks"]
    assert hook["name"] == "mutate-pods.podsizer.io"
    assert base64.b64decode(hook["clientConfig"]["caBundle"]) == base64.b64decode(put_tls["data"]["ca.crt"])


def test_a_missing_secret_reads_as_none(fake_api: tuple[FakeApiServer, Path]) -> None:
    _, kubeconfig = fake_api
    assert KubeCertApi(kubeconfig).read_secret(NS, "nope") is None
