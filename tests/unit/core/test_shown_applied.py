"""`podsizer recommend --source demo` once showed storefront's memory limit as 632Mi and
checkout-api's as 768Mi while the webhook wrote 505Mi and 1228Mi. Now the table and the json plan show
what the webhook's patch writes for the same workload's pod."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from podsizer.api.quantity import format_resource
from podsizer.api.resource import recommendation_from_resource
from podsizer.podspec import quantity
from podsizer.policy import LIMIT_POLICIES, LimitPolicy, PlanPolicy
from podsizer.settings import run_reporting_errors
from recommender.commands import add_recommend_arguments, run_recommend
from recommender.input.demo_cluster import build_demo_dataset
from recommender.wiring import Wiring
from tests.unit.webhook.builders import admitter, apply_reply, container, replicaset_pod, resources_of, review

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
CASES = [("storefront", "web"), ("checkout-api", "api")]


@pytest.fixture(autouse=True)
def _no_podsizer_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)


def recommend(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """`podsizer recommend --source demo ARGV` at a fixed time; its standard output."""
    parser = argparse.ArgumentParser(prog="podsizer recommend")
    add_recommend_arguments(parser)
    wiring = Wiring(clock=lambda: NOW)
    args = parser.parse_args(["--source", "demo", "--namespaces", "shop", "--no-progress", *argv])
    assert run_reporting_errors("recommend", lambda a: run_recommend(a, wiring), args) == 0
    return capsys.readouterr().out


def demo_pod(workload: str, name: str) -> dict[str, Any]:
    """The workload's pod as the demo cluster defines it, as its ReplicaSet would create it."""
    info = next(p for p in build_demo_dataset(NOW).pods if p.name.startswith(f"{workload}-"))

    def text(values: dict[str, float]) -> dict[str, str]:
        return {r: format_resource(r, v) for r, v in values.items()}

    resources = container(name, text(dict(info.requests[name])), text(dict(info.limits[name])))
    return replicaset_pod(workload, containers=[resources])


def webhook_writes(item: dict[str, Any], workload: str, name: str, policy: LimitPolicy) -> dict[str, Any]:
    """The resources the webhook's auto patch gives the demo pod, for the Recommendation printed."""
    rec = recommendation_from_resource(item)
    pod = demo_pod(workload, name)
    reply, decision = admitter(rec, default_mode="auto", policy=PlanPolicy(policy)).review(review(pod))
    assert decision.outcome == "applied"
    return resources_of(apply_reply(pod, reply), name)


@pytest.mark.parametrize(("workload", "name"), CASES)
@pytest.mark.parametrize("policy", LIMIT_POLICIES)
def test_json_plan_shows_the_memory_limit_the_webhook_writes(
    capsys: pytest.CaptureFixture[str], workload: str, name: str, policy: LimitPolicy
) -> None:
    doc = json.loads(recommend(capsys, "-o", "json", "--limit-policy", policy))
    item = next(i for i in doc["items"] if i["spec"]["targetRef"]["name"] == workload)
    written = webhook_writes(item, workload, name, policy)
    shown = {(c["field"], c["resource"]): c["to"] for c in item["plan"]["changes"]}
    assert shown[("requests", "memory")] == written["requests"]["memory"]
    if ("limits", "memory") in shown:
        assert shown[("limits", "memory")] == written["limits"]["memory"]
    else:  # unchanged: the same value, whatever its spelling ("4Gi" from the source, "4096Mi" in the pod)
        kept = item["plan"]["current"][0]["limits"]["memory"]
        assert quantity(kept) == quantity(written["limits"]["memory"])


@pytest.mark.parametrize(("workload", "name"), CASES)
def test_table_shows_the_memory_limit_the_webhook_writes_under_keep_ratio(
    capsys: pytest.CaptureFixture[str], workload: str, name: str
) -> None:
    doc = json.loads(recommend(capsys, "-o", "json"))
    item = next(i for i in doc["items"] if i["spec"]["targetRef"]["name"] == workload)
    written = webhook_writes(item, workload, name, "keep-ratio")["limits"]["memory"]
    table = recommend(capsys, "--wide")
    header, *rows = table.splitlines()
    row = next(r for r in rows if f"Deployment/{workload} " in r)
    cell = row[header.index("MEMORY LIMIT") : header.index("GPU")].strip()
    assert cell.endswith(f"-> {written}")
    # the Recommendation's own limit (what the old table showed) is not what keep-ratio writes
    assert item["status"]["containers"][0]["limits"]["memory"] != written
