"""Fixtures of the connection-option suite: the real Prometheus of tests/integration/prometheus (same
backfilled history), certificates made by trustme, and `podsizer recommend` run through the real command."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from podsizer.api.quantity import parse
from podsizer.api.resource import recommendation_from_resource
from podsizer.settings import run_reporting_errors
from recommender.commands import add_recommend_arguments, run_recommend
from recommender.wiring import Wiring
from tests.integration.connections.proxy import Pki, make_pki
from tests.integration.prometheus.conftest import Served, served

__all__ = ["Outcome", "Served", "pki", "recommend", "served"]


@pytest.fixture(autouse=True)
def _no_podsizer_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the flags each test passes configure the recommender (and no cluster around it)."""
    for name in list(os.environ):
        if name.startswith("PODSIZER_") or name == "KUBERNETES_SERVICE_HOST":
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@dataclass(frozen=True)
class Outcome:
    """What one `podsizer recommend` printed and returned."""

    status: int
    stdout: str
    stderr: str

    def cpu_request(self, namespace: str, kind: str, name: str, container: str) -> float:
        """The CPU request (cores) `recommend -o json` printed for one container."""
        doc: dict[str, Any] = json.loads(self.stdout)
        for item in doc["items"]:
            rec = recommendation_from_resource(item)
            if (rec.target.namespace, rec.target.kind, rec.target.name) == (namespace, kind, name):
                slot = rec.container(container)
                assert slot is not None, f"{name} has no container {container}"
                return parse(slot.requests["cpu"])
        raise AssertionError(f"no recommendation for {namespace}/{kind}/{name}: {self.stdout[:500]}")


def recommend(served: Served, capsys: pytest.CaptureFixture[str], url: str, *flags: str) -> Outcome:
    """`podsizer recommend --source prometheus -o json` for namespace legacy over the fixture's window."""
    parser = argparse.ArgumentParser(prog="podsizer recommend")
    add_recommend_arguments(parser)
    argv = ["--source=prometheus", f"--prometheus-url={url}", "--no-progress", "-o", "json"]
    args = parser.parse_args([*argv, "--namespaces=legacy", "--store-file=/nonexistent/recs.json", *flags])
    wiring = Wiring(clock=lambda: served.history.end)
    capsys.readouterr()
    status = run_reporting_errors("recommend", lambda a: run_recommend(a, wiring), args)
    out = capsys.readouterr()
    return Outcome(status, out.out, out.err)


# a steady 100m container with 5 % noise: p99 + 15 % margin (tests/integration/prometheus)
CART = ("legacy", "DeploymentConfig", "cart", "cart")
CART_CPU = (0.110, 0.135)


def assert_cart_sized(got: Outcome) -> None:
    assert got.status == 0, got.stderr
    assert CART_CPU[0] <= got.cpu_request(*CART) <= CART_CPU[1]


def write(path: Path, text: str) -> Path:
    path.write_text(text + "\n", encoding="utf-8")
    return path
