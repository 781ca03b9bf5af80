"""Deadlines over whole HTTP exchanges: httpx's timeouts restart with every byte, so this transport's reads
and writes never wait past the exchange's deadline, and end within about a second of a stop request."""

from __future__ import annotations

import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import httpcore
import httpx

# the longest one read waits before the stop request is looked at again
SLICE_SECONDS = 1.0
# a write sends at most this much at a time, looking at the deadline and the stop request in between
WRITE_PIECE_BYTES = 64 * 1024

_T = TypeVar("_T")


class ExchangeStopped(httpx.TransportError):
    """The process is stopping: the exchange in progress was abandoned (or a new one refused)."""


class Deadlines:
    """What every read and write of a DeadlineTransport obeys: the deadline of the exchange its thread has
    in progress (`exchange`) and the stop request (`stop`). Thread-safe: each thread its own exchange."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, slice_seconds: float = SLICE_SECONDS):
        self._clock = clock
        self.slice_seconds = slice_seconds
        self._local = threading.local()
        self._stop = threading.Event()

    def stop(self) -> None:
        """Ends every exchange in progress within about `slice_seconds` and refuses new ones."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def now(self) -> float:
        return self._clock()

    @contextmanager
    def exchange(self, seconds: float) -> Iterator[None]:
        """This thread's requests inside the block end at most `seconds` from now, whatever the server
        trickles (connect, TLS, sending, headers, body); ExchangeStopped at once when stopping."""
        self.check_stop()
        outer: float | None = getattr(self._local, "deadline", None)
        mine = self._clock() + seconds
        self._local.deadline = mine if outer is None else min(outer, mine)
        try:
            yield
        finally:
            self._local.deadline = outer

    def check_stop(self) -> None:
        if self._stop.is_set():
            raise ExchangeStopped("the process is stopping")

    def wait_for(self, timeout: float | None, expired: type[Exception]) -> float | None:
        """The longest the next network operation may wait: its own `timeout` cut to what is left of this
        thread's exchange (None: no limit at all); `expired` raised when nothing is left, ExchangeStopped
        when stopping."""
        self.check_stop()
        deadline: float | None = getattr(self._local, "deadline", None)
        if deadline is None:
            return timeout
        left = deadline - self._clock()
        if left <= 0:
            raise expired("the exchange's deadline has passed")
        return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A stream whose reads wait in slices (the stop request looked at between them) and whose every
    operation ends by the exchange's deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadlines: Deadlines) -> None:
        self._inner = inner
        self._deadlines = deadlines

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        d = self._deadlines
        ends = None if timeout is None else d.now() + timeout
        while True:
            wait = d.wait_for(None if ends is None else ends - d.now(), httpcore.ReadTimeout)
            part = d.slice_seconds if wait is None else min(wait, d.slice_seconds)
            try:
                return self._inner.read(max_bytes, max(part, 0.0))
            except httpcore.ReadTimeout:
                if wait is not None and part >= wait:
                    raise  # the operation's own timeout, or the exchange's deadline: not a slice

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        for at in range(0, len(buffer), WRITE_PIECE_BYTES):
            wait = self._deadlines.wait_for(timeout, httpcore.WriteTimeout)
            self._inner.write(buffer[at : at + WRITE_PIECE_BYTES], wait)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        # the ssl module bounds a whole handshake by the socket's timeout
        wait = self._deadlines.wait_for(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, wait), self._deadlines)

    def get_extra_info(self, info: str) -> object:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's own blocking backend, every connection made and stream returned under the deadlines."""

    def __init__(self, deadlines: Deadlines) -> None:
        self._inner = httpcore.SyncBackend()
        self._deadlines = deadlines

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        wait = self._deadlines.wait_for(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, wait, local_address, socket_options)
        return _DeadlineStream(stream, self._deadlines)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        wait = self._deadlines.wait_for(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, wait, socket_options), self._deadlines)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


# most specific first: the first match is the one raised (the table httpx's own transport uses)
_HTTPX_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


def _as_httpx(call: Callable[[], _T]) -> _T:
    """call(), an httpcore error raised as httpx's own (what callers of an httpx.Client catch)."""
    try:
        return call()
    except Exception as exc:
        for core, mapped in _HTTPX_ERRORS:
            if isinstance(exc, core):
                raise mapped(str(exc)) from exc
        raise


class _Body(httpx.SyncByteStream):
    def __init__(self, inner: Iterable[bytes]) -> None:
        self._parts = iter(inner)
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        while (part := _as_httpx(lambda: next(self._parts, None))) is not None:
            yield part

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


def environment_proxy(url: str) -> httpcore.Proxy | None:
    """The proxy the environment names for `url` (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY), as an
    httpx.Client without a transport of its own would use it; None: connect directly."""
    target = httpx.URL(url)
    proxies = urllib.request.getproxies_environment()
    chosen = proxies.get(target.scheme) or proxies.get("all")
    if not chosen or bool(urllib.request.proxy_bypass(target.host)):
        return None
    proxy = httpx.Proxy(chosen if "://" in chosen else f"http://{chosen}")  # as httpx reads `host:port`
    return httpcore.Proxy(url=str(proxy.url), auth=proxy.raw_auth)


class DeadlineTransport(httpx.BaseTransport):
    """httpx's transport (a pool of HTTP/1.1 connections, TLS as `verify` says) whose every exchange obeys
    `deadlines`; `proxy` as environment_proxy returns it."""

    def __init__(
        self,
        deadlines: Deadlines,
        verify: ssl.SSLContext | bool = True,
        proxy: httpcore.Proxy | None = None,
    ) -> None:
        limits = httpx.Limits()  # httpx's defaults
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify),
            proxy=proxy,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_DeadlineBackend(deadlines),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not isinstance(request.stream, httpx.SyncByteStream):
            raise TypeError("DeadlineTransport sends synchronous requests only")
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        answer = _as_httpx(lambda: self._pool.handle_request(core))
        if not isinstance(answer.stream, Iterable):
            raise TypeError("httpcore answered with an asynchronous stream")
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_Body(answer.stream),
            extensions=answer.extensions,
        )

    def close(self) -> None:
        _as_httpx(self._pool.close)
