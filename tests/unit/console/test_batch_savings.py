"""A CronJob's savings count its runs: the mean pods running over the window, not the pods present at
the window's end (none between runs, so $0/mo)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from fastapi.testclient import TestClient

from console import fmt
from console.app import create_console_app
from console.build import build_console_data
from console.fmt import GIB
from console.prices import HOURS_PER_MONTH
from podsizer.sizing_policy import SizingPolicy
from recommender.input.demo_cluster import build_demo_dataset
from recommender.model.aggregate import aggregate
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import recommend

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def test_a_cronjob_between_runs_saves_what_its_runs_save() -> None:
    raw = build_demo_dataset(NOW)
    snapshot = aggregate(raw, source="demo")
    run = recommend(snapshot, SizingPolicy(), PriceTable.load(None), NOW)
    data = build_console_data(raw, snapshot, run, NOW)
    with TestClient(create_console_app(data)) as c:
        w = next(
            x for x in c.get("/api/overview").json()["workloads"] if x["workload"]["name"] == "nightly-report"
        )
        html = c.get("/").text
    assert w["workload"]["kind"] == "CronJob" and w["replicas"] == 0  # no run at the window's end
    runs = [s for s in raw.containers if s.pod.startswith("nightly-report-")]
    assert len(runs) == 7
    step = float(np.median(np.diff(runs[0].timestamps)))
    running = sum(float(s.timestamps[-1] - s.timestamps[0]) + step for s in runs)  # each run is contiguous
    share = running / (raw.end - raw.start).total_seconds()
    assert w["replicas_counted"] == pytest.approx(share) and 0 < share < 1
    row = next(r for r in data.workload_rows if r.workload.name == "nightly-report")
    c0 = w["containers"][0]
    cpu = (c0["current_requests"]["cpu"] - c0["planned_requests"]["cpu"]) * share
    mem = (c0["current_requests"]["memory"] - c0["planned_requests"]["memory"]) * share
    assert w["cpu_cores_saved"] == pytest.approx(cpu) and cpu > 0
    hourly = cpu * row.price.cpu_hourly + mem / GIB * row.price.memory_gib_hourly
    assert w["hourly_savings"] == pytest.approx(hourly) and w["monthly_savings"] == pytest.approx(
        hourly * HOURS_PER_MONTH
    )
    assert w["monthly_savings"] > 0.1, "no longer $0/mo"
    assert f'data-field="monthly_savings">${w["monthly_savings"]:.2f}/mo</span>' in html
    assert "mean pods running over the window (7 pods," in w["replicas_basis"]
    assert f'data-field="replicas_counted">{share:.2f}</span>' in html


def test_a_month_below_ten_dollars_is_written_in_cents() -> None:
    assert fmt.monthly(0.48) == "$0.48/mo" and fmt.monthly(-3.2) == "-$3.20/mo"
    assert fmt.monthly(1234.4) == "$1,234/mo" and fmt.monthly(0.001) == "$0/mo"
