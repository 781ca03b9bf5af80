"""The console's HTML pages, rendered from the same response models the JSON API returns."""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from console import fmt
from console.svg import legend, line_chart
from console.views import (
    GpuOut,
    MetaOut,
    OverviewOut,
    PodDetailOut,
    WorkloadId,
)
from podsizer.resources import CPU, GPU, MEMORY


def _e(value: object) -> str:
    return escape(str(value))


def pod_href(namespace: str, name: str) -> str:
    return f"/pods/{quote(namespace, safe='')}/{quote(name, safe='')}"


def _pod_link(namespace: str, name: str) -> str:
    return f'<a class="pod-link" href="{_e(pod_href(namespace, name))}">{_e(name)}</a>'


def _pod_links(namespace: str, names: list[str], shown: int = 4) -> str:
    """The first few pod links, the rest folded into a <details> (no script needed)."""
    if not names:
        return fmt.NONE
    links = [_pod_link(namespace, n) for n in names]
    head = ", ".join(links[:shown])
    if len(links) <= shown:
        return head
    rest = ", ".join(links[shown:])
    return f"{head}<details><summary>{len(links) - shown} more</summary>{rest}</details>"


def _td(field: str, text: str, *, cls: str = "", rowspan: int = 1, raw: bool = False) -> str:
    span = f' rowspan="{rowspan}"' if rowspan > 1 else ""
    klass = f' class="{cls}"' if cls else ""
    return f'<td data-field="{field}"{klass}{span}>{text if raw else _e(text)}</td>'


def _skip(reason: str | None) -> str:
    """Why the pod plan changes nothing, for the mode's hover text (nothing when it changes something)."""
    if reason is None or reason.startswith("excluded") or reason == "mode-off":
        return ""
    return f"; changes nothing: {reason}"


def _kind(w: WorkloadId) -> str:
    return f'<span class="kind" title="{_e(w.api_version)}">{_e(w.kind)}</span>'


def _layout(title: str, active: str, meta: MetaOut, body: str) -> str:
    nav = "".join(
        f'<a href="{href}"{" class=active" if key == active else ""}>{label}</a>'
        for key, href, label in (("overview", "/", "Overview"), ("gpu", "/gpu", "GPUs"))
    )
    return (
        "<!DOCTYPE html>"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)} · podsizer</title>"
        '<link rel="stylesheet" href="/static/console.css"></head><body>'
        f'<header><span class="brand">podsizer</span><nav>{nav}</nav>'
        f'<span class="meta">source <b>{_e(meta.source)}</b> · window {_e(fmt.when(meta.window_start))}'
        f" &ndash; {_e(fmt.when(meta.window_end))} · generated {_e(fmt.when(meta.generated_at))}</span>"
        f"</header><main><h1>{_e(title)}</h1>{body}</main>"
        "<footer>Read-only view. The JSON API behind every page is described at "
        '<a href="/openapi.json">/openapi.json</a>.</footer></body></html>'
    )


def _card(key: str, label: str, value: str) -> str:
    return (
        f'<div class="card"><div class="label">{_e(label)}</div>'
        f'<div class="value" data-total="{key}">{_e(value)}</div></div>'
    )


def overview_page(o: OverviewOut) -> str:
    t = o.totals
    cards = (
        '<section class="cards">'
        + _card("workloads", "Workloads", str(t.workloads))
        + _card("cpu_cores_saved", "CPU requests saved", fmt.cpu(t.cpu_cores_saved))
        + _card("memory_bytes_saved", "Memory requests saved", fmt.memory(t.memory_bytes_saved))
        + _card("gpu_hourly_cost", "GPU cost", fmt.dollars(t.gpu_hourly_cost))
        + _card("gpu_wasted_hourly_cost", "Idle GPU cost", fmt.dollars(t.gpu_wasted_hourly_cost))
        + _card("gpu_hourly_savings", "GPU savings", fmt.dollars(t.gpu_hourly_savings))
        + "</section>"
    )
    head = (
        "<thead><tr><th>Namespace</th><th>Kind</th><th>Workload</th><th>Mode</th><th>Sizing</th>"
        "<th>Container</th><th>CPU now</th><th>CPU new</th><th>Memory now</th><th>Memory new</th>"
        "<th>Mem. limit now</th><th>Mem. limit new</th><th>GPU now</th><th>GPU new</th>"
        "<th>Confidence</th><th>CPU saved</th><th>Memory saved</th>"
        "<th>GPU $/h</th><th>GPU savings</th><th>Pods</th></tr></thead>"
    )
    rows: list[str] = []
    for w in o.workloads:
        wid = w.workload
        key = f"{wid.namespace}/{wid.kind}/{wid.name}"
        n = max(1, len(w.containers))
        pods = _pod_links(wid.namespace, w.pods)
        for i, c in enumerate(w.containers or [None]):
            cells: list[str] = []
            if i == 0:
                cells += [
                    _td("namespace", wid.namespace, rowspan=n),
                    _td("kind", _kind(wid), rowspan=n, raw=True),
                    _td("name", wid.name, rowspan=n, cls="name"),
                    f'<td data-field="mode" rowspan="{n}" title="{_e(w.mode_source + _skip(w.plan_skip))}">'
                    f'<span class="mode mode-{_e(w.mode)}">{_e(w.mode)}</span></td>',
                    f'<td data-field="sizing_mode" rowspan="{n}" title="{_e(w.reason)}">'
                    f'<span class="sizing sizing-{_e(w.sizing_mode)}">{_e(w.sizing_mode)}</span></td>',
                ]
            if c is None:
                cells.append('<td colspan="12">no containers sized</td>')
            else:
                low = " low" if c.low_confidence else ""
                cells += [
                    f'<td data-field="container" title="{_e(c.reason)}">{_e(c.name)}</td>',
                    _td("cpu_current", fmt.cpu(c.current_requests.get(CPU))),
                    _td("cpu_planned", fmt.cpu(c.planned_requests.get(CPU)), cls="rec"),
                    _td("memory_current", fmt.memory(c.current_requests.get(MEMORY))),
                    _td("memory_planned", fmt.memory(c.planned_requests.get(MEMORY)), cls="rec"),
                    _td("memory_limit_current", fmt.memory(c.current_limits.get(MEMORY))),
                    _td("memory_limit_planned", fmt.memory(c.planned_limits.get(MEMORY)), cls="rec"),
                    _td("gpu_current", fmt.count(c.current_requests.get(GPU))),
                    _td("gpu_planned", fmt.count(c.planned_requests.get(GPU)), cls="rec"),
                    _td("confidence", fmt.percent(c.confidence), cls=f"num{low}"),
                    _td("cpu_saved", fmt.cpu(c.cpu_cores_saved), cls="num"),
                    _td("memory_saved", fmt.memory(c.memory_bytes_saved), cls="num"),
                ]
            if i == 0:
                suggestion = (
                    f'<div class="hint">try {_e(w.gpu_suggested_resource)}</div>'
                    if w.gpu_suggested_resource
                    else ""
                )
                cells += [
                    _td(
                        "gpu_hourly_cost",
                        fmt.dollars(w.gpu_hourly_cost) if w.gpu_allocated else fmt.NONE,
                        rowspan=n,
                        cls="num",
                    ),
                    f'<td data-field="gpu_hourly_savings" rowspan="{n}" class="num">'
                    f"{_e(fmt.dollars(w.gpu_hourly_savings) if w.gpu_allocated else fmt.NONE)}"
                    f"{suggestion}</td>",
                    _td("pods", pods, rowspan=n, raw=True),
                ]
            container = c.name if c is not None else ""
            rows.append(
                f'<tr data-workload="{_e(key)}" data-container="{_e(container)}">{"".join(cells)}</tr>'
            )
    table = f'<table id="workloads">{head}<tbody>{"".join(rows)}</tbody></table>'
    skipped = ""
    if o.skipped:
        items = "".join(
            f'<tr><td data-field="subject">{_e(s.subject)}</td><td>{_e(s.reason)}</td></tr>'
            for s in o.skipped
        )
        skipped = (
            '<h2>Not workloads</h2><p class="note">Left out of every aggregate (OpenShift deployer and hook '
            "pods, bare pods, failed sizing).</p>"
            '<table id="skipped"><thead><tr><th>Subject</th><th>Reason</th></tr></thead>'
            f"<tbody>{items}</tbody></table>"
        )
    note = (
        '<p class="note">Requests and limits are per pod; "new" is what the webhook writes (the pod plan '
        "under this console's policy: limit policy, GPU opt-in, confidence floor); "
        '"saved" is (now &minus; new) &times; pods, negative where the workload needs more. '
        "Mode: what the webhook does (off, dry-run, auto, excluded).</p>"
    )
    return _layout("Overview", "overview", o.meta, cards + note + table + skipped)


def gpu_page(g: GpuOut) -> str:
    node_rows = "".join(
        f'<tr data-node="{_e(n.name)}">'
        + _td("name", n.name, cls="name")
        + _td("model", n.model or fmt.NONE)
        + _td("gpu_count", str(n.gpu_count), cls="num")
        + _td("gpu_memory", fmt.mib(n.gpu_memory_mib), cls="num")
        + _td("instance_type", n.instance_type or fmt.NONE)
        + _td("capacity_type", n.capacity_type)
        + _td("mig_strategy", n.mig_strategy or fmt.NONE)
        + _td("mig_layout", n.mig_layout)
        + _td("allocated_gpus", str(n.allocated_gpus), cls="num")
        + _td("allocated_mig", ", ".join(f"{k} x {v}" for k, v in n.allocated_mig.items()) or fmt.NONE)
        + "</tr>"
        for n in g.nodes
    )
    nodes = (
        '<h2>GPU inventory</h2><table id="gpu-nodes"><thead><tr><th>Node</th><th>Model</th><th>GPUs</th>'
        "<th>Memory/GPU</th><th>Instance type</th><th>Capacity</th><th>MIG strategy</th><th>MIG layout</th>"
        f"<th>Allocated GPUs</th><th>Allocated MIG</th></tr></thead><tbody>{node_rows}</tbody></table>"
    )
    pod_rows = "".join(
        f'<tr data-pod="{_e(p.namespace)}/{_e(p.pod)}" data-container="{_e(p.container)}"'
        f"{' class=idle' if p.idle else ''}>"
        + _td("workload", f"{p.workload.namespace}/{p.workload.kind}/{p.workload.name}")
        + _td("pod", _pod_link(p.namespace, p.pod), raw=True)
        + _td("container", p.container)
        + _td("node", p.node)
        + _td("model", p.model)
        + _td("gpus", str(p.gpu_count) + (f" ({p.mig_profile})" if p.mig_profile else ""), cls="num")
        + _td("activity_p95", fmt.percent(p.activity_p95), cls="num")
        + _td("activity_mean", fmt.percent(p.activity_mean), cls="num")
        + _td("dram_active_p95", fmt.percent(p.dram_active_p95), cls="num")
        + _td("fb_used_max", fmt.mib(p.fb_used_max_mib), cls="num")
        + _td("fb_total", fmt.mib(p.fb_total_mib), cls="num")
        + _td("hourly_cost", fmt.dollars(p.hourly_cost), cls="num")
        + _td("idle", "idle" if p.idle else "")
        + "</tr>"
        for p in g.pods
    )
    pods = (
        '<h2>GPU usage per pod</h2><table id="gpu-pods"><thead><tr><th>Workload</th><th>Pod</th>'
        "<th>Container</th><th>Node</th><th>Model</th><th>GPUs</th><th>Activity P95</th>"
        "<th>Activity mean</th>"
        "<th>DRAM P95</th><th>FB used max</th><th>FB total</th><th>Cost</th><th></th></tr></thead>"
        f"<tbody>{pod_rows}</tbody></table>"
        '<p class="note">Activity is SM_ACTIVE where exported, else GR_ENGINE_ACTIVE, else GPU_UTIL/100 '
        "(signal per pod in its drill-down).</p>"
    )
    waste_rows = "".join(
        f'<tr data-pod="{_e(w.namespace)}/{_e(w.pod)}" data-container="{_e(w.container)}">'
        + _td("workload", f"{w.workload.namespace}/{w.workload.kind}/{w.workload.name}")
        + _td("pod", _pod_link(w.namespace, w.pod), raw=True)
        + _td("node", w.node)
        + _td("model", w.model)
        + _td("gpus", str(w.gpus), cls="num")
        + _td("signal", f"{w.activity_signal} < {fmt.percent(w.threshold)}")
        + _td("idle_since", fmt.when(w.idle_since))
        + _td("idle_hours", fmt.hours(w.idle_hours), cls="num")
        + _td("wasted_hourly_cost", fmt.dollars(w.wasted_hourly_cost), cls="num waste")
        + _td("price_basis", w.price_basis)
        + "</tr>"
        for w in g.waste
    )
    waste = (
        '<h2>Idle GPU waste</h2><table id="waste"><thead><tr><th>Workload</th><th>Pod</th><th>Node</th>'
        "<th>Model</th><th>GPUs</th><th>Rule</th><th>Idle since</th><th>Idle for</th><th>Wasted</th>"
        f"<th>Price basis</th></tr></thead><tbody>{waste_rows}</tbody></table>"
        if g.waste
        else '<h2>Idle GPU waste</h2><p id="waste-none">No idle GPUs found.</p>'
    )

    def cost_table(table_id: str, title: str, lines: list[tuple[str, float, float]]) -> str:
        body = "".join(
            f'<tr data-subject="{_e(s)}">{_td("subject", s)}{_td("hourly", fmt.dollars(h), cls="num")}'
            f"{_td('wasted_hourly', fmt.dollars(wh), cls='num waste')}</tr>"
            for s, h, wh in lines
        )
        return (
            f'<table id="{table_id}"><thead><tr><th>{_e(title)}</th><th>GPU cost</th>'
            "<th>Idle</th></tr></thead>"
            f"<tbody>{body}</tbody></table>"
        )

    c = g.costs
    costs = (
        '<h2>GPU cost</h2><div class="costs">'
        + cost_table(
            "cost-cluster", "Cluster", [(c.cluster.subject, c.cluster.hourly, c.cluster.wasted_hourly)]
        )
        + cost_table(
            "cost-namespace", "Namespace", [(x.subject, x.hourly, x.wasted_hourly) for x in c.by_namespace]
        )
        + cost_table(
            "cost-workload", "Workload", [(x.subject, x.hourly, x.wasted_hourly) for x in c.by_workload]
        )
        + "</div>"
    )
    return _layout("GPUs", "gpu", g.meta, nodes + pods + waste + costs)


def pod_page(d: PodDetailOut, meta: MetaOut) -> str:
    p = d.pod
    w = p.workload
    info = (
        '<dl class="facts">'
        f'<dt>Workload</dt><dd data-field="workload">{_e(w.namespace)}/{_kind(w)}/{_e(w.name)}</dd>'
        f'<dt>Node</dt><dd data-field="node">{_e(p.node)}</dd>'
        f'<dt>GPU</dt><dd data-field="has_gpu">{"yes" if p.has_gpu else "no"}</dd></dl>'
    )
    charts = (
        "".join(
            f'<section class="chart-box" id="chart-{_e(c.key)}"><h2>{_e(c.title)}</h2>'
            f"{line_chart(c)}{legend(c)}</section>"
            for c in d.charts
        )
        or '<p id="no-series">No time series for this pod.</p>'
    )
    note = (
        '<p class="note">Each point is the peak of its time bucket; dashed lines are the current request, '
        "the recommendation, or the GPU's framebuffer size.</p>"
    )
    return _layout(f"Pod {p.namespace}/{p.name}", "", meta, info + note + charts)


def not_found_page(message: str, meta: MetaOut) -> str:
    return _layout(
        "Not found", "", meta, f'<p class="error" id="error">{_e(message)}</p><p><a href="/">Overview</a></p>'
    )
