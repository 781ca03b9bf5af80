"""Close matches for a URL the console has no page at, so its 404 page links to what was likely meant."""

from __future__ import annotations

import difflib
from urllib.parse import unquote

from console.data import ConsoleData
from console.pages import Link, pod_href, workload_href

PAGES: tuple[tuple[str, str], ...] = (("/", "Overview"), ("/gpu", "GPUs"), ("/docs", "API docs"))
MOST = 5
CUTOFF = 0.6


def pages(data: ConsoleData) -> list[Link]:
    """Every page the console serves: the fixed ones, each workload's and each pod's."""
    out = [Link(label, href) for href, label in PAGES]
    for row in data.workloads():
        w = row.workload
        label = f"workload {w.namespace}/{w.kind}/{w.name}" + (f" (cluster {w.cluster})" if w.cluster else "")
        out.append(Link(label, workload_href(w.namespace, w.kind, w.name, w.cluster)))
    out.extend(Link(f"pod {p.namespace}/{p.name}", pod_href(p.namespace, p.name)) for p in data.pods())
    return out


def close_matches(data: ConsoleData, path: str) -> list[Link]:
    """The console's pages whose paths are closest to `path` (difflib's ratio), best first; none close:
    an empty list."""
    links = {unquote(link.href): link for link in pages(data)}
    wanted = unquote(path).rstrip("/") or "/"
    return [links[p] for p in difflib.get_close_matches(wanted, list(links), n=MOST, cutoff=CUTOFF)]
