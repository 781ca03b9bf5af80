"""Credentials for Prometheus as httpx auth hooks: bearer token and basic-auth password files (re-read when
they change and once more after a 401), and AWS SigV4 signing (botocore, imported only when used)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote, urlencode

import httpx

from recommender.model import SourceError

if TYPE_CHECKING:
    from botocore.credentials import ReadOnlyCredentials

log = logging.getLogger("podsizer")

_Stamp = tuple[int, int, int]  # (inode, size, mtime in ns): changes when the file is replaced or rewritten


class _FileSecretAuth(httpx.Auth):
    """A secret read from a file: checked (one stat) before every request, re-read when its inode, size or
    mtime changed and once more after a 401 (the request is then retried once if the secret changed)."""

    what = "secret"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._token: str | None = None
        self._stamp: _Stamp | None = None

    def token(self, force: bool = False) -> str:
        """The current secret: re-read when the file changed (or when force)."""
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
                        f"cannot read the Prometheus {self.what} file {self.path}: {exc}"
                    ) from exc
                log.warning("keeping the last Prometheus %s: cannot read %s: %s", self.what, self.path, exc)
            return self._token

    def _read(self) -> str:
        token = self.path.read_text(encoding="utf-8").strip()
        if not token or any(not c.isprintable() for c in token):
            raise ValueError("empty, or not one line")
        return token

    def _authorize(self, request: httpx.Request, secret: str) -> None:
        raise NotImplementedError

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        sent = self.token()
        self._authorize(request, sent)
        response = yield request
        if response.status_code != 401:
            return
        fresh = self.token(force=True)
        if fresh != sent:
            log.info("Prometheus answered 401; retrying with the re-read %s of %s", self.what, self.path)
            self._authorize(request, fresh)
            yield request


class BasicAuthFile(_FileSecretAuth):
    """HTTP basic auth (httpx.BasicAuth's header) with the password file's current content."""

    what = "basic-auth password"

    def __init__(self, user: str, path: Path) -> None:
        super().__init__(path)
        self.user = user

    def _authorize(self, request: httpx.Request, secret: str) -> None:
        next(httpx.BasicAuth(self.user, secret).auth_flow(request))


class BearerTokenFile(_FileSecretAuth):
    """Sends `Authorization: Bearer <token>` with the token file's current content.

    The file is checked (one stat) before every request and re-read when its inode, size or mtime changed,
    so a rotated token (a projected service account token, a Secret updated by the kubelet's symlink swap)
    is used from the next request on. A 401 re-reads the file once more, whatever its stamp says, and the
    request is retried once when that gave a different token. While the file cannot be read the last token
    read is kept (a warning says so); SourceError when there has never been one.
    """

    what = "bearer token"

    def _authorize(self, request: httpx.Request, secret: str) -> None:
        request.headers["Authorization"] = f"Bearer {secret}"


Credentials = Callable[[], "ReadOnlyCredentials"]


class SigV4Auth(httpx.Auth):
    """Signs every request with AWS Signature Version 4 through botocore's own SigV4Auth (AWS Managed
    Prometheus: service "aps"). Credentials come from botocore's default chain (environment, IRSA web
    identity, instance profile), refreshed by botocore; the query string is written the way SigV4
    canonicalises it, so what is sent is what was signed."""

    requires_request_body = True

    def __init__(self, region: str, service: str = "aps", credentials: Credentials | None = None) -> None:
        from botocore.auth import SigV4Auth as BotoSigV4

        self._signer = BotoSigV4
        self.region = region
        self.service = service
        self._credentials = credentials or _default_credentials()

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        from botocore.awsrequest import AWSRequest

        query = urlencode(parse_qsl(request.url.query.decode(), keep_blank_values=True), quote_via=quote)
        request.url = request.url.copy_with(query=query.encode() or None)
        signed = {k: v for k, v in request.headers.items() if k.lower() == "content-type"}
        aws = AWSRequest(method=request.method, url=str(request.url), data=request.content, headers=signed)
        self._signer(self._credentials(), self.service, self.region).add_auth(aws)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            if name in aws.headers:
                request.headers[name] = aws.headers[name]
        yield request


def _default_credentials() -> Credentials:
    """botocore's default credential chain; SourceError when it finds none."""
    import botocore.session

    found = botocore.session.Session().get_credentials()
    if found is None:
        raise SourceError(
            "no AWS credentials for SigV4: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or "
            "IRSA (AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE)"
        )

    def frozen() -> ReadOnlyCredentials:
        credentials: ReadOnlyCredentials = found.get_frozen_credentials()
        return credentials

    return frozen
