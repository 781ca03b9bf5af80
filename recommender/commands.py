"""`podsizer recommend` (one run, printed) and `podsizer run` (the loop): arguments and entry functions.

Exit status: 0 success, 1 a runtime failure (metrics source or store; one line on stderr, no
traceback). Bad settings raise SettingsError, which the CLI reports with exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import cast

from podsizer.settings import RecommenderSettings, add_arguments, load_from_args, setting_error
from recommender.leader import Leadership
from recommender.model import MetricsSource, Progress, SourceError, UsageSnapshot
from recommender.output.report import FORMATS, Report, render
from recommender.output.store.base import StoreError
from recommender.progress import ProgressPrinter
from recommender.runner import Bounds, RecommendFn, Runner, RunOutput
from recommender.wiring import Wiring, dcgm_of, store_label

log = logging.getLogger("podsizer")

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_WIRING = Wiring()


def load_settings(args: argparse.Namespace) -> RecommenderSettings:
    """The recommender's settings from flags and environment; logging configured at their level."""
    settings = load_from_args(RecommenderSettings, args)
    logging.basicConfig(
        level=settings.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    return settings


# --- recommend -----------------------------------------------------------------------------------


def add_recommend_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", choices=FORMATS, default="table", help="output format (default: table)"
    )
    parser.add_argument("--write", action="store_true", help="also write the recommendations to the store")
    parser.add_argument("--no-progress", action="store_true", help="no progress indicator on stderr")
    add_arguments(parser, RecommenderSettings)


def run_recommend(args: argparse.Namespace, wiring: Wiring = DEFAULT_WIRING) -> int:
    """One run: collect, size, print in the chosen format; with --write also store."""
    settings = load_settings(args)
    try:
        return _recommend(settings, args, wiring)
    except (SourceError, StoreError) as exc:
        print(f"podsizer recommend: {exc}", file=sys.stderr)
        return 1


def _recommend(settings: RecommenderSettings, args: argparse.Namespace, wiring: Wiring) -> int:
    now = wiring.clock()
    source = wiring.source(settings, now)
    prices = wiring.prices(settings)
    store = wiring.store(settings, None) if args.write else None
    progress = None if args.no_progress else ProgressPrinter(sys.stderr, sys.stderr.isatty())
    try:
        bounds = store.bounds() if store is not None else {}
        dcgm = dcgm_of(source)
        if dcgm is not None:
            dcgm.scrape_once(strict=True)
            now = wiring.clock()  # the window [start, now) must include the scrape just taken
        snapshot = source.collect(now - timedelta(days=settings.window_days), now, progress)
    finally:
        if progress is not None:
            progress.finish()
    run = wiring.sizing(snapshot, settings.to_sizing_policy(), prices, now, bounds)
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    sys.stdout.write(render(Report.of(run, snapshot, settings.plan_policy()), args.output, width))
    sys.stdout.flush()
    if store is None:
        return 0
    failed = store.put_many(run.recommendations)
    for rec, err in failed:
        print(f"podsizer recommend: {rec.target}: not written: {err}", file=sys.stderr)
    written = len(run.recommendations) - len(failed)
    print(f"wrote {written} recommendations to {store_label(settings)}", file=sys.stderr)
    return 1 if failed else 0


# --- run (the loop) ------------------------------------------------------------------------------


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--once", action="store_true", help="one run, then exit (status 1 if it failed)")
    add_arguments(parser, RecommenderSettings)


def run_loop(args: argparse.Namespace, wiring: Wiring = DEFAULT_WIRING) -> int:
    """The recommender loop (or one run with --once); runtime failures are exit status 1."""
    settings = load_settings(args)
    try:
        return _loop(settings, args.once, wiring)
    except (SourceError, StoreError) as exc:
        print(f"podsizer run: {exc}", file=sys.stderr)
        return 1


def _loop(settings: RecommenderSettings, once: bool, wiring: Wiring) -> int:
    from recommender.metrics import MetricsServer, RecommenderMetrics, serve_metrics

    api_client = None
    if settings.store == "crd" or settings.leader_election:
        api_client = wiring.api_client(settings.kubeconfig)
    store = wiring.store(settings, api_client)
    registry = wiring.registry()
    leadership = _leadership(settings, api_client)
    server: MetricsServer | None = None
    if settings.metrics_port and not once:
        try:
            server = serve_metrics(registry, settings.metrics_port, settings.metrics_host)
        except OSError as exc:
            where = f"{settings.metrics_host}:{settings.metrics_port}"
            raise setting_error("metrics_port", f"cannot listen on {where}: {exc.strerror or exc}") from exc
        log.info("metrics on http://%s:%d/metrics", settings.metrics_host, server.port)
    source: MetricsSource
    if settings.source == "demo":
        source = _LazySource(lambda: wiring.source(settings, wiring.clock()))
    else:
        source = wiring.source(settings, wiring.clock())
    runner = Runner(
        source,
        store,
        _recommend_fn(settings, wiring),
        window_days=settings.window_days,
        interval_seconds=settings.interval_seconds,
        backoff_initial_seconds=settings.backoff_initial_seconds,
        backoff_max_seconds=settings.backoff_max_seconds,
        clock=wiring.clock,
        metrics=RecommenderMetrics(registry),
        leadership=leadership,
    )
    try:
        return _run_once(runner, source, settings) if once else _forever(runner, source, leadership, settings)
    finally:
        if server is not None:
            server.stop()


def _recommend_fn(settings: RecommenderSettings, wiring: Wiring) -> RecommendFn:
    policy, prices = settings.to_sizing_policy(), wiring.prices(settings)

    def fn(snapshot: UsageSnapshot, bounds: Bounds, now: datetime) -> RunOutput:
        return wiring.sizing(snapshot, policy, prices, now, bounds)

    return fn


def _leadership(settings: RecommenderSettings, api_client: object) -> Leadership:
    from recommender.leader import AlwaysLeader, LeaderElector, LeaseApi

    if not settings.leader_election:
        return AlwaysLeader()
    from kubernetes import client

    return LeaderElector(
        cast(LeaseApi, client.CoordinationV1Api(api_client)),
        settings.lease_name,
        _lease_namespace(settings),
        settings.identity or os.environ.get("POD_NAME") or socket.gethostname(),
        lease_duration_seconds=settings.lease_duration_seconds,
        renew_deadline_seconds=settings.lease_renew_deadline_seconds,
        retry_period_seconds=settings.lease_retry_period_seconds,
    )


def _lease_namespace(settings: RecommenderSettings) -> str:
    if settings.lease_namespace:
        return settings.lease_namespace
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or "default"
    except OSError:
        return "default"


def _run_once(runner: Runner, source: MetricsSource, settings: RecommenderSettings) -> int:
    dcgm = dcgm_of(source)
    if dcgm is not None:
        dcgm.scrape_once()
    result = runner.run_once()
    for err in result.errors:
        print(f"podsizer run: {err.kind}: {err.subject}: {err.message}", file=sys.stderr)
    print(f"wrote {result.written} recommendations to {store_label(settings)}", file=sys.stderr)
    return 0 if result.ok and not result.errors else 1


def _forever(
    runner: Runner, source: MetricsSource, leadership: Leadership, settings: RecommenderSettings
) -> int:
    stop = threading.Event()

    def _stop(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: stopping", signum)
        stop.set()

    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    dcgm = dcgm_of(source)
    if dcgm is not None:
        threading.Thread(
            target=dcgm.scrape_forever,
            args=(stop, settings.dcgm_scrape_interval_seconds),
            name="podsizer-dcgm-scrape",
            daemon=True,
        ).start()
    leadership.start()
    try:
        runner.run_forever(stop)
    finally:
        leadership.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


@dataclass
class _LazySource:
    """Builds the real source per run, so the demo source's `now` moves with the clock."""

    factory: Callable[[], MetricsSource]
    name: str = "source"

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        return self.factory().collect(start, end, progress)
