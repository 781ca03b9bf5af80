"""Fuzz: generated and mutated AdmissionReviews never raise, never deny, and every patch yields a valid Pod.

The total example count (10,000 under HYPOTHESIS_PROFILE=ci, 500 in the dev profile) is split
across the tests below.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import jsonpatch
import orjson
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kubernetes.client import ApiClient
from kubernetes.utils import parse_quantity
from prometheus_client import CollectorRegistry

from podsizer.api import Recommendation
from podsizer.cluster import OwnerCache
from podsizer.keys import DRY_RUN_KEY
from podsizer.policy import PlanPolicy
from podsizer.settings import WebhookSettings
from podsizer.snapshot import RecommendationSnapshot, SnapshotHolder
from tests.support.hypo import examples
from tests.unit.webhook import builders as b
from tests.unit.webhook.fuzz_strategies import mutated, pods, scenarios
from webhook.app import create_app
from webhook.wire import BadReview, parse_review

TOTAL = examples(10_000)
COMMON = {
    "deadline": None,
    "database": None,
    "derandomize": False,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
K8S = ApiClient()
MUTATION_RECS = [
    b.recommendation(
        kind,
        name,
        containers=[
            b.crec(c, {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})
            for c in ("main", "app", "worker")
        ],
    )
    for kind in ("Deployment", "Rollout", "DeploymentConfig", "StatefulSet", "DaemonSet")
    for name in ("web", "api-v2", "cart")
]
MODES = st.sampled_from(["auto", "auto", "dry-run", "off"])
POLICIES = st.sampled_from(["keep-ratio", "cap", "leave", "recommended"])
GPU = st.sampled_from(["keep", "resize", "resize+mig"])  # the GPU opt-in, and MIG swapping allowed


def _extended(name: str) -> bool:
    return "/" in name and not name.startswith("kubernetes.io/")


def assert_valid_pod(pod: dict[str, Any]) -> None:
    """What kube-apiserver would check that our patch could break: the schema and resource rules."""
    # The client's models raise on wrong types and missing required fields.
    K8S._ApiClient__deserialize(copy.deepcopy(pod), "V1Pod")
    for section in ("initContainers", "containers"):
        for c in pod["spec"].get(section) or []:
            res = c.get("resources") or {}
            req, lim = res.get("requests") or {}, res.get("limits") or {}
            parsed_req = {k: Decimal(parse_quantity(v)) for k, v in req.items()}
            parsed_lim = {k: Decimal(parse_quantity(v)) for k, v in lim.items()}
            for k, v in {**parsed_req, **parsed_lim}.items():
                assert v >= 0, (c["name"], k)
                if _extended(k):
                    assert v == v.to_integral_value(), f"{c['name']}: {k}={v} is not whole"
            for k, v in parsed_req.items():
                if _extended(k):
                    assert k in parsed_lim and parsed_lim[k] == v, f"{c['name']}: {k} request != limit"
                elif k in parsed_lim:
                    assert v <= parsed_lim[k], f"{c['name']}: {k} request {v} > limit {parsed_lim[k]}"


def _admitter(recs: list[Recommendation], mode: str, policy: str, gpu: str) -> Any:
    plan = PlanPolicy(policy, gpu_resize=gpu != "keep", allow_mig_swap=gpu == "resize+mig")  # type: ignore[arg-type]
    return b.admitter(*recs, default_mode=mode, policy=plan)  # type: ignore[arg-type]


@settings(max_examples=max(1, TOTAL * 55 // 100), **COMMON)  # type: ignore[arg-type]
@given(scenario=scenarios(), mode=MODES, policy=POLICIES, gpu=GPU, dry=st.booleans())
def test_generated_reviews_patch_into_valid_pods(
    scenario: tuple[dict[str, Any], list[Recommendation]], mode: str, policy: str, gpu: str, dry: bool
) -> None:
    pod, recs = scenario
    review = b.review(pod, dry_run=dry, uid="fuzz")
    reply, decision = _admitter(recs, mode, policy, gpu).review(review)
    event(f"{decision.outcome}: {decision.reason}")  # see --hypothesis-show-statistics
    assert reply["response"]["allowed"] is True
    assert reply["response"]["uid"] == "fuzz"
    assert decision.outcome != "error", decision
    if decision.outcome == "skipped":
        assert "patch" not in reply["response"]
        return
    assert_valid_pod(pod)  # the generator only makes pods the apiserver accepts...
    patched = b.apply_reply(pod, reply)
    assert_valid_pod(patched)  # ...and the patch keeps them so
    if decision.outcome == "dry-run":
        ann = patched["metadata"]["annotations"]
        record = orjson.loads(ann.pop(DRY_RUN_KEY))
        assert record["changes"]
        if not ann and "annotations" not in pod["metadata"]:
            patched["metadata"].pop("annotations")  # the parent the patch had to create
        assert patched == pod, "dry-run changed more than its annotation"


@st.composite
def mutated_reviews(draw: st.DrawFn) -> Any:
    return draw(mutated(b.review(draw(pods()), uid="m")))  # type: ignore[arg-type]


@settings(max_examples=max(1, TOTAL * 40 // 100), **COMMON)  # type: ignore[arg-type]
@given(
    doc=mutated_reviews(),
    mode=MODES,
    policy=POLICIES,
    gpu=GPU,
    truncate=st.integers(0, 20),
)
def test_mutated_reviews_never_raise_and_never_deny(
    doc: Any, mode: str, policy: str, gpu: str, truncate: int
) -> None:
    body = orjson.dumps(doc)
    if truncate == 0:
        body = body[: len(body) // 2]
    try:
        review = parse_review(body)
    except BadReview as exc:
        assert str(exc)
        return
    reply, decision = _admitter(MUTATION_RECS, mode, policy, gpu).review(review)
    assert decision.outcome != "error", "malformed input is skipped, not an internal error"
    assert reply["response"]["allowed"] is True
    assert reply["response"]["uid"] == review["request"]["uid"]
    if "patch" in reply["response"]:
        obj = review["request"].get("object")
        jsonpatch.apply_patch(copy.deepcopy(obj), b.decode_patch(reply))  # raises if the patch does not apply


@pytest.fixture(scope="module")
def asgi() -> Iterator[tuple[TestClient, SnapshotHolder]]:
    holder = SnapshotHolder()
    settings = WebhookSettings(default_mode="auto", max_body_bytes=64_000)
    app = create_app(settings, holder, OwnerCache(), CollectorRegistry(), lambda: datetime.now(UTC))
    with TestClient(app, raise_server_exceptions=True) as client:
        yield client, holder


@settings(max_examples=max(1, TOTAL * 5 // 100), **COMMON)  # type: ignore[arg-type]
@given(scenario=scenarios(), mutate=st.booleans(), data=st.data())
def test_through_the_asgi_app_no_5xx(
    asgi: tuple[TestClient, SnapshotHolder],
    scenario: tuple[dict[str, Any], list[Recommendation]],
    mutate: bool,
    data: st.DataObject,
) -> None:
    client, holder = asgi
    pod, recs = scenario
    holder.swap(RecommendationSnapshot.of(recs, b.T1))
    doc = data.draw(mutated(dict(b.review(pod)))) if mutate else b.review(pod)
    r = client.post("/mutate", content=orjson.dumps(doc))
    assert r.status_code in (200, 400), r.text
    if r.status_code == 200:
        body = r.json()
        assert body["response"]["allowed"] is True
        assert body["kind"] == "AdmissionReview"
        if "patch" in body["response"] and not mutate:
            assert_valid_pod(b.apply_reply(pod, body))
    else:
        assert r.json()["message"]
