"""uvicorn with the reloading TLS context: run in the foreground, or in a thread for tests and benchmarks."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn

from certs.reload import ReloadingTLS
from podsizer.settings import WebhookSettings
from webhook.guard import ConnectionLimits, guarded_protocol

# The protocol's request deadline outlasts the app's body deadline by this, so the app answers 408 first.
REQUEST_DEADLINE_SLACK_SECONDS = 5.0


def connection_limits(
    settings: WebhookSettings, on_refused: Callable[[str], None] | None = None
) -> ConnectionLimits:
    """The per-connection limits the settings describe; `on_refused` counts unauthenticated calls."""
    return ConnectionLimits(
        max_header_bytes=settings.max_header_bytes,
        header_timeout=settings.header_timeout_seconds,
        request_timeout=settings.body_timeout_seconds + REQUEST_DEADLINE_SLACK_SECONDS,
        keep_alive_timeout=settings.keep_alive_timeout_seconds,
        allowed_client_names=frozenset(settings.client_allowed_names),
        client_auth=settings.client_ca_file is not None,
        on_refused=on_refused,
    )


def reloading_tls(settings: WebhookSettings) -> ReloadingTLS:
    """The serving certificate (and client CA, when set) the settings name, reloaded on rotation."""
    return ReloadingTLS(
        settings.tls_cert_file,
        settings.tls_key_file,
        settings.tls_reload_interval,
        client_ca_file=settings.client_ca_file,
    )


def uvicorn_config(
    app: Any,
    host: str,
    port: int,
    tls: ReloadingTLS,
    log_level: str = "info",
    access_log: bool = False,
    limits: ConnectionLimits | None = None,
) -> uvicorn.Config:
    """A loaded uvicorn Config: the reloading SSL context (TLS 1.2 minimum) and the guarded protocol."""
    limits = limits or ConnectionLimits()
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=guarded_protocol(limits),
        log_level=log_level,
        access_log=access_log,
        ssl_certfile=str(tls.cert_file),
        ssl_keyfile=str(tls.key_file),
        lifespan="off",
        timeout_keep_alive=limits.keep_alive_timeout,
    )
    config.load()
    config.ssl = tls.server_context
    return config


def serve(
    app: Any,
    host: str,
    port: int,
    tls: ReloadingTLS,
    log_level: str = "info",
    access_log: bool = False,
    limits: ConnectionLimits | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM."""
    uvicorn.Server(uvicorn_config(app, host, port, tls, log_level, access_log, limits)).run()


class ServerThread:
    """uvicorn in a background thread on 127.0.0.1 (tests, benchmarks); `stop` ends it."""

    def __init__(
        self,
        app: Any,
        port: int,
        tls: ReloadingTLS,
        host: str = "127.0.0.1",
        log_level: str = "warning",
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.server = uvicorn.Server(uvicorn_config(app, host, port, tls, log_level, limits=limits))
        self.thread = threading.Thread(target=self.server.run, name="podsizer-uvicorn", daemon=True)

    def start(self, timeout: float = 10.0) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
