"""A server SSLContext that picks up rotated certificate files (Secret symlink swaps) without a restart."""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("podsizer.certs")


@dataclass(frozen=True)
class _FileStamp:
    """Identity of the file a path resolves to now: a Secret update swaps ..data, changing inode/mtime."""

    real: str
    inode: int
    mtime_ns: int
    size: int


def _stamp(path: Path) -> _FileStamp:
    real = os.path.realpath(path)
    st = os.stat(real)
    return _FileStamp(real, st.st_ino, st.st_mtime_ns, st.st_size)


def _fresh_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    return ctx


class ReloadingTLS:
    """Serves the newest valid tls.crt/tls.key: each handshake's SNI callback switches to the current context.

    The files are checked at most once per `check_interval` seconds (a few stat calls); a pair that does not
    load (half-written, key not matching) is logged and the previous one keeps serving.
    """

    def __init__(
        self,
        cert_file: Path,
        key_file: Path,
        check_interval: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.check_interval = check_interval
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._stamps = (_stamp(cert_file), _stamp(key_file))
        self._current = _fresh_context(cert_file, key_file)
        self._next_check = monotonic() + check_interval
        self.reloads = 0
        self.failures = 0
        self._server = _fresh_context(cert_file, key_file)
        self._server.sni_callback = self._on_client_hello

    @property
    def server_context(self) -> ssl.SSLContext:
        """The context to hand to the server; it never changes, the per-connection context does."""
        return self._server

    def current_context(self) -> ssl.SSLContext:
        """The context new handshakes are switched to (re-checking the files when due)."""
        if self._monotonic() >= self._next_check:
            self.reload_if_changed()
        return self._current

    def reload_if_changed(self) -> bool:
        """Re-load the pair if either file changed; True when a new pair is now served."""
        with self._lock:
            self._next_check = self._monotonic() + self.check_interval
            try:
                stamps = (_stamp(self.cert_file), _stamp(self.key_file))
            except OSError as exc:
                log.warning(
                    "tls: cannot stat %s / %s (%s); keeping the current certificate",
                    self.cert_file,
                    self.key_file,
                    exc,
                )
                self.failures += 1
                return False
            if stamps == self._stamps:
                return False
            try:
                ctx = _fresh_context(self.cert_file, self.key_file)
            except (OSError, ssl.SSLError) as exc:
                log.warning("tls: new certificate files do not load (%s); keeping the current one", exc)
                self.failures += 1
                return False
            self._current = ctx
            self._stamps = stamps
            self.reloads += 1
            log.info("tls: reloaded certificate from %s", stamps[0].real)
            return True

    def _on_client_hello(
        self, sslobj: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _ctx: ssl.SSLContext
    ) -> None:
        try:
            sslobj.context = self.current_context()
        except Exception:  # never fail a handshake over reload trouble: the base context still serves
            log.exception("tls: switching to the reloaded certificate failed")
        return None
