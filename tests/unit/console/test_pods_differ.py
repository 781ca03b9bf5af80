"""When a workload's pods request different amounts, the console says so next to the one "now" value it
shows (the newest pod's), with the words `recommend` writes in the reason."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi.testclient import TestClient

from console.app import create_console_app
from console.build import build_console_data
from podsizer.sizing_policy import SizingPolicy
from recommender.model.aggregate import aggregate
from recommender.sizing.cost import PriceTable
from recommender.sizing.engine import recommend
from tests.support.request_mix import demo_with_differing_pods

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
HINT = "pods differ: 2 request cpu 2000m, 1 requests cpu 1000m; now: the newest pod&#39;s"


def test_the_overview_and_the_workload_page_say_the_pods_differ() -> None:
    raw = demo_with_differing_pods(NOW)
    snapshot = aggregate(raw, source="demo, one pod edited")
    run = recommend(snapshot, SizingPolicy(), PriceTable.load(None), NOW)
    with TestClient(create_console_app(build_console_data(raw, snapshot, run, NOW))) as c:
        body = c.get("/api/overview").json()
        overview = c.get("/").text
        page = c.get("/workloads/shop/Deployment/storefront").text
    differ = {
        (w["workload"]["name"], ct["name"]): ct["pods_differ"]
        for w in body["workloads"]
        for ct in w["containers"]
        if ct["pods_differ"]
    }
    assert differ == {("storefront", "web"): HINT.replace("&#39;", "'")}
    storefront = next(w for w in body["workloads"] if w["workload"]["name"] == "storefront")
    assert differ["storefront", "web"] in storefront["containers"][0]["reason"]  # what recommend says
    series = [x for x in raw.containers if x.pod.startswith("storefront-") and x.container == "web"]
    newest = max(series, key=lambda x: float(x.timestamps.max())).pod
    requested = next(p.requests["web"]["cpu"] for p in raw.pods if p.name == newest)
    assert storefront["containers"][0]["current_requests"]["cpu"] == requested  # "now" is the newest pod's
    assert f'data-field="pods_differ">{HINT}</div>' in overview
    assert f'data-field="pods_differ">{HINT}</div>' in page
