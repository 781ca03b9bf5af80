"""Bearer token from a file, re-read when the file changes and once more after a 401 (token rotation)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Generator
from pathlib import Path

import httpx

from recommender.model import SourceError

log = logging.getLogger("podsizer")

_Stamp = tuple[int, int, int]  # (inode, size, mtime in ns): changes when the file is replaced or rewritten


class BearerTokenFile(httpx.Auth):
    """Sends `Authorization: Bearer <token>` with the token file's current content.

    The file is checked (one stat) before every request and re-read when its inode, size or mtime changed,
    so a rotated token (a projected service account token, a Secret updated by the kubelet's symlink swap)
    is used from the next request on. A 401 re-reads the file once more, whatever its stamp says, and the
    request is retried once when that gave a different token. While the file cannot be read the last token
    read is kept (a warning says so); SourceError when there has never been one.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._token: str | None = None
        self._stamp: _Stamp | None = None

    def token(self, force: bool = False) -> str:
        """The current token: re-read when the file changed (or when force)."""
        with self._lock:
            try:
                st = os.stat(self.path)
                stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
                if force or stamp != self._stamp or self._token is None:
                    self._token = self._read()
                    self._stamp = stamp
            except (OSError, ValueError) as exc:
                if self._token is None:
                    raise SourceError(
                        f"cannot read the Prometheus bearer token file {self.path}: {exc}"
                    ) from exc
                log.warning("keeping the last Prometheus bearer token: cannot read %s: %s", self.path, exc)
            return self._token

    def _read(self) -> str:
        token = self.path.read_text(encoding="utf-8").strip()
        if not token or any(not c.isprintable() for c in token):
            raise ValueError("empty, or not a one-line token")
        return token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        sent = self.token()
        request.headers["Authorization"] = f"Bearer {sent}"
        response = yield request
        if response.status_code != 401:
            return
        fresh = self.token(force=True)
        if fresh != sent:
            log.info("Prometheus answered 401; retrying with the re-read token of %s", self.path)
            request.headers["Authorization"] = f"Bearer {fresh}"
            yield request
