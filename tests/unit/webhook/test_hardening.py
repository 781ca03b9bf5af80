"""Webhook hardening without a network: byte-bounded decision cache, short error echoes, offloaded large
reviews, client certificate names, AEAD-only TLS 1.2 contexts, the settings that drive them."""

from __future__ import annotations

import ssl
from pathlib import Path

import orjson
import pytest
import trustme
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry

from certs.generate import generate_bundle, write_bundle
from certs.reload import ReloadingTLS, client_names
from podsizer.cluster import OwnerCache
from podsizer.modes import NoMetadata
from podsizer.settings import WebhookSettings
from tests.unit.webhook.builders import T1, apply_reply, holder_with, recommendation, replicaset_pod, review
from webhook.admission import Decision, DecisionCache, _Cached
from webhook.app import admitter_for, create_app
from webhook.server import connection_limits
from webhook.wire import MAX_ECHO_CHARS, BadReview, parse_review, shortened


def _entry(size: int) -> _Cached:
    return _Cached(recommendation(), Decision("applied", "applied"), "p" * size)


def test_the_decision_cache_is_bounded_by_bytes_and_drops_the_least_recently_used() -> None:
    cache = DecisionCache(size=1000, max_bytes=64 * 1024)
    for i in range(100):
        cache.put(f"k{i}", _entry(1000))
    assert cache.bytes <= 64 * 1024
    assert 0 < len(cache) < 100
    assert cache.get("k99") is not None and cache.get("k0") is None


def test_one_entry_too_large_for_the_cache_is_not_cached_and_flushes_nothing() -> None:
    cache = DecisionCache(size=1000, max_bytes=64 * 1024)
    cache.put("small", _entry(100))
    cache.put("huge", _entry(64 * 1024 // DecisionCache.OVERSIZED_FRACTION + 1))
    assert cache.get("huge") is None
    assert cache.get("small") is not None


def test_a_replaced_entry_is_counted_once() -> None:
    cache = DecisionCache(size=10, max_bytes=1024 * 1024)
    cache.put("k", _entry(1000))
    once = cache.bytes
    cache.put("k", _entry(1000))
    assert cache.bytes == once and len(cache) == 1


def test_large_keys_count_toward_the_byte_bound() -> None:
    key = tuple(("containers", i, f"container-{i}", True) for i in range(1000))
    assert DecisionCache.approx_bytes(key) > 30_000


def test_the_settings_size_the_decision_cache_and_zero_turns_it_off() -> None:
    holder = holder_with(recommendation())
    sized = admitter_for(WebhookSettings(decision_cache_bytes=1 << 20), holder, OwnerCache(), NoMetadata())
    off = admitter_for(WebhookSettings(decision_cache_bytes=0), holder, OwnerCache(), NoMetadata())
    assert sized.cache is not None and sized.cache.max_bytes == 1 << 20
    assert off.cache is None


@pytest.mark.parametrize(
    "body",
    [
        {"apiVersion": "admission.k8s.io/v1", "kind": "x" * 1_000_000},
        {"apiVersion": "y" * 1_000_000, "kind": "AdmissionReview"},
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u" * 100_000}},
    ],
)
def test_bad_reviews_echo_at_most_a_short_excerpt(body: dict[str, object]) -> None:
    with pytest.raises(BadReview) as raised:
        parse_review(orjson.dumps(body))
    assert len(str(raised.value)) < MAX_ECHO_CHARS + 100


def test_shortened_says_how_much_was_left_out() -> None:
    assert shortened("abc") == "abc"
    assert shortened("a" * 300) == "a" * MAX_ECHO_CHARS + "... (100 more characters)"


def test_a_reviews_fields_are_logged_on_one_line() -> None:
    """uid, reason and workload go through shortened into the decision's log line: no line is forged."""
    forged = "uid\n2026-01-01 ERROR podsizer.webhook forged\x1b[31m"
    assert shortened(forged) == "uid\\n2026-01-01 ERROR podsizer.webhook forged\\x1b[31m"


def _app_client(**settings: int) -> TestClient:
    app = create_app(
        WebhookSettings(default_mode="auto", **settings),  # type: ignore[arg-type]
        holder_with(recommendation()),
        OwnerCache(),
        CollectorRegistry(),
        lambda: T1,
    )
    return TestClient(app)


def test_a_huge_bad_body_gets_a_short_400() -> None:
    with _app_client() as c:
        r = c.post("/mutate", content=orjson.dumps({"apiVersion": "v", "kind": "k" * 4_900_000}))
    assert r.status_code == 400
    assert len(r.content) < 1024


def test_reviews_over_the_offload_size_are_answered_alike() -> None:
    pod = replicaset_pod(annotations={"note": "n" * 5000})
    body = orjson.dumps(review(pod, uid="big"))
    with _app_client(offload_body_bytes=1024) as offloaded, _app_client() as inline:
        a, b = offloaded.post("/mutate", content=body), inline.post("/mutate", content=body)
    assert a.status_code == b.status_code == 200
    assert a.json() == b.json()
    assert apply_reply(pod, a.json())["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "250m"


def test_client_names_are_the_subject_cns_and_alt_names() -> None:
    cert = {
        "subject": ((("organizationName", "system:masters"),), (("commonName", "kube-apiserver"),)),
        "subjectAltName": (("DNS", "apiserver.local"), ("IP Address", "10.0.0.1"), ("email", "a@b")),
    }
    assert client_names(cert) == {"kube-apiserver", "apiserver.local", "10.0.0.1"}
    assert client_names(None) == frozenset()


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    write_bundle(generate_bundle("podsizer-webhook", "podsizer"), tmp_path)
    return tmp_path / "tls.crt", tmp_path / "tls.key"


def test_tls12_offers_only_forward_secret_aead_suites(tmp_path: Path) -> None:
    ctx = ReloadingTLS(*_pair(tmp_path)).server_context
    tls12 = [c for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.2"]
    assert tls12
    assert all(c["aead"] and c["kea"] == "kx-ecdhe" for c in tls12)
    assert ctx.verify_mode == ssl.CERT_NONE


def test_a_client_ca_verifies_every_client_certificate_presented(tmp_path: Path) -> None:
    """CERT_OPTIONAL: a presented certificate must verify; without one only the open paths answer (guard)."""
    ca_file = tmp_path / "client-ca.crt"
    trustme.CA().cert_pem.write_to_path(str(ca_file))
    tls = ReloadingTLS(*_pair(tmp_path), client_ca_file=ca_file)
    assert tls.server_context.verify_mode == ssl.CERT_OPTIONAL
    assert tls.current_context().verify_mode == ssl.CERT_OPTIONAL
    assert connection_limits(WebhookSettings(client_ca_file=ca_file)).client_auth
    assert not connection_limits(WebhookSettings()).client_auth


def test_connection_limits_follow_the_settings() -> None:
    settings = WebhookSettings(
        max_header_bytes=8192,
        header_timeout_seconds=2.0,
        body_timeout_seconds=3.0,
        keep_alive_timeout_seconds=4,
        client_ca_file=Path("client-ca.crt"),
        client_allowed_names=("kube-apiserver",),
    )
    limits = connection_limits(settings)
    assert limits.max_header_bytes == 8192
    assert limits.header_timeout == 2.0
    assert limits.request_timeout > settings.body_timeout_seconds  # the app's 408 comes first
    assert limits.keep_alive_timeout == 4
    assert limits.allowed_client_names == {"kube-apiserver"}
