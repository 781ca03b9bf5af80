"""AdmissionReview admission.k8s.io/v1 wire types (TypedDicts), strict parsing and a pure response builder."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Literal, NotRequired, Required, TypedDict, cast

import orjson

from podsizer.untrusted import MAX_SHOWN_CHARS, one_line, shown
from webhook.patch import Op

ADMISSION_API_VERSION = "admission.k8s.io/v1"
ADMISSION_KIND = "AdmissionReview"


class GroupVersionKind(TypedDict):
    group: str
    version: str
    kind: str


class GroupVersionResource(TypedDict):
    group: str
    version: str
    resource: str


class UserInfo(TypedDict, total=False):
    username: str
    uid: str
    groups: list[str]
    extra: dict[str, list[str]]


class AdmissionRequest(TypedDict, total=False):
    uid: Required[str]
    kind: GroupVersionKind
    resource: GroupVersionResource
    subResource: str
    requestKind: GroupVersionKind
    requestResource: GroupVersionResource
    requestSubResource: str
    name: str
    namespace: str
    operation: Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
    userInfo: UserInfo
    object: dict[str, Any] | None
    oldObject: dict[str, Any] | None
    dryRun: bool
    options: dict[str, Any] | None


class Status(TypedDict, total=False):
    code: int
    message: str
    reason: str


class AdmissionResponse(TypedDict):
    uid: str
    allowed: bool
    patchType: NotRequired[Literal["JSONPatch"]]
    patch: NotRequired[str]
    warnings: NotRequired[list[str]]
    status: NotRequired[Status]
    auditAnnotations: NotRequired[dict[str, str]]


class AdmissionReview(TypedDict, total=False):
    apiVersion: Required[str]
    kind: Required[str]
    request: AdmissionRequest
    response: AdmissionResponse


MAX_ECHO_CHARS = MAX_SHOWN_CHARS  # the most of a client's input that goes back in an error body or a log line
MAX_UID_CHARS = 256  # apiserver uids are 36-character UUIDs


def shortened(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """`text` cut to `limit` characters, saying how much was left out, on one line (control characters
    escaped: a client's text never forges a log line)."""
    return one_line(text, limit)


class BadReview(ValueError):
    """The body is not an AdmissionReview v1 request; the message says what is wrong (HTTP 400), and echoes
    at most MAX_ECHO_CHARS of the input."""


def parse_review(body: bytes) -> AdmissionReview:
    """Decode and check the envelope; anything beyond uid (the object itself) is judged later, leniently."""
    if not body:
        raise BadReview("empty body: expected an AdmissionReview JSON object")
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadReview(f"body is not valid JSON: {shortened(str(exc))}") from None
    if not isinstance(data, dict):
        raise BadReview(f"expected a JSON object (AdmissionReview), got {type(data).__name__}")
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if kind != ADMISSION_KIND:
        raise BadReview(f"kind: expected {ADMISSION_KIND!r}, got {shown(kind)}")
    if api_version != ADMISSION_API_VERSION:
        raise BadReview(f"apiVersion: expected {ADMISSION_API_VERSION!r}, got {shown(api_version)}")
    request = data.get("request")
    if not isinstance(request, dict):
        raise BadReview("request: expected an object (an AdmissionReview request)")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("request.uid: expected a non-empty string")
    if len(uid) > MAX_UID_CHARS:
        raise BadReview(f"request.uid: longer than {MAX_UID_CHARS} characters")
    return cast(AdmissionReview, data)


def build_response(
    review: AdmissionReview,
    patch: Sequence[Op] = (),
    warnings: Sequence[str] = (),
    encoded_patch: str | None = None,
) -> AdmissionReview:
    """The reply: apiVersion/kind/uid echoed, always allowed, the JSON Patch base64-encoded when non-empty.

    `encoded_patch`, when given, is that encoding of `patch` done earlier (the admission path caches it).
    """
    response: AdmissionResponse = {"uid": review["request"]["uid"], "allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = encoded_patch or base64.b64encode(orjson.dumps(list(patch))).decode("ascii")
    if warnings:
        response["warnings"] = list(warnings)
    return {"apiVersion": review["apiVersion"], "kind": review["kind"], "response": response}
