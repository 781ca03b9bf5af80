"""uvicorn's httptools protocol, limited for hostile clients: header bytes, deadlines, and who may call
/mutate (a verified client certificate, with an allowed name, when client authentication is on)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from certs.reload import client_names
from podsizer.untrusted import shown

log = logging.getLogger("podsizer.webhook")

# Bytes of framing per header line ("name: value\r\n") and around the request line, for the exact count.
_HEADER_OVERHEAD = 4
_REQUEST_LINE_OVERHEAD = 16
CLOSE_GRACE_SECONDS = 0.2
NAMES_SHOWN = 8  # of a refused client certificate's names, in the log line


@dataclass(frozen=True)
class ConnectionLimits:
    """What one connection may cost before it is answered 431 or cut.

    `header_timeout`: from the connection (or the first byte of a request) to the end of its headers.
    `request_timeout`: from the end of the headers to the end of the body (a backstop: the app answers 408
    at its own, shorter body deadline). `keep_alive_timeout`: an idle connection between requests is closed
    (uvicorn's own timer). `client_auth`: only a connection with a verified client certificate may call
    anything but OPEN_PATHS (401 otherwise, before its body is read); `allowed_client_names`, when not
    empty: that certificate must carry one of them as CN or subjectAltName (403 otherwise).
    `on_refused`: told the status of each request refused for want of authentication (a metric).
    """

    max_header_bytes: int = 64 * 1024
    header_timeout: float = 10.0
    request_timeout: float = 15.0
    keep_alive_timeout: int = 30
    allowed_client_names: frozenset[str] = frozenset()
    client_auth: bool = False
    on_refused: Callable[[str], None] | None = None


OPEN_PATHS = frozenset({b"/healthz", b"/readyz", b"/metrics"})
"""What a caller without a client certificate may ask for: the kubelet's probes and the scrapes."""


class _HeadersTooLarge(Exception):
    """Raised from a parser callback; feed_data wraps it in HttpParserCallbackError."""


def _response(status: bytes, message: bytes) -> bytes:
    return b"".join(
        [
            b"HTTP/1.1 " + status + b"\r\n",
            b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: " + str(len(message)).encode("ascii") + b"\r\n",
            b"connection: close\r\n\r\n",
            message,
        ]
    )


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol that bounds header bytes and the time a client takes to send a request.

    httptools buffers a header value until it ends, so the raw bytes of an unfinished head are counted as
    they arrive (beginning with the chunk after the one that began the request, so a body tail that shares
    a chunk with a pipelined request is never counted); the exact size is checked when the head ends.
    """

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = False
        self._head_began_now = False
        self._head_bytes = 0
        self._exact_head_bytes = 0
        self._deadline: asyncio.TimerHandle | None = None
        self._refused = False
        self._denied: tuple[bytes, bytes] | None = None

    # connection lifetime
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._denied = self._authentication() if self.limits.client_auth else None
        self._arm(self.limits.header_timeout, "no request headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _authentication(self) -> tuple[bytes, bytes] | None:
        """Why this connection may not call /mutate (status line and message), or None: it presented a
        certificate the client CA verified (the handshake refuses one it does not) with an allowed name."""
        peercert = self.transport.get_extra_info("peercert")
        if not peercert:
            return b"401 Unauthorized", b"a client certificate is required"
        allowed = self.limits.allowed_client_names
        names = client_names(peercert)
        if allowed and not names & allowed:
            listed = ", ".join(shown(name) for name in sorted(names)[:NAMES_SHOWN])
            log.warning("refused a client certificate naming %s (not allowed)", listed or "nothing")
            return b"403 Forbidden", b"this client certificate may not call the webhook"
        return None

    def _arm(self, seconds: float, what: str) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expire, what, seconds)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self, what: str, seconds: float) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        log.debug("closing a connection from %s: %s within %.1fs", self.client, what, seconds)
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_response(b"408 Request Timeout", b"request not received in time"))
        self._close()

    def _close(self) -> None:
        """Stop reading and close; abort (drop the socket) if the TLS shutdown is not over within
        CLOSE_GRACE_SECONDS: a client that keeps sending never answers close_notify."""
        self.transport.pause_reading()
        self.transport.close()
        self.loop.call_later(CLOSE_GRACE_SECONDS, self.transport.abort)

    def _refuse(self, status: bytes, message: bytes) -> None:
        self._refused = True
        self._disarm()
        log.debug("refused a request from %s: %s", self.client, message.decode("ascii", "replace"))
        self.transport.write(_response(status, message))
        self._close()

    # bytes in
    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        self._unset_keepalive_if_required()
        self._head_began_now = False
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            if isinstance(exc.__context__, _HeadersTooLarge):
                self._refuse(b"431 Request Header Fields Too Large", b"request line and headers too large")
            else:
                log.warning("invalid HTTP request: %s", str(exc.__context__ or exc)[:200])
                self._refuse(b"400 Bad Request", b"invalid HTTP request")
            return
        except httptools.HttpParserUpgrade:
            self._refuse(b"400 Bad Request", b"upgrades are not supported")
            return
        except httptools.HttpParserError:
            self._refuse(b"400 Bad Request", b"invalid HTTP request")
            return
        if self._in_head and not self._head_began_now:
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_header_bytes:
                self._refuse(b"431 Request Header Fields Too Large", b"request line and headers too large")

    # parser callbacks
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_began_now = True
        self._head_bytes = 0
        self._exact_head_bytes = _REQUEST_LINE_OVERHEAD
        if self._deadline is None:
            self._arm(self.limits.header_timeout, "request headers not complete")

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + _HEADER_OVERHEAD)
        super().on_header(name, value)

    def _count(self, size: int) -> None:
        self._exact_head_bytes += size
        if self._exact_head_bytes > self.limits.max_header_bytes:
            raise _HeadersTooLarge

    def on_headers_complete(self) -> None:
        self._in_head = False
        denied = self._denied
        if denied is not None and self.url.split(b"?", 1)[0] not in OPEN_PATHS:
            if self.limits.on_refused is not None:
                self.limits.on_refused(denied[0][:3].decode())
            self._refuse(*denied)  # before the body is read: a forged review costs its headers only
            return
        self._arm(self.limits.request_timeout, "request body not complete")
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        self._disarm()
        if not self._refused:
            super().on_message_complete()


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedHttpToolsProtocol]:
    """A protocol class for uvicorn's `http` setting, bound to these limits."""
    return type("PodsizerHttpProtocol", (GuardedHttpToolsProtocol,), {"limits": limits})
