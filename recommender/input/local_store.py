"""A small local time-series store for scraped samples: in memory, optionally journaled to disk.

Series are keyed by (metric, labels). Samples older than `retention_seconds` before the newest append
are dropped. With a `path`, every append is also written as one JSON line to that journal, so a
restart replays it and nothing scraped is lost; the journal is rewritten (atomically) once it holds
more dropped samples than live ones. A torn last line (a crash mid-write) is ignored on replay; the
temporary file of a rewrite killed midway (`<journal>.tmp`, not locked by a writer) is removed at start.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

from recommender.model import FloatArray, SourceError
from recommender.tempfiles import hold_lock, remove_stale_temp_files

Labels = tuple[tuple[str, str], ...]
SeriesKey = tuple[str, Labels]


def series_key(metric: str, labels: Mapping[str, str]) -> SeriesKey:
    return metric, tuple(sorted(labels.items()))


@dataclass
class _Series:
    ts: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    start: int = 0  # index of the first live sample

    def live(self) -> int:
        return len(self.ts) - self.start


class SeriesStore:
    """Append-only series with bounded retention; not thread-safe (one scraper owns it)."""

    def __init__(self, retention_seconds: float, path: str | Path | None = None) -> None:
        if retention_seconds <= 0:
            raise ValueError(f"retention_seconds must be positive, got {retention_seconds}")
        self.retention_seconds = float(retention_seconds)
        self.path = Path(path) if path is not None else None
        self._series: dict[SeriesKey, _Series] = {}
        self._newest = float("-inf")
        self._dead = 0
        self.skipped_lines = 0
        if self.path is not None:
            remove_stale_temp_files(self.path.parent, glob.escape(self._tmp_path(self.path).name))
        if self.path is not None and self.path.exists():
            self._replay(self.path)

    # -- writing -------------------------------------------------------------------------------
    def append(self, t: float, samples: Iterable[tuple[str, Mapping[str, str], float]]) -> int:
        """Add samples taken at epoch second t; returns how many were stored."""
        batch = [(m, dict(lbl), float(v)) for m, lbl, v in samples]
        self._add(t, batch)
        if self.path is not None and batch:
            line = orjson.dumps({"t": t, "s": batch}) + b"\n"
            try:
                with self.path.open("ab") as fh:
                    fh.write(line)
            except OSError as exc:
                raise SourceError(f"{self.path}: cannot write the scrape journal: {exc}") from None
            if self._dead > max(self.live_samples(), 1000):
                self.compact()
        return len(batch)

    def _add(self, t: float, batch: list[tuple[str, dict[str, str], float]]) -> None:
        for metric, labels, value in batch:
            key = series_key(metric, labels)
            s = self._series.get(key)
            if s is None:
                s = self._series[key] = _Series()
            s.ts.append(t)
            s.values.append(value)
        if t > self._newest:
            self._newest = t
            self._prune()

    def _prune(self) -> None:
        cutoff = self._newest - self.retention_seconds
        empty = []
        for key, s in self._series.items():
            i = s.start
            while i < len(s.ts) and s.ts[i] < cutoff:
                i += 1
            if i != s.start:
                self._dead += i - s.start
                s.start = i
                # Drop the dead prefix now and then, not on every append.
                if s.start > 1024 and s.start * 2 > len(s.ts):
                    del s.ts[: s.start], s.values[: s.start]
                    s.start = 0
            if s.live() == 0:
                empty.append(key)
        for key in empty:
            del self._series[key]

    def compact(self) -> None:
        """Rewrite the journal with only the live samples (write a temp file, then rename)."""
        if self.path is None:
            self._dead = 0
            return
        by_time: dict[float, list[tuple[str, dict[str, str], float]]] = {}
        for (metric, labels), s in self._series.items():
            lbl = dict(labels)
            for t, v in zip(s.ts[s.start :], s.values[s.start :], strict=True):
                by_time.setdefault(t, []).append((metric, lbl, v))
        tmp = self._tmp_path(self.path)
        try:
            with tmp.open("wb") as fh:
                hold_lock(fh.fileno())
                for t in sorted(by_time):
                    fh.write(orjson.dumps({"t": t, "s": by_time[t]}) + b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            raise SourceError(f"{self.path}: cannot rewrite the scrape journal: {exc}") from None
        self._dead = 0

    @staticmethod
    def _tmp_path(journal: Path) -> Path:
        """Where compact() writes the new journal before renaming it over the old one."""
        return journal.with_name(journal.name + ".tmp")

    def _replay(self, path: Path) -> None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise SourceError(f"{path}: cannot read the scrape journal: {exc}") from None
        for raw in data.splitlines():
            try:
                rec = orjson.loads(raw)
                t = float(rec["t"])
                batch = [
                    (str(m), {str(k): str(v) for k, v in lbl.items()}, float(v)) for m, lbl, v in rec["s"]
                ]
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
                self.skipped_lines += 1
                continue
            self._add(t, batch)

    # -- reading -------------------------------------------------------------------------------
    def live_samples(self) -> int:
        return sum(s.live() for s in self._series.values())

    def __len__(self) -> int:
        return len(self._series)

    def series(
        self, start: float | None = None, end: float | None = None
    ) -> Iterator[tuple[SeriesKey, FloatArray, FloatArray]]:
        """(key, timestamps, values) of every series, samples with start <= t < end (sorted by time)."""
        for key, s in self._series.items():
            ts = np.asarray(s.ts[s.start :], dtype=np.float64)
            vs = np.asarray(s.values[s.start :], dtype=np.float64)
            if ts.size > 1 and not bool(np.all(ts[1:] >= ts[:-1])):
                order = np.argsort(ts, kind="stable")
                ts, vs = ts[order], vs[order]
            keep = np.ones(ts.size, dtype=bool)
            if start is not None:
                keep &= ts >= start
            if end is not None:
                keep &= ts < end
            if keep.any():
                yield key, ts[keep], vs[keep]
