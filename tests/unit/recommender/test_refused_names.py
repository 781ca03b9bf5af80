"""A container name from the metrics that is not a Kubernetes name: skipped alone, shown escaped."""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.quantity import MIB
from podsizer.settings import run_reporting_errors
from recommender.commands import add_recommend_arguments, run_recommend
from recommender.model import ContainerUsage, Progress, Quantiles, UsageSnapshot
from recommender.wiring import Wiring

WEB = WorkloadRef("shop", "Deployment", "web")
FORGED_LINE = "2026-01-01 ERROR podsizer: forged"
FORGED = f"Bad_Name\n{FORGED_LINE}\x1b[31m"


def _usage(container: str, start: datetime, end: datetime) -> ContainerUsage:
    cpu = Quantiles(0.3, 0.33, 0.34, 0.36, 0.39, 0.3)
    mem = Quantiles(*(300 * MIB * f for f in (1.0, 1.02, 1.04, 1.05, 1.06, 1.0)))
    return ContainerUsage(WEB, container, cpu, mem, 0.3, 300 * MIB, 20160, start, end)


class TwoContainers:
    """A source whose one workload has a valid container and one whose label is not a Kubernetes name."""

    name = "two-containers"

    def collect(self, start: datetime, end: datetime, progress: Progress | None = None) -> UsageSnapshot:
        begin = end - timedelta(days=7)
        return UsageSnapshot(begin, end, (_usage("app", begin, end), _usage(FORGED, begin, end)))


def _recommend(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="podsizer recommend")
    add_recommend_arguments(parser)
    wiring = Wiring(source=lambda settings, now: TwoContainers())
    return run_reporting_errors("recommend", lambda a: run_recommend(a, wiring), parser.parse_args(argv))


@pytest.fixture(autouse=True)
def _no_podsizer_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)


def test_recommend_sizes_the_valid_container_and_shows_the_invalid_one_skipped_on_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "recs.json"
    assert _recommend("--no-progress", "--write", "--store-file", str(store)) == 0
    out = capsys.readouterr().out
    (item,) = json.loads(store.read_text())["items"]
    assert [c["name"] for c in item["status"]["containers"]] == ["app"]
    assert "container not sized" in out and "forged\\x1b[31m" in out  # the name, escaped
    assert not any(line.startswith(FORGED_LINE) for line in out.splitlines())
    assert "\x1b" not in out


def test_the_json_report_names_the_skipped_container_in_its_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _recommend("--no-progress", "-o", "json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in doc["items"][0]["status"]["containers"]] == ["app"]
    (skip,) = doc["skipped"]
    assert skip["about"]["container"] == FORGED and not skip["failed"]
    assert "is not a Kubernetes name" in skip["reason"]
