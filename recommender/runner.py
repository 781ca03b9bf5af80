"""The recommender loop: every interval collect -> recommend -> store; failures never stop it.

A run reads `window_days` of history up to now (injected clock), sizes every workload with the
store's user bounds, and writes each recommendation. One workload failing (sizing or store write)
is counted and logged; the others are written. A source failure (SourceError, or anything the
source raises) and an unreadable store leave the store untouched, so the last recommendations stay
in force, and the next try comes after an exponential backoff (capped, jittered) instead of the
interval. A replica that is not the leader neither collects nor writes.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import ContainerPolicy, Recommendation
from podsizer.leader import Leadership
from podsizer.owners import Skipped
from recommender.clusters import ClusterSource, bounds_in, progress_in
from recommender.health import Heartbeat
from recommender.metrics import RecommenderMetrics
from recommender.model import MetricsSource, Progress, SourceError, UsageSnapshot
from recommender.model.clusters import skipped_in
from recommender.output.store.base import RecommendationStore, StoreError, writable

if TYPE_CHECKING:
    from recommender.sizing.cost import CostReport
    from recommender.sizing.waste import WasteFinding

log = logging.getLogger("podsizer.runner")

Bounds = Mapping[WorkloadRef, tuple[ContainerPolicy, ...]]


class RunOutput(Protocol):
    """What the sizing step returns (recommender.sizing.engine.RecommendationRun satisfies it)."""

    @property
    def recommendations(self) -> tuple[Recommendation, ...]: ...

    @property
    def skipped(self) -> tuple[Skipped, ...]: ...


RecommendFn = Callable[[UsageSnapshot, Bounds, datetime], RunOutput]


@dataclass(frozen=True)
class MergedRun:
    """Several clusters' sizing runs as one: recommendations, skipped, GPU waste and costs of all."""

    recommendations: tuple[Recommendation, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    waste: tuple[WasteFinding, ...] = ()
    costs: CostReport | None = None


def run_in(output: RunOutput, cluster: str) -> RunOutput:
    """One cluster's run with its skipped subjects in the cluster (`cluster:shop/pod/x`); the workloads'
    own entries carry it already. The output itself without a cluster."""
    if not cluster:
        return output
    return MergedRun(
        recommendations=tuple(output.recommendations),
        skipped=tuple(skipped_in(s, cluster) for s in output.skipped),
        waste=tuple(getattr(output, "waste", ())),
        costs=getattr(output, "costs", None),
    )


def merge_runs(outputs: Sequence[RunOutput]) -> RunOutput:
    """One run's output from its clusters' (in the order given); a single output is returned as it is."""
    if len(outputs) == 1:
        return outputs[0]
    from recommender.output.report import merge_costs

    return MergedRun(
        recommendations=tuple(r for o in outputs for r in o.recommendations),
        skipped=tuple(s for o in outputs for s in o.skipped),
        waste=tuple(w for o in outputs for w in getattr(o, "waste", ())),
        costs=merge_costs(getattr(o, "costs", None) for o in outputs),
    )


def engine_recommender(policy: Any, prices: Any) -> RecommendFn:
    """The sizing engine as a RecommendFn (imported here so the loop can be tested without it)."""
    from recommender.sizing.engine import recommend

    def fn(snapshot: UsageSnapshot, bounds: Bounds, now: datetime) -> RunOutput:
        return recommend(snapshot, policy, prices, now, bounds)

    return fn


@dataclass(frozen=True)
class RunError:
    """One counted error of a run."""

    kind: str  # source | sizing | store
    subject: str
    message: str


@dataclass(frozen=True)
class RunResult:
    """What one run did. `ok`: the source answered and the store was reachable (individual
    workload failures are in `errors`); `retry`: the loop should back off instead of waiting."""

    started_at: datetime
    duration_seconds: float
    ok: bool
    retry: bool
    written: int = 0
    recommendations: tuple[Recommendation, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    errors: tuple[RunError, ...] = ()
    wrote_store: bool = False
    note: str = ""
    output: Any = field(default=None, compare=False)


def backoff_delay(failures: int, initial: float, maximum: float, jitter: float) -> float:
    """initial x 2^(failures-1), capped at maximum, then scaled into [50 %, 100 %] by jitter in [0, 1)."""
    base = min(maximum, initial * (2.0 ** max(0, failures - 1)))
    return base * (0.5 + 0.5 * jitter)


class Runner:
    """The loop around source -> sizing -> store; run_once() is one run, run_forever() the loop."""

    def __init__(
        self,
        source: MetricsSource,
        store: RecommendationStore,
        recommend: RecommendFn,
        *,
        window_days: float = 7.0,
        interval_seconds: float = 3600.0,
        backoff_initial_seconds: float = 10.0,
        backoff_max_seconds: float = 600.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
        metrics: RecommenderMetrics | None = None,
        leadership: Leadership | None = None,
        progress: Progress | None = None,
        leader_poll_seconds: float = 1.0,
        heartbeat: Heartbeat | None = None,
        clusters: Callable[[datetime, datetime], Sequence[ClusterSource]] | None = None,
        on_leadership_lost: Callable[[], None] | None = None,
    ) -> None:
        """`clusters(start, end)`: the clusters of a run and each one's source (recommender.clusters);
        None: `source` is the one cluster. `on_leadership_lost`: called once each time this replica stops
        being the leader (the incremental source drops its model: the next leader's checkpoint wins)."""
        self.source = source
        self.clusters = clusters
        self.store = store
        self.recommend = recommend
        self.window = timedelta(days=window_days)
        self.interval = interval_seconds
        self.backoff_initial = backoff_initial_seconds
        self.backoff_max = backoff_max_seconds
        self.clock = clock
        self.monotonic = monotonic
        self.jitter = jitter
        self.metrics = metrics
        self.leadership = leadership
        self.progress = progress
        self.leader_poll = leader_poll_seconds
        self.heartbeat = heartbeat
        self.on_leadership_lost = on_leadership_lost
        self.was_leader = False
        self.failures = 0

    def _is_leader(self) -> bool:
        leader = self.leadership is None or self.leadership.is_leader()
        if self.metrics is not None:
            self.metrics.leader.set(1 if leader else 0)
        if self.was_leader and not leader and self.on_leadership_lost is not None:
            log.info("no longer the leader: the in-memory usage model is dropped")
            self.on_leadership_lost()
        self.was_leader = leader
        return leader

    def _finish(self, result: RunResult, outcome: str) -> RunResult:
        m = self.metrics
        if m is not None:
            m.loop_duration.labels(outcome=outcome).observe(result.duration_seconds)
            for err in result.errors:
                m.errors.labels(kind=err.kind).inc()
            if result.wrote_store:
                failed = sum(1 for e in result.errors if e.kind in ("sizing", "store"))
                m.workloads_processed.labels(outcome="recommended").inc(result.written)
                m.workloads_processed.labels(outcome="failed").inc(failed)
                m.workloads_processed.labels(outcome="skipped").inc(
                    sum(1 for s in result.skipped if not s.failed)
                )
            if result.ok and result.wrote_store:
                m.last_success.set(self.clock().timestamp())
                m.recommendations.set(result.written)
        for err in result.errors:
            log.error("%s error: %s: %s", err.kind, err.subject, err.message)
        return result

    def run_once(self) -> RunResult:
        """One run; never raises for source, sizing or store failures (they are in the result)."""
        t0 = self.monotonic()
        now = self.clock()

        def done(**kw: Any) -> RunResult:
            return RunResult(started_at=now, duration_seconds=self.monotonic() - t0, **kw)

        sized = self._size_clusters(now, done)
        if isinstance(sized, RunResult):
            return sized
        output = merge_runs(sized)

        # a crd store takes its cluster's only (several clusters into it without a name: SettingsError)
        recs = tuple(writable(self.store, output.recommendations)[0])
        skipped = tuple(output.skipped)
        errors = [RunError("sizing", str(s.subject), s.reason) for s in skipped if s.failed]
        if not self._is_leader():
            result = done(
                ok=False,
                retry=False,
                recommendations=recs,
                skipped=skipped,
                errors=tuple(errors),
                note="not the leader any more; nothing written",
                output=output,
            )
            return self._finish(result, "not_leader")

        self._progressed(f"writing {len(recs)} recommendations")
        failed = self._put(recs)
        errors.extend(RunError("store", str(rec.target), str(exc)) for rec, exc in failed)
        store_down = (
            bool(recs) and len(failed) == len(recs) and all(isinstance(e, StoreError) for _, e in failed)
        )
        result = done(
            ok=not store_down,
            retry=store_down,
            written=len(recs) - len(failed),
            recommendations=recs,
            skipped=skipped,
            errors=tuple(errors),
            wrote_store=True,
            output=output,
        )
        return self._finish(result, "store_error" if store_down else "ok")

    def _clusters(self, now: datetime) -> Sequence[ClusterSource]:
        return self.clusters(now - self.window, now) if self.clusters else [ClusterSource("", self.source)]

    def _size_clusters(self, now: datetime, done: Callable[..., RunResult]) -> list[RunOutput] | RunResult:
        """Per cluster, one after the other: collect, then size with the store's bounds of that cluster.
        Any cluster's source failure fails the run (the last recommendations stay in force)."""
        outputs: list[RunOutput] = []
        bounds: Bounds | None = None
        try:
            clusters = self._clusters(now)
        except Exception as exc:
            return self._source_failed(exc, done)
        for cluster in clusters:
            try:
                snapshot = cluster.source.collect(
                    now - self.window, now, progress_in(self._cycle_progress(), cluster.name)
                )
            except Exception as exc:
                return self._source_failed(exc, done)
            self._progressed(f"sizing{f' cluster {cluster.name}' if cluster.name else ''}")
            if bounds is None:
                try:
                    bounds = self.store.bounds()
                except StoreError as exc:
                    err = RunError("store", "bounds", str(exc))
                    return self._finish(
                        done(ok=False, retry=True, errors=(err,), note="store unreadable"), "store_error"
                    )
            try:
                sized = self.recommend(snapshot, bounds_in(bounds, cluster.name), now)
                outputs.append(run_in(sized, cluster.name))
            except Exception as exc:
                log.exception("sizing raised")
                err = RunError("sizing", "run", f"{type(exc).__name__}: {exc}")
                return self._finish(
                    done(ok=False, retry=True, errors=(err,), note="sizing failed"), "sizing_error"
                )
            del snapshot  # the next cluster's data replaces this one's
        return outputs

    def _cycle_progress(self) -> Progress | None:
        """The source's progress for the caller's callback and for the heartbeat (progress keeps a cycle
        live: recommender/health.py)."""
        shown, beat = self.progress, self.heartbeat
        if beat is None or shown is None:
            return beat.progress if beat is not None else shown

        def both(done: int, total: int, what: str) -> None:
            shown(done, total, what)
            beat.progress(done, total, what)

        return both

    def _progressed(self, what: str) -> None:
        if self.heartbeat is not None:
            self.heartbeat.progressed(what)

    def _source_failed(self, exc: Exception, done: Callable[..., RunResult]) -> RunResult:
        if not isinstance(exc, SourceError):
            log.exception("source %s raised unexpectedly", getattr(self.source, "name", "?"))
        err = RunError("source", getattr(self.source, "name", "source"), str(exc) or type(exc).__name__)
        return self._finish(done(ok=False, retry=True, errors=(err,), note="source failed"), "source_error")

    def _put(self, recs: Sequence[Recommendation]) -> list[tuple[Recommendation, Exception]]:
        try:
            return self.store.put_many(recs)
        except StoreError as exc:
            return [(rec, exc) for rec in recs]

    def next_delay(self, result: RunResult) -> float:
        """Backoff after a retryable failure, else the rest of the interval."""
        if result.retry:
            self.failures += 1
            return backoff_delay(self.failures, self.backoff_initial, self.backoff_max, self.jitter())
        self.failures = 0
        return max(0.0, self.interval - result.duration_seconds)

    def run_forever(self, stop: threading.Event, wait: Callable[[float], bool] | None = None) -> None:
        """Loop until `stop` is set; `wait(seconds)` sleeps and returns True when asked to stop."""
        wait = wait or stop.wait
        beat = self.heartbeat
        while not stop.is_set():
            if not self._is_leader():
                if beat is not None:
                    beat.standby(self.leader_poll)
                if wait(self.leader_poll):
                    break
                continue
            if beat is not None:
                beat.cycle_started()
            result = self.run_once()
            delay = self.next_delay(result)
            if beat is not None:
                source_failed = any(e.kind == "source" for e in result.errors) and not result.wrote_store
                beat.cycle_finished(result.ok and result.wrote_store, source_failed, delay)
            log.info(
                "run: %d written, %d skipped, %d errors in %.1fs; next in %.0fs%s",
                result.written,
                len(result.skipped),
                len(result.errors),
                result.duration_seconds,
                delay,
                f" ({result.note})" if result.note else "",
            )
            if wait(delay):
                break
