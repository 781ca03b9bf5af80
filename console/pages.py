"""The console's HTML pages: Jinja2 templates (autoescaped) over the same response models the API returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from console import fmt
from console.apidocs import Operation, SchemaDoc
from console.prices import DEFAULT_PRICE
from console.query import OverviewQuery
from console.svg import legend, line_chart
from console.views import GpuOut, MetaOut, OverviewOut, PodDetailOut, WorkloadDetailOut
from podsizer.plan_view import GPU_OPT_IN
from podsizer.resources import GPU
from recommender.input.prometheus.queries import FB_USED, GPU_UTIL, GR_ENGINE_ACTIVE, SM_ACTIVE

TEMPLATES = Path(__file__).parent / "templates"
_DEFAULTS = OverviewQuery()
_DESC_FIRST = frozenset({"confidence", "replicas", "cpu_saved", "memory_saved", "savings", "gpu_cost"})


@dataclass(frozen=True)
class Link:
    """A page of the console: what it shows and where it is."""

    label: str
    href: str


def pod_href(namespace: str, name: str) -> str:
    return f"/pods/{quote(namespace, safe='')}/{quote(name, safe='')}"


def workload_href(namespace: str, kind: str, name: str, cluster: str = "") -> str:
    path = "/workloads/" + "/".join(quote(p, safe="") for p in (namespace, kind, name))
    return path + "?" + urlencode({"cluster": cluster}) if cluster else path


def overview_href(query: OverviewQuery, **changes: object) -> str:
    """The overview's URL for `query` with `changes`, naming only the parameters that differ from defaults."""
    params: dict[str, object] = {
        name: getattr(query, name) for name in OverviewQuery.__dataclass_fields__ if name not in changes
    }
    params.update(changes)
    kept = {k: ("true" if v is True else v) for k, v in params.items() if v != getattr(_DEFAULTS, k)}
    return "/?" + urlencode(kept) if kept else "/"


def _skip(reason: str | None) -> str:
    """Why the pod plan changes nothing, for the mode's hover text (nothing when it changes something)."""
    if reason is None or reason.startswith("excluded") or reason == "mode-off":
        return ""
    return f"; changes nothing: {reason}"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        fmt=fmt,
        GPU=GPU,
        pod_href=pod_href,
        workload_href=workload_href,
        skip=_skip,
        line_chart=lambda c: Markup(line_chart(c)),
        legend=lambda c: Markup(legend(c)),
        default_order=lambda key: "desc" if key in _DESC_FIRST else "asc",
        default_basis=DEFAULT_PRICE.basis,
        gpu_opt_in=GPU_OPT_IN,
        dcgm_series=(SM_ACTIVE, GR_ENGINE_ACTIVE, GPU_UTIL, FB_USED),
    )
    return env


class Pages:
    """Renders each page; one Jinja2 environment (templates compiled once) per console app."""

    def __init__(self) -> None:
        self._env = _environment()

    def _render(self, template: str, title: str, active: str, meta: MetaOut | None, **values: object) -> str:
        return self._env.get_template(template).render(title=title, active=active, meta=meta, **values)

    def overview(self, o: OverviewOut, query: OverviewQuery) -> str:
        def link(**changes: object) -> str:
            return overview_href(query, **changes)

        return self._render("overview.html", "Overview", "overview", o.meta, o=o, q=query, link=link)

    def gpu(self, g: GpuOut) -> str:
        return self._render("gpu.html", "GPUs", "gpu", g.meta, g=g)

    def pod(self, d: PodDetailOut, meta: MetaOut) -> str:
        return self._render("pod.html", f"Pod {d.pod.namespace}/{d.pod.name}", "", meta, d=d)

    def workload(self, d: WorkloadDetailOut, meta: MetaOut) -> str:
        w = d.workload.workload
        title = f"{w.kind} {w.namespace}/{w.name}"
        return self._render("workload.html", title, "", meta, d=d)

    def not_found(self, message: str, meta: MetaOut | None, matches: Sequence[Link] = ()) -> str:
        return self._render("not_found.html", "Not found", "", meta, message=message, matches=matches)

    def docs(self, summary: str, ops: list[Operation], models: list[SchemaDoc]) -> str:
        spec = {"info": {"summary": summary}}
        return self._render("docs.html", "API", "docs", None, spec=spec, ops=ops, models=models)


__all__ = ["Link", "Pages", "overview_href", "pod_href", "workload_href"]
