"""How far the newest sample lies before the window's end: stale data is stated, replicas counted there."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

from recommender.model import UsageSnapshot
from recommender.model.raw import RawDataset

STALE_AFTER = timedelta(minutes=10)
"""Data whose newest sample is older than this at the window's end is stale (a scrape or a remote write that
stopped or lags, or --as-of past the data's end); 10 minutes is several query steps at the default (60 s)."""


@dataclass(frozen=True)
class Freshness:
    """The window's end and the newest sample of the run's data (None: no sample at all)."""

    window_end: datetime
    newest: datetime | None

    @property
    def lag(self) -> timedelta | None:
        """How long before the window's end the newest sample is (None: no sample)."""
        return None if self.newest is None else max(timedelta(0), self.window_end - self.newest)

    @property
    def stale(self) -> bool:
        lag = self.lag
        return lag is not None and lag > STALE_AFTER

    def statement(self) -> str:
        """One sentence for a stale run ("" when the data is fresh or absent)."""
        lag, newest = self.lag, self.newest
        if lag is None or newest is None or not self.stale:
            return ""
        return (
            f"the data is stale: its newest sample ({newest:%Y-%m-%d %H:%M} UTC) is {_duration(lag)} before"
            f" the window's end ({self.window_end:%Y-%m-%d %H:%M} UTC): a scrape or remote write that stopped"
            " or lags, or an as-of past the data"
        )


def _duration(lag: timedelta) -> str:
    minutes = int(lag.total_seconds() // 60)
    if minutes < 120:
        return f"{minutes} min"
    hours = minutes / 60
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"


def of_raw(raw: RawDataset) -> Freshness:
    """The newest CPU or memory sample of any container of the dataset."""
    tops = [float(np.max(s.timestamps)) for s in raw.containers if np.asarray(s.timestamps).size]
    newest = datetime.fromtimestamp(max(tops), UTC) if tops else None
    return Freshness(raw.end, newest)


def of_snapshot(snapshot: UsageSnapshot) -> Freshness:
    """The newest sample of the snapshot's containers (each container's last_seen)."""
    newest = max((c.last_seen for c in snapshot.containers), default=None)
    return Freshness(snapshot.window_end, newest)
