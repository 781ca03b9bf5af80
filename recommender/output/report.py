"""Render recommendations for people and tools: table (default), json, yaml, csv. Pure functions -> str.

json and yaml print the same RecommendationList document the JSON file store holds (so the output
can be used as a store file), plus `skipped`, `waste` and `cost` keys that readers of the store
ignore. csv has one row per container. table adds skipped workloads, idle GPUs and a GPU cost
summary per namespace with cluster totals.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import orjson
import yaml

from podsizer.api.identity import WorkloadRef
from podsizer.api.listdoc import list_document
from podsizer.api.quantity import format_resource
from podsizer.api.resource import ContainerRecommendation, Recommendation, recommendation_to_resource
from podsizer.owners import Skipped
from recommender.model import UsageSnapshot

if TYPE_CHECKING:
    from recommender.sizing.cost import CostReport
    from recommender.sizing.waste import WasteFinding

OutputFormat = Literal["table", "json", "yaml", "csv"]
FORMATS: tuple[OutputFormat, ...] = ("table", "json", "yaml", "csv")
GPU = "nvidia.com/gpu"

Current = Mapping[tuple[WorkloadRef, str], Mapping[str, Mapping[str, float]]]
"""(workload, container) -> {"requests": {...}, "limits": {...}} in base units."""


@dataclass(frozen=True)
class Report:
    """Everything a rendering can show; build it with Report.of(run, snapshot)."""

    recommendations: tuple[Recommendation, ...]
    skipped: tuple[Skipped, ...] = ()
    waste: tuple[WasteFinding, ...] = ()
    costs: CostReport | None = None
    current: Current = field(default_factory=dict)

    @staticmethod
    def of(run: Any, snapshot: UsageSnapshot | None = None) -> Report:
        """From a RecommendationRun (or anything with .recommendations) and, optionally, the snapshot
        it came from (for current requests/limits)."""
        return Report(
            recommendations=tuple(run.recommendations),
            skipped=tuple(getattr(run, "skipped", ())),
            waste=tuple(getattr(run, "waste", ())),
            costs=getattr(run, "costs", None),
            current=current_resources(snapshot) if snapshot is not None else {},
        )


def current_resources(snapshot: UsageSnapshot) -> dict[tuple[WorkloadRef, str], dict[str, dict[str, float]]]:
    """Current requests/limits per (workload, container), as the source saw them."""
    return {
        (c.workload, c.container): {"requests": dict(c.current_requests), "limits": dict(c.current_limits)}
        for c in snapshot.containers
    }


def render(report: Report, fmt: OutputFormat = "table", width: int | None = None) -> str:
    """The report in `fmt`; `width` (table only) is the terminal width to fit the reason column in."""
    if fmt == "table":
        return render_table(report, width)
    if fmt == "json":
        return orjson.dumps(document(report), option=orjson.OPT_INDENT_2).decode() + "\n"
    if fmt == "yaml":
        return yaml.safe_dump(document(report), sort_keys=False, allow_unicode=True)
    if fmt == "csv":
        return render_csv(report)
    raise ValueError(f"unknown output format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _rfc3339(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _sorted(recs: Iterable[Recommendation]) -> list[Recommendation]:
    return sorted(recs, key=lambda r: (r.namespace, r.target.kind, r.target.name))


def document(report: Report) -> dict[str, Any]:
    """The RecommendationList (store format) plus skipped, waste and cost."""
    doc = list_document([recommendation_to_resource(r) for r in _sorted(report.recommendations)])
    doc["skipped"] = [{"subject": s.subject, "reason": s.reason} for s in report.skipped]
    if report.waste:
        doc["waste"] = [
            {
                "workload": str(w.workload),
                "container": w.container,
                "pod": w.pod,
                "node": w.node,
                "model": w.model,
                "gpus": w.gpus,
                "activitySignal": w.activity_signal,
                "idleSince": _rfc3339(w.idle_since),
                "idleHours": round(w.idle_hours, 3),
                "wastedHourlyCost": round(w.wasted_hourly_cost, 6),
            }
            for w in report.waste
        ]
    if report.costs is not None and report.costs.items:
        c = report.costs
        doc["cost"] = {
            "clusterHourly": round(c.cluster_hourly, 6),
            "clusterWastedHourly": round(c.cluster_wasted_hourly, 6),
            "namespaces": {
                ns: {"hourly": round(v, 6), "wastedHourly": round(c.wasted_by_namespace.get(ns, 0.0), 6)}
                for ns, v in sorted(c.by_namespace.items())
            },
        }
    return doc


# --- table ---------------------------------------------------------------------------------------


def truncate(text: str, limit: int) -> str:
    """At most `limit` characters; cut text ends with "..."."""
    text = " ".join(text.split())
    if limit <= 0 or len(text) <= limit:
        return text
    if limit <= 3:
        return text[:limit]
    return text[: limit - 3].rstrip() + "..."


def _fmt(resource: str, value: float | None) -> str:
    if value is None:
        return "-"
    try:
        return format_resource(resource, value)
    except ValueError:
        return f"{value:g}"


def _change(current: float | None, recommended: str | None, resource: str) -> str:
    rec = recommended or "-"
    if current is None:
        return rec if recommended else "-"
    return f"{_fmt(resource, current)} -> {rec}"


def _lookup(
    report: Report, rec: Recommendation, c: ContainerRecommendation, part: str, res: str
) -> float | None:
    values = report.current.get((rec.target, c.name), {}).get(part, {})
    return values.get(res)


def _gpu_cell(rec: Recommendation, c: ContainerRecommendation) -> str:
    count = c.requests.get(GPU) or c.limits.get(GPU)
    if count is None:
        return "-"
    cell = count
    if rec.gpu is not None:
        if rec.gpu.suggested_resource:
            cell += f" ({rec.gpu.suggested_resource})"
        if rec.gpu.idle:
            cell += " idle"
    return cell


def _columns(rows: Sequence[Sequence[str]], last_width: int | None = None) -> list[str]:
    """Left-aligned columns two spaces apart; the last column is truncated to last_width."""
    if not rows:
        return []
    n = len(rows[0])
    if last_width is not None:
        rows = [[*r[:-1], truncate(r[-1], last_width)] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(n)]
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip() for r in rows]


REASON_WIDTH = 60


def render_table(report: Report, width: int | None = None) -> str:
    header = ["NAMESPACE", "WORKLOAD", "CONTAINER", "CPU REQUEST", "MEMORY REQUEST", "MEMORY LIMIT", "GPU"]
    header += ["MODE", "CONFIDENCE", "REASON"]
    rows: list[list[str]] = [header]
    for rec in _sorted(report.recommendations):
        for c in rec.containers:
            conf = f"{c.confidence:.2f}" + (" low" if c.low_confidence else "")
            rows.append(
                [
                    rec.namespace,
                    f"{rec.target.kind}/{rec.target.name}",
                    c.name,
                    _change(_lookup(report, rec, c, "requests", "cpu"), c.requests.get("cpu"), "cpu"),
                    _change(
                        _lookup(report, rec, c, "requests", "memory"), c.requests.get("memory"), "memory"
                    ),
                    _change(_lookup(report, rec, c, "limits", "memory"), c.limits.get("memory"), "memory"),
                    _gpu_cell(rec, c),
                    rec.sizing_mode,
                    conf,
                    c.reason or rec.reason,
                ]
            )
    reason_width = REASON_WIDTH
    if width is not None and len(rows) > 1:
        fixed = sum(max(len(r[i]) for r in rows) + 2 for i in range(len(header) - 1))
        reason_width = max(20, width - fixed)
    out: list[str] = []
    if len(rows) > 1:
        out += _columns(rows, reason_width)
    else:
        out.append("No recommendations.")
    total_containers = len(rows) - 1
    lows = sum(1 for r in report.recommendations for c in r.containers if c.low_confidence)
    out.append("")
    out.append(
        f"{len(report.recommendations)} workloads, {total_containers} containers"
        + (f" ({lows} low-confidence: the webhook does not apply them)" if lows else "")
    )

    if report.skipped:
        out += ["", f"Skipped ({len(report.skipped)}):"]
        skip_rows = [["SUBJECT", "REASON"]] + [[s.subject, s.reason] for s in report.skipped]
        out += ["  " + line for line in _columns(skip_rows, max(40, (width or 120) - 50))]

    if report.waste:
        out += ["", f"Idle GPUs ({len(report.waste)}):"]
        waste_rows = [["NAMESPACE", "WORKLOAD", "POD", "MODEL", "GPUS", "IDLE SINCE", "WASTED $/H"]]
        for w in sorted(report.waste, key=lambda w: (w.workload, w.pod)):
            waste_rows.append(
                [
                    w.workload.namespace,
                    f"{w.workload.kind}/{w.workload.name}",
                    w.pod,
                    w.model,
                    str(w.gpus),
                    w.idle_since.astimezone(UTC).strftime("%Y-%m-%d %H:%M") + f" ({w.idle_hours:.1f} h)",
                    f"{w.wasted_hourly_cost:.2f}",
                ]
            )
        out += ["  " + line for line in _columns(waste_rows)]

    costs = report.costs
    if costs is not None and costs.items:
        out += ["", "GPU cost ($/hour):"]
        cost_rows = [["NAMESPACE", "HOURLY", "WASTED", "WASTED %"]]
        for ns, hourly in sorted(costs.by_namespace.items()):
            wasted = costs.wasted_by_namespace.get(ns, 0.0)
            cost_rows.append([ns, f"{hourly:.2f}", f"{wasted:.2f}", _pct(wasted, hourly)])
        cost_rows.append(
            [
                "(cluster)",
                f"{costs.cluster_hourly:.2f}",
                f"{costs.cluster_wasted_hourly:.2f}",
                _pct(costs.cluster_wasted_hourly, costs.cluster_hourly),
            ]
        )
        out += ["  " + line for line in _columns(cost_rows)]
    return "\n".join(out) + "\n"


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole > 0 else "-"


# --- csv -----------------------------------------------------------------------------------------

CSV_COLUMNS = (
    "namespace",
    "kind",
    "name",
    "container",
    "sizing_mode",
    "cpu_request_current",
    "cpu_request",
    "cpu_limit_current",
    "cpu_limit",
    "memory_request_current",
    "memory_request",
    "memory_limit_current",
    "memory_limit",
    "gpu",
    "gpu_suggested_resource",
    "gpu_idle",
    "gpu_hourly_cost",
    "gpu_wasted_hourly_cost",
    "confidence",
    "low_confidence",
    "reason",
)


def render_csv(report: Report) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for rec in _sorted(report.recommendations):
        g = rec.gpu
        for c in rec.containers:

            def cur(part: str, res: str, rec: Recommendation = rec, c: ContainerRecommendation = c) -> str:
                v = _lookup(report, rec, c, part, res)
                return "" if v is None else _fmt(res, v)

            has_gpu = GPU in c.requests or GPU in c.limits
            writer.writerow(
                [
                    rec.namespace,
                    rec.target.kind,
                    rec.target.name,
                    c.name,
                    rec.sizing_mode,
                    cur("requests", "cpu"),
                    c.requests.get("cpu", ""),
                    cur("limits", "cpu"),
                    c.limits.get("cpu", ""),
                    cur("requests", "memory"),
                    c.requests.get("memory", ""),
                    cur("limits", "memory"),
                    c.limits.get("memory", ""),
                    c.limits.get(GPU, c.requests.get(GPU, "")),
                    (g.suggested_resource or "") if g is not None and has_gpu else "",
                    str(g.idle).lower() if g is not None and has_gpu else "",
                    f"{g.hourly_cost:.6f}" if g is not None and has_gpu and g.hourly_cost is not None else "",
                    (
                        f"{g.wasted_hourly_cost:.6f}"
                        if g is not None and has_gpu and g.wasted_hourly_cost is not None
                        else ""
                    ),
                    f"{c.confidence:.4f}",
                    str(c.low_confidence).lower(),
                    c.reason or rec.reason,
                ]
            )
    return buf.getvalue()
