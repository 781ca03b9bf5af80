"""`podsizer recommend` (one run, printed) and `podsizer run` (the loop): arguments and entry functions.

Exit status: 0 success, 1 a runtime failure (metrics source or store; one line on stderr, no
traceback), 3 part of the scope (a namespace pattern, the selector, a kind) matched no workload, unless
--allow-empty. Bad settings raise SettingsError, which the CLI reports with exit status 2.
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
from typing import TYPE_CHECKING, cast

from podsizer.leader import Leadership
from podsizer.settings import (
    ONE_RUN_ONLY,
    RUN_ONLY,
    RecommenderSettings,
    add_arguments,
    flag_name,
    load_from_args,
    setting_error,
)
from podsizer.untrusted import configure_logging
from recommender.clusters import bounds_in, cluster_sources, progress_in
from recommender.health import Heartbeat
from recommender.model import MetricsSource, Progress, SourceError, UsageSnapshot
from recommender.model.freshness import of_snapshot
from recommender.output.report import FORMATS, Report, merge_reports, render
from recommender.output.store.base import RecommendationStore, StoreError, writable
from recommender.progress import ProgressPrinter
from recommender.runner import Bounds, RecommendFn, Runner, RunOutput, merge_runs, run_in
from recommender.wiring import Wiring, dcgm_of, sample_rejections, store_in_force, store_label

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from recommender.sizing.cost import PriceTable

log = logging.getLogger("podsizer")
QUIET_LOGGERS = ("httpx", "httpcore", "urllib3", "kubernetes")  # one line per request at INFO

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_WIRING = Wiring()
EMPTY_SCOPE = 3  # exit status: a namespace pattern, the selector or a kind matched no workload


def load_settings(args: argparse.Namespace) -> RecommenderSettings:
    """The recommender's settings from flags and environment; logging configured at their level."""
    settings = load_from_args(RecommenderSettings, args)
    configure_logging(settings.log_level, "%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet_third_party(settings.log_level)
    return settings


def quiet_third_party(level: str) -> None:
    """HTTP client libraries log every request at INFO: WARNING and above only, unless level is debug."""
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if level.lower() == "debug" else logging.WARNING)


# --- recommend -----------------------------------------------------------------------------------


def add_recommend_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", choices=FORMATS, default="table", help="output format (default: table)"
    )
    parser.add_argument("--wide", action="store_true", help="table: every column, limits and reasons")
    parser.add_argument("--write", action="store_true", help="also write the recommendations to the store")
    parser.add_argument("--no-progress", action="store_true", help="no progress indicator on stderr")
    add_arguments(parser, RecommenderSettings, unlisted=RUN_ONLY)


def run_recommend(args: argparse.Namespace, wiring: Wiring = DEFAULT_WIRING) -> int:
    """One run: collect, size, print in the chosen format; with --write also store."""
    settings = load_settings(args)
    try:
        return _recommend(settings, args, wiring)
    except (SourceError, StoreError) as exc:
        print(f"podsizer recommend: {exc}", file=sys.stderr)
        return 1


@dataclass(frozen=True)
class OneRun:
    """One collect-and-size run and its report (what `recommend` prints and `explain` reads)."""

    run: RunOutput
    report: Report
    unmatched: tuple[str, ...] = ()  # scope parts that matched no workload (exit status 3)
    stale: tuple[str, ...] = ()  # one line per cluster whose newest sample is well before the window's end


def one_run(
    settings: RecommenderSettings, wiring: Wiring, store: RecommendationStore | None, progress: bool
) -> OneRun:
    """Collect the window from the source, size it (with the users' bounds of `store`, else of the store
    in force where there is one) and build the report; the window ends at as_of when set (backtesting),
    else now."""
    from recommender.input.prometheus.preflight import check_source

    now = settings.as_of or wiring.clock()
    source = wiring.source(settings, now)
    if settings.from_checkpoint:
        source = _from_checkpoint(settings, wiring, source)
    check_source(source, settings)  # the connectivity check: one line naming the setting, before any work
    prices = wiring.prices(settings)
    printer = ProgressPrinter(sys.stderr, sys.stderr.isatty()) if progress else None
    try:
        if store is None and store_in_force(settings):
            store = wiring.store(settings, None)  # only read: the users' bounds, as the console reads them
        bounds = store.bounds() if store is not None else {}
        dcgm = dcgm_of(source)
        if dcgm is not None:
            dcgm.scrape_once(strict=True)
            now = wiring.clock()  # the window [start, now) must include the scrape just taken
        sized = _size_clusters(settings, wiring, source, (bounds, prices), now, printer)
    finally:
        if printer is not None:
            printer.finish()
    _report_rejections(source)
    return sized


def _from_checkpoint(settings: RecommenderSettings, wiring: Wiring, source: MetricsSource) -> MetricsSource:
    """The source read from the usage checkpoint on (no checkpoint: the whole window); never written back
    (the `run` loop owns the checkpoint)."""
    if settings.as_of is not None:
        raise setting_error("from_checkpoint", "a checkpoint holds the present: it cannot be used with as_of")
    if settings.source != "prometheus":
        raise setting_error("from_checkpoint", f"only the prometheus source has one, not {settings.source}")
    from recommender.incremental.wiring import incremental

    return incremental(settings, source, lambda: wiring.api_client(settings.kubeconfig), None, save=False)


def _size_clusters(
    settings: RecommenderSettings,
    wiring: Wiring,
    source: MetricsSource,
    inputs: tuple[Bounds, PriceTable],
    now: datetime,
    printer: Progress | None,
) -> OneRun:
    """The per-cluster loop: each cluster collected (one at a time, so memory holds one cluster's data),
    sized with its own nodes' ceilings and bounds, reported; then the runs and reports merged."""
    start = now - timedelta(days=settings.window_days)
    (bounds, prices), policy = inputs, settings.to_sizing_policy()
    price_file = str(settings.price_file) if settings.price_file is not None else None
    runs: list[RunOutput] = []
    reports: list[Report] = []
    unmatched: list[tuple[str, ...]] = []
    stale: list[str] = []
    for cluster in cluster_sources(source, settings, start, now):
        snapshot = cluster.source.collect(start, now, progress_in(printer, cluster.name))
        if said := of_snapshot(snapshot).statement():
            stale.append(f"cluster {cluster.name}: {said}" if cluster.name else said)
        sized = wiring.sizing(snapshot, policy, prices, now, bounds_in(bounds, cluster.name))
        run = run_in(sized, cluster.name)
        runs.append(run)
        reports.append(Report.of(run, snapshot, settings.plan_policy(), prices=prices, price_file=price_file))
        unmatched.append(snapshot.unmatched_scope)
        del snapshot
    run = merge_runs(runs)
    if not reports:
        reports.append(Report.of(run, None, settings.plan_policy(), prices=prices, price_file=price_file))
    # a scope part is unmatched when it matched nothing in every cluster
    missed = tuple(p for p in (unmatched[0] if unmatched else ()) if all(p in u for u in unmatched))
    return OneRun(run, merge_reports(reports), missed, tuple(stale))


def terminal_width() -> int | None:
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def _recommend(settings: RecommenderSettings, args: argparse.Namespace, wiring: Wiring) -> int:
    if args.write and settings.as_of is not None and settings.store == "crd":
        raise setting_error(
            "as_of",
            "with --write and the crd store a backtest would replace the cluster's current Recommendations; "
            "write it to a JSON file instead (--store json --store-file FILE)",
        )
    store = wiring.store(settings, None) if args.write else None
    result = one_run(settings, wiring, store, progress=not args.no_progress)
    run = result.run
    sys.stdout.write(render(result.report, args.output, terminal_width(), wide=args.wide))
    sys.stdout.flush()
    for line in result.stale:
        print(f"podsizer recommend: {line}", file=sys.stderr)
    if settings.as_of is not None:  # the table does not show the window: say which one this was
        start, end = settings.as_of - timedelta(days=settings.window_days), settings.as_of
        print(f"podsizer recommend: window {start:%FT%TZ} to {end:%FT%TZ} (as of)", file=sys.stderr)
    status = empty_scope_status("recommend", settings, result.unmatched)
    if store is None:
        return status
    recs, _ = writable(store, run.recommendations)  # a crd store: its cluster's only
    failed = store.put_many(recs)
    for rec, err in failed:
        print(f"podsizer recommend: {rec.target}: not written: {err}", file=sys.stderr)
    written = len(recs) - len(failed)
    print(f"wrote {written} recommendations to {store_label(settings)}", file=sys.stderr)
    return 1 if failed else status


def empty_scope_status(command: str, settings: RecommenderSettings, unmatched: tuple[str, ...]) -> int:
    """EMPTY_SCOPE when part of the scope matched no workload (the source logged what), unless
    allow_empty; else 0."""
    if not unmatched or settings.allow_empty:
        return 0
    print(
        f"podsizer {command}: {'; '.join(unmatched)} (exit status {EMPTY_SCOPE}; {flag_name('allow_empty')} "
        "accepts it)",
        file=sys.stderr,
    )
    return EMPTY_SCOPE


def _report_rejections(source: MetricsSource) -> None:
    rejections = sample_rejections(source)
    for reason, count in sorted((rejections.counts() if rejections else {}).items()):
        print(f"podsizer recommend: left out {count} {reason} samples of the metrics source", file=sys.stderr)


# --- run (the loop) ------------------------------------------------------------------------------


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--once", action="store_true", help="one run, then exit (status 1 if it failed)")
    add_arguments(parser, RecommenderSettings, unlisted=ONE_RUN_ONLY)


def run_loop(args: argparse.Namespace, wiring: Wiring = DEFAULT_WIRING) -> int:
    """The recommender loop (or one run with --once); runtime failures are exit status 1."""
    settings = load_settings(args)
    if settings.as_of is not None:
        raise setting_error("as_of", "`podsizer run` sizes the present each cycle; as_of is for recommend")
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
    heartbeat = Heartbeat(settings.liveness_grace_seconds, settings.readiness_source_failure_seconds)
    if settings.metrics_port and not once:
        _restore_readiness(store, heartbeat)
        try:
            server = serve_metrics(registry, settings.metrics_port, settings.metrics_host, heartbeat)
        except OSError as exc:
            where = f"{settings.metrics_host}:{settings.metrics_port}"
            raise setting_error("metrics_port", f"cannot listen on {where}: {exc.strerror or exc}") from exc
        log.info("metrics on http://%s:%d/metrics", settings.metrics_host, server.port)
    source: MetricsSource
    if settings.source == "demo":
        source = _LazySource(lambda: wiring.source(settings, wiring.clock()))
    else:
        source = wiring.source(settings, wiring.clock())
    from recommender.input.prometheus.preflight import after_check, client_of

    client = client_of(source)
    if client is not None:
        client.on_answer(heartbeat.progressed)  # each answer is progress: a long cycle stays live
    metrics = RecommenderMetrics(registry)
    forget_models: Callable[[], None] | None = None
    if settings.incremental:
        from recommender.incremental.wiring import forget, incremental

        def kube() -> ApiClient:
            return api_client if api_client is not None else wiring.api_client(settings.kubeconfig)

        kept = source = incremental(settings, source, kube, metrics)
        forget_models = lambda: forget(kept)  # noqa: E731 - a new leader restores the checkpoint
    rejections = sample_rejections(source)
    if rejections is not None:
        rejections.subscribe(metrics.count_rejected)
    # the connectivity check before each cycle's first request until it passes (failures back off and retry)
    clusters = after_check(source, settings, lambda start, end: cluster_sources(source, settings, start, end))
    runner = Runner(
        source,
        store,
        _recommend_fn(settings, wiring),
        window_days=settings.window_days,
        interval_seconds=settings.interval_seconds,
        backoff_initial_seconds=settings.backoff_initial_seconds,
        backoff_max_seconds=settings.backoff_max_seconds,
        clock=wiring.clock,
        metrics=metrics,
        leadership=leadership,
        heartbeat=heartbeat,
        clusters=clusters,  # the per-cluster loop
        on_leadership_lost=forget_models,
    )
    try:
        if once:
            return _run_once(runner, source, settings)
        return _forever(runner, source, leadership, settings, client.stop if client is not None else None)
    finally:
        from recommender.incremental.wiring import flush

        flush(source)  # the last checkpoint is written before the process ends
        if server is not None:
            server.stop()


def _restore_readiness(store: RecommendationStore, heartbeat: Heartbeat) -> None:
    """Recommendations already in the store stay in force: the recommender is ready before its first cycle."""
    try:
        if store.list():
            heartbeat.restored()
    except Exception as exc:  # the first cycle reports store trouble properly
        log.info("cannot read the store at start (%s); ready after the first successful cycle", exc)


def _recommend_fn(settings: RecommenderSettings, wiring: Wiring) -> RecommendFn:
    policy, prices = settings.to_sizing_policy(), wiring.prices(settings)

    def fn(snapshot: UsageSnapshot, bounds: Bounds, now: datetime) -> RunOutput:
        return wiring.sizing(snapshot, policy, prices, now, bounds)

    return fn


def _leadership(settings: RecommenderSettings, api_client: object) -> Leadership:
    from podsizer.leader import AlwaysLeader, LeaderElector, LeaseApi

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
    runner: Runner,
    source: MetricsSource,
    leadership: Leadership,
    settings: RecommenderSettings,
    stop_reads: Callable[[], None] | None,
) -> int:
    """The loop until SIGTERM or SIGINT; `stop_reads` ends the metrics source's requests in progress (within
    about a second), so a signal stops the loop within seconds even in the middle of a slow read."""
    stop = threading.Event()

    def _stop(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: stopping", signum)
        stop.set()
        if stop_reads is not None:
            stop_reads()

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
