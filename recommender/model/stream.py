"""A cold start of the usage model streamed from a chunked source: memory holds one chunk of samples and the
states, whatever the window and the cluster's size (`podsizer recommend` and the loop's first cycle).

The window is read `namespace_batch` namespaces at a time, each batch in hour-aligned time chunks of
`chunk_s`, every chunk folded into the states (state_build.build_states) before the next is read; a
chunk's samples at or before the previous chunk's last step are not folded again (the pieces share their
edge). With `points_per_chunk`, chunk_s is a batch's first chunk and each next one is sized from the
series the last one held: whole hours (one at least, the rest of the window at most) of about that many
points, so a small cluster is read in two pieces and a large one in short ones alike. The pods and owner
links of every chunk are kept (KnownPods: the window's identity, small beside its samples), and so are the
skips met; a namespace a chunk of which failed is left out whole.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from podsizer.owners import Skipped
from podsizer.subject import Subject
from recommender.model import NO_SERIES, Progress
from recommender.model.pods import KnownPods
from recommender.model.raw import RawDataset
from recommender.model.recency import Recency
from recommender.model.state_build import build_states
from recommender.model.timegrid import floor_to
from recommender.model.usage_model import UsageModel

HOUR_S = 3600.0


class ChunkedSource(Protocol):
    """What a cold start reads from (PrometheusSource): namespaces, and a dataset per batch and chunk."""

    @property
    def resolution_s(self) -> int: ...

    def namespaces_in(self, start: datetime, end: datetime) -> list[str]: ...

    def for_namespaces(self, namespaces: list[str]) -> ChunkedSource: ...

    def dataset(
        self,
        start: datetime,
        end: datetime,
        progress: Progress | None = None,
        *,
        fresh_from: datetime | None = None,
        cluster_wide: bool = True,
        identity_from: datetime | None = None,
    ) -> RawDataset: ...


@dataclass
class ColdStart:
    """A streamed cold start's result: the model, the window's pods and owner links, the skips met."""

    model: UsageModel
    namespaces: list[str] = field(default_factory=list)
    known: KnownPods = field(default_factory=KnownPods)
    skipped: dict[Subject, Skipped] = field(default_factory=dict)


def _dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def _next_chunk(series: int, res: float, budget: int | None, chunk_s: float) -> float:
    """The next chunk's length: `chunk_s`, or whole hours of about `budget` points of `series` series."""
    if budget is None or series == 0:
        return chunk_s
    return max(HOUR_S, math.floor(budget / series * res / HOUR_S) * HOUR_S)


@dataclass(frozen=True)
class _Piece:
    """One chunk of one batch: its place in the loop and its bounds (epoch seconds)."""

    k: int
    batch: list[str]
    a: float
    b: float
    fresh_after: float


def cold_start(
    source: ChunkedSource,
    start: datetime,
    end: datetime,
    *,
    recency: Recency,
    chunk_s: float,
    namespace_batch: int,
    progress: Progress | None = None,
    points_per_chunk: int | None = None,
) -> ColdStart:
    """The window [start, end] streamed into a new model (module docstring); the model's covered_until is
    the window's last step. Raises ValueError for a chunk that is not whole hours.

    The next chunk is read while this one is folded (one read ahead: the wait for the server and the fold
    overlap; memory holds two chunks' samples at most)."""
    if chunk_s < HOUR_S or chunk_s % HOUR_S:
        raise ValueError(f"chunk must be a whole number of hours, got {chunk_s:g} s")
    res = float(source.resolution_s)
    namespaces = source.namespaces_in(start, end)
    out = ColdStart(UsageModel(built_at=end.timestamp()), namespaces)
    lo, hi = start.timestamp(), end.timestamp()
    size = max(1, namespace_batch)
    batches = [namespaces[i : i + size] for i in range(0, len(namespaces), size)]

    def first(k: int) -> _Piece | None:
        if k > len(batches):
            return None
        return _Piece(k, batches[k - 1], lo, min(hi, math.floor(lo / chunk_s) * chunk_s + chunk_s), -math.inf)

    def following(piece: _Piece, raw: RawDataset) -> _Piece | None:
        if piece.b >= hi:
            return first(piece.k + 1)
        length = _next_chunk(len(raw.containers), res, points_per_chunk, chunk_s)
        return _Piece(piece.k, piece.batch, piece.b, min(hi, piece.b + length), floor_to(piece.b, res))

    def read(piece: _Piece) -> RawDataset:
        part = source.for_namespaces(piece.batch)
        return part.dataset(_dt(piece.a), _dt(piece.b), None, cluster_wide=False)

    with ThreadPoolExecutor(max_workers=1) as ahead:
        piece = first(1)
        pending = ahead.submit(read, piece) if piece is not None else None
        while piece is not None and pending is not None:
            raw = pending.result()
            nxt = following(piece, raw)
            pending = ahead.submit(read, nxt) if nxt is not None else None
            build_states(
                raw,
                recency=recency,
                fresh_after=piece.fresh_after,
                into=out.model.states,
                skipped=out.skipped,
            )
            out.known.update(raw, piece.b)
            del raw
            if progress is not None:
                what = f"cold start: {len(piece.batch)} namespaces, {_dt(piece.b):%Y-%m-%d %H:%M} UTC"
                progress(piece.k, len(batches) + 1, what)
            piece = nxt
    _leave_out_failed(out)
    out.model.covered_until = floor_to(end.timestamp(), res)
    out.known.complete = True
    return out


def _leave_out_failed(cold: ColdStart) -> None:
    """A namespace a chunk of which could not be read (a namespace skip other than NO_SERIES: an answer
    over the cap) is left out whole, its skip kept: a part of the window never sizes a workload."""
    failed = {
        s.subject.namespace for s in cold.skipped.values() if s.subject.is_namespace and s.reason != NO_SERIES
    }
    for key in [k for k in cold.model.states if k.workload.namespace in failed]:
        del cold.model.states[key]
