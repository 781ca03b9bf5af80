"""The compact table, html and markdown reports on the demo run: every workload, the pod plan's values
(equal to the json output's `plan`), 80 columns, self-contained escaped html, consistent markdown tables."""

from __future__ import annotations

import argparse
import html
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import ContainerRecommendation, Recommendation, Window
from podsizer.podspec import CurrentResources
from recommender.commands import add_recommend_arguments, load_settings, one_run
from recommender.output.compact import MOVED, amount, render_compact, request_cell, shorten
from recommender.output.report import Report, plan_cell, render
from recommender.output.tables import plan_value
from recommender.wiring import Wiring

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SCRIPT = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def demo() -> Iterator[Report]:
    """One demo run (the data moves with the clock: every format of a test renders this one run)."""
    with pytest.MonkeyPatch.context() as mp:
        for name in list(__import__("os").environ):
            if name.startswith("PODSIZER_"):
                mp.delenv(name)
        parser = argparse.ArgumentParser()
        add_recommend_arguments(parser)
        settings = load_settings(parser.parse_args(["--source", "demo"]))
        yield one_run(settings, Wiring(), None, progress=False).report


def refs(report: Report) -> list[str]:
    return [f"{r.namespace}/{r.target.kind}/{r.target.name}" for r in report.recommendations]


def plan_changes(report: Report) -> list[tuple[str, str, str, str, str | None, str | None]]:
    """(workload, container, field, resource, from, to) of every change in the json output's plan."""
    doc = json.loads(render(report, "json"))
    out = []
    for item in doc["items"]:
        kind, name = item["spec"]["targetRef"]["kind"], item["spec"]["targetRef"]["name"]
        ref = f"{item['metadata']['namespace']}/{kind}/{name}"
        for c in item["plan"].get("changes", []):
            out.append((ref, c["container"], c["field"], c["resource"], c["from"], c["to"]))
    return out


def test_the_demo_run_has_plan_changes_to_compare(demo: Report) -> None:
    changes = plan_changes(demo)
    assert len(changes) >= 20 and len(demo.recommendations) >= 10


# --- compact table -------------------------------------------------------------------------------


def compact_rows(text: str) -> dict[tuple[str, str], list[str]]:
    """(workload, container) -> the container line's cells (split on two or more spaces)."""
    rows: dict[tuple[str, str], list[str]] = {}
    workload = ""
    for line in text.split("\n\n", 1)[0].splitlines()[2:]:
        if not line.startswith("  "):
            workload = line.split("  [", 1)[0]
            continue
        cells = re.split(r"\s{2,}", line.strip())
        rows[(workload, cells[0])] = cells
    return rows


def test_compact_table_fits_80_columns_by_default(demo: Report) -> None:
    lines = render(demo, "table").splitlines()
    assert lines[0] == "WORKLOAD  [SIZING PATH]"
    assert lines[1].split("  ")[1] == "CONTAINER"
    assert max(len(line) for line in lines) <= 80


def test_compact_table_has_every_workload_and_container(demo: Report) -> None:
    rows = compact_rows(render(demo, "table", width=200))
    want = {
        (ref, c.name) for ref, r in zip(refs(demo), demo.recommendations, strict=True) for c in r.containers
    }
    assert set(rows) == want


def _adjusted(report: Report) -> set[tuple[str, str, str]]:
    """(workload, container, resource) of each request the json output's plan says is not the estimate."""
    doc = json.loads(render(report, "json"))
    out = set()
    for item in doc["items"]:
        kind, name = item["spec"]["targetRef"]["kind"], item["spec"]["targetRef"]["name"]
        ref = f"{item['metadata']['namespace']}/{kind}/{name}"
        adjusted = item["plan"]["adjusted"]
        out |= {(ref, a["container"], a["resource"]) for a in adjusted if a["field"] == "requests"}
    return out


def test_compact_request_cells_are_the_plans_values(demo: Report) -> None:
    rows = compact_rows(render(demo, "table", width=200))
    requests = [c for c in plan_changes(demo) if c[2] == "requests" and c[3] in ("cpu", "memory")]
    assert requests
    adjusted = _adjusted(demo)
    assert adjusted  # the demo has clamped requests (storefront, notebook, checkout-api)
    for ref, container, _, resource, old, new in requests:
        cell = rows[(ref, container)][1 if resource == "cpu" else 2]
        mark = MOVED if (ref, container, resource) in adjusted else ""
        assert cell == f"{amount(resource, old)} -> {amount(resource, new)}{mark}"


def test_every_table_writes_the_same_plan_cell(demo: Report) -> None:
    """The compact, terminal, html and markdown tables read one cell rule (plan_cell): the same value
    where the plan keeps it, the same old and new where it changes it; only how a value is written differs."""
    cells = 0
    for rec in demo.recommendations:
        plan = demo.plan(rec)
        for c in rec.containers:
            for resource in ("cpu", "memory"):
                exact = plan_value(plan, c, "requests", resource).split(" -> ")
                compact = request_cell(plan, c, resource).removesuffix(MOVED).split(" -> ")
                assert compact == [v if v in ("?", "-") else amount(resource, v) for v in exact]
                shown = plan_cell(plan, c, "requests", resource, str).split(" -> ")
                assert shown == [("None" if v == "-" else v) for v in exact]
                cells += 1
    assert cells >= 20


def test_compact_amounts_are_exact() -> None:
    assert [amount("cpu", v) for v in ("1", "580m", "2500m", "0.5")] == ["1", "580m", "2500m", "500m"]
    assert [amount("memory", v) for v in ("1Gi", "723Mi", "1536Mi", "1000")] == [
        "1Gi",
        "723Mi",
        "1536Mi",
        "1000",
    ]


def test_long_names_are_shortened_in_the_middle_to_fit() -> None:
    ref = WorkloadRef("team-with-a-very-long-namespace-name", "Deployment", "a-" + "x" * 60 + "-end")
    rec = Recommendation(
        ref,
        T0,
        Window(T0 - timedelta(days=7), T0, 100),
        "static",
        (ContainerRecommendation("sidecar-" + "y" * 50 + "-tail", {"cpu": "100m"}, {}, 1.0, "p99"),),
    )
    current = {ref: (CurrentResources.of("sidecar-" + "y" * 50 + "-tail", {"cpu": 0.5}, {}),)}
    lines = render_compact(Report((rec,), current=current), 80).splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[2].startswith("team-with") and "…" in lines[2]
    assert lines[3].lstrip().startswith("sidecar-") and "-tail" in lines[3] and "…" in lines[3]
    assert shorten("abcdefghij", 5) == "ab…ij" and shorten("abc", 5) == "abc"


def test_compact_footer_names_the_price_basis(demo: Report) -> None:
    text = render(demo, "table")
    basis = text[text.index("GPU prices:") :]
    assert "on-demand price, from the shipped price table" in basis and "spot, estimated" in basis


# --- html ----------------------------------------------------------------------------------------


def html_rows(page: str) -> list[list[str]]:
    return [
        [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", page, re.S)
    ]


def test_html_is_one_self_contained_page(demo: Report) -> None:
    page = render(demo, "html")
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert "http://" not in page and "https://" not in page
    assert (
        not re.search(r"<(script|link|img|iframe)\b", page) and "@import" not in page and "url(" not in page
    )


def test_html_has_every_workload_and_the_plans_values(demo: Report) -> None:
    rows = html_rows(render(demo, "html"))
    by = {(r[0], r[1]): r for r in rows if len(r) == 10}
    reasons = [r[0] for r in rows if len(r) == 1 and r[0].startswith("Reason: ")]
    assert len(reasons) == len(by) == sum(len(r.containers) for r in demo.recommendations)
    assert {ref for ref, _ in by} == set(refs(demo))
    column = {
        ("requests", "cpu"): 2,
        ("limits", "cpu"): 3,
        ("requests", "memory"): 4,
        ("limits", "memory"): 5,
    }
    for ref, container, field, resource, old, new in plan_changes(demo):
        if (field, resource) in column:
            assert by[(ref, container)][column[(field, resource)]] == f"{old or '-'} -> {new}"


def test_html_has_skipped_idle_gpus_cost_and_basis(demo: Report) -> None:
    page = render(demo, "html")
    for title in ("Skipped (", "Idle GPUs (", "GPU cost", "Price basis"):
        assert f"<h2>{title}" in page
    assert all(str(s.subject) in page for s in demo.skipped)


def test_html_escapes_a_workload_name_with_a_script_tag() -> None:
    ref = WorkloadRef("shop", "Deployment", SCRIPT)
    rec = Recommendation(
        ref,
        T0,
        Window(T0 - timedelta(days=7), T0, 100),
        "static",
        (ContainerRecommendation("app", {"cpu": "100m"}, {}, 1.0, "reason " + SCRIPT),),
    )
    page = render(Report((rec,)), "html")
    assert SCRIPT not in page and "<script" not in page
    assert "shop/Deployment/&lt;script&gt;alert(1)&lt;/script&gt;" in page


# --- markdown ------------------------------------------------------------------------------------


def md_tables(text: str) -> list[list[list[str]]]:
    """Each table's rows (header and separator included) split on unescaped pipes."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            current.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
        elif current:
            tables.append(current)
            current = []
    return tables


def test_markdown_tables_have_a_consistent_column_count(demo: Report) -> None:
    tables = md_tables(render(demo, "markdown"))
    assert len(tables) == 4
    for table in tables:
        assert len({len(row) for row in table}) == 1 and len(table) > 2


def test_markdown_has_every_workload_and_the_plans_values(demo: Report) -> None:
    recs = md_tables(render(demo, "markdown"))[0]
    assert recs[0][:3] == ["Workload", "Container", "CPU request"]
    by = {(r[0], r[1]): r for r in recs[2:]}
    assert {ref for ref, _ in by} == set(refs(demo))
    column = {
        ("requests", "cpu"): 2,
        ("limits", "cpu"): 3,
        ("requests", "memory"): 4,
        ("limits", "memory"): 5,
    }
    for ref, container, field, resource, old, new in plan_changes(demo):
        if (field, resource) in column:
            assert by[(ref, container)][column[(field, resource)]] == f"{old or '-'} -> {new}"


def test_markdown_escapes_pipes_and_tags() -> None:
    ref = WorkloadRef("shop", "Deployment", "a|b")
    rec = Recommendation(
        ref,
        T0,
        Window(T0 - timedelta(days=7), T0, 100),
        "static",
        (ContainerRecommendation("app", {"cpu": "100m"}, {}, 1.0, SCRIPT),),
    )
    text = render(Report((rec,)), "markdown")
    (row,) = md_tables(text)[0][2:]
    assert len(row) == 11 and row[0] == "shop/Deployment/a\\|b" and "<script" not in text


def test_markdown_makes_no_link_of_what_a_reason_holds() -> None:
    """A reason or name is text: `[x](javascript:...)`, `![x](...)` and `<javascript:...>` make no link."""
    smuggled = "[click](javascript:alert(1)) ![pixel](http://evil.example/p.png) <javascript:alert(1)>"
    rec = Recommendation(
        WorkloadRef("shop", "Deployment", "web"),
        T0,
        Window(T0 - timedelta(days=7), T0, 100),
        "static",
        (ContainerRecommendation("app", {"cpu": "100m"}, {}, 1.0, smuggled),),
    )
    text = render(Report((rec,)), "markdown")
    assert "\\[click\\](javascript:alert(1))" in text  # shown, escaped
    assert "](" not in text.replace("\\](", "") and "<javascript" not in text
