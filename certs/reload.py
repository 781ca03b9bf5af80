"""A server SSLContext that picks up rotated certificate files (Secret symlink swaps) without a restart."""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from certs.expiry import file_not_after

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


# TLS 1.2: forward-secret AEAD suites only (no CBC, no static RSA); TLS 1.3 suites are all AEAD already.
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"


def _fresh_context(cert_file: Path, key_file: Path, client_ca_file: Path | None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(TLS12_CIPHERS)
    ctx.load_cert_chain(cert_file, key_file)
    if client_ca_file is not None:
        # A certificate presented must verify (or the handshake fails); one not presented is allowed, so the
        # kubelet's probes get /healthz and /readyz: the webhook answers /mutate only to a verified one.
        ctx.load_verify_locations(cafile=str(client_ca_file))
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


PeerCert = Mapping[str, object]


def client_names(peercert: PeerCert | None) -> frozenset[str]:
    """The subject CNs and DNS/URI/IP subjectAltNames of a verified peer certificate (`getpeercert()`)."""
    if not peercert:
        return frozenset()
    names: set[str] = set()
    subject = peercert.get("subject")
    for rdn in subject if isinstance(subject, tuple) else ():
        for attr in rdn if isinstance(rdn, tuple) else ():
            if isinstance(attr, tuple) and len(attr) == 2 and attr[0] == "commonName":
                names.add(str(attr[1]))
    sans = peercert.get("subjectAltName")
    for entry in sans if isinstance(sans, tuple) else ():
        if isinstance(entry, tuple) and len(entry) == 2 and entry[0] in ("DNS", "URI", "IP Address"):
            names.add(str(entry[1]))
    return frozenset(names)


def _served_not_after(cert_file: Path) -> datetime | None:
    """notAfter of the certificate just loaded; None (logged) when the file cannot be parsed here."""
    try:
        return file_not_after(cert_file)
    except (OSError, ValueError) as exc:
        log.warning("tls: cannot read the expiry of %s: %s", cert_file, exc)
        return None


class ReloadingTLS:
    """Serves the newest valid tls.crt/tls.key: each handshake's SNI callback switches to the current context.

    The files are checked at most once per `check_interval` seconds (a few stat calls); a pair that does not
    load (half-written, key not matching) is logged and the previous one keeps serving. `not_after` is the
    expiry of the certificate being served (None when it could not be parsed), updated on every reload.
    """

    def __init__(
        self,
        cert_file: Path,
        key_file: Path,
        check_interval: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
        *,
        client_ca_file: Path | None = None,
    ) -> None:
        """`client_ca_file`: clients must present a certificate it signed (reloaded with the pair)."""
        self.cert_file = cert_file
        self.key_file = key_file
        self.client_ca_file = client_ca_file
        self.check_interval = check_interval
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._stamps = self._file_stamps()
        self._current = self._fresh()
        self.not_after = _served_not_after(cert_file)
        self._next_check = monotonic() + check_interval
        self.reloads = 0
        self.failures = 0
        self._server = self._fresh()
        self._server.sni_callback = self._on_client_hello

    def _files(self) -> tuple[Path, ...]:
        extra = () if self.client_ca_file is None else (self.client_ca_file,)
        return (self.cert_file, self.key_file, *extra)

    def _file_stamps(self) -> tuple[_FileStamp, ...]:
        return tuple(_stamp(path) for path in self._files())

    def _fresh(self) -> ssl.SSLContext:
        return _fresh_context(self.cert_file, self.key_file, self.client_ca_file)

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
                stamps = self._file_stamps()
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
                ctx = self._fresh()
            except (OSError, ssl.SSLError) as exc:
                log.warning("tls: new certificate files do not load (%s); keeping the current one", exc)
                self.failures += 1
                return False
            self._current = ctx
            self.not_after = _served_not_after(self.cert_file)
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
