"""The FastAPI application: POST /mutate, /healthz, /readyz, /metrics; all state passed in."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime

import orjson
from fastapi import FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from podsizer.modes import MetadataLookup, NoMetadata
from podsizer.policy import PlanPolicy
from podsizer.settings import WebhookSettings
from webhook.admission import AdmissionConfig, Admitter, Decision
from webhook.metrics import WebhookMetrics
from webhook.owners import OwnerLookup
from webhook.store import SnapshotProvider
from webhook.wire import ADMISSION_API_VERSION, ADMISSION_KIND, BadReview, parse_review

log = logging.getLogger("podsizer.webhook")

JSON = "application/json"


class BodyTooLarge(Exception):
    pass


def _status(code: int, reason: str, message: str) -> Response:
    body = {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    return Response(orjson.dumps(body), status_code=code, media_type=JSON)


async def _read_body(request: Request, cap: int) -> bytes:
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > cap:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def plan_policy(settings: WebhookSettings) -> PlanPolicy:
    """The pod plan's policy from the webhook's settings."""
    return settings.plan_policy()


def admitter_for(
    settings: WebhookSettings, snapshots: SnapshotProvider, owners: OwnerLookup, metadata: MetadataLookup
) -> Admitter:
    config = AdmissionConfig(plan_policy(settings), settings.excluded_namespace_set)
    return Admitter(config, snapshots, owners, metadata)


def _log_decision(uid: str, decision: Decision, dry_run: bool) -> None:
    level = logging.INFO if decision.outcome in ("applied", "dry-run") else logging.DEBUG
    if decision.outcome == "error":
        level = logging.WARNING
    if log.isEnabledFor(level):
        log.log(
            level,
            "review uid=%s outcome=%s reason=%s workload=%s recommendation=%s changes=%d%s",
            uid,
            decision.outcome,
            decision.reason,
            decision.workload,
            decision.recommendation,
            len(decision.changes),
            " (apiserver dry run)" if dry_run else "",
        )


def create_app(
    settings: WebhookSettings,
    snapshot_provider: SnapshotProvider,
    owner_cache: OwnerLookup,
    metrics_registry: CollectorRegistry,
    clock: Callable[[], datetime],
    metadata: MetadataLookup | None = None,
) -> FastAPI:
    """Build the app; nothing global: the caller owns the store, caches, registry and clock."""
    admitter = admitter_for(settings, snapshot_provider, owner_cache, metadata or NoMetadata())
    metrics = WebhookMetrics(metrics_registry, snapshot_provider, clock)
    cap = settings.max_body_bytes
    app = FastAPI(title="podsizer webhook", docs_url=None, redoc_url=None, openapi_url=None)

    @app.post("/mutate")
    async def mutate(request: Request) -> Response:
        started = time.perf_counter()
        try:
            body = await _read_body(request, cap)
        except BodyTooLarge:
            metrics.rejected.labels("413").inc()
            log.warning("rejected a request body over %d bytes", cap)
            return _status(413, "RequestEntityTooLarge", f"request body exceeds {cap} bytes")
        try:
            review = parse_review(body)
        except BadReview as exc:
            metrics.rejected.labels("400").inc()
            log.warning("rejected a request that is not an AdmissionReview v1: %s", exc)
            return _status(400, "BadRequest", f"not an AdmissionReview {ADMISSION_API_VERSION}: {exc}")
        reply, decision = admitter.review(review)
        dry_run = review["request"].get("dryRun") is True
        metrics.reviewed(decision.outcome, decision.reason)
        _log_decision(review["request"]["uid"], decision, dry_run)
        out = Response(orjson.dumps(reply), media_type=JSON)
        metrics.latency.observe(time.perf_counter() - started)
        return out

    if settings.bench_endpoints:

        @app.post("/mutate-baseline")
        async def mutate_baseline(request: Request) -> Response:
            """Benchmark reference: parse the body and answer a constant review (no admission work)."""
            data = orjson.loads(await _read_body(request, cap))
            uid = data.get("request", {}).get("uid", "") if isinstance(data, dict) else ""
            reply = {
                "apiVersion": ADMISSION_API_VERSION,
                "kind": ADMISSION_KIND,
                "response": {"uid": uid, "allowed": True},
            }
            return Response(orjson.dumps(reply), media_type=JSON)

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response(b"ok", media_type="text/plain")

    @app.get("/readyz")
    async def readyz() -> Response:
        if snapshot_provider.current() is None:
            return Response(b"recommendation store not loaded yet", status_code=503, media_type="text/plain")
        return Response(b"ok", media_type="text/plain")

    @app.get("/metrics")
    async def metrics_endpoint() -> Response:
        return Response(generate_latest(metrics_registry), media_type=CONTENT_TYPE_LATEST)

    return app
