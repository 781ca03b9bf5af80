"""Rules of the Prometheus connection settings: URL shape, extra headers, options that exclude each other."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from pydantic_core import PydanticCustomError

# RFC 9110 token: the characters a header name may have
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
Headers = tuple[tuple[str, str], ...]


def checked_url(value: object) -> object:
    """An http(s) URL with a host; a URL without a scheme ('prom:9090') is refused with the fix."""
    if not isinstance(value, str):
        return value
    url = value.strip()
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise PydanticCustomError(
            "url_scheme",
            "not an http:// or https:// URL: write the scheme, e.g. http://{bare} or https://{bare}",
            {"bare": url.split("://", 1)[-1] or "prometheus:9090"},
        )
    return url


def parsed_headers(value: object) -> object:
    """'X-Scope-OrgID=team-a, X-Other=b' -> (('X-Scope-OrgID', 'team-a'), ('X-Other', 'b'));
    a pair without '=', a name that is not an HTTP token or a value with control characters is refused."""
    if isinstance(value, Mapping):
        value = ",".join(f"{k}={v}" for k, v in value.items())
    if not isinstance(value, str):
        return value
    pairs: list[tuple[str, str]] = []
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        name, eq, text = part.partition("=")
        name, text = name.strip(), text.strip()
        if not eq or not _TOKEN.match(name):
            raise PydanticCustomError(
                "header",
                "'{part}' is not Name=value with an HTTP header name (e.g. X-Scope-OrgID=team-a)",
                {"part": part},
            )
        if any(not c.isprintable() for c in text):
            raise PydanticCustomError(
                "header", "the value of header {name} has control characters", {"name": name}
            )
        pairs.append((name, text))
    return tuple(pairs)


def conflicts(
    *,
    basic_user: str | None,
    basic_password_file: Path | None,
    bearer_token_file: Path | None,
    sigv4_region: str | None,
    headers: Headers,
    ca_file: Path | None,
    cert_file: Path | None,
    key_file: Path | None,
    insecure: bool,
) -> list[tuple[str, str, str]]:
    """(setting, other setting, why) for every pair of connection settings that exclude each other."""
    out: list[tuple[str, str, str]] = []
    basic = basic_user is not None or basic_password_file is not None
    if basic_user is not None and basic_password_file is None:
        out.append(
            ("prometheus_basic_auth_user", "prometheus_basic_auth_password_file", "set both or neither")
        )
    if basic_password_file is not None and basic_user is None:
        out.append(
            ("prometheus_basic_auth_password_file", "prometheus_basic_auth_user", "set both or neither")
        )
    auths = [
        ("prometheus_basic_auth_user", basic),
        ("prometheus_bearer_token_file", bearer_token_file is not None),
        ("prometheus_sigv4_region", sigv4_region is not None),
        ("prometheus_headers", any(n.lower() == "authorization" for n, _ in headers)),
    ]
    chosen = [name for name, on in auths if on]
    out += [
        (a, b, "one way to authenticate at a time") for i, a in enumerate(chosen) for b in chosen[i + 1 :]
    ]
    if cert_file is not None and key_file is None:
        out.append(
            ("prometheus_client_cert_file", "prometheus_client_key_file", "a certificate needs its key")
        )
    if key_file is not None and cert_file is None:
        out.append(
            ("prometheus_client_key_file", "prometheus_client_cert_file", "a key needs its certificate")
        )
    if insecure and ca_file is not None:
        out.append(
            (
                "prometheus_insecure_skip_verify",
                "prometheus_ca_file",
                "no CA is needed when nothing is verified",
            )
        )
    return out
