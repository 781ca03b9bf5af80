"""IncrementalSource: a MetricsSource whose cycles read only the samples since the last one.

- Cold start (no model, or a rebuild): the window is read `namespace_batch` namespaces at a time, each
  batch in time chunks of `chunk` (hour-aligned), every chunk folded into the model before the next is
  read, so memory holds one batch's chunk of samples; then one short read (the last hour again) brings
  the window's pods, GPUs, autoscalers and nodes.
- Delta cycle: from the start of the hour holding the newest sample in the model to the window's end; only
  samples after that newest one feed the histograms (the re-read hour's demand replaces the earlier one).
  Pods and owner links are looked up for that interval and added to those known from earlier cycles
  (KnownPods; the first cycle after a restore looks up the window's); GPUs, autoscalers and nodes are
  read for the whole window (cluster-wide queries: GPU usage is the window's, its dcgm series re-read
  each cycle).
- Rebuild (stated in the log and the usage-cycles metric) when: there is no model; the window's end is
  more than one window after the model's newest sample (a gap); the end is before it (a backtest); the
  decay is off and the model is older than one window (without decay old samples never fade); a
  checkpoint is missing, corrupt, stale or from other settings or another source.
- Checkpoints: after every cycle the model is serialised (one blob per workload, or one) and written to
  the store in the background (a cycle does not wait for thousands of API writes; the next cycle waits
  for it before it changes the model; `flush()` before exit), and restored when the source has no model
  (at start, and when this replica becomes the leader again: `forget()`). Objects of different cycles (a write
  interrupted or failed for some workloads) are fine: those workloads are read from their own time. A
  checkpoint that cannot be trusted (corrupt, truncated, another version, other settings or source, an
  unreadable object) is discarded with a log line and rebuilt.
"""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from podsizer.api.identity import WorkloadRef
from recommender.checkpoints.base import BlobKey, CheckpointStore, CheckpointStoreError, ReadResult
from recommender.incremental.quiet_gc import collector_paused
from recommender.input.prometheus.client import step_for
from recommender.input.prometheus.source import PrometheusSource
from recommender.metrics import RecommenderMetrics
from recommender.model import Progress, UsageSnapshot
from recommender.model.aggregate import snapshot
from recommender.model.checkpoint import CheckpointError, CheckpointSettings, dumps, read
from recommender.model.pods import KnownPods
from recommender.model.raw import RawDataset
from recommender.model.samples import Resolver, memo, owner_graph
from recommender.model.state_build import build_states
from recommender.model.stream import cold_start
from recommender.model.timegrid import floor_to
from recommender.model.usage_model import UsageModel
from recommender.model.usage_state import HOUR_S, StateKey, UsageState

log = logging.getLogger("podsizer.incremental")

DEFAULT_CHUNK = timedelta(hours=6)


@dataclass(frozen=True)
class CycleReport:
    """What one cycle did: kind (cold | delta | restored), why a cold one, how long, what it read."""

    kind: str
    reason: str
    seconds: float
    read_from: datetime
    read_to: datetime
    states: int
    state_bytes: int
    forgotten: int = 0


_Read = tuple[RawDataset, datetime, Resolver]
"""A cycle's read: the dataset the snapshot takes its pods, GPUs and nodes from, where the read began,
and the owner resolution of the dataset's pods."""


def _dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


class IncrementalSource:
    """Wraps a PrometheusSource; collect(start, end) keeps a UsageModel between calls (module docstring)."""

    def __init__(
        self,
        source: PrometheusSource,
        *,
        window: timedelta,
        store: CheckpointStore | None = None,
        chunk: timedelta = DEFAULT_CHUNK,
        metrics: RecommenderMetrics | None = None,
        fingerprint: str = "",
        save: bool = True,
        namespace_batch: int = 20,
    ) -> None:
        """`save` False: the store is only read (a one-shot `recommend --from-checkpoint`)."""
        if chunk.total_seconds() < HOUR_S or chunk.total_seconds() % HOUR_S:
            raise ValueError(f"chunk must be a whole number of hours, got {chunk}")
        self.source = source
        self.name = source.name
        self.window = window
        self.store = store
        self.save = save
        self.namespace_batch = max(1, namespace_batch)
        self.chunk_s = chunk.total_seconds()
        self.metrics = metrics
        self.recency = source.recency
        self.model: UsageModel | None = None
        self.known = KnownPods()
        """Pods and owner links of the window, so that a delta cycle looks up only its interval's."""
        self.last_cycle: CycleReport | None = None
        self._writer: ThreadPoolExecutor | None = None
        self.checkpoint_bytes = 0
        """Bytes of the last checkpoint serialised (after flush(): of this cycle's)."""
        self._pending: Future[None] | None = None
        self._restored = False
        client = getattr(source.client, "base_url", "")
        self.settings = CheckpointSettings(
            half_life_s=self.recency.half_life_s or None,
            step_s=float(source.resolution_s),
            source=(
                f"url={client}|cluster={source.cluster}|label={source.cluster_label}|rate={source.rate_s}"
                f"|window={window.total_seconds():g}|template={self.recency.template_full_history_s:g}"
                f"|{fingerprint}"
            ),
        )

    # ---- the cycle ---------------------------------------------------------------------------

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        t0 = time.monotonic()
        self.flush()  # the previous cycle's checkpoint is written before the model changes again
        if self.model is None and self.store is not None and not self._restored:
            self.model = self._restore()
            self._restored = True
        reason = self._rebuild_reason(start, end)
        with self.source.cycle():  # one sample budget for the cycle's reads
            if reason:
                kind = "cold"
                raw, read_from, resolve = self._cold(start, end, progress)
            else:
                kind = "restored" if self._restored and self.last_cycle is None else "delta"
                with collector_paused():
                    raw, read_from, resolve = self._delta(start, end, progress)
        model = self.model
        assert model is not None
        forgotten = model.forget_before(start.timestamp())
        with collector_paused():
            snapshot = self._snapshot(model, raw, resolve, (start, end))
        self._save(model)
        self.last_cycle = CycleReport(
            kind, reason, time.monotonic() - t0, read_from, end, len(model.states), model.nbytes(), forgotten
        )
        self._report(self.last_cycle)
        return snapshot

    def forget(self) -> None:
        """Drops the in-memory model: the next cycle restores the checkpoint (another leader may have
        advanced it) or rebuilds."""
        self.model, self._restored, self.last_cycle = None, False, None
        self.known = KnownPods()

    def _rebuild_reason(self, start: datetime, end: datetime) -> str:
        m = self.model
        if m is None or not m.states or math.isnan(m.covered_until):
            return "no usage model yet"
        newest, t = m.covered_until, end.timestamp()
        if t < newest:
            return f"the window ends {_dt(t):%Y-%m-%d %H:%M}, before the model's newest sample"
        if t - newest > self.window.total_seconds():
            return f"a gap of {(t - newest) / 3600:.1f} h since the newest sample (longer than the window)"
        if not self.recency.decays and t - m.built_at > self.window.total_seconds():
            return "no decay: the model is rebuilt once a window"
        return ""

    def _cold(self, start: datetime, end: datetime, progress: Progress | None) -> _Read:
        """The window streamed into a new model (recommender.model.stream.cold_start: memory holds one
        batch's chunk), then one short read for the pods, GPUs, autoscalers and nodes of the window."""
        reader, batch, points = self.source.cold_start_plan(start, end, self.namespace_batch, None)
        cold = cold_start(
            reader,
            start,
            end,
            recency=self.recency,
            chunk_s=self.chunk_s,
            namespace_batch=batch,
            progress=progress,
            points_per_chunk=points,
        )
        # then a delta cycle with no pod known: the last hour again (whole: its demand replaces the chunks'),
        # no sample new to the histograms, the window's pods, GPUs, autoscalers and nodes
        self.model, self.known = cold.model, KnownPods()
        raw, _, resolve = self._delta(start, end, None)
        if progress is not None:
            progress(1, 1, "cold start: pods, GPUs, autoscalers and nodes of the window")
        return raw, start, resolve

    def _delta(self, start: datetime, end: datetime, progress: Progress | None) -> _Read:
        m = self.model
        assert m is not None
        read_from = _dt(max(start.timestamp(), floor_to(m.oldest(), HOUR_S)))
        known = self.known
        identity_from = read_from if known.complete else start  # after a restore: the window's pods once
        raw = self.source.dataset(start, end, progress, fresh_from=read_from, identity_from=identity_from)
        known.update(raw, end.timestamp())
        known.forget_before(start.timestamp())
        known.complete = True
        raw = known.applied(raw)
        resolve = memo(owner_graph(raw).resolve)  # the snapshot resolves the same pods
        build_states(
            raw,
            recency=self.recency,
            fresh_after=m.covered_until,
            fresh_after_of=m.behind,
            into=m.states,
            resolve=resolve,
        )
        m.behind = {}
        m.covered_until = max(m.covered_until, floor_to(end.timestamp(), float(self.source.resolution_s)))
        return raw, read_from, resolve

    def _snapshot(
        self, model: UsageModel, raw: RawDataset, resolve: Resolver, window: tuple[datetime, datetime]
    ) -> UsageSnapshot:
        """The model's containers and demand, with the window's GPUs, autoscalers, nodes and skipped pods."""
        unseen = _drop_unseen(model, raw, resolve)
        if unseen:
            log.info("%d states of workloads with no pod in the window left out (not seen)", unseen)
        start, end = window
        return snapshot(
            model,
            replace(raw, containers=(), ooms=()),
            source=self.name,
            window=window,
            resolve=resolve,
            activity_step=step_for(start, end, self.source.activity_step_s),
            recency=self.recency,
        )

    # ---- checkpoints -------------------------------------------------------------------------

    def _meta(self, model: UsageModel) -> dict[str, float]:
        return {"covered_until": model.covered_until, "built_at": model.built_at}

    def _save(self, model: UsageModel) -> None:
        """Serialises and writes the model in the background: the states are not changed until the next
        cycle, which waits for this write first (flush)."""
        store = self.store
        if store is None or not self.save:
            return
        groups: dict[BlobKey, dict[StateKey, UsageState]] = defaultdict(dict)
        for key, state in model.states.items():
            groups[key.workload if store.per_workload else None][key] = state
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="podsizer-checkpoint")
        self._pending = self._writer.submit(self._write, store, groups, self._meta(model))

    def _write(
        self,
        store: CheckpointStore,
        groups: dict[BlobKey, dict[StateKey, UsageState]],
        meta: dict[str, float],
    ) -> None:
        t0 = time.monotonic()
        try:
            blobs = {k: dumps(states, self.settings, meta) for k, states in groups.items()}
            self.checkpoint_bytes = sum(len(b) for b in blobs.values())
            if self.metrics is not None:
                self.metrics.checkpoint_bytes.set(self.checkpoint_bytes)
            result = store.write(blobs)
        except CheckpointStoreError as exc:
            log.error(
                "checkpoint not written (%s): %s; a restart will rebuild from the source", store.name, exc
            )
            self._count_error("write")
            return
        except Exception:  # the loop goes on; the next cycle writes again
            log.exception("checkpoint write to %s raised", store.name)
            self._count_error("write")
            return
        for line in result.failed:
            log.error("checkpoint object not written: %s", line)
            self._count_error("write")
        log.info(
            "checkpoint of %d bytes saved to %s in %.1fs: %d objects written, %d deleted, %d failed",
            self.checkpoint_bytes, store.name, time.monotonic() - t0, result.written, result.deleted,
            len(result.failed),
        )  # fmt: skip

    def flush(self) -> None:
        """Waits for the checkpoint write in progress (before the process ends)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def _restore(self) -> UsageModel | None:
        """The model in the store, or None (nothing there, or nothing to trust: logged)."""
        store = self.store
        assert store is not None
        try:
            found = store.read()
        except CheckpointStoreError as exc:
            log.error("checkpoint not read (%s): %s; rebuilding from the source", store.name, exc)
            self._count_error("read")
            return None
        if not found.blobs and not found.unreadable:
            log.info("no checkpoint in %s: the first cycle reads the whole window", store.name)
            return None
        model, why = self._trusted(found)
        if model is None:
            log.warning("checkpoint in %s discarded: %s; rebuilding from the source", store.name, why)
            self._count_error("discarded")
            return None
        log.info(
            "checkpoint restored from %s: %d states, newest sample %s",
            store.name, len(model.states), _dt(model.covered_until).isoformat(),
        )  # fmt: skip
        return model

    def _trusted(self, found: ReadResult) -> tuple[UsageModel | None, str]:
        """The model of the blobs read, or None and why not. Objects of different cycles are fine (an
        interrupted or failed write): the older ones' workloads are `behind` and read from their time."""
        if found.unreadable:
            return None, f"{len(found.unreadable)} objects unreadable ({found.unreadable[0]})"
        model = UsageModel()
        covered: dict[BlobKey, float] = {}
        built: list[float] = []
        for key, blob in found.blobs.items():
            try:
                cp = read(blob, self.settings)
            except CheckpointError as exc:
                return None, f"{_name(key)}: {type(exc).__name__}: {exc}"
            if key is not None and any(k.workload != key for k in cp.states):
                return None, f"{_name(key)}: holds another workload's states"
            at = float(cp.meta.get("covered_until", math.nan))
            if not math.isfinite(at):
                return None, f"{_name(key)}: no time up to which it holds samples"
            made = float(cp.meta.get("built_at", at))
            wrong = _implausible_time(at, "covered_until") or _implausible_time(made, "built_at")
            if wrong:
                return None, f"{_name(key)}: {wrong}"
            covered[key] = at
            built.append(made)
            model.states.update(cp.states)
        model.covered_until, model.built_at = max(covered.values()), min(built)
        model.behind = {k: t for k, t in covered.items() if k is not None and t < model.covered_until}
        if model.behind:
            log.info(
                "%d workloads' checkpoints are older than the rest (an interrupted write): read from %s",
                len(model.behind), _dt(model.oldest()).isoformat(),
            )  # fmt: skip
        return model, ""

    def _count_error(self, kind: str) -> None:
        if self.metrics is not None:
            self.metrics.checkpoint_errors.labels(kind=kind).inc()

    def _report(self, r: CycleReport) -> None:
        m = self.metrics
        if m is not None:
            m.usage_cycles.labels(kind=r.kind, reason=_reason_label(r.reason)).inc()
            m.usage_state_bytes.set(r.state_bytes)
            m.usage_states.set(r.states)
        read = f"read {r.read_from:%Y-%m-%d %H:%M}..{r.read_to:%Y-%m-%d %H:%M} UTC"
        why = f" ({r.reason})" if r.reason else ""
        log.info(
            "usage model: %s cycle%s, %s in %.1fs; %d states, %.0f KiB in memory%s",
            r.kind, why, read, r.seconds, r.states, r.state_bytes / 1024,
            f", {r.forgotten} states older than the window dropped" if r.forgotten else "",
        )  # fmt: skip


def _drop_unseen(model: UsageModel, raw: RawDataset, resolve: Resolver) -> int:
    """Drops the states of workloads none of the window's pods belongs to (the source does not report
    them: a checkpoint's states alone never become a recommendation); returns how many."""
    live = {w for p in raw.pods if isinstance(w := resolve(p.namespace, p.name), WorkloadRef)}
    gone = [k for k in model.states if k.workload not in live]
    for k in gone:
        del model.states[k]
    return len(gone)


EARLIEST_TIME = datetime(2000, 1, 1, tzinfo=UTC).timestamp()
FUTURE_SLACK_S = 86400.0


def _implausible_time(at: float, what: str) -> str:
    """Why a checkpoint's time is not one it can hold ("" when it is): before 2000, or more than a day
    ahead of this clock (one value out of range must discard the checkpoint, not fail every cycle)."""
    latest = time.time() + FUTURE_SLACK_S
    if math.isfinite(at) and EARLIEST_TIME <= at <= latest:
        return ""
    return f"{what} {at!r} is not a time a checkpoint can hold (2000-01-01 .. now + 1 day)"


def _name(key: BlobKey) -> str:
    return "the checkpoint" if key is None else str(key)


def _reason_label(reason: str) -> str:
    """A bounded label value for the metric: the reason's kind."""
    for key, label in (
        ("no usage model", "no_model"),
        ("gap", "gap"),
        ("before the model", "backtest"),
        ("no decay", "no_decay"),
    ):
        if key in reason:
            return label
    return "none" if not reason else "other"
