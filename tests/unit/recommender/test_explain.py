"""`podsizer explain`: one workload's full reasoning from the same run as `recommend`; unknown -> exit 2."""

from __future__ import annotations

import json
import os
import sys

import pytest

from podsizer.cli import main
from podsizer.sizing_policy import SizingPolicy
from recommender.explain import close_matches, explanation, find, render_text, text_width
from recommender.output.report import Report, render
from tests.unit.recommender.output.test_report_formats import demo

__all__ = ["demo"]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("PODSIZER_"):
            monkeypatch.delenv(name)


def test_find_takes_namespace_kind_name_or_a_unique_namespace_name(demo: Report) -> None:
    recs = demo.recommendations
    search = find(recs, "shop/Deployment/search")
    assert search is not None and search.target.name == "search"
    assert find(recs, "shop/deployment/search") is search and find(recs, "shop/search") is search
    assert find(recs, "shop/Deployment/nope") is None and find(recs, "search") is None


def test_close_matches_name_the_nearest_workloads(demo: Report) -> None:
    assert close_matches(demo.recommendations, "shop/Deployment/serch")[0] == "shop/Deployment/search"
    assert "shop/StatefulSet/postgres" in close_matches(demo.recommendations, "default/postgres")


def test_explanation_plan_is_the_json_outputs_plan(demo: Report) -> None:
    doc = json.loads(render(demo, "json"))
    plans = {(i["metadata"]["namespace"], i["spec"]["targetRef"]["name"]): i["plan"] for i in doc["items"]}
    compared = 0
    for rec in demo.recommendations:
        got = json.loads(json.dumps(explanation(demo, rec, SizingPolicy())["plan"]))
        assert got == plans[(rec.namespace, rec.target.name)]
        compared += 1
    assert compared == len(doc["items"]) > 0


def test_text_has_reasons_unabridged_policy_gpu_cost_basis_and_every_change(demo: Report) -> None:
    rec = find(demo.recommendations, "ml/StatefulSet/bert-finetune")
    assert rec is not None
    text = render_text(demo, rec, SizingPolicy())
    flat = " ".join(text.split())
    assert all(" ".join(c.reason.split()) in flat for c in rec.containers)
    assert "cpu p99 + 15% margin" in text and "floors: cpu 10m, memory 32Mi" in text
    assert "GPUs: 4 held, 3 recommended; the plan keeps 4: written only with podsizer.io/gpu: resize" in text
    assert "on p4d.24xlarge: on-demand price, from the shipped price table" in flat
    plan = demo.plan(rec)
    assert plan is not None and plan.plan.changes
    for ch in plan.plan.changes:
        assert f"{ch.section}/{ch.container} {ch.field}.{ch.resource}: {ch.old} -> {ch.new}" in text


@pytest.mark.parametrize("width", [60, 79, 100])
def test_every_line_fits_the_width_it_is_given(demo: Report, width: int) -> None:
    widest = max(
        len(line)
        for rec in demo.recommendations
        for line in render_text(demo, rec, SizingPolicy(), width).splitlines()
    )
    assert widest <= width
    assert (
        text_width(None) == 100 and text_width(80) == 79 and text_width(30) == 60 and text_width(300) == 100
    )


@pytest.mark.parametrize(("tty", "widest"), [(True, 79), (False, 100)])
def test_explain_command_wraps_at_the_terminals_width_and_names_the_pod_plans_policy(
    clean_env: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tty: bool,
    widest: int,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty)
    assert main(["explain", "ml/Deployment/notebook", "--source", "demo", "--no-progress"]) == 0
    out = capsys.readouterr().out
    longest = max(len(line) for line in out.splitlines())
    assert widest - 10 < longest <= widest, longest  # the wrapped reasons fill their lines
    flat = " ".join(out.split())
    assert "pod plan: limit policy keep-ratio; maximum change factor 4x" in flat
    assert "clamped by the maximum change factor 4x" in flat  # the change that factor produced


def test_the_policy_names_what_shaped_the_pod_changes(demo: Report) -> None:
    rec = find(demo.recommendations, "shop/Deployment/search")
    assert rec is not None
    flat = " ".join(render_text(demo, rec, SizingPolicy()).split())
    factor = demo.policy.max_change_factor
    assert f"pod plan: limit policy {demo.policy.limit_policy}; maximum change factor {factor:g}x" in flat


def test_autopilot_workload_names_its_hpa_target(demo: Report) -> None:
    rec = find(demo.recommendations, "shop/Deployment/search")
    assert rec is not None and rec.sizing_mode == "autopilot"
    assert "sizing: autopilot: HPA search targets cpu 70%" in render_text(demo, rec, SizingPolicy())


def test_explain_command_prints_json(clean_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "shop/Deployment/search", "--source", "demo", "--no-progress", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["workload"] == "shop/Deployment/search" and doc["sizingMode"] == "autopilot"
    assert doc["plan"]["changes"] and doc["containers"][0]["reason"]


def test_several_workloads_are_explained_from_one_run_as_a_list(
    clean_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    wanted = ["shop/Deployment/search", "ml/notebook", "shop/StatefulSet/postgres"]
    assert main(["explain", *wanted, "--source", "demo", "--no-progress", "-o", "json"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert [d["workload"] for d in docs] == ["shop/Deployment/search", "ml/Deployment/notebook", wanted[2]]
    assert main(["explain", wanted[0], "--source", "demo", "--no-progress", "-o", "json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert alone["plan"]["changes"] == docs[0]["plan"]["changes"]  # two runs: only generatedAt differs
    assert main(["explain", *wanted, "shop/nope", "--source", "demo", "--no-progress", "-o", "json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "no workload 'shop/nope'" in err


def test_unknown_workload_is_exit_2_with_close_matches(
    clean_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", "shop/Deployment/serch", "--source", "demo", "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[:3] == [
        "podsizer explain: no workload 'shop/Deployment/serch' in this run",
        "close matches:",
        "  shop/Deployment/search",
    ]
