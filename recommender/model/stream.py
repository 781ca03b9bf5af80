"""A cold start of the usage model streamed from a chunked source: memory holds one chunk of samples and
the states, whatever the window and the cluster's size (`podsizer recommend` and the loop's first cycle).

The window is read `namespace_batch` namespaces at a time, each batch in hour-aligned time chunks of
`chunk_s`, every chunk folded into the states (state_build.build_states) before the next is read; a
chunk's samples at or before the previous chunk's last step are not folded again (the pieces share
their edge). The pods and owner links of every chunk are kept (KnownPods: the window's identity, small
beside its samples), and so are the skips met.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from podsizer.owners import Skipped
from podsizer.subject import Subject
from recommender.model import Progress
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


def chunk_edges(lo: float, hi: float, chunk_s: float) -> list[float]:
    """lo, the multiples of chunk_s strictly between lo and hi, and hi: the chunks tile the window."""
    first = math.floor(lo / chunk_s) * chunk_s + chunk_s
    inner = itertools.takewhile(lambda t: t < hi, itertools.count(first, chunk_s))
    return [lo, *inner, hi]


def _pieces(
    source: ChunkedSource, namespaces: list[str], window: tuple[float, float], chunk_s: float, size: int
) -> Iterator[tuple[list[str], ChunkedSource, float, float]]:
    """(batch, the source of its namespaces, chunk start, chunk end) of every piece, batch by batch."""
    edges = chunk_edges(*window, chunk_s)
    for i in range(0, len(namespaces), size):
        batch = namespaces[i : i + size]
        part = source.for_namespaces(batch)
        for a, b in itertools.pairwise(edges):
            yield batch, part, a, b


def cold_start(
    source: ChunkedSource,
    start: datetime,
    end: datetime,
    *,
    recency: Recency,
    chunk_s: float,
    namespace_batch: int,
    progress: Progress | None = None,
) -> ColdStart:
    """The window [start, end] streamed into a new model (module docstring); the model's covered_until is
    the window's last step. Raises ValueError for a chunk that is not whole hours."""
    if chunk_s < HOUR_S or chunk_s % HOUR_S:
        raise ValueError(f"chunk must be a whole number of hours, got {chunk_s:g} s")
    res = float(source.resolution_s)
    namespaces = source.namespaces_in(start, end)
    out = ColdStart(UsageModel(built_at=end.timestamp()), namespaces)
    window = (start.timestamp(), end.timestamp())
    pieces = list(_pieces(source, namespaces, window, chunk_s, max(1, namespace_batch)))
    fresh_after = -math.inf
    for done, (batch, part, a, b) in enumerate(pieces, 1):
        raw = part.dataset(_dt(a), _dt(b), None, cluster_wide=False)
        if a == start.timestamp():
            fresh_after = -math.inf  # a new namespace batch starts at the window's start
        build_states(
            raw, recency=recency, fresh_after=fresh_after, into=out.model.states, skipped=out.skipped
        )
        out.known.update(raw, b)
        fresh_after = floor_to(b, res)
        if progress is not None:
            what = f"cold start: {len(batch)} namespaces, {_dt(a):%Y-%m-%d %H:%M} UTC on"
            progress(done, len(pieces) + 1, what)
    out.model.covered_until = floor_to(end.timestamp(), res)
    out.known.complete = True
    return out
