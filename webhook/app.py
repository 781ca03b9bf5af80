"""The FastAPI application: POST /mutate, /healthz, /readyz, /metrics; all state passed in."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import anyio
import anyio.to_thread
import orjson
from fastapi import FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.requests import ClientDisconnect

from podsizer.modes import MetadataLookup, NoMetadata
from podsizer.owners import ControllerLookup
from podsizer.policy import PlanPolicy
from podsizer.settings import WebhookSettings
from podsizer.snapshot import SnapshotProvider
from webhook.admission import DECISION_CACHE_SIZE, AdmissionConfig, Admitter, Decision, DecisionCache
from webhook.fairqueue import SmallestFirst
from webhook.metrics import WebhookMetrics
from webhook.wire import ADMISSION_API_VERSION, ADMISSION_KIND, BadReview, parse_review, shortened

log = logging.getLogger("podsizer.webhook")

JSON = "application/json"


class BodyTooLarge(Exception):
    pass


def _status(code: int, reason: str, message: str, close: bool = False) -> Response:
    body = {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    headers = {"connection": "close"} if close else None
    return Response(orjson.dumps(body), status_code=code, media_type=JSON, headers=headers)


class BodyTooSlow(Exception):
    pass


async def _read_body(request: Request, cap: int, deadline: float | None = None) -> bytes:
    """The whole body; BodyTooLarge over `cap` bytes, BodyTooSlow when not complete within `deadline` s."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > cap:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    try:
        with anyio.fail_after(deadline):
            async for chunk in request.stream():
                size += len(chunk)
                if size > cap:
                    raise BodyTooLarge
                chunks.append(chunk)
    except TimeoutError:
        raise BodyTooSlow from None
    return b"".join(chunks)


def plan_policy(settings: WebhookSettings) -> PlanPolicy:
    """The pod plan's policy from the webhook's settings."""
    return settings.plan_policy()


def admitter_for(
    settings: WebhookSettings, snapshots: SnapshotProvider, owners: ControllerLookup, metadata: MetadataLookup
) -> Admitter:
    config = AdmissionConfig(plan_policy(settings), settings.excluded_namespace_set)
    admitter = Admitter(config, snapshots, owners, metadata)
    budget = settings.decision_cache_bytes
    admitter.cache = DecisionCache(DECISION_CACHE_SIZE, budget) if budget > 0 else None
    return admitter


@dataclass(frozen=True)
class Reviewed:
    """One /mutate answer: the reply's bytes, or a 400 message; the decision and the facts for the log."""

    reply: bytes | None
    bad: str | None = None
    decision: Decision | None = None
    uid: str = ""
    dry_run: bool = False


def _review_body(admitter: Admitter, body: bytes) -> Reviewed:
    """Decode, decide and encode: pure CPU work, run on the event loop or, for large bodies, in a thread."""
    try:
        review = parse_review(body)
    except BadReview as exc:
        return Reviewed(None, shortened(str(exc)))
    reply, decision = admitter.review(review)
    dry_run = review["request"].get("dryRun") is True
    return Reviewed(orjson.dumps(reply), None, decision, review["request"]["uid"], dry_run)


def _log_decision(uid: str, decision: Decision, dry_run: bool) -> None:
    level = logging.INFO if decision.outcome in ("applied", "dry-run") else logging.DEBUG
    if decision.outcome == "error":
        level = logging.WARNING
    if log.isEnabledFor(level):
        log.log(
            level,
            "review uid=%s outcome=%s reason=%s workload=%s recommendation=%s changes=%d%s",
            shortened(uid),
            decision.outcome,
            shortened(decision.reason),
            shortened(str(decision.workload)),
            shortened(str(decision.recommendation)),
            len(decision.changes),
            " (apiserver dry run)" if dry_run else "",
        )


class RefusedCalls:
    """Counts the calls the connection guard refused for want of a client certificate (401) or an allowed
    name (403), and logs it at most once a minute: an API server not given its client certificate."""

    INTERVAL_SECONDS = 60.0

    def __init__(self, metrics: WebhookMetrics) -> None:
        self.metrics = metrics
        self._logged_at = -self.INTERVAL_SECONDS
        self._since = 0

    def __call__(self, code: str) -> None:
        self.metrics.rejected.labels(code).inc()
        self._since += 1
        now = time.monotonic()
        if now - self._logged_at >= self.INTERVAL_SECONDS:
            log.warning(
                "refused %d call(s) without an allowed client certificate (HTTP %s); is the API server given "
                "its client certificate (docs/webhook.md#authenticated-admission)?",
                self._since,
                code,
            )
            self._logged_at, self._since = now, 0


def refused_calls(app: FastAPI) -> RefusedCalls:
    """The app's counter of calls refused for want of authentication (for the connection guard)."""
    refused: RefusedCalls = app.state.refused
    return refused


def create_app(
    settings: WebhookSettings,
    snapshot_provider: SnapshotProvider,
    owner_cache: ControllerLookup,
    metrics_registry: CollectorRegistry,
    clock: Callable[[], datetime],
    metadata: MetadataLookup | None = None,
) -> FastAPI:
    """Build the app; nothing global: the caller owns the store, caches, registry and clock."""
    admitter = admitter_for(settings, snapshot_provider, owner_cache, metadata or NoMetadata())
    metrics = WebhookMetrics(metrics_registry, snapshot_provider, clock)
    admitter.on_guard = metrics.guarded
    cap = settings.max_body_bytes
    heavy = SmallestFirst(settings.offload_concurrency)
    metrics.large_waiting.set_function(lambda: float(heavy.waiting))
    app = FastAPI(title="podsizer webhook", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.refused = RefusedCalls(metrics)

    @app.post("/mutate")
    async def mutate(request: Request) -> Response:
        started = time.perf_counter()
        try:
            body = await _read_body(request, cap, settings.body_timeout_seconds)
        except BodyTooLarge:
            metrics.rejected.labels("413").inc()
            log.warning("rejected a request body over %d bytes", cap)
            return _status(413, "RequestEntityTooLarge", f"request body exceeds {cap} bytes")
        except BodyTooSlow:
            metrics.rejected.labels("408").inc()
            log.info("closed a request whose body took over %.1fs", settings.body_timeout_seconds)
            return _status(408, "Timeout", "request body not received in time", close=True)
        except ClientDisconnect:
            return Response(status_code=400)  # nobody is listening any more
        if len(body) > settings.offload_body_bytes:
            # Large reviews are decoded and decided in a thread, a few at a time and the smallest first:
            # small ones keep flowing, and a 300 kB one never waits behind a queue of 5 MB ones.
            async with heavy.slot(len(body)):
                out = await anyio.to_thread.run_sync(_review_body, admitter, body)
        else:
            out = _review_body(admitter, body)
        if out.reply is None or out.decision is None:
            metrics.rejected.labels("400").inc()
            log.warning("rejected a request that is not an AdmissionReview v1: %s", out.bad)
            return _status(400, "BadRequest", f"not an AdmissionReview {ADMISSION_API_VERSION}: {out.bad}")
        metrics.reviewed(out.decision.outcome, out.decision.reason)
        _log_decision(out.uid, out.decision, out.dry_run)
        metrics.latency.observe(time.perf_counter() - started)
        return Response(out.reply, media_type=JSON)

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
