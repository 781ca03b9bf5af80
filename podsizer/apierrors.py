"""How a Kubernetes API failure is told apart and described: one rule for every store that talks to it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import urllib3


def status_code(exc: BaseException) -> int | None:
    """The HTTP status of an ApiException (or a test double shaped like one); None for anything else."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


def api_error(exc: BaseException) -> bool:
    """An ApiException (or a test double shaped like one), or the transport failing under it."""
    return status_code(exc) is not None or isinstance(exc, OSError | urllib3.exceptions.HTTPError)


def describe(exc: BaseException) -> str:
    """`HTTP 404 Not Found`, or `<reason>: <message>` for a failure without a status."""
    reason = getattr(exc, "reason", None) or type(exc).__name__
    code = status_code(exc)
    return f"HTTP {code} {reason}" if code is not None else f"{reason}: {exc}"


class KubeApiError(Exception):
    """An API call failed (an HTTP status, or the connection under it); the message names what failed.
    `status`: the HTTP status, None for a transport failure."""

    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message)
        self.status = status


@contextmanager
def failing_as(what: str) -> Iterator[None]:
    """Turns an API or transport failure into a KubeApiError `<what>: <how it failed>`; others pass."""
    try:
        yield
    except KubeApiError:
        raise
    except Exception as exc:
        if api_error(exc):
            raise KubeApiError(f"{what}: {describe(exc)}", status_code(exc)) from exc
        raise
