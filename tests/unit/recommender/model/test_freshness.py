"""Freshness: how far the newest sample lies before the window's end, and the one line that says so."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np

from recommender.input.demo_cluster import build_demo_dataset
from recommender.model.aggregate import aggregate
from recommender.model.freshness import STALE_AFTER, Freshness, of_raw, of_snapshot

END = datetime(2026, 12, 2, 14, 0, tzinfo=UTC)


def test_data_up_to_the_window_end_is_fresh_and_says_nothing() -> None:
    fresh = Freshness(END, END - timedelta(minutes=2))
    assert fresh.lag == timedelta(minutes=2) and not fresh.stale and fresh.statement() == ""
    assert not Freshness(END, END - STALE_AFTER).stale, "the threshold itself is still fresh"
    assert Freshness(END, None).lag is None and Freshness(END, None).statement() == ""


def test_stale_data_is_one_line_with_both_times_and_the_gap() -> None:
    stale = Freshness(END, END - timedelta(minutes=35))
    assert stale.stale
    said = stale.statement()
    assert "35 min before the window's end" in said
    assert "2026-12-02 13:25 UTC" in said and "2026-12-02 14:00 UTC" in said
    assert "hours" not in Freshness(END, END - timedelta(hours=3)).statement()
    assert "3.0 h" in Freshness(END, END - timedelta(hours=3)).statement()
    assert "4.0 days" in Freshness(END, END - timedelta(days=4)).statement()


def test_raw_and_snapshot_agree_on_the_newest_sample() -> None:
    raw = build_demo_dataset(END - timedelta(minutes=35), days=1)
    late = dataclasses.replace(raw, end=END)  # the window runs 35 minutes past the data
    newest = max(float(np.max(s.timestamps)) for s in raw.containers)
    assert of_raw(late).newest == datetime.fromtimestamp(newest, UTC)
    assert of_snapshot(aggregate(late, source="demo")).newest == of_raw(late).newest
    assert of_raw(late).stale and not of_raw(raw).stale
