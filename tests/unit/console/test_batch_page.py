"""The console on the demo: the CronJob's page shows its runs' reason and the pod plan of its template."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from console.app import create_console_app
from console.sources import build, build_inputs
from podsizer.settings import ConsoleSettings, load

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
PATH = "analytics/CronJob/nightly-report"


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> TestClient:
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)
    env = {"PODSIZER_STORE_FILE": str(tmp_path / "absent.json"), "PODSIZER_WINDOW_DAYS": "7"}
    return TestClient(create_console_app(build(build_inputs(load(ConsoleSettings, env=env)), NOW)))


def test_the_cronjob_page_shows_its_runs_and_the_plan_of_its_pods(client: TestClient) -> None:
    api = client.get(f"/api/workloads/{PATH}").json()["workload"]
    assert api["workload"]["api_version"] == "batch/v1"
    assert api["reason"].startswith("CronJob: sized from the peaks of 7 runs")
    assert len(api["pods"]) == 7 and all(p.startswith("nightly-report-") for p in api["pods"])
    (report,) = api["containers"]
    changes = {(c["field"], c["resource"]): (c["from"], c["to"]) for c in report["changes"]}
    assert changes[("requests", "cpu")][0] == "2" and changes[("requests", "memory")][0] == "3Gi"
    html = client.get(f"/workloads/{PATH}").text
    assert "CronJob: sized from the peaks of 7 runs" in html
    assert changes[("requests", "cpu")][1] in html and changes[("requests", "memory")][1] in html


def test_the_bare_training_job_is_listed_as_a_low_confidence_job(client: TestClient) -> None:
    api = client.get("/api/workloads/ml/Job/train-resnet").json()["workload"]
    assert api["reason"].startswith("Job: sized from the peaks of 1 run")
    assert api["low_confidence"] and api["containers"][0]["changes"] == []
