"""The ASGI app: 400/413 for bad bodies, reviews answered, /readyz gated on the store, /metrics counted."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry

from podsizer.cluster import OwnerCache
from podsizer.settings import WebhookSettings
from podsizer.snapshot import SnapshotHolder
from tests.unit.webhook.builders import (
    T1,
    container,
    crec,
    holder_with,
    recommendation,
    replicaset_pod,
    review,
)
from webhook.app import create_app


class Clock:
    def __init__(self) -> None:
        self.now = T1 + timedelta(seconds=42)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def client(registry: CollectorRegistry) -> Iterator[TestClient]:
    settings = WebhookSettings(max_body_bytes=10_000, default_mode="auto")
    app = create_app(settings, holder_with(recommendation()), OwnerCache(), registry, Clock())
    with TestClient(app) as c:
        yield c


def test_review_is_answered_with_a_patch(client: TestClient, registry: CollectorRegistry) -> None:
    r = client.post("/mutate", content=orjson.dumps(review(replicaset_pod(), uid="abc")))
    assert r.status_code == 200
    body = r.json()
    assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
    assert body["response"]["uid"] == "abc" and body["response"]["allowed"] is True
    assert body["response"]["patchType"] == "JSONPatch"
    assert (
        registry.get_sample_value(
            "podsizer_webhook_reviews_total", {"outcome": "applied", "reason": "applied"}
        )
        == 1.0
    )
    assert registry.get_sample_value("podsizer_webhook_review_duration_seconds_count") == 1.0


def test_replicas_are_answered_alike_and_each_review_is_counted(
    client: TestClient, registry: CollectorRegistry
) -> None:
    replies = [
        client.post("/mutate", content=orjson.dumps(review(replicaset_pod(), uid=u))).json() for u in "abc"
    ]
    assert [r["response"]["uid"] for r in replies] == ["a", "b", "c"]
    assert len({r["response"]["patch"] for r in replies}) == 1  # the second and third come from the cache
    client.post("/mutate", content=orjson.dumps(review(replicaset_pod("nope"), uid="d")))
    counts = {
        reason: registry.get_sample_value(
            "podsizer_webhook_reviews_total", {"outcome": outcome, "reason": reason}
        )
        for outcome, reason in (("applied", "applied"), ("skipped", "no-recommendation"))
    }
    assert counts == {"applied": 3.0, "no-recommendation": 1.0}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "not valid JSON"),
        (b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1"}', "apiVersion"),
    ],
)
def test_bad_body_is_400_with_a_message(
    client: TestClient, registry: CollectorRegistry, body: bytes, message: str
) -> None:
    r = client.post("/mutate", content=body)
    assert r.status_code == 400
    assert message in r.json()["message"]
    assert registry.get_sample_value("podsizer_webhook_rejected_requests_total", {"code": "400"}) == 1.0


def test_oversized_body_is_413(client: TestClient) -> None:
    pod = replicaset_pod(annotations={"big": "x" * 20_000})
    r = client.post("/mutate", content=orjson.dumps(review(pod)))
    assert r.status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: the streamed size is what counts
        for _ in range(20):
            yield b"x" * 1000

    assert client.post("/mutate", content=chunks()).status_code == 413


def test_skipped_reviews_are_counted_by_reason(client: TestClient, registry: CollectorRegistry) -> None:
    client.post("/mutate", content=orjson.dumps(review(replicaset_pod("other"))))
    assert (
        registry.get_sample_value(
            "podsizer_webhook_reviews_total", {"outcome": "skipped", "reason": "no-recommendation"}
        )
        == 1.0
    )


def test_readyz_waits_for_the_store_and_metrics_show_its_age() -> None:
    holder = SnapshotHolder()
    registry = CollectorRegistry()
    clock = Clock()
    app = create_app(WebhookSettings(), holder, OwnerCache(), registry, clock)
    with TestClient(app) as c:
        assert c.get("/healthz").status_code == 200
        assert c.get("/readyz").status_code == 503
        holder.swap(holder_with(recommendation()).current())  # type: ignore[arg-type]
        assert c.get("/readyz").status_code == 200
        text = c.get("/metrics").text
        assert "podsizer_webhook_store_age_seconds 42.0" in text
        assert "podsizer_webhook_store_recommendations 1.0" in text


def test_baseline_endpoint_only_when_enabled() -> None:
    off = create_app(
        WebhookSettings(), SnapshotHolder(), OwnerCache(), CollectorRegistry(), lambda: datetime.now(UTC)
    )
    on = create_app(
        WebhookSettings(bench_endpoints=True),
        SnapshotHolder(),
        OwnerCache(),
        CollectorRegistry(),
        lambda: datetime.now(UTC),
    )
    body = orjson.dumps(review(replicaset_pod(), uid="b"))
    with TestClient(off) as c:
        assert c.post("/mutate-baseline", content=body).status_code == 404
    with TestClient(on) as c:
        assert c.post("/mutate-baseline", content=body).json()["response"] == {"uid": "b", "allowed": True}


def test_values_the_plausibility_guard_clamps_are_counted_per_resource_and_rule(
    registry: CollectorRegistry,
) -> None:
    absurd = recommendation(containers=[crec(requests={"cpu": "1000", "memory": "512Mi"})])
    settings = WebhookSettings(default_mode="auto")
    app = create_app(settings, holder_with(absurd), OwnerCache(), registry, Clock())
    pod = replicaset_pod(containers=[container("main", {"cpu": "500m", "memory": "512Mi"})])
    with TestClient(app) as c:
        assert c.post("/mutate", content=orjson.dumps(review(pod, uid="x"))).status_code == 200
    counted = registry.get_sample_value(
        "podsizer_webhook_plausibility_total", {"resource": "cpu", "rule": "max-change"}
    )
    assert counted == 1.0
