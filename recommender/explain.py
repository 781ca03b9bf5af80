"""`podsizer explain NAMESPACE/KIND/NAME`: the full reasoning for one workload, from the same run as
`recommend` (same source flags): reasons, policy and bounds, confidence, sizing mode, GPU findings,
the cost basis and the pod plan's exact changes. Exit status: 0 found, 2 unknown workload (with close
matches), 1 a runtime failure of the source, 3 found but part of the scope matched no workload (unless
--allow-empty)."""

from __future__ import annotations

import argparse
import difflib
import sys
import textwrap
from collections.abc import Sequence

import orjson

from podsizer.api.quantity import format_resource
from podsizer.api.resource import ContainerRecommendation, Recommendation, recommendation_to_resource
from podsizer.bounds import policy_for
from podsizer.keys import ALLOW_LARGE_CHANGE_KEY
from podsizer.kube.times import format_shown
from podsizer.owners import Skipped
from podsizer.plan_reasons import adjustments
from podsizer.plan_view import GPU_OPT_IN
from podsizer.policy import PlanPolicy
from podsizer.settings import RUN_ONLY, RecommenderSettings, add_arguments
from podsizer.sizing_policy import SizingPolicy
from recommender.commands import DEFAULT_WIRING, empty_scope_status, load_settings, one_run, terminal_width
from recommender.model import SourceError
from recommender.output.compact import amount
from recommender.output.costbasis import cost_basis
from recommender.output.report import Report, plan_record
from recommender.output.store.base import StoreError
from recommender.sizing.confidence import BATCH_KINDS
from recommender.wiring import Wiring

WIDTH = 100
"""Line width off a terminal (and the widest on one: longer lines are hard to read)."""
MIN_WIDTH = 60


def add_explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "workloads",
        nargs="+",
        metavar="[CLUSTER:]NAMESPACE/KIND/NAME",
        help="the workload (NAMESPACE/NAME if unique; the cluster when several clusters were sized); "
        "several: one run explains them all (json: a list)",
    )
    parser.add_argument("--cluster", default="", help="the workload's cluster (instead of a CLUSTER: prefix)")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text", help="default: text")
    parser.add_argument("--no-progress", action="store_true", help="no progress indicator on stderr")
    add_arguments(parser, RecommenderSettings, unlisted=RUN_ONLY)


def run_explain(args: argparse.Namespace, wiring: Wiring = DEFAULT_WIRING) -> int:
    """Run once like `recommend`, then print each workload's explanation (nothing when one is unknown)."""
    settings = load_settings(args)
    try:
        result = one_run(settings, wiring, None, progress=not args.no_progress)
    except (SourceError, StoreError) as exc:
        print(f"podsizer explain: {exc}", file=sys.stderr)
        return 1
    report = result.report
    for line in result.stale:
        print(f"podsizer explain: {line}", file=sys.stderr)
    index = Index(report.recommendations)
    found: list[Recommendation] = []
    for wanted in args.workloads:
        hits = index.matches(wanted, args.cluster)
        if len(hits) != 1:
            print(ambiguous(hits, wanted) if hits else not_found(report, wanted), file=sys.stderr)
        found += hits[:1] if len(hits) == 1 else []
    if len(found) != len(args.workloads):
        return 2
    policy = settings.to_sizing_policy()
    if args.output == "json":
        docs = [explanation(report, rec, policy) for rec in found]
        shown = docs[0] if len(docs) == 1 else docs
        sys.stdout.write(orjson.dumps(shown, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        width = text_width(terminal_width())
        sys.stdout.write("\n".join(render_text(report, rec, policy, width) for rec in found))
    return empty_scope_status("explain", settings, result.unmatched)


def ref_of(rec: Recommendation) -> str:
    """[CLUSTER:]NAMESPACE/KIND/NAME: what `explain` takes."""
    return str(rec.target)


def split_cluster(wanted: str, cluster: str = "") -> tuple[str, str]:
    """(cluster, NAMESPACE/...) of `CLUSTER:NAMESPACE/...` (a namespace never holds ':'), else
    (cluster, wanted)."""
    head, sep, rest = wanted.partition(":")
    return (head, rest) if sep and "/" not in head else (cluster, wanted)


class Index:
    """A run's Recommendations by NAMESPACE/KIND/NAME and NAMESPACE/NAME, so many lookups cost one pass."""

    def __init__(self, recs: Sequence[Recommendation]) -> None:
        self.full: dict[tuple[str, str, str], list[Recommendation]] = {}
        self.short: dict[tuple[str, str], list[Recommendation]] = {}
        for r in recs:
            self.full.setdefault((r.namespace, r.target.kind.lower(), r.target.name), []).append(r)
            self.short.setdefault((r.namespace, r.target.name), []).append(r)

    def matches(self, wanted: str, cluster: str = "") -> list[Recommendation]:
        """The workloads `wanted` names: NAMESPACE/KIND/NAME (kind in any case), or NAMESPACE/NAME when one
        workload of a cluster has that name; in the cluster given (prefix or `cluster`), else in any
        cluster (more than one hit: ambiguous)."""
        cluster, wanted = split_cluster(wanted, cluster)
        parts = wanted.strip("/").split("/")
        if len(parts) == 3:
            ns, kind, name = parts
            hits = self.full.get((ns, kind.lower(), name), [])
        elif len(parts) == 2:
            hits = self.short.get((parts[0], parts[1]), [])
        else:
            return []
        hits = [r for r in hits if not cluster or r.target.cluster == cluster]
        if len(parts) == 2 and len({r.target.cluster for r in hits}) != len(hits):
            return []  # a name of two kinds in one cluster: unclear
        return hits


def matches(recs: Sequence[Recommendation], wanted: str, cluster: str = "") -> list[Recommendation]:
    """The workloads `wanted` names (Index.matches)."""
    return Index(recs).matches(wanted, cluster)


def find(recs: Sequence[Recommendation], wanted: str, cluster: str = "") -> Recommendation | None:
    """The one workload `wanted` names (see matches); None when none or several."""
    hits = matches(recs, wanted, cluster)
    return hits[0] if len(hits) == 1 else None


def ambiguous(hits: Sequence[Recommendation], wanted: str) -> str:
    """The error for a workload found in several clusters, naming them."""
    clusters = sorted(r.target.cluster for r in hits)
    return (
        f"podsizer explain: {wanted!r} is in {len(hits)} clusters ({', '.join(clusters)}): name one, "
        f"e.g. {ref_of(hits[0])} or --cluster {clusters[0]}"
    )


def close_matches(recs: Sequence[Recommendation], wanted: str, n: int = 5) -> list[str]:
    """The workloads whose NAMESPACE/KIND/NAME is closest to `wanted`, or whose name holds its last part."""
    refs = sorted(ref_of(r) for r in recs)
    last = wanted.rstrip("/").rsplit("/", 1)[-1].lower()
    close = difflib.get_close_matches(wanted, refs, n=n, cutoff=0.75)
    contains = [r for r in refs if last and last in r.rsplit("/", 1)[-1].lower() and r not in close]
    return (close + contains)[:n]


def not_found(report: Report, wanted: str) -> str:
    lines = [f"podsizer explain: no workload {wanted!r} in this run"]
    skipped = [s for s in report.skipped if _skipped_matches(s, wanted)]
    lines += [f"  skipped: {s.subject}: {s.reason}" for s in skipped]
    matches = close_matches(report.recommendations, wanted)
    if matches:
        lines.append("close matches:")
        lines += [f"  {m}" for m in matches]
    else:
        lines.append(f"({len(report.recommendations)} workloads in this run; see podsizer recommend)")
    return "\n".join(lines)


def _skipped_matches(s: Skipped, wanted: str) -> bool:
    """The skipped subject is (or is in) the workload `wanted` names: its cluster when given, namespace,
    kind when given (any case) and name."""
    cluster, rest = split_cluster(wanted)
    parts = rest.strip("/").split("/")
    subject = s.subject
    if (cluster and cluster != subject.cluster) or len(parts) not in (2, 3):
        return False
    kind = parts[1].lower() if len(parts) == 3 else subject.kind.lower()
    return (subject.namespace, subject.kind.lower(), subject.name) == (parts[0], kind, parts[-1])


# --- the explanation -----------------------------------------------------------------------------


def _quantity(resource: str, value: float) -> str:
    return amount(resource, format_resource(resource, value))


def _quantities(values: dict[str, float]) -> dict[str, str]:
    return {r: _quantity(r, v) for r, v in sorted(values.items())}


Bounds = dict[str, dict[str, dict[str, str]]]


def bounds_of(rec: Recommendation, container: str) -> Bounds:
    """The user's bounds that apply to one container (the core's rule: its own entry, else "*")."""
    p = policy_for(container, rec.policy)
    if p is None:
        return {}
    key = "container" if p.container == container else "all containers"
    return {
        key: {
            "minAllowed": _quantities(dict(p.min_allowed)),
            "maxAllowed": _quantities(dict(p.max_allowed)),
        }
    }


def policy_record(policy: SizingPolicy, kind: str = "") -> dict[str, object]:
    """The sizing settings that shape a `kind` workload's recommendation: percentiles, margins, floors,
    ceilings (CronJob, Job: memory from the runs' peak, confidence from the runs seen)."""
    batch = kind in BATCH_KINDS
    memory = "peak" if batch else f"p{policy.memory_percentile * 100:g}"
    return {
        "cpu": f"p{policy.cpu_percentile * 100:g} + {policy.cpu_margin * 100:g}% margin",
        "memory": f"{memory} + {policy.memory_margin * 100:g}% margin",
        **({"cronjobFullRuns": policy.cronjob_full_runs} if batch else {}),
        "floors": {
            "cpu": _quantity("cpu", policy.cpu_min_cores),
            "memory": _quantity("memory", policy.memory_min_bytes),
        },
        "ceilings": {
            "cpu": _quantity("cpu", policy.max_cpu_cores),
            "memory": _quantity("memory", policy.max_memory_bytes),
            "nvidia.com/gpu": f"{policy.max_gpus:g}",
        },
        "memoryLimit": f"request x {policy.memory_limit_factor:g}",
        "cpuLimit": "none" if policy.cpu_limit_factor is None else f"request x {policy.cpu_limit_factor:g}",
        "confidenceThreshold": policy.confidence_threshold,
    }


def gpu_record(report: Report, rec: Recommendation, name: str) -> dict[str, object] | None:
    """GPUs of one container as the plan sees them: held, recommended, written, held back by the opt-in."""
    plan = report.plan(rec)
    if plan is None:
        return None
    g = plan.gpu(name)
    if g.current is None and g.recommended is None:
        return None
    return {
        "resource": g.held,
        "current": g.current,
        "recommended": g.recommended,
        "written": g.new,
        "writtenResource": g.resource,
        "needsOptIn": g.needs_opt_in,
    }


def _container(report: Report, rec: Recommendation, c: ContainerRecommendation) -> dict[str, object]:
    return {
        "gpu": gpu_record(report, rec, c.name),
        "name": c.name,
        "confidence": round(c.confidence, 4),
        "lowConfidence": c.low_confidence,
        "reason": c.reason,
        "requests": dict(c.requests),
        "limits": dict(c.limits),
        "bounds": bounds_of(rec, c.name),
    }


def _cost(report: Report, rec: Recommendation) -> dict[str, object]:
    items = [i for i in (report.costs.items if report.costs else ()) if i.workload == rec.target]
    bases = cost_basis(report.costs, report.prices, report.price_file, rec.target)
    return {
        "hourly": round(sum(i.hourly_cost for i in items), 6),
        "wastedHourly": round(sum(i.wasted_hourly_cost for i in items), 6),
        "pods": [
            {
                "pod": i.pod,
                "container": i.container,
                "node": i.node,
                "gpus": i.gpus,
                "instanceType": i.instance_type,
                "basis": i.basis,
                "hourly": round(i.hourly_cost, 6),
            }
            for i in items
        ],
        "basis": [b.describe() for b in bases],
        "priceFile": report.price_file,
    }


def explanation(report: Report, rec: Recommendation, policy: SizingPolicy) -> dict[str, object]:
    """The whole explanation as JSON: the Recommendation (store format), containers, policy, cost, plan."""
    return {
        "workload": ref_of(rec),
        "sizingMode": rec.sizing_mode,
        "reason": rec.reason,
        "recommendation": recommendation_to_resource(rec),
        "containers": [_container(report, rec, c) for c in rec.containers],
        "policy": policy_record(policy, rec.target.kind),
        "cost": _cost(report, rec),
        "plan": plan_record(report, rec),
    }


# --- text ----------------------------------------------------------------------------------------


def text_width(columns: int | None) -> int:
    """The wrap width: the terminal's columns (within MIN_WIDTH..WIDTH), WIDTH off a terminal."""
    return WIDTH if columns is None else max(MIN_WIDTH, min(WIDTH, columns - 1))


def _para(label: str, text: str, indent: str = "  ", width: int = WIDTH) -> list[str]:
    return textwrap.wrap(f"{label}{text}", width, initial_indent=indent, subsequent_indent=indent + "    ")


def _pairs(values: object) -> str:
    if not isinstance(values, dict) or not values:
        return "-"
    return ", ".join(f"{k} {v}" for k, v in values.items())


def render_text(report: Report, rec: Recommendation, policy: SizingPolicy, width: int = WIDTH) -> str:
    """The explanation as text, every line wrapped at `width`."""
    w = rec.window
    out = [ref_of(rec)]
    out += _para("sizing: ", rec.reason or rec.sizing_mode, width=width)
    window = f"window: {format_shown(w.start)} to {format_shown(w.end)}, {w.samples} samples"
    out += _para("", window, width=width)
    out += ["", "Containers:"]
    for c in rec.containers:
        low = " (low: the webhook does not apply it)" if c.low_confidence else ""
        out += _para(f"{c.name}: ", f"confidence {c.confidence:.2f}{low}", width=width)
        out += _para("reason: ", c.reason, "    ", width)
        recommended = f"requests {_pairs(dict(c.requests))}; limits {_pairs(dict(c.limits))}"
        out += _para("recommended: ", recommended, "    ", width)
        out += _adjusted_lines(report, rec, c.name, width)
        out += [line for g in _gpu_line(report, rec, c.name) for line in _para("", g, "    ", width)]
        for scope, b in bounds_of(rec, c.name).items():
            out += _para(
                f"bounds ({scope}): ",
                f"min {_pairs(b['minAllowed'])}; max {_pairs(b['maxAllowed'])}",
                "    ",
                width,
            )
    p = policy_record(policy, rec.target.kind)
    out += ["", "Policy:"]
    lines = [
        f"cpu {p['cpu']}, memory {p['memory']}; memory limit {p['memoryLimit']}, cpu limit {p['cpuLimit']}",
        f"floors: {_pairs(p['floors'])}; ceilings: {_pairs(p['ceilings'])}",
        f"confidence threshold {p['confidenceThreshold']}"
        + (f"; full confidence at {p['cronjobFullRuns']} runs" if "cronjobFullRuns" in p else ""),
        _plan_policy(report.policy),
    ]
    out += [line for text in lines for line in _para("", text, width=width)]
    out += _gpu(rec, width) + _cost_text(report, rec, width) + _plan_text(report, rec, width)
    return "\n".join(out) + "\n"


def _plan_policy(policy: PlanPolicy) -> str:
    """What shaped the pod changes below: the limit policy and the change factor."""
    factor = (
        f'maximum change factor {policy.max_change_factor:g}x ({ALLOW_LARGE_CHANGE_KEY}: "true" lifts it)'
        if policy.max_change_factor is not None
        else "no maximum change factor"
    )
    return f"pod plan: limit policy {policy.limit_policy}; {factor}"


def _adjusted_lines(report: Report, rec: Recommendation, name: str, width: int) -> list[str]:
    """What the pod plan writes other than the estimate, and why (the rules that moved each value)."""
    plan = report.plan(rec)
    moved = adjustments(plan, name) if plan is not None else ()
    return [line for a in moved for line in _para("plan: ", a.describe(), "    ", width)]


def _gpu_line(report: Report, rec: Recommendation, name: str) -> list[str]:
    g = gpu_record(report, rec, name)
    if g is None:
        return []
    line = f"GPUs: {g['current'] or 0} held, {g['recommended'] or '-'} recommended"
    if g["written"] is not None:
        line += f", {g['written']} {g['writtenResource']} written by the plan"
    elif g["needsOptIn"]:
        line += f"; the plan keeps {g['current']}: written only with {GPU_OPT_IN}"
    else:
        line += "; the plan keeps them"
    return [line]


def _gpu(rec: Recommendation, width: int) -> list[str]:
    g = rec.gpu
    if g is None:
        return []
    lines = [
        f"{g.allocated} x {g.model}; {g.activity_signal} p95 {g.sm_active_p95:.2f}; "
        f"framebuffer max {format_resource('memory', g.fb_used_max_bytes)}",
    ]
    if g.idle:
        lines.append("idle" + (f" since {format_shown(g.idle_since)}" if g.idle_since else ""))
    if g.suggested_resource:
        lines.append(f"a MIG slice would do: {g.suggested_resource}")
    return ["", "GPU:", *(line for text in lines for line in _para("", text, width=width))]


def _cost_text(report: Report, rec: Recommendation, width: int) -> list[str]:
    cost = _cost(report, rec)
    pods = cost["pods"]
    if not isinstance(pods, list) or not pods:
        return []
    out = ["", f"Cost: {cost['hourly']:.2f} $/hour, {cost['wastedHourly']:.2f} $/hour wasted"]
    for line in cost["basis"] if isinstance(cost["basis"], list) else []:
        out += _para("", str(line), width=width)
    return out


def _plan_text(report: Report, rec: Recommendation, width: int) -> list[str]:
    plan = report.plan(rec)
    out = ["", "Pod changes (the pod plan: what the webhook writes):"]
    if plan is None:
        return [*out, "  none: the source does not know the workload's containers"]
    pp = plan.plan
    out.append(f"  mode {plan.shown_mode}" + (f"; not applied: {pp.skip}" if pp.skip else ""))
    if pp.detail:
        out += _para("", pp.detail, width=width)
    out += [line for note in pp.notes for line in _para("note: ", note, width=width)]
    for ch in pp.changes:
        old, new = ch.old or "(unset)", ch.new or "(removed)"
        out.append(f"  {ch.section}/{ch.container} {ch.field}.{ch.resource}: {old} -> {new}")
    if not pp.changes:
        out.append("  no changes")
    return out
