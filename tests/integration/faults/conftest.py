"""Fixtures of the fault-injection suite: a fake Prometheus per test, the recommender run against it."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from podsizer.api.quantity import parse as parse_quantity
from podsizer.api.resource import Recommendation
from recommender.commands import add_recommend_arguments, run_recommend
from recommender.output.store.jsonfile import JsonFileStore
from tests.integration.faults.fakeprom import FakeProm, Served, serve


@pytest.fixture
def prom() -> Iterator[Served]:
    served = serve(FakeProm())
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(autouse=True)
def _no_podsizer_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the flags each test passes configure the recommender."""
    import os

    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)


@dataclass(frozen=True)
class Outcome:
    """What one `podsizer recommend --write` run left: exit status, stderr, the stored Recommendations and
    the JSON report's skipped workloads (`about` and `reason` of each)."""

    status: int
    stderr: str
    stored: tuple[Recommendation, ...]
    skipped: tuple[dict[str, object], ...] = ()

    def memory_requests(self) -> list[float]:
        """Every container's memory request in the store, in bytes."""
        return [
            parse_quantity(c.requests["memory"])
            for rec in self.stored
            for c in rec.containers
            if "memory" in c.requests
        ]

    def cpu_requests(self) -> list[float]:
        return [
            parse_quantity(c.requests["cpu"])
            for rec in self.stored
            for c in rec.containers
            if "cpu" in c.requests
        ]


def recommend(url: str, store: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> Outcome:
    """`podsizer recommend --source prometheus --write` against `url`, through the real command."""
    parser = argparse.ArgumentParser()
    add_recommend_arguments(parser)
    args = parser.parse_args(
        [
            "--source=prometheus",
            f"--prometheus-url={url}",
            "--window-days=1",
            "--no-progress",
            "--output=json",
            "--write",
            "--store=json",
            f"--store-file={store}",
            "--namespaces=shop",
            *extra,
        ]
    )
    status = run_recommend(args)
    out, err = capsys.readouterr()
    stored = JsonFileStore(store).list() if store.exists() else []
    skipped = tuple(json.loads(out).get("skipped", ())) if out.strip() else ()
    return Outcome(status, err, tuple(stored), skipped)
