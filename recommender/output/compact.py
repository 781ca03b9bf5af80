"""The compact `recommend` table: one line per workload, one per container under it, fitted to the width.

Per container: CPU and memory requests and GPUs as "old -> new" (the pod plan's values: what the
webhook writes), the mode the webhook resolves and the confidence. Limits and reasons: --wide, explain.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from podsizer.api.resource import ContainerRecommendation, Recommendation
from podsizer.plan_reasons import adjustments
from podsizer.plan_view import GPU_OPT_IN, WorkloadPlan
from podsizer.podspec import quantity
from podsizer.resources import CPU, GPU, MEMORY
from recommender.output.costbasis import cost_basis, summary
from recommender.output.report import (
    UNKNOWN_CURRENT,
    Report,
    confidence_cell,
    plan_cell,
    sorted_recommendations,
)

DEFAULT_WIDTH = 80
ELLIPSIS = "…"
HEADER = ("  CONTAINER", "CPU REQUEST", "MEMORY REQUEST", "GPU", "MODE", "CONF")
INDENT = "  "
WORKLOAD_HEADER = "WORKLOAD  [SIZING PATH]"
MOVED = "!"  # a request the plan writes other than the estimate
MIB = 1024**2
GIB = 1024**3


def shorten(text: str, limit: int) -> str:
    """At most `limit` characters, cut in the middle so both ends (namespace, suffix) stay readable."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return text[:limit]
    head = limit // 2
    return text[:head] + ELLIPSIS + text[len(text) - (limit - 1 - head) :]


def fit(rows: Sequence[Sequence[str]], width: int, shrink: Sequence[int], minimum: int = 8) -> list[str]:
    """Columns two spaces apart within `width`: the `shrink` columns give up characters (widest first,
    down to `minimum`) and their cells are shortened in the middle."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    while sum(widths) + 2 * (len(widths) - 1) > width:
        candidates = [i for i in shrink if widths[i] > minimum]
        if not candidates:
            break
        widths[max(candidates, key=lambda i: widths[i])] -= 1
    lines = []
    for r in rows:
        cells = [shorten(c, widths[i]).ljust(widths[i]) for i, c in enumerate(r)]
        lines.append("  ".join(cells).rstrip())
    return lines


def amount(resource: str, value: str | None) -> str:
    """A quantity, exactly, in few characters: whole cores or millicores; whole Gi or Mi."""
    if value is None:
        return "-"
    q = quantity(value)
    if q is None:
        return value
    if resource == CPU:
        if q == q.to_integral_value():
            return str(int(q))
        milli = q * 1000
        return f"{int(milli)}m" if milli == milli.to_integral_value() else value
    if resource == MEMORY:
        for unit, size in (("Gi", GIB), ("Mi", MIB)):
            if q >= size and q % size == 0:
                return f"{int(q // size)}{unit}"
    return value


def request_cell(plan: WorkloadPlan | None, c: ContainerRecommendation, resource: str) -> str:
    """`old -> new` request where the plan changes it, the value alone where it stays; `!` after it
    where that is not the estimate (the plan clamped or bounded it: --wide and explain say why)."""
    cell = plan_cell(plan, c, "requests", resource, lambda value: amount(resource, value))
    if plan is None or plan.container(c.name) is None:
        return cell
    moved = any(a.field == "requests" and a.resource == resource for a in adjustments(plan, c.name))
    return cell + MOVED if moved else cell


def gpu_cell(
    plan: WorkloadPlan | None, rec: Recommendation, c: ContainerRecommendation
) -> tuple[str, set[str]]:
    """GPUs `old -> new` as the plan writes them, with markers: `*` a recommended count held back by
    the opt-in, `mig` a MIG slice would fit, `idle`; and the markers used (for the legend)."""
    marks: set[str] = set()
    if plan is None:
        count = c.limits.get(GPU, c.requests.get(GPU))
        cell = "-" if count is None else f"? -> {count}"
    else:
        g = plan.gpu(c.name)
        if g.current is None:
            return ("-", marks)
        if g.new is not None:
            cell = f"{g.current} -> {g.new}" + (" mig" if g.resource not in (None, GPU) else "")
        elif g.needs_opt_in:
            cell = f"{g.current} ({g.recommended}*)"
            marks.add("*")
        else:
            cell = g.current
    if cell == "-":
        return (cell, marks)
    suggested = rec.gpu.suggested_resource if rec.gpu is not None else None
    if suggested and (plan is None or plan.gpu(c.name).resource != suggested):
        cell += " mig?"
        marks.add("mig?")
    if rec.gpu is not None and rec.gpu.idle:
        cell += " idle"
    return (cell, marks)


def workload_line(rec: Recommendation, plan: WorkloadPlan | None) -> str:
    """[CLUSTER:]NAMESPACE/KIND/NAME (what `explain` takes), the sizing path, and why the plan changes
    nothing."""
    line = f"{rec.target}  [{rec.sizing_mode}"
    if plan is None:
        line += f"; {UNKNOWN_CURRENT}"
    elif plan.plan.skip not in (None, "no-change", "mode-off") and plan.shown_mode != "excluded":
        line += f"; not applied: {plan.plan.skip}"
    return line + "]"


def _rows(report: Report) -> tuple[list[list[str]], list[str], set[str]]:
    """Container rows, workload lines (row index -> line before it) and the GPU markers used."""
    rows: list[list[str]] = [list(HEADER)]
    before: list[str] = [WORKLOAD_HEADER]
    marks: set[str] = set()
    for rec in sorted_recommendations(report.recommendations):
        plan = report.plan(rec)
        mode = plan.shown_mode if plan is not None else "?"
        for i, c in enumerate(rec.containers):
            gpu, used = gpu_cell(plan, rec, c)
            marks |= used
            conf = confidence_cell(c)
            cpu, memory = request_cell(plan, c, CPU), request_cell(plan, c, MEMORY)
            marks |= {MOVED} if MOVED in cpu + memory else set()
            cells = [
                INDENT + c.name,
                cpu,
                memory,
                gpu,
                mode,
                conf,
            ]
            rows.append(cells)
            before.append(workload_line(rec, plan) if i == 0 else "")
    return rows, before, marks


def legend(marks: set[str], lows: int) -> list[str]:
    out = []
    if lows:
        out.append("low: below the confidence threshold; the webhook does not apply it.")
    if MOVED in marks:
        out.append(
            f"{MOVED}: not the estimate: the plan clamps or bounds it (maximum change factor, bounds, node "
            "size); --wide and explain say why."
        )
    if "*" in marks:
        out.append(f"(N*): N GPUs recommended; written only with {GPU_OPT_IN}.")
    if "mig?" in marks:
        out.append("mig?: a MIG slice would do; see podsizer explain.")
    return out


def render_compact(report: Report, width: int | None = None) -> str:
    width = width or DEFAULT_WIDTH
    out: list[str] = []
    rows, before, marks = _rows(report)
    if len(rows) > 1:
        for head, line in zip(before, fit(rows, width, shrink=(0,)), strict=True):
            if head:
                out.append(shorten(head, width))
            out.append(line)
    else:
        out.append("No recommendations.")
    lows = sum(1 for r in report.recommendations for c in r.containers if c.low_confidence)
    containers = sum(len(r.containers) for r in report.recommendations)
    out += ["", f"{len(report.recommendations)} workloads, {containers} containers."]
    notes = [
        *legend(marks, lows),
        "Limits and reasons: --wide. One workload in full: podsizer explain WORKLOAD.",
    ]
    out += wrap(notes, width)
    out += _sections(report, width)
    return "\n".join(out) + "\n"


def wrap(lines: Sequence[str], width: int) -> list[str]:
    """Prose lines wrapped at `width`, continuation lines indented by the line's own indent + 2."""
    out: list[str] = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()))
        out += textwrap.wrap(line, width, subsequent_indent=indent + "  ", break_on_hyphens=False) or [""]
    return out


def _sections(report: Report, width: int) -> list[str]:
    """Skipped subjects, idle GPUs, GPU cost per namespace and the price basis, fitted to `width`."""
    out: list[str] = []
    if report.skipped:
        out += ["", f"Skipped ({len(report.skipped)}):"]
        rows = [["SUBJECT", "REASON"]] + [[str(s.subject), s.reason] for s in report.skipped]
        out += [INDENT + line for line in fit(rows, width - 2, shrink=(0, 1), minimum=16)]
    if report.waste:
        out += ["", f"Idle GPUs ({len(report.waste)}):"]
        rows = [["WORKLOAD", "POD", "GPUS", "IDLE FOR", "WASTED $/H"]]
        for w in sorted(report.waste, key=lambda w: (w.workload, w.pod)):
            where = f"{w.workload.cluster}:" if w.workload.cluster else ""
            name = f"{where}{w.workload.namespace}/{w.workload.name}"
            idle = f"{w.idle_hours:.1f} h"
            rows.append([name, w.pod, f"{w.gpus} {w.model}", idle, f"{w.wasted_hourly_cost:.2f}"])
        out += [INDENT + line for line in fit(rows, width - 2, shrink=(0, 1, 2), minimum=10)]
    costs = report.costs
    if costs is not None and costs.items:
        out += ["", "GPU cost ($/hour):"]
        rows = [["NAMESPACE", "HOURLY", "WASTED"]]
        for ns, hourly in sorted(costs.by_namespace.items()):
            rows.append([ns, f"{hourly:.2f}", f"{costs.wasted_by_namespace.get(ns, 0.0):.2f}"])
        rows.append(["(cluster)", f"{costs.cluster_hourly:.2f}", f"{costs.cluster_wasted_hourly:.2f}"])
        out += [INDENT + line for line in fit(rows, width - 2, shrink=(0,))]
    if (costs is not None and costs.items) or report.price_file:
        bases = cost_basis(costs, report.prices, report.price_file)
        out += ["", *wrap(summary(bases, report.price_file), width)]
    return out
