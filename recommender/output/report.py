"""Render recommendations for people and tools: table (default), json, yaml, csv. Pure functions -> str.

Every format shows, per container, the current requests/limits and what the pod plan makes of them
under the configured PlanPolicy, so what is shown is what the webhook writes. json and yaml print the
RecommendationList document the JSON file store holds (so the output can be used as a store file), with
a `plan` key per item and `skipped`, `waste` and `cost` keys, all of which store readers ignore. csv has
one row per container. table adds skipped workloads, idle GPUs and a GPU cost summary per namespace.
Workloads of a cluster (several clusters sized, or a cluster named) carry it everywhere: the workload as
`cluster:namespace/kind/name`, a CLUSTER column (wide table), `status.cluster` (json, yaml), a last
`cluster` column (csv); merge_reports joins the reports of one run's clusters.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import orjson
import yaml

from podsizer.api.identity import WorkloadRef
from podsizer.api.listdoc import list_document
from podsizer.api.quantity import format_resource
from podsizer.api.resource import ContainerRecommendation, Recommendation, recommendation_to_resource
from podsizer.kube.times import format_time
from podsizer.modes import Meta
from podsizer.owners import Skipped
from podsizer.plan_reasons import adjustments, shown_reason
from podsizer.plan_view import GPU_OPT_IN, WorkloadPlan, plan_workload
from podsizer.podspec import CurrentResources, Field, quantity
from podsizer.policy import PlanPolicy
from podsizer.resources import CPU, GPU, MEMORY
from recommender.model import UsageSnapshot
from recommender.output.costbasis import cost_basis, summary

if TYPE_CHECKING:
    from recommender.sizing.cost import CostReport, PriceTable
    from recommender.sizing.waste import WasteFinding

OutputFormat = Literal["table", "json", "yaml", "csv", "html", "markdown"]
FORMATS: tuple[OutputFormat, ...] = ("table", "json", "yaml", "csv", "html", "markdown")
UNKNOWN_CURRENT = "current-unknown"  # the source does not know the workload's containers


class SizedRun(Protocol):
    """A sizing run's recommendations and skipped subjects (recommender.runner.RunOutput)."""

    @property
    def recommendations(self) -> Sequence[Recommendation]: ...

    @property
    def skipped(self) -> Sequence[Skipped]: ...


@runtime_checkable
class Findings(Protocol):
    """What a sizing run adds besides recommendations (RecommendationRun has both)."""

    @property
    def waste(self) -> Sequence[WasteFinding]: ...

    @property
    def costs(self) -> CostReport | None: ...


@dataclass(frozen=True)
class Report:
    """Everything a rendering can show; build it with Report.of(run, snapshot, policy).

    `current` holds each workload's containers as the source saw them, `meta` the labels/annotations
    of its pod template (UsageSnapshot.pod_meta); with `policy` they give the pod plan shown.
    """

    recommendations: tuple[Recommendation, ...]
    skipped: tuple[Skipped, ...] = ()
    waste: tuple[WasteFinding, ...] = ()
    costs: CostReport | None = None
    current: Mapping[WorkloadRef, tuple[CurrentResources, ...]] = field(default_factory=dict)
    policy: PlanPolicy = field(default_factory=PlanPolicy)
    meta: Mapping[WorkloadRef, Meta] = field(default_factory=dict)
    prices: PriceTable | None = None  # the price table the run's costs came from (names the basis)
    price_file: str | None = None  # the user's override price file, when one was given

    @staticmethod
    def of(
        run: SizedRun,
        snapshot: UsageSnapshot | None,
        policy: PlanPolicy,
        prices: PriceTable | None = None,
        price_file: str | None = None,
    ) -> Report:
        """From a sizing run, the snapshot it came from (current requests/limits, the pod templates'
        labels and annotations: plan_inputs) and the plan policy; `prices` and `price_file` name the basis
        of the run's prices."""
        findings = run if isinstance(run, Findings) else None
        current, meta = plan_inputs(snapshot) if snapshot is not None else ({}, {})
        return Report(
            recommendations=tuple(run.recommendations),
            skipped=tuple(run.skipped),
            waste=tuple(findings.waste) if findings is not None else (),
            costs=findings.costs if findings is not None else None,
            current=current,
            policy=policy,
            meta=meta,
            prices=prices,
            price_file=price_file,
        )

    def plan(self, rec: Recommendation) -> WorkloadPlan | None:
        """The pod plan for the workload's pod; None when the source does not know its containers."""
        current = self.current.get(rec.target)
        if not current:
            return None
        return plan_workload(rec, current, self.policy, self.meta.get(rec.target))


def merge_costs(costs: Iterable[CostReport | None]) -> CostReport | None:
    """Several clusters' GPU cost reports as one, per namespace as `cluster:namespace` (None when none has
    any)."""
    present = [c for c in costs if c is not None]
    if not present:
        return None
    from recommender.sizing.cost import CostReport

    merged = CostReport.of([item for c in present for item in c.items])
    by_ns: dict[str, float] = {}
    wasted_ns: dict[str, float] = {}
    for item in merged.items:  # two clusters' `shop` are two namespaces
        w = item.workload
        ns = f"{w.cluster}:{w.namespace}" if w.cluster else w.namespace
        by_ns[ns] = by_ns.get(ns, 0.0) + item.hourly_cost
        wasted_ns[ns] = wasted_ns.get(ns, 0.0) + item.wasted_hourly_cost
    return dataclasses.replace(merged, by_namespace=by_ns, wasted_by_namespace=wasted_ns)


def merge_reports(reports: Sequence[Report]) -> Report:
    """Several clusters' reports as one (their workloads never collide: each carries its cluster); the
    plan policy and prices are the first's (one run has one of each). At least one report."""
    if len(reports) == 1:
        return reports[0]
    first = reports[0]
    return Report(
        recommendations=tuple(rec for r in reports for rec in r.recommendations),
        skipped=tuple(s for r in reports for s in r.skipped),
        waste=tuple(w for r in reports for w in r.waste),
        costs=merge_costs([r.costs for r in reports]),
        current={w: c for r in reports for w, c in r.current.items()},
        policy=first.policy,
        meta={w: m for r in reports for w, m in r.meta.items()},
        prices=first.prices,
        price_file=first.price_file,
    )


def current_resources(snapshot: UsageSnapshot) -> dict[WorkloadRef, tuple[CurrentResources, ...]]:
    """Current requests/limits of each workload's containers, as the source saw them."""
    out: dict[WorkloadRef, list[CurrentResources]] = {}
    for c in snapshot.containers:
        out.setdefault(c.workload, []).append(
            CurrentResources.of(c.container, c.current_requests, c.current_limits, c.init_container)
        )
    return {w: tuple(cs) for w, cs in out.items()}


def plan_inputs(
    snapshot: UsageSnapshot,
) -> tuple[dict[WorkloadRef, tuple[CurrentResources, ...]], dict[WorkloadRef, Meta]]:
    """What the pod plan of each workload is computed from, for every consumer that shows it (recommend,
    explain, the console): its containers' current values and its pod template's labels/annotations."""
    current = current_resources(snapshot)
    return current, {w: snapshot.pod_meta(w) for w in current}


def render(report: Report, fmt: OutputFormat = "table", width: int | None = None, wide: bool = False) -> str:
    """The report in `fmt`. The table is the compact one fitted to `width` (80 when None); `wide` gives
    every column, the reason fitted to `width`."""
    if fmt == "table" and not wide:
        from recommender.output.compact import render_compact

        return render_compact(report, width)
    if fmt == "table":
        return render_table(report, width)
    if fmt == "html":
        from recommender.output.html import render_html

        return render_html(report)
    if fmt == "markdown":
        from recommender.output.markdown import render_markdown

        return render_markdown(report)
    if fmt == "json":
        return orjson.dumps(document(report), option=orjson.OPT_INDENT_2).decode() + "\n"
    if fmt == "yaml":
        return yaml.safe_dump(document(report), sort_keys=False, allow_unicode=True)
    if fmt == "csv":
        return render_csv(report)
    raise ValueError(f"unknown output format {fmt!r}; expected one of {', '.join(FORMATS)}")


def sorted_recommendations(recs: Iterable[Recommendation]) -> list[Recommendation]:
    return sorted(recs, key=lambda r: (r.target.cluster, r.namespace, r.target.kind, r.target.name))


def shows_cluster(report: Report) -> bool:
    """Whether outputs name clusters: a workload of the report carries one (one named or several)."""
    return any(r.target.cluster for r in report.recommendations) or any(
        w.workload.cluster for w in report.waste
    )


def plan_record(report: Report, rec: Recommendation) -> dict[str, object]:
    """The `plan` key of an item: the pod plan's record and `adjusted` (each value it writes other than
    the estimate, and why), or the skip when the containers are unknown."""
    plan = report.plan(rec)
    if plan is None:
        return {"skip": UNKNOWN_CURRENT}
    moved = [a.to_json() for c in plan.containers for a in adjustments(plan, c.current.name)]
    return {**plan.record(), "adjusted": moved}


def _item(report: Report, rec: Recommendation) -> dict[str, Any]:
    """A store item plus `plan`: what the webhook writes for the workload's pod (store readers ignore it)."""
    item = recommendation_to_resource(rec)
    item["plan"] = plan_record(report, rec)
    return item


def skipped_record(s: Skipped) -> dict[str, object]:
    """A skipped (or failed) subject as JSON: the text people read, and its fields (`about`) for tools."""
    return {"subject": str(s.subject), "reason": s.reason, "failed": s.failed, "about": s.subject.fields()}


def document(report: Report) -> dict[str, Any]:
    """The RecommendationList (store format) with each item's `plan`, plus skipped, waste and cost."""
    doc = list_document([_item(report, r) for r in sorted_recommendations(report.recommendations)])
    doc["skipped"] = [skipped_record(s) for s in report.skipped]
    if report.waste:
        doc["waste"] = [
            {
                "workload": str(w.workload),
                **({"cluster": w.workload.cluster} if w.workload.cluster else {}),
                "container": w.container,
                "pod": w.pod,
                "node": w.node,
                "model": w.model,
                "gpus": w.gpus,
                "activitySignal": w.activity_signal,
                "idleSince": format_time(w.idle_since),
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


def _fmt(resource: str, value: str | None) -> str:
    """A quantity as people read it (millicores, Mi); "-" when absent."""
    if value is None:
        return "-"
    parsed = quantity(value)
    if parsed is None:
        return value
    try:
        return format_resource(resource, float(parsed))
    except ValueError:
        return value


def plan_cell(
    plan: WorkloadPlan | None,
    c: ContainerRecommendation,
    fld: Field,
    res: str,
    show: Callable[[str | None], str],
    removed: str | None = None,
) -> str:
    """Every table's cpu/memory cell (the terminal's, the compact one's, html and markdown): `current ->
    new` where the plan changes the value, the value alone where it stays, and `? -> recommended` where
    the source does not know the container; `show` writes each value (None: absent), `removed` (when
    given) a value the plan removes."""
    cp = plan.container(c.name) if plan is not None else None
    if cp is None:
        recommended = (c.requests if fld == "requests" else c.limits).get(res)
        return f"? -> {show(recommended)}" if recommended is not None else "?"
    change = cp.change(fld, res)
    if change is None:
        return show(cp.before(fld, res))
    new = removed if change.new is None and removed is not None else show(change.new)
    return f"{show(change.old)} -> {new}"


def _cell(plan: WorkloadPlan | None, c: ContainerRecommendation, fld: Field, res: str) -> str:
    """The terminal table's cell: values as people read them (_fmt)."""
    return plan_cell(plan, c, fld, res, lambda value: _fmt(res, value))


def gpu_cell(plan: WorkloadPlan | None, rec: Recommendation, c: ContainerRecommendation) -> str:
    """current -> new GPUs, as the plan writes them; a recommended change the GPU opt-in holds back
    says so; then the suggested MIG slice (when not written) and `idle`."""
    if plan is None:
        count = c.limits.get(GPU, c.requests.get(GPU))
        cell = "-" if count is None else f"? -> {count}"
    else:
        g = plan.gpu(c.name)
        if g.current is None:
            return "-" if g.recommended is None else f"- ({g.recommended} recommended)"
        if g.new is not None:
            cell = f"{g.current} -> {g.new}" + (f" {g.resource}" if g.resource != g.held else "")
        elif g.needs_opt_in:
            cell = f"{g.current} -> {g.recommended} (needs {GPU_OPT_IN})"
        elif not plan.plan.gpu_resize:
            cell = f"{g.current} (keep)"
        else:
            cell = g.current
        if g.held is not None and g.held != GPU:
            cell += f" ({g.held})"
    suggested = rec.gpu.suggested_resource if rec.gpu is not None else None
    if suggested and (plan is None or plan.gpu(c.name).resource != suggested) and cell != "-":
        cell += f" (suggests {suggested})"
    if rec.gpu is not None and rec.gpu.idle and cell != "-":
        cell += " idle"
    return cell


def confidence_cell(c: ContainerRecommendation) -> str:
    """A container's confidence as every table shows it: "0.93", with " low" when it is never applied."""
    return f"{c.confidence:.2f}" + (" low" if c.low_confidence else "")


def mode_cell(plan: WorkloadPlan | None) -> str:
    """The mode the webhook resolves for the pod, with the reason when it changes nothing."""
    if plan is None:
        return UNKNOWN_CURRENT
    shown, skip = plan.shown_mode, plan.plan.skip
    if skip is None or skip == "no-change" or skip == "mode-off" or shown == "excluded":
        return shown
    return f"{shown} ({skip})"


def _columns(rows: Sequence[Sequence[str]], last_width: int | None = None) -> list[str]:
    """Left-aligned columns two spaces apart; the last column is truncated to last_width."""
    if not rows:
        return []
    n = len(rows[0])
    if last_width is not None:
        rows = [[*r[:-1], truncate(r[-1], last_width)] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(n)]
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip() for r in rows]


REASON_MIN_WIDTH = 40


def _reason_wrapped(rows: Sequence[Sequence[str]], width: int | None) -> list[str]:
    """The columns with the whole reason: on one line when `width` is None (a pipe), else wrapped
    within what the terminal leaves for it; when that is under REASON_MIN_WIDTH, on lines of its own
    under the row, indented."""
    if width is None:
        return _columns(rows)
    fixed = sum(max(len(r[i]) for r in rows) + 2 for i in range(len(rows[0]) - 1))
    below = width - fixed < REASON_MIN_WIDTH
    lines = _columns([[*r[:-1], ""] for r in rows])
    out: list[str] = []
    for i, (line, r) in enumerate(zip(lines, rows, strict=True)):
        reason = " ".join(r[-1].split())
        if below:  # the header row names no REASON column then
            out.append(line)
            out += (
                textwrap.wrap(reason, width - 4, initial_indent="    ", subsequent_indent="    ") if i else []
            )
            continue
        parts = textwrap.wrap(reason, width - fixed, break_on_hyphens=False) or [""]
        out.append(line.ljust(fixed) + parts[0])
        out += [" " * fixed + part for part in parts[1:]]
    return out


def render_table(report: Report, width: int | None = None) -> str:
    clusters = shows_cluster(report)  # a CLUSTER column first, only then
    header = ["CLUSTER"] if clusters else []
    header += ["NAMESPACE", "WORKLOAD", "CONTAINER", "CPU REQUEST", "CPU LIMIT", "MEMORY REQUEST"]
    header += ["MEMORY LIMIT", "GPU", "MODE", "SIZING", "CONFIDENCE", "REASON"]
    rows: list[list[str]] = [header]
    for rec in sorted_recommendations(report.recommendations):
        plan = report.plan(rec)
        for c in rec.containers:
            conf = confidence_cell(c)
            rows.append(
                [
                    *([rec.target.cluster] if clusters else []),
                    rec.namespace,
                    f"{rec.target.kind}/{rec.target.name}",
                    c.name,
                    _cell(plan, c, "requests", CPU),
                    _cell(plan, c, "limits", CPU),
                    _cell(plan, c, "requests", MEMORY),
                    _cell(plan, c, "limits", MEMORY),
                    gpu_cell(plan, rec, c),
                    mode_cell(plan),
                    rec.sizing_mode,
                    conf,
                    shown_reason(c.reason or rec.reason, plan, c.name),
                ]
            )
    out: list[str] = []
    if len(rows) > 1:
        out += _reason_wrapped(rows, width)
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
        skip_rows = [["SUBJECT", "REASON"]] + [[str(s.subject), s.reason] for s in report.skipped]
        out += ["  " + line for line in _columns(skip_rows, max(40, (width or 120) - 50))]

    if report.waste:
        out += ["", f"Idle GPUs ({len(report.waste)}):"]
        waste_rows = [["CLUSTER"] if clusters else []]
        waste_rows[0] += ["NAMESPACE", "WORKLOAD", "POD", "MODEL", "GPUS", "IDLE SINCE", "WASTED $/H"]
        for w in sorted(report.waste, key=lambda w: (w.workload, w.pod)):
            waste_rows.append(
                [
                    *([w.workload.cluster] if clusters else []),
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
    if (costs is not None and costs.items) or report.price_file:
        out += ["", *summary(cost_basis(costs, report.prices, report.price_file), report.price_file)]
    return "\n".join(out) + "\n"


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole > 0 else "-"


# --- csv -----------------------------------------------------------------------------------------

CSV_COLUMNS = (
    "namespace",
    "kind",
    "name",
    "container",
    "mode",
    "sizing_mode",
    "cpu_request_current",
    "cpu_request",
    "cpu_limit_current",
    "cpu_limit",
    "memory_request_current",
    "memory_request",
    "memory_limit_current",
    "memory_limit",
    "gpu_current",
    "gpu",
    "gpu_resource",
    "gpu_recommended",
    "gpu_suggested_resource",
    "gpu_idle",
    "gpu_hourly_cost",
    "gpu_wasted_hourly_cost",
    "confidence",
    "low_confidence",
    "reason",
    "cluster",
)
"""Each `<resource>_<field>` is the value once the plan is applied (the current one where it stays);
`cluster` is last (empty in a single-cluster setup), so the columns before it never move."""

RESOURCE_FIELDS: tuple[tuple[str, Field], ...] = (
    (CPU, "requests"),
    (CPU, "limits"),
    (MEMORY, "requests"),
    (MEMORY, "limits"),
)


def _csv_values(plan: WorkloadPlan | None, name: str) -> list[str]:
    """current, planned for each of RESOURCE_FIELDS, then GPU current, planned, resource, recommended."""
    cp = plan.container(name) if plan is not None else None
    out: list[str] = []
    for res, fld in RESOURCE_FIELDS:
        out += [cp.before(fld, res) or "", cp.after(fld, res) or ""] if cp is not None else ["", ""]
    if plan is None:
        return [*out, "", "", "", ""]
    g = plan.gpu(name)
    return [*out, g.current or "", g.new or g.current or "", g.resource or g.held or "", g.recommended or ""]


def render_csv(report: Report) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for rec in sorted_recommendations(report.recommendations):
        g = rec.gpu
        plan = report.plan(rec)
        for c in rec.containers:
            has_gpu = GPU in c.requests or GPU in c.limits
            writer.writerow(
                [
                    rec.namespace,
                    rec.target.kind,
                    rec.target.name,
                    c.name,
                    mode_cell(plan),
                    rec.sizing_mode,
                    *_csv_values(plan, c.name),
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
                    shown_reason(c.reason or rec.reason, plan, c.name),
                    rec.target.cluster,
                ]
            )
    return buf.getvalue()
