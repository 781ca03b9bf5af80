"""A reverse proxy in front of the real Prometheus, as monitoring stacks put one: TLS by a private CA,
optionally a required client certificate, basic auth, a bearer token and a tenant header."""

from __future__ import annotations

import base64
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import trustme

TENANT_HEADER = "X-Scope-OrgID"
LOGIN_PAGE = b"<html><head><title>Log in - Monitoring</title></head><body>login</body></html>"


@dataclass(frozen=True)
class Pki:
    """A server CA (and its certificate for 127.0.0.1), a client CA and a client certificate it signed,
    and an unrelated CA; all as PEM files."""

    ca_file: Path
    other_ca_file: Path
    client_cert_file: Path
    client_key_file: Path
    server: trustme.LeafCert
    client_ca: trustme.CA


def make_pki(root: Path) -> Pki:
    root.mkdir(parents=True, exist_ok=True)
    ca, client_ca, other = trustme.CA(), trustme.CA(), trustme.CA()
    ca.cert_pem.write_to_path(root / "ca.pem")
    other.cert_pem.write_to_path(root / "other-ca.pem")
    client = client_ca.issue_cert("podsizer-recommender")
    client.cert_chain_pems[0].write_to_path(root / "client.pem")
    client.private_key_pem.write_to_path(root / "client-key.pem")
    return Pki(
        root / "ca.pem",
        root / "other-ca.pem",
        root / "client.pem",
        root / "client-key.pem",
        ca.issue_cert("127.0.0.1", "localhost"),
        client_ca,
    )


@dataclass
class Rules:
    """What the proxy demands of each request (None: nothing); mutable, so a test can rotate the token."""

    basic: tuple[str, str] | None = None
    token: str | None = None
    tenant: str | None = None
    seen_auth: list[str] = field(default_factory=list)


@dataclass
class Proxy:
    url: str
    rules: Rules


@contextmanager
def running_proxy(
    upstream: str, pki: Pki | None, rules: Rules, *, client_cert: bool = False
) -> Iterator[Proxy]:
    """Serves on a free 127.0.0.1 port (https when pki is given) until the block exits."""
    forward = httpx.Client(base_url=upstream, timeout=60.0)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def _serve(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            rules.seen_auth.append(self.headers.get("Authorization", ""))
            refusal = _refusal(rules, self.headers.get("Authorization", ""), self.headers.get(TENANT_HEADER))
            if refusal is not None:
                self._answer(refusal[0], b"text/plain", refusal[1].encode())
            elif not self.path.startswith("/api/v1/"):
                self._answer(200, b"text/html", LOGIN_PAGE)
            else:
                kind = self.headers.get("Content-Type")
                up = forward.request(
                    self.command, self.path, content=body, headers={"Content-Type": kind} if kind else {}
                )
                self._answer(up.status_code, up.headers.get("Content-Type", "").encode(), up.content)

        def _answer(self, status: int, kind: bytes, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind.decode())
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    scheme = "http"
    if pki is not None:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        pki.server.configure_cert(ctx)
        if client_cert:
            ctx.verify_mode = ssl.CERT_REQUIRED
            pki.client_ca.configure_trust(ctx)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, name="test-proxy", daemon=True)
    thread.start()
    try:
        yield Proxy(f"{scheme}://127.0.0.1:{server.server_address[1]}", rules)
    finally:
        server.shutdown()
        server.server_close()
        forward.close()


def _refusal(rules: Rules, auth: str, tenant: str | None) -> tuple[int, str] | None:
    """(status, text) when the request lacks what the rules demand, like Mimir/Thanos gateways answer."""
    if rules.basic is not None:
        want = "Basic " + base64.b64encode(f"{rules.basic[0]}:{rules.basic[1]}".encode()).decode()
        if auth != want:
            return 401, "invalid username or password"
    if rules.token is not None and auth != f"Bearer {rules.token}":
        return 401, "invalid bearer token"
    if rules.tenant is not None and tenant != rules.tenant:
        return 401, "no org id"
    return None
