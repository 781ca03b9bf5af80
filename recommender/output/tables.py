"""The report's tables as plain rows (recommendations with the pod plan's values, skipped, idle GPUs,
GPU cost) for the html and markdown renderings; values are the plan's own quantity strings."""

from __future__ import annotations

from dataclasses import dataclass

from podsizer.api.resource import ContainerRecommendation
from podsizer.kube.times import format_shown
from podsizer.plan_reasons import shown_reason
from podsizer.plan_view import WorkloadPlan
from podsizer.podspec import Field
from podsizer.resources import CPU, MEMORY
from recommender.output.costbasis import cost_basis, summary
from recommender.output.report import (
    Report,
    confidence_cell,
    gpu_cell,
    mode_cell,
    plan_cell,
    sorted_recommendations,
)

REC_HEADER = (
    "Workload",
    "Container",
    "CPU request",
    "CPU limit",
    "Memory request",
    "Memory limit",
    "GPU",
    "Mode",
    "Sizing",
    "Confidence",
    "Reason",
)


@dataclass(frozen=True)
class Table:
    """A titled table; `numeric` columns are right-aligned; `detail_last`: html shows the last column
    (a long text) as a full-width line under each row."""

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: frozenset[int] = frozenset()
    detail_last: bool = False


@dataclass(frozen=True)
class Tables:
    """What a report shows: its tables, the totals line and the price basis lines."""

    tables: tuple[Table, ...]
    totals: str
    basis: tuple[str, ...]
    generated: str


def plan_value(plan: WorkloadPlan | None, c: ContainerRecommendation, fld: Field, res: str) -> str:
    """The report's plan_cell with the plan's exact values ("-": absent, "(removed)": the plan removes it)."""
    return plan_cell(plan, c, fld, res, lambda value: value or "-", removed="(removed)")


def recommendations(report: Report) -> Table:
    rows: list[tuple[str, ...]] = []
    for rec in sorted_recommendations(report.recommendations):
        plan = report.plan(rec)
        for c in rec.containers:
            rows.append(
                (
                    str(rec.target),  # [cluster:]namespace/kind/name
                    c.name,
                    plan_value(plan, c, "requests", CPU),
                    plan_value(plan, c, "limits", CPU),
                    plan_value(plan, c, "requests", MEMORY),
                    plan_value(plan, c, "limits", MEMORY),
                    gpu_cell(plan, rec, c),
                    mode_cell(plan),
                    rec.sizing_mode,
                    confidence_cell(c),
                    shown_reason(c.reason or rec.reason, plan, c.name),
                )
            )
    return Table("Recommendations", REC_HEADER, tuple(rows), frozenset({9}), detail_last=True)


def skipped(report: Report) -> Table:
    rows = tuple((str(s.subject), s.reason) for s in report.skipped)
    return Table(f"Skipped ({len(rows)})", ("Subject", "Reason"), rows)


def idle_gpus(report: Report) -> Table:
    rows = tuple(
        (
            str(w.workload),
            w.pod,
            w.model,
            str(w.gpus),
            format_shown(w.idle_since),
            f"{w.idle_hours:.1f}",
            f"{w.wasted_hourly_cost:.2f}",
        )
        for w in sorted(report.waste, key=lambda w: (w.workload, w.pod))
    )
    header = ("Workload", "Pod", "Model", "GPUs", "Idle since", "Idle hours", "Wasted $/h")
    return Table(f"Idle GPUs ({len(rows)})", header, rows, frozenset({3, 5, 6}))


def gpu_cost(report: Report) -> Table:
    costs = report.costs
    rows: list[tuple[str, ...]] = []
    if costs is not None and costs.items:
        for ns, hourly in sorted(costs.by_namespace.items()):
            wasted = costs.wasted_by_namespace.get(ns, 0.0)
            rows.append((ns, f"{hourly:.2f}", f"{wasted:.2f}", _pct(wasted, hourly)))
        total, wasted = costs.cluster_hourly, costs.cluster_wasted_hourly
        rows.append(("(cluster)", f"{total:.2f}", f"{wasted:.2f}", _pct(wasted, total)))
    header = ("Namespace", "$/hour", "Wasted $/hour", "Wasted %")
    return Table("GPU cost", header, tuple(rows), frozenset({1, 2, 3}))


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole > 0 else "-"


def tables(report: Report) -> Tables:
    """Every table of the report (empty ones too: renderers say "none")."""
    lows = sum(1 for r in report.recommendations for c in r.containers if c.low_confidence)
    containers = sum(len(r.containers) for r in report.recommendations)
    totals = f"{len(report.recommendations)} workloads, {containers} containers" + (
        f" ({lows} low-confidence: the webhook does not apply them)" if lows else ""
    )
    bases = cost_basis(report.costs, report.prices, report.price_file)
    generated = max((r.generated_at for r in report.recommendations), default=None)
    return Tables(
        (recommendations(report), skipped(report), idle_gpus(report), gpu_cost(report)),
        totals,
        tuple(line.strip() for line in summary(bases, report.price_file)),
        format_shown(generated) if generated else "-",
    )
