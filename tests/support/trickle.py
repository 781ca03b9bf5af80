"""A hostile HTTP server on 127.0.0.1 for deadline tests: it reads a request, then sends its answer's header
(or, after a whole header, its body) one byte every `every` seconds, for at most `lasting` seconds.

    with TrickleServer(every=0.5, phase="headers") as server:
        PromClient(server.url, timeout=2).query("up", 0)  # must fail in about 2 s, not in `lasting`
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Literal

Phase = Literal["headers", "body"]
_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


class TrickleServer:
    """Accepts every connection in a thread of its own; `answering` counts those being trickled to now."""

    def __init__(self, every: float = 0.5, phase: Phase = "headers", lasting: float = 60.0) -> None:
        self.every, self.phase, self.lasting = every, phase, lasting
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self.accepted = 0
        self.answering = 0
        self.started = time.monotonic()

    def __enter__(self) -> TrickleServer:
        self.started = time.monotonic()
        threading.Thread(target=self._accept, name="trickle-accept", daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
        self._listener.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
            threading.Thread(target=self._answer, args=(conn,), name="trickle-answer", daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with self._lock:
            self.answering += 1
        try:
            with conn:
                conn.settimeout(self.lasting)
                request = b""
                while b"\r\n\r\n" not in request:
                    part = conn.recv(65536)
                    if not part:
                        return
                    request += part
                if self.phase == "body":
                    conn.sendall(_HEAD + b"Content-Length: 1000000\r\n\r\n")
                self._trickle(conn)
        except OSError:
            pass  # the client gave up: what the tests expect
        finally:
            with self._lock:
                self.answering -= 1

    def _trickle(self, conn: socket.socket) -> None:
        ends = time.monotonic() + self.lasting
        payload = _HEAD + b"X-Padding: " if self.phase == "headers" else b'{"status":"success","data":'
        at = 0
        while time.monotonic() < ends and not self._stopped.is_set():
            conn.sendall(payload[at : at + 1] if at < len(payload) else b"a")
            at += 1
            self._stopped.wait(self.every)
