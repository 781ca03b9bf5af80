"""`podsizer explain` and the JSON output for the demo's CronJob: its runs, its policy and its pod plan."""

from __future__ import annotations

import json

from podsizer.sizing_policy import SizingPolicy
from recommender.explain import explanation, find, render_text
from recommender.output.report import Report, render
from tests.unit.recommender.output.test_report_formats import demo

__all__ = ["demo"]


def test_the_cronjob_explanation_names_its_runs_batch_policy_and_plan(demo: Report) -> None:
    rec = find(demo.recommendations, "analytics/CronJob/nightly-report")
    assert rec is not None
    text = render_text(demo, rec, SizingPolicy())
    flat = " ".join(text.split())
    assert "CronJob: sized from the peaks of 7 runs" in flat
    assert "memory peak + 15% margin" in text and "full confidence at 5 runs" in text
    plan = demo.plan(rec)
    assert plan is not None and plan.plan.changes  # asks 2 cores / 3Gi, uses ~1.2 cores and ~1.6Gi
    for change in plan.plan.changes:
        assert f"{change.container}" in text and change.new in text


def test_the_cronjob_plan_in_the_json_output_is_the_explanations(demo: Report) -> None:
    doc = json.loads(render(demo, "json"))
    (item,) = [i for i in doc["items"] if i["spec"]["targetRef"] == {
        "apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly-report"
    }]  # fmt: skip
    rec = find(demo.recommendations, "analytics/CronJob/nightly-report")
    assert rec is not None
    assert item["plan"] == json.loads(json.dumps(explanation(demo, rec, SizingPolicy())["plan"]))
    assert explanation(demo, rec, SizingPolicy())["policy"]["cronjobFullRuns"] == 5  # type: ignore[index]
