"""uvicorn with the reloading TLS context: run in the foreground, or in a thread for tests and benchmarks."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn

from certs.reload import ReloadingTLS


def uvicorn_config(
    app: Any, host: str, port: int, tls: ReloadingTLS, log_level: str = "info", access_log: bool = False
) -> uvicorn.Config:
    """A loaded uvicorn Config whose SSL context is the reloading one (TLS 1.2 minimum)."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=access_log,
        ssl_certfile=str(tls.cert_file),
        ssl_keyfile=str(tls.key_file),
        lifespan="off",
        timeout_keep_alive=60,
    )
    config.load()
    config.ssl = tls.server_context
    return config


def serve(
    app: Any, host: str, port: int, tls: ReloadingTLS, log_level: str = "info", access_log: bool = False
) -> None:
    """Serve until SIGINT/SIGTERM."""
    uvicorn.Server(uvicorn_config(app, host, port, tls, log_level, access_log)).run()


class ServerThread:
    """uvicorn in a background thread on 127.0.0.1 (tests, benchmarks); `stop` ends it."""

    def __init__(
        self, app: Any, port: int, tls: ReloadingTLS, host: str = "127.0.0.1", log_level: str = "warning"
    ) -> None:
        self.server = uvicorn.Server(uvicorn_config(app, host, port, tls, log_level))
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
