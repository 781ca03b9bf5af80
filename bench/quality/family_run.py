"""The randomised trace family scored like the hand-made benchmark, per seed and per pattern
family, with the regression rule printed.

    .venv/bin/python -m bench.quality.family_run [--seeds 2001-2010] [--workloads 100] [--json out.json]

Every seed's workloads (family.py) live in their own namespace of one TSDB; podsizer runs once per profile
over all of them (`podsizer recommend -o json --source prometheus --as-of T`, the real Prometheus path),
VPA 1.8.1's own estimator and KRR simple p95/p99 on the same history, all scored on the 2 days after T
(bench/quality/README.md). `--in-process` sizes from the same history without Prometheus (aggregate() and
the sizing engine called in this process, exact per-minute samples instead of Prometheus' rates): a
quicker loop for tuning, never the reported figures.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import cast

from bench.quality import family, goals, prom, tools, vpa_estimate
from bench.quality.run import FIXED_T, finish, podsizer_options, print_timings
from bench.quality.run import variants as run_variants
from bench.quality.score import SAFE_CPU_SHARE, Score, Sizing, Total, safe, total
from bench.quality.traces import Cluster
from podsizer.api.quantity import parse
from podsizer.settings.profiles import Profile

DEFAULT = "podsizer conservative"
BALANCED = "podsizer balanced"
VPA = "VPA " + vpa_estimate.VERSION
KRR95, KRR99 = "KRR simple p95", "KRR simple p99"
PAIRS = ((DEFAULT, KRR99), (BALANCED, VPA))
"""The goal: each podsizer row dominates (or ties) its peer on every seed."""

Scores = dict[str, dict[tools.Key, Score]]
SLOW_MACHINE = ("--prometheus-timeout-seconds", "600")
"""A seed's namespace is 100 workloads' week at 1 minute: on a busy 2-core machine one range query of it can
take longer than the default 30 s (the answer is the same)."""


def _seeds(text: str) -> list[int]:
    """'2001-2010' or '2001,2003' (or both)."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m bench.quality.family_run", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--seeds", type=_seeds, default=_seeds("2001-2010"), help="seeds, e.g. 2001-2010")
    ap.add_argument("--workloads", type=int, default=100, help="workloads per seed (default 100)")
    podsizer_options(ap, "conservative and balanced")
    ap.add_argument("--in-process", action="store_true", help="size in this process, without Prometheus")
    return ap.parse_args(argv)


def split_by_namespace(doc: Mapping[str, object]) -> dict[str, dict[str, object]]:
    """One `podsizer recommend -o json` document per namespace of its items."""
    out: dict[str, dict[str, object]] = {}
    for item in cast(Sequence[Mapping[str, Mapping[str, str]]], doc.get("items") or []):
        ns = item["metadata"]["namespace"]
        cast(list[object], out.setdefault(ns, {"items": []})["items"]).append(item)
    return out


def _prometheus(
    clusters: Sequence[Cluster],
    t: datetime,
    variants: Mapping[str, tuple[str, ...]],
    work: Path,
    timings: dict[str, float],
) -> dict[str, dict[int, dict[tools.Key, Sizing]]]:
    """podsizer's sizing per variant and seed, each variant one `podsizer recommend` over every seed."""
    out: dict[str, dict[int, dict[tools.Key, Sizing]]] = {}
    spaces = [family.namespace(c.seed) for c in clusters]
    with prom.served_many(clusters, t, work, timings) as server:
        for name, extra in variants.items():
            t0 = time.perf_counter()
            doc = prom.recommend(server.url, t, work, (*extra, *SLOW_MACHINE), namespaces=spaces)
            timings[f"{name} recommend"] = time.perf_counter() - t0
            per_ns = split_by_namespace(doc)
            out[name] = {
                c.seed: tools.podsizer_sizing(per_ns.get(family.namespace(c.seed), {})) for c in clusters
            }
    return out


def settings_of(extra: Sequence[str]) -> dict[str, object]:
    """`podsizer recommend` arguments as settings by field name: '--cpu-margin 0.1' -> cpu_margin '0.1',
    '--cpu-burst-path' / '--no-cpu-burst-path' -> True / False."""
    out: dict[str, object] = {}
    i = 0
    while i < len(extra):
        flag = extra[i].removeprefix("--")
        if i + 1 < len(extra) and not extra[i + 1].startswith("--"):
            out[flag.replace("-", "_")] = extra[i + 1]
            i += 2
            continue
        on = not flag.startswith("no-")
        out[flag.removeprefix("no-").replace("-", "_")] = on
        i += 1
    return out


def _in_process(
    clusters: Sequence[Cluster],
    t: datetime,
    variants: Mapping[str, tuple[str, ...]],
    timings: dict[str, float],
) -> dict[str, dict[int, dict[tools.Key, Sizing]]]:
    """The same sizing from the exact samples, aggregated and sized in this process (no Prometheus)."""
    from podsizer.settings.roles import RecommenderSettings
    from recommender.model.aggregate import aggregate
    from recommender.sizing.cost import PriceTable
    from recommender.sizing.engine import recommend
    from recommender.wiring import recency_of

    out: dict[str, dict[int, dict[tools.Key, Sizing]]] = {}
    for name, extra in variants.items():
        t0 = time.perf_counter()
        settings = RecommenderSettings.model_validate(settings_of(extra))
        policy = settings.to_sizing_policy()
        prices = PriceTable.for_policy(policy)
        per_seed: dict[int, dict[tools.Key, Sizing]] = {}
        for c in clusters:
            snapshot = aggregate(prom.dataset(c, t), source="in-process", recency=recency_of(settings))
            sized: dict[tools.Key, Sizing] = {}
            for rec in recommend(snapshot, policy, prices, t).recommendations:
                for cr in rec.containers:
                    req, lim = cr.requests, cr.limits
                    sized[(rec.target.name, cr.name)] = Sizing(
                        parse(req["cpu"]) if "cpu" in req else math.nan,
                        parse(req["memory"]) if "memory" in req else math.nan,
                        parse(lim["memory"]) if "memory" in lim else None,
                    )
            per_seed[c.seed] = sized
        out[name] = per_seed
        timings[f"{name} in process"] = time.perf_counter() - t0
    return out


@dataclass(frozen=True)
class SeedResult:
    """One seed: each tool's total, and whether each pair's goal holds."""

    seed: int
    containers: int
    totals: Mapping[str, Total]


def family_totals(clusters: Sequence[Cluster], scores: Mapping[int, Scores]) -> dict[str, dict[str, Total]]:
    """pattern family -> tool -> the total over that family's containers of every seed."""
    pooled: dict[str, dict[str, list[Score]]] = {}
    for c in clusters:
        for tool, by_key in scores[c.seed].items():
            for p in c.patterns:
                bucket = pooled.setdefault(family.family_of(p.name), {}).setdefault(tool, [])
                bucket += [by_key[(p.name, name)] for name in p.containers]
    return {f: {tool: total(s) for tool, s in by_tool.items()} for f, by_tool in sorted(pooled.items())}


def rule_breaks(per_family: Mapping[str, Mapping[str, Total]], tool: str = DEFAULT) -> list[str]:
    """The regression rule: families where `tool` is unsafe (score.safe: over 1.5 % of its pod-minutes above
    the CPU request, or any above the memory limit) and KRR simple p99 is safe."""
    return [f for f, t in per_family.items() if not safe(t[tool]) and safe(t[KRR99])]


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _verdict(a: Total, b: Total) -> str:
    if goals.no_worse(a, b):
        return "yes"
    return "no: " + goals.why_not(a, b)


def _cells(t: Total) -> list[str]:
    return [_pct(t.mean_cpu_over_share), str(t.oom_containers), f"{t.cpu_requested:.2f}",
            f"{t.memory_requested / 2**30:.2f}"]  # fmt: skip


def seed_table(results: Sequence[SeedResult], pair: tuple[str, str]) -> str:
    ours, peer = pair
    head = ["seed", "containers"]
    for name in pair:
        head += [f"{name}: mean CPU > request", "OOM-risk containers", "CPU (cores)", "memory (GiB)"]
    head.append(f"{ours} dominates {peer}")
    rows = [
        [
            str(r.seed),
            str(r.containers),
            *_cells(r.totals[ours]),
            *_cells(r.totals[peer]),
            _verdict(r.totals[ours], r.totals[peer]),
        ]
        for r in results
    ]
    return _table(head, rows)


def family_table(per_family: Mapping[str, Mapping[str, Total]], tools_shown: Sequence[str]) -> str:
    head = ["family", "containers"]
    for name in tools_shown:
        head += [f"{name}: pod-minutes CPU > request", "memory > limit (pod-minutes)"]
    head += ["default unsafe where KRR p99 is safe (the rule breaks)"]
    rows = []
    for f, by_tool in per_family.items():
        label = f + (" (autopilot)" if f in family.AUTOPILOT_FAMILIES else "")
        row = [label, str(by_tool[DEFAULT].containers)]
        for name in tools_shown:
            row += [_pct(by_tool[name].pooled_cpu_over_share), str(by_tool[name].memory_over_minutes)]
        row.append("**yes**" if f in rule_breaks({f: by_tool}) else "no")
        rows.append(row)
    return _table(head, rows)


def cpu_table(per_family: Mapping[str, Mapping[str, Total]], tools_shown: Sequence[str]) -> str:
    """CPU requested (cores, all seeds pooled) per family and tool, and each pair's gap (ours - peer):
    where a pair's per-seed verdict on CPU is won or lost."""
    pairs = [p for p in PAIRS if p[0] in tools_shown and p[1] in tools_shown]
    head = ["family", "containers", *(f"{n} (cores)" for n in tools_shown)]
    head += [f"{ours} - {peer}" for ours, peer in pairs]
    rows = []
    for f, by_tool in [*per_family.items(), ("all", _pooled(per_family, tools_shown))]:
        row = [f"**{f}**" if f == "all" else f, str(by_tool[tools_shown[0]].containers)]
        row += [f"{by_tool[n].cpu_requested:.1f}" for n in tools_shown]
        row += [f"{by_tool[a].cpu_requested - by_tool[b].cpu_requested:+.1f}" for a, b in pairs]
        rows.append(row)
    return _table(head, rows)


def _pooled(per_family: Mapping[str, Mapping[str, Total]], tools_shown: Sequence[str]) -> dict[str, Total]:
    """Each tool's containers and CPU requested summed over the families (the other figures left 0)."""
    return {
        n: Total(
            sum(d[n].containers for d in per_family.values()),
            0.0,
            0.0,
            0,
            0,
            sum(d[n].cpu_requested for d in per_family.values()),
            0.0,
            0.0,
            0.0,
        )
        for n in tools_shown
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = _args(argv)
    started = time.perf_counter()
    timings: dict[str, float] = {}
    profiles: list[Profile] = args.profile or ["conservative", "balanced"]
    clusters = [family.generate(seed, args.workloads) for seed in args.seeds]
    timings["generate traces"] = time.perf_counter() - started
    t = FIXED_T
    work = Path(tempfile.mkdtemp(prefix="podsizer-family-"))
    variants = run_variants(profiles, args.variant)
    if args.in_process:
        ours = _in_process(clusters, t, variants, timings)
    else:
        ours = _prometheus(clusters, t, variants, work, timings)
    t0 = time.perf_counter()
    vpa = {c.seed: vpa_estimate.recommend(c, t) for c in clusters}
    timings["VPA (build check + estimate)"] = time.perf_counter() - t0
    scores: dict[int, Scores] = {}
    results: list[SeedResult] = []
    for c in clusters:
        sizings: dict[str, Mapping[tools.Key, Sizing]] = {name: per[c.seed] for name, per in ours.items()}
        sizings[VPA] = vpa[c.seed]
        sizings[KRR95] = tools.krr_sizing(c, 95)
        sizings[KRR99] = tools.krr_sizing(c, 99)
        scores[c.seed] = tools.score_cluster(c, sizings)
        totals = {name: total(list(s.values())) for name, s in scores[c.seed].items()}
        results.append(SeedResult(c.seed, sum(len(p.containers) for p in c.patterns), totals))
    per_family = family_totals(clusters, scores)
    path = "in process (not Prometheus: tuning only)" if args.in_process else "a real Prometheus"
    print(f"# podsizer on the randomised family: seeds {', '.join(map(str, args.seeds))}\n")
    print(
        f"{args.workloads} workloads a seed (bench/quality/family.py), history 7 days up to T = "
        f"{t.isoformat()} through {path}, scored on the 2 days after T.\n"
    )
    pairs = [p for p in PAIRS if p[0] in ours]
    pairs += [(name, peer) for name in ours if name not in (DEFAULT, BALANCED) for peer in (KRR99, VPA)]
    for pair in pairs:
        print(f"## {pair[0]} against {pair[1]}, per seed\n")
        print(seed_table(results, pair) + "\n")
        held = sum(goals.no_worse(r.totals[pair[0]], r.totals[pair[1]]) for r in results)
        print(f"{pair[0]} dominates {pair[1]} on {held} of {len(results)} seeds.\n")
    if DEFAULT in ours:
        breaks = rule_breaks(per_family)
        print("## Regression rule, per pattern family (all seeds pooled)\n")
        print(
            f"The default (conservative) must not be unsafe (over {100 * SAFE_CPU_SHARE:g} % of pod-minutes "
            "above the CPU request, or any above the memory limit) where KRR simple p99 is safe.\n"
        )
        print(family_table(per_family, [*(n for n in (DEFAULT, BALANCED) if n in ours), VPA, KRR99]))
        print(f"\nRule: **{'holds' if not breaks else 'breaks on ' + ', '.join(breaks)}**\n")
        print(
            "(autopilot): sized from the per-replica steady state divided by the HPA's target, not from a "
            "percentile; under a real HPA the target decides how often a pod runs above its request, and "
            "the scores replay fixed replica counts (bench/quality/family.py AUTOPILOT_FAMILIES).\n"
        )
    for name in ours:
        if name != DEFAULT:
            other = rule_breaks(per_family, name)
            print(
                f"- the rule applied to {name}: {'holds' if not other else 'breaks on ' + ', '.join(other)}"
            )
    print("\n## CPU requested per pattern family (all seeds pooled)\n")
    print(cpu_table(per_family, [*ours, VPA, KRR95, KRR99]) + "\n")
    print_timings(timings, started)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "seeds": args.seeds,
                    "workloads": args.workloads,
                    "in_process": args.in_process,
                    "per_seed": {r.seed: {k: asdict(v) for k, v in r.totals.items()} for r in results},
                    "per_family": {f: {k: asdict(v) for k, v in d.items()} for f, d in per_family.items()},
                    "rule_breaks": rule_breaks(per_family) if DEFAULT in ours else None,
                    "timings": timings,
                },
                indent=1,
            )
        )
    finish(work, keep=args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
