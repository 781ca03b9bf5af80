"""Each tool's sizing per (pattern, container): podsizer (from its JSON), KRR simple, hindsight."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np

from bench.quality import krr
from bench.quality.score import Score, Sizing, score
from bench.quality.traces import HISTORY, TOTAL, Cluster, evaluation, history
from podsizer.api.quantity import parse

Key = tuple[str, str]
"""(pattern name, container name)."""


def _applied(plan: Mapping[str, object], container: str) -> dict[tuple[str, str], float] | None:
    """What the webhook would leave on the container: its current values with the plan's changes applied."""
    current = cast(Sequence[Mapping[str, object]], plan.get("current") or [])
    mine = [c for c in current if c.get("container") == container]
    if plan.get("skip") or not mine:
        return None
    values: dict[tuple[str, str], float] = {}
    for fld in ("requests", "limits"):
        for res, q in cast(Mapping[str, str], mine[0].get(fld) or {}).items():
            values[(fld, res)] = parse(q)
    for change in cast(Sequence[Mapping[str, str | None]], plan.get("changes") or []):
        if change.get("container") != container:
            continue
        key = (str(change["field"]), str(change["resource"]))
        new = change.get("to")
        if new is None:
            values.pop(key, None)
        else:
            values[key] = parse(new)
    return values


def podsizer_sizing(doc: Mapping[str, object], *, plan: bool = False) -> dict[Key, Sizing]:
    """podsizer's sizing: the recommendation's values (status.containers), or with `plan` what its pod plan
    writes into the current pod (the `plan` of each item: at most a max-change-factor step from the current
    values, the memory limit kept at the current limit/request ratio); the recommendation's values where
    the plan has no current containers to apply it to."""
    out: dict[Key, Sizing] = {}
    for item in cast(Sequence[Mapping[str, Mapping[str, object]]], doc.get("items") or []):
        name = str(cast(Mapping[str, object], item["spec"]["targetRef"])["name"])
        for c in cast(Sequence[Mapping[str, object]], item["status"]["containers"]):
            cname = str(c["name"])
            applied = _applied(item.get("plan") or {}, cname) if plan else None
            if applied is None:
                req = cast(Mapping[str, str], c.get("requests") or {})
                lim = cast(Mapping[str, str], c.get("limits") or {})
                applied = {("requests", k): parse(v) for k, v in req.items()}
                applied |= {("limits", k): parse(v) for k, v in lim.items()}
            out[(name, cname)] = Sizing(
                applied.get(("requests", "cpu"), float("nan")),
                applied.get(("requests", "memory"), float("nan")),
                applied.get(("limits", "memory")),
            )
    return out


def score_cluster(
    cluster: Cluster, sizings: Mapping[str, Mapping[Key, Sizing]]
) -> dict[str, dict[Key, Score]]:
    """Every tool's score of every container over the scored days (NaN sizing: nothing recommended)."""
    minutes = TOTAL - HISTORY
    out: dict[str, dict[Key, Score]] = {}
    for tool, by_key in sizings.items():
        out[tool] = {}
        for p in cluster.patterns:
            for c in p.containers:
                sizing = by_key.get((p.name, c), Sizing(math.nan, math.nan))
                _, cpu, mem = evaluation(p, c)
                out[tool][(p.name, c)] = score(cpu, mem, sizing, minutes)
    return out


def krr_sizing(cluster: Cluster, percentile: float) -> dict[Key, Sizing]:
    out: dict[Key, Sizing] = {}
    for p in cluster.patterns:
        for c in p.containers:
            _, cpu, mem = history(p, c)
            r = krr.simple(cpu, mem, percentile)
            out[(p.name, c)] = Sizing(r.cpu_request, r.memory_request, r.memory_limit)
    return out


def hindsight_sizing(cluster: Cluster) -> dict[Key, Sizing]:
    """The p99 of the scored days themselves (CPU and memory requests), the scored days' peak as the memory
    limit: a reference no tool can know in advance."""
    out: dict[Key, Sizing] = {}
    for p in cluster.patterns:
        for c in p.containers:
            _, cpu, mem = evaluation(p, c)
            cpu_all, mem_all = np.concatenate(cpu), np.concatenate(mem)
            out[(p.name, c)] = Sizing(
                float(np.percentile(cpu_all, 99)), float(np.percentile(mem_all, 99)), float(mem_all.max())
            )
    return out
