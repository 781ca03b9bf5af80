"""`recommend --output html`: one self-contained page (inline CSS, no external resources) rendered from
Jinja2 templates with autoescaping."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from recommender.output.report import Report
from recommender.output.tables import tables


def environment() -> Environment:
    return Environment(
        loader=PackageLoader("recommender.output", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(report: Report) -> str:
    shown = tables(report)
    costs = report.costs
    hourly = costs.cluster_hourly if costs is not None and costs.items else None
    wasted = costs.cluster_wasted_hourly if costs is not None and costs.items else None
    template = environment().get_template("report.html")
    return template.render(shown=shown, hourly=hourly, wasted=wasted, waste_count=len(report.waste)) + "\n"
