"""The `podsizer` command line: recommend (one run), run (the loop), and the webhook/certs/demo hooks.

Exit status: 0 success, 1 a runtime failure (metrics source or store; one line on stderr, no
traceback), 2 bad usage or configuration (the message names the variable or flag).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import logging
import math
import os
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any, cast

from recommender.config import (
    ConfigError,
    RecommenderSettings,
    add_settings_arguments,
    env_name,
    flag_values,
    load_settings,
)
from recommender.model import MetricsSource, Progress, SourceError, UsageSnapshot
from recommender.output.report import FORMATS, Report, render
from recommender.output.store.base import RecommendationStore, StoreError

log = logging.getLogger("podsizer")

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


# --- progress ------------------------------------------------------------------------------------


class ProgressPrinter:
    """A Progress callback for stderr: an updating `\\r[12/40] what` line on a TTY, else a plain
    line at most every `interval` seconds (short runs print nothing)."""

    def __init__(
        self,
        stream: IO[str],
        tty: bool,
        *,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.tty = tty
        self.interval = interval
        self.clock = clock
        self._last = clock()
        self._width = 0
        self._printed = False
        self._state: tuple[int, int, str] | None = None

    def __call__(self, done: int, total: int, what: str) -> None:
        self._state = (done, total, what)
        now = self.clock()
        text = f"[{done}/{total}] {what}"
        if self.tty:
            if now - self._last < 0.1 and done < total and self._printed:
                return
            cols = shutil.get_terminal_size((100, 20)).columns - 1
            text = text[:cols]
            self.stream.write("\r" + text.ljust(self._width))
            self._width = len(text)
        else:
            if now - self._last < self.interval:
                return
            self.stream.write(text + "\n")
        self.stream.flush()
        self._last = now
        self._printed = True

    def finish(self) -> None:
        """Clear the TTY line; off a TTY, a last line when earlier ones were printed."""
        if not self._printed:
            return
        if self.tty:
            self.stream.write("\r" + " " * self._width + "\r")
        elif self._state is not None:
            done, total, what = self._state
            self.stream.write(f"[{done}/{total}] {what}\n")
        self.stream.flush()


# --- wiring --------------------------------------------------------------------------------------


class NamespaceFilter:
    """Keeps only the given namespaces of another source's snapshot (for sources without a filter)."""

    def __init__(self, inner: MetricsSource, namespaces: frozenset[str]) -> None:
        self.inner = inner
        self.namespaces = namespaces
        self.name = inner.name

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        snap = self.inner.collect(start, end, progress)
        keep = self.namespaces
        return dataclasses.replace(
            snap,
            containers=tuple(c for c in snap.containers if c.workload.namespace in keep),
            gpus=tuple(g for g in snap.gpus if g.workload.namespace in keep),
            autoscalers=tuple(a for a in snap.autoscalers if a.workload.namespace in keep),
            demand=tuple(d for d in snap.demand if d.workload.namespace in keep),
            # Skipped subjects start with their namespace ("shop/pod/x"); node-level ones are dropped.
            skipped=tuple(s for s in snap.skipped if s.subject.split("/", 1)[0] in keep),
        )


def build_source(settings: RecommenderSettings, now: datetime) -> MetricsSource:
    """The metrics source the settings name (modules imported only when chosen)."""
    source: MetricsSource
    if settings.source == "demo":
        from recommender.input.demo import DemoSource

        source = DemoSource(now, days=max(1, math.ceil(settings.window_days)))
    elif settings.source == "file":
        if settings.source_file is None:
            raise ConfigError(f"{env_name('source_file')}: required when {env_name('source')}=file")
        from recommender.input.file import FileSource

        source = FileSource(settings.source_file)
    elif settings.source == "dcgm":
        source = build_dcgm_source(settings)
    else:
        from recommender.input.prometheus import PromClient, PrometheusSource

        headers: dict[str, str] = {}
        if settings.prometheus_bearer_token_file is not None:
            try:
                token = settings.prometheus_bearer_token_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ConfigError(
                    f"{env_name('prometheus_bearer_token_file')}: cannot read"
                    f" {settings.prometheus_bearer_token_file}: {exc.strerror or exc}"
                ) from exc
            headers["Authorization"] = f"Bearer {token}"
        client = PromClient(
            settings.prometheus_url, timeout=settings.prometheus_timeout_seconds, headers=headers
        )
        return PrometheusSource(client, namespaces=list(settings.namespaces) or None)
    if settings.namespaces:
        return NamespaceFilter(source, frozenset(settings.namespaces))
    return source


class KubeResolver:
    """(namespace, pod) -> workload through the cluster's owner chain, re-read at most every max_age s."""

    def __init__(
        self, api_client: Any, max_age: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.api_client = api_client
        self.max_age = max_age
        self.clock = clock
        self._graph: Any = None
        self._loaded = -math.inf

    def __call__(self, namespace: str, pod: str) -> Any:
        if self._graph is None or self.clock() - self._loaded > self.max_age:
            from recommender.input.kube import load_inventory

            try:
                self._graph = load_inventory(self.api_client).graph
            except Exception as exc:
                if self._graph is None:
                    raise SourceError(f"cannot list pods to resolve GPU pods to workloads: {exc}") from exc
                log.warning("keeping the previous pod inventory: %s", exc)
            self._loaded = self.clock()
        return self._graph.resolve(namespace, pod)


class LockedDcgmSource:
    """The dcgm scrape source behind one lock: its series store is not thread-safe, and `run`
    scrapes from a background thread while the loop collects."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name: str = inner.name
        self._lock = threading.Lock()

    def scrape_once(self, strict: bool = False) -> Any:
        """One scrape of every endpoint; `strict`: SourceError when none of them answered."""
        with self._lock:
            try:
                result = self.inner.scrape_once()
            except OSError as exc:
                raise SourceError(f"cannot store scraped DCGM samples: {exc}") from exc
        if strict and result.endpoints_ok == 0 and result.errors:
            raise SourceError(
                "no dcgm-exporter endpoint answered: " + "; ".join(str(e) for e in result.errors)
            )
        for err in result.errors:
            log.warning("dcgm scrape: %s", err)
        return result

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        with self._lock:
            return self.inner.collect(start, end, progress)  # type: ignore[no-any-return]

    def scrape_forever(self, stop: threading.Event, interval: float) -> None:
        while not stop.is_set():
            try:
                self.scrape_once()
            except Exception:
                log.exception("dcgm scrape failed")
            if stop.wait(interval):
                return


def _dcgm_of(source: MetricsSource) -> LockedDcgmSource | None:
    inner = source.inner if isinstance(source, NamespaceFilter) else source
    return inner if isinstance(inner, LockedDcgmSource) else None


def build_dcgm_source(settings: RecommenderSettings) -> LockedDcgmSource:
    """dcgm-exporter endpoints scraped into a local series store (journaled at dcgm_store_path); GPU
    pods are resolved to workloads through the cluster's owner chain when a cluster is reachable."""
    if not settings.dcgm_urls:
        raise ConfigError(f"{env_name('dcgm_urls')}: required when {env_name('source')}=dcgm")
    from recommender.input.dcgm_scrape import DcgmScrapeSource
    from recommender.input.local_store import SeriesStore

    resolver = None
    try:
        resolver = KubeResolver(kube_api_client(settings.kubeconfig))
    except ConfigError as exc:
        log.warning("no cluster to resolve GPU pods to workloads; they will be skipped (%s)", exc)
    try:
        store = SeriesStore(settings.window_days * 86400.0, settings.dcgm_store_path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{env_name('dcgm_store_path')}: {settings.dcgm_store_path}: {exc}") from exc
    return LockedDcgmSource(DcgmScrapeSource(list(settings.dcgm_urls), store, _utcnow, resolver=resolver))


def kube_api_client(kubeconfig: Path | None) -> Any:
    """A kubernetes ApiClient: the kubeconfig given, else in-cluster, else ~/.kube/config."""
    from kubernetes import client, config

    try:
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            cfg = client.Configuration()
            config.load_incluster_config(client_configuration=cfg)
            return client.ApiClient(cfg)
        return config.new_client_from_config(config_file=str(kubeconfig) if kubeconfig else None)
    except (config.ConfigException, OSError) as exc:
        where = env_name("kubeconfig")
        raise ConfigError(f"{where}: no usable Kubernetes configuration: {exc}") from exc


def build_store(settings: RecommenderSettings, api_client: Any = None) -> RecommendationStore:
    if settings.store == "crd":
        from recommender.output.store.crd import CrdStore

        return CrdStore(api_client or kube_api_client(settings.kubeconfig), settings.store_namespace)
    from recommender.output.store.jsonfile import JsonFileStore

    return JsonFileStore(settings.store_file)


def build_prices(settings: RecommenderSettings) -> Any:
    from recommender.sizing.cost import PriceTable, PriceTableError

    try:
        return PriceTable.load(settings.price_file, settings.default_gpu_hourly_price, settings.spot_discount)
    except (PriceTableError, ValueError) as exc:
        raise ConfigError(f"{env_name('price_file')}: {exc}") from exc


def _settings(args: argparse.Namespace) -> RecommenderSettings:
    settings = load_settings(flag_values(args))
    logging.basicConfig(
        level=settings.log_level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return settings


def _utcnow() -> datetime:
    return datetime.now(UTC)


# --- recommend -----------------------------------------------------------------------------------


def add_recommend_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", choices=FORMATS, default="table", help="output format (default: table)"
    )
    parser.add_argument("--write", action="store_true", help="also write the recommendations to the store")
    parser.add_argument("--no-progress", action="store_true", help="no progress indicator on stderr")
    add_settings_arguments(parser)


def run_recommend(args: argparse.Namespace) -> int:
    settings = _settings(args)
    now = _utcnow()
    source = build_source(settings, now)
    prices = build_prices(settings)
    store = build_store(settings) if args.write else None
    progress = None if args.no_progress else ProgressPrinter(sys.stderr, sys.stderr.isatty())
    try:
        bounds = store.bounds() if store is not None else {}
        dcgm = _dcgm_of(source)
        if dcgm is not None:
            dcgm.scrape_once(strict=True)
            now = _utcnow()  # the window [start, now) must include the scrape just taken
        snapshot = source.collect(now - timedelta(days=settings.window_days), now, progress)
    except (SourceError, StoreError) as exc:
        if progress is not None:
            progress.finish()
        print(f"podsizer recommend: {exc}", file=sys.stderr)
        return 1
    if progress is not None:
        progress.finish()
    from recommender.sizing.engine import recommend

    run = recommend(snapshot, settings.to_sizing_policy(), prices, now, bounds)
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    sys.stdout.write(render(Report.of(run, snapshot), args.output, width))
    sys.stdout.flush()
    if store is None:
        return 0
    try:
        failed = store.put_many(run.recommendations)
    except StoreError as exc:
        print(f"podsizer recommend: {exc}", file=sys.stderr)
        return 1
    for rec, err in failed:
        print(f"podsizer recommend: {rec.target}: not written: {err}", file=sys.stderr)
    written = len(run.recommendations) - len(failed)
    print(f"wrote {written} recommendations to {_store_label(settings)}", file=sys.stderr)
    return 1 if failed else 0


def _store_label(settings: RecommenderSettings) -> str:
    if settings.store == "json":
        return str(settings.store_file)
    return "Recommendation resources" + (
        f" in {settings.store_namespace}" if settings.store_namespace else ""
    )


# --- run (the loop) ------------------------------------------------------------------------------


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--once", action="store_true", help="one run, then exit (status 1 if it failed)")
    add_settings_arguments(parser)


def _identity(settings: RecommenderSettings) -> str:
    return settings.identity or os.environ.get("POD_NAME") or socket.gethostname()


def _lease_namespace(settings: RecommenderSettings) -> str:
    if settings.lease_namespace:
        return settings.lease_namespace
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or "default"
    except OSError:
        return "default"


def run_loop(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry

    from recommender.leader import AlwaysLeader, LeaderElector, Leadership, LeaseApi
    from recommender.metrics import MetricsServer, RecommenderMetrics, serve_metrics
    from recommender.runner import Runner, engine_recommender

    settings = _settings(args)
    api_client = None
    if settings.store == "crd" or settings.leader_election:
        api_client = kube_api_client(settings.kubeconfig)
    store = build_store(settings, api_client)
    prices = build_prices(settings)
    registry = CollectorRegistry()
    metrics = RecommenderMetrics(registry)
    leadership: Leadership = AlwaysLeader()
    if settings.leader_election:
        from kubernetes import client

        leadership = LeaderElector(
            cast(LeaseApi, client.CoordinationV1Api(api_client)),
            settings.lease_name,
            _lease_namespace(settings),
            _identity(settings),
            lease_duration_seconds=settings.lease_duration_seconds,
            renew_deadline_seconds=settings.lease_renew_deadline_seconds,
            retry_period_seconds=settings.lease_retry_period_seconds,
        )
    server: MetricsServer | None = None
    if settings.metrics_port and not args.once:
        try:
            server = serve_metrics(registry, settings.metrics_port, settings.metrics_host)
        except OSError as exc:
            raise ConfigError(
                f"{env_name('metrics_port')}: cannot listen on"
                f" {settings.metrics_host}:{settings.metrics_port}: {exc.strerror or exc}"
            ) from exc
        log.info("metrics on http://%s:%d/metrics", settings.metrics_host, server.port)

    source: MetricsSource
    if settings.source == "demo":
        source = _LazySource(lambda: build_source(settings, _utcnow()))
    else:
        source = build_source(settings, _utcnow())
    dcgm = _dcgm_of(source)

    runner = Runner(
        source,
        store,
        engine_recommender(settings.to_sizing_policy(), prices),
        window_days=settings.window_days,
        interval_seconds=settings.interval_seconds,
        backoff_initial_seconds=settings.backoff_initial_seconds,
        backoff_max_seconds=settings.backoff_max_seconds,
        metrics=metrics,
        leadership=leadership,
    )
    if args.once:
        if dcgm is not None:
            dcgm.scrape_once()
        result = runner.run_once()
        for err in result.errors:
            print(f"podsizer run: {err.kind}: {err.subject}: {err.message}", file=sys.stderr)
        print(f"wrote {result.written} recommendations to {_store_label(settings)}", file=sys.stderr)
        return 0 if result.ok and not result.errors else 1
    stop = threading.Event()

    def _stop(signum: int, _frame: Any) -> None:
        log.info("signal %d: stopping", signum)
        stop.set()

    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
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
        if server is not None:
            server.stop()
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


# --- the command table ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """A subcommand: built in (add_arguments/run given) or in a module imported only when chosen."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None
    run: Callable[[argparse.Namespace], int] | None = None
    module: str | None = None


COMMANDS: tuple[Command, ...] = (
    Command(
        "recommend", "one run: metrics -> recommendations, printed", add_recommend_arguments, run_recommend
    ),
    Command("run", "the recommender loop (interval, leader election, /metrics)", add_run_arguments, run_loop),
    Command("webhook", "the mutating admission webhook server", module="webhook.cli"),
    Command("certs", "CA and serving certificates for the webhook", module="certs.cli"),
    Command("demo", "the demo: recommender and webhook on built-in data", module="recommender.demo"),
    Command("console", "the read-only web console", module="console.cli"),
)


def _chosen(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(
    commands: Sequence[Command] = COMMANDS, chosen: str | None = None
) -> tuple[argparse.ArgumentParser, dict[str, Callable[[argparse.Namespace], int]]]:
    """The parser; a module-backed command's module is imported only when it is `chosen` (and an
    import failure raises ImportError for the caller to report)."""
    parser = argparse.ArgumentParser(
        prog="podsizer", description="Right-size Kubernetes workloads, GPUs included."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    runs: dict[str, Callable[[argparse.Namespace], int]] = {}
    for cmd in commands:
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        if cmd.module is None:
            assert cmd.add_arguments is not None and cmd.run is not None
            cmd.add_arguments(p)
            runs[cmd.name] = cmd.run
        elif cmd.name == chosen:
            module: Any = importlib.import_module(cmd.module)
            module.add_arguments(p)
            runs[cmd.name] = module.run
    return parser, runs


def main(argv: Sequence[str] | None = None, commands: Sequence[Command] = COMMANDS) -> int:
    """Entry point of the `podsizer` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = _chosen(argv)
    try:
        parser, runs = build_parser(commands, chosen)
    except (ImportError, AttributeError) as exc:
        print(f"podsizer {chosen}: not available in this installation ({exc})", file=sys.stderr)
        return 1
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return runs[args.command](args)
    except ConfigError as exc:
        print(f"podsizer {args.command}: {exc}", file=sys.stderr)
        return 2
    except (SourceError, StoreError) as exc:
        print(f"podsizer {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
