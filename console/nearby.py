"""Close matches for a URL the console has no page at, so its 404 page links to what was likely meant."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from urllib.parse import unquote

from console.data import ConsoleData
from console.pages import Link, pod_href, workload_href

PAGES: tuple[tuple[str, str], ...] = (("/", "Overview"), ("/gpu", "GPUs"), ("/docs", "API docs"))
MOST = 5
CUTOFF = 0.6


def _workloads(data: ConsoleData) -> dict[str, Link]:
    """Each workload page by "namespace/kind/name"."""
    out: dict[str, Link] = {}
    for row in data.workloads():
        w = row.workload
        label = f"workload {w.namespace}/{w.kind}/{w.name}" + (f" (cluster {w.cluster})" if w.cluster else "")
        out.setdefault(
            f"{w.namespace}/{w.kind}/{w.name}",
            Link(label, workload_href(w.namespace, w.kind, w.name, w.cluster)),
        )
    return out


def _pods(data: ConsoleData) -> dict[str, Link]:
    """Each pod page by "namespace/name"."""
    return {
        f"{p.namespace}/{p.name}": Link(f"pod {p.namespace}/{p.name}", pod_href(p.namespace, p.name))
        for p in data.pods()
    }


def _closest(wanted: str, links: dict[str, Link]) -> list[Link]:
    """The links whose keys are closest to `wanted`, best first; those of its namespace (the part before
    the first "/") first, so a 404 in a large cluster compares a few hundred names, not every one."""
    namespace = wanted.split("/", 1)[0] + "/"
    keys: Sequence[str] = [k for k in links if k.startswith(namespace)] or list(links)
    return [links[k] for k in difflib.get_close_matches(wanted, keys, n=MOST, cutoff=CUTOFF)]


def close_matches(data: ConsoleData, path: str) -> list[Link]:
    """The console's pages closest to `path` (difflib's ratio): workload pages for a /workloads/ path,
    pod pages for a /pods/ path, else the fixed pages; none close: an empty list."""
    parts = [p for p in unquote(path).split("/") if p]
    if parts and parts[0] in ("workloads", "pods"):
        links = _workloads(data) if parts[0] == "workloads" else _pods(data)
        return _closest("/".join(parts[1:]), links)
    fixed = {href: Link(label, href) for href, label in PAGES}
    return [
        fixed[p] for p in difflib.get_close_matches("/" + "/".join(parts), list(fixed), n=MOST, cutoff=CUTOFF)
    ]
