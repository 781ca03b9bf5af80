"""AdmissionReview v1 envelope parsing (what becomes HTTP 400) and the pure response builder."""

from __future__ import annotations

import base64

import orjson
import pytest

from tests.unit.webhook.builders import replicaset_pod, review
from webhook.wire import BadReview, build_response, parse_review


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "empty body"),
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (b'{"apiVersion": "admission.k8s.io/v1", "kind": "Pod"}', "kind: expected 'AdmissionReview'"),
        (b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}', "apiVersion: expected"),
        (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', "request: expected an object"),
        (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}', "request.uid"),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": 7}}',
            "request.uid",
        ),
    ],
)
def test_bad_envelopes_name_what_is_wrong(body: bytes, message: str) -> None:
    with pytest.raises(BadReview, match=message):
        parse_review(body)


def test_valid_review_parses() -> None:
    r = review(replicaset_pod(), uid="abc")
    assert parse_review(orjson.dumps(r))["request"]["uid"] == "abc"


def test_response_echoes_uid_apiversion_kind_and_encodes_the_patch() -> None:
    r = review(replicaset_pod(), uid="u-1")
    ops = [{"op": "add", "path": "/metadata/annotations/x", "value": "y"}]
    out = build_response(r, ops)  # type: ignore[arg-type]
    assert out["apiVersion"] == "admission.k8s.io/v1"
    assert out["kind"] == "AdmissionReview"
    resp = out["response"]
    assert resp["uid"] == "u-1"
    assert resp["allowed"] is True
    assert resp["patchType"] == "JSONPatch"
    assert orjson.loads(base64.b64decode(resp["patch"])) == ops


def test_response_without_patch_has_no_patch_fields() -> None:
    out = build_response(review(replicaset_pod(), uid="u-2"))
    assert out["response"] == {"uid": "u-2", "allowed": True}
