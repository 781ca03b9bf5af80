"""The quality benchmark in one command: traces -> real Prometheus -> podsizer, VPA, KRR -> scores.

    .venv/bin/python -m bench.quality.run [--seed 14] [--profile NAME ...] [--variant NAME='--flag value ...']
                                          [--json out.json]

History: 7 days up to T; scored: the 2 days after T (see bench/quality/README.md). podsizer runs once per
profile (conservative, balanced, aggressive: podsizer/settings/profiles.py); its goals are checked on
the result (bench/quality/goals.py).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import cast, get_args

from bench.quality import goals, prom, tools, vpa_estimate
from bench.quality.score import (
    GIB,
    SAFE_CPU_SHARE,
    Score,
    Sizing,
    Total,
    dominated_by,
    dominates,
    total,
    winner,
)
from bench.quality.traces import EVAL_DAYS, HISTORY_DAYS, Cluster, generate
from podsizer.settings.profiles import Profile

FIXED_T = datetime(2026, 11, 2, tzinfo=UTC)
"""T when podsizer takes --as-of: a fixed instant (midnight UTC, so minute 0 of the traces is 00:00)."""
PEERS = ("VPA " + vpa_estimate.VERSION, "KRR simple p95", "KRR simple p99")
HINDSIGHT = "hindsight p99"
PLAN = " (pod plan)"

Sizings = Mapping[str, Mapping[tools.Key, Sizing]]
Scores = dict[str, dict[tools.Key, Score]]


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench.quality.run", description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=14, help="trace seed (default 14)")
    podsizer_options(ap, "every profile")
    return ap.parse_args(argv)


def podsizer_options(ap: argparse.ArgumentParser, default_profiles: str) -> None:
    """The options of a benchmark that runs podsizer: --profile, --variant, --json, --keep."""
    ap.add_argument(
        "--profile",
        action="append",
        choices=get_args(Profile),
        help=f"run podsizer with this profile (repeatable; default: {default_profiles})",
    )
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=ARGS",
        help="also run podsizer with these extra `podsizer recommend` arguments, e.g. "
        "m5='--profile balanced --cpu-margin 0.05' (repeatable)",
    )
    ap.add_argument("--json", type=Path, help="also write every figure as JSON here")
    ap.add_argument(
        "--keep", action="store_true", help="keep the work directory (TSDB, OpenMetrics, outputs)"
    )


def profile_tool(profile: Profile) -> str:
    """The rows of podsizer run with a profile: 'podsizer balanced'."""
    return f"podsizer {profile}"


def variants(profiles: Sequence[Profile], specs: Sequence[str]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {profile_tool(p): ("--profile", p) for p in profiles}
    for spec in specs:
        name, _, rest = spec.partition("=")
        out[f"podsizer {name.strip()}"] = tuple(shlex.split(rest))
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def pareto_table(totals: Mapping[str, Total]) -> str:
    dom = dominated_by({k: v for k, v in totals.items() if k != HINDSIGHT and not k.endswith(PLAN)})
    rows = [
        [
            name,
            _pct(t.mean_cpu_over_share),
            _pct(t.pooled_cpu_over_share),
            str(t.oom_containers),
            str(t.memory_over_minutes),
            f"{t.cpu_requested:.2f}",
            f"{t.memory_requested / GIB:.2f}",
            f"{t.cpu_slack:.2f}",
            f"{t.memory_slack / GIB:.2f}",
            (", ".join(dom[name]) or "Pareto front") if name in dom else "(reference)",
        ]
        for name, t in totals.items()
    ]
    head = [
        "tool", "mean share of pod-minutes CPU > request", "all pod-minutes CPU > request",
        "containers with memory > limit", "pod-minutes memory > limit", "CPU requested (cores)",
        "memory requested (GiB)", "CPU slack (cores)", "memory slack (GiB)", "dominated by",
    ]  # fmt: skip
    return _table(head, rows)


def _cell(t: Total) -> str:
    if not math.isfinite(t.cpu_requested):
        return "n/a"
    return (
        f"{100 * t.pooled_cpu_over_share:.1f}% / {t.memory_over_minutes} / "
        f"{t.cpu_requested:.3f} / {t.memory_requested / GIB:.2f}"
    )


def _main_tools(scores: Scores) -> list[str]:
    """Every tool but the pod-plan rows (those are in the Pareto table only)."""
    return [n for n in scores if not n.endswith(PLAN)]


def _per_pattern(cluster: Cluster, scores: Scores) -> dict[str, dict[str, Total]]:
    """pattern -> tool -> the pattern's total (every tool but the pod-plan rows)."""
    names = _main_tools(scores)
    return {
        p.name: {n: total([scores[n][(p.name, c)] for c in p.containers]) for n in names}
        for p in cluster.patterns
    }


def _beaten_by(per_tool: Mapping[str, Total], tool: str) -> list[str]:
    return [x for x in PEERS if dominates(per_tool[x], per_tool[tool])]


def pattern_table(cluster: Cluster, scores: Scores) -> str:
    """Per pattern: the winner (cheapest safe tool), the peers that dominate each podsizer run on this
    pattern (no more risk, no more CPU and memory), and every tool's figures."""
    names = _main_tools(scores)
    ours = [n for n in names if n.startswith("podsizer")]
    rows = []
    for name, per_tool in _per_pattern(cluster, scores).items():
        contenders = {n: t for n, t in per_tool.items() if n != HINDSIGHT}
        beaten = [", ".join(_beaten_by(per_tool, n)) or "-" for n in ours]
        rows.append([name, winner(contenders), *beaten, *(_cell(per_tool[n]) for n in names)])
    return _table(["pattern", "wins", *(f"{n} dominated by" for n in ours), *names], rows)


def losing_lines(cluster: Cluster, scores: Scores) -> list[str]:
    """Per podsizer run: the patterns a peer dominates it on, and those where it is unsafe and a peer safe."""
    per = _per_pattern(cluster, scores)
    lines = []
    for tool in (n for n in _main_tools(scores) if n.startswith("podsizer")):
        beaten, riskier = goals.losing(per, tool, PEERS)
        lines.append(f"- {tool}: dominated by a peer on {', '.join(beaten) or 'no pattern'}")
        lines.append(
            f"- {tool}: unsafe where a peer is safe (over {100 * SAFE_CPU_SHARE:g} % of pod-minutes above "
            f"the CPU request or any above the memory limit) on {', '.join(riskier) or 'no pattern'}"
        )
    return lines


def container_table(cluster: Cluster, sizings: Sizings, scores: Scores) -> str:
    rows = []
    for p in cluster.patterns:
        for c in p.containers:
            for tool in _main_tools(scores):
                s, z = scores[tool][(p.name, c)], sizings[tool].get((p.name, c), Sizing(math.nan, math.nan))
                limit = "-" if z.memory_limit is None else f"{z.memory_limit / 2**20:.0f}"
                rows.append(
                    [
                        f"{p.name}/{c}", tool, f"{1000 * z.cpu_request:.0f}",
                        f"{z.memory_request / 2**20:.0f}",
                        limit, _pct(s.cpu_over_share), str(s.memory_over), f"{s.cpu_slack:.3f}",
                        f"{s.memory_slack / 2**20:.0f}",
                    ]
                )  # fmt: skip
    head = [
        "container", "tool", "CPU request (m)", "memory request (MiB)", "memory limit (MiB)",
        "pod-minutes CPU > request", "pod-minutes memory > limit", "CPU slack (cores)", "memory slack (MiB)",
    ]  # fmt: skip
    return _table(head, rows)


def goal_lines(totals: Mapping[str, Total]) -> list[str]:
    lines = []
    for name, t in totals.items():
        if not name.startswith("podsizer") or name.endswith(PLAN):
            continue
        for peer in PEERS:
            verdict = "yes" if dominates(t, totals[peer]) or _equal(t, totals[peer]) else "no"
            lines.append(f"- {name} dominates {peer} (no more CPU/memory requested, no more risk): {verdict}")
        lines.append(
            f"- {name} keeps zero containers at OOM risk: {'yes' if t.oom_containers == 0 else 'no'}"
        )
    return lines


def _equal(a: Total, b: Total) -> bool:
    return (a.mean_cpu_over_share, a.memory_over_minutes, a.cpu_requested, a.memory_requested) == (
        b.mean_cpu_over_share, b.memory_over_minutes, b.cpu_requested, b.memory_requested,
    )  # fmt: skip


def _containers(cluster: Cluster) -> dict[str, tuple[str, ...]]:
    return {p.name: p.containers for p in cluster.patterns}


def _gpu_lines(docs: Mapping[str, Mapping[str, object]]) -> list[str]:
    lines = []
    for tool, doc in docs.items():
        for item in cast(Sequence[Mapping[str, Mapping[str, Mapping[str, object]]]], doc.get("items") or []):
            gpu = item["status"].get("gpu")
            if gpu:
                lines.append(
                    f"- {tool} {item['spec']['targetRef']['name']}: "
                    f"{gpu.get('allocated')} x {gpu.get('model')}, "
                    f"SM active p95 {gpu.get('smActiveP95')}, idle {gpu.get('idle')}, "
                    f"suggested {gpu.get('suggestedResource')}"
                )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = _args(argv)
    started = time.perf_counter()
    timings: dict[str, float] = {}
    cluster = generate(args.seed)
    as_of = prom.as_of_supported()
    t = FIXED_T if as_of else datetime.fromtimestamp(int(time.time()) // 60 * 60, UTC)
    timings["generate traces"] = time.perf_counter() - started
    work = Path(tempfile.mkdtemp(prefix="podsizer-quality-"))
    docs: dict[str, dict[str, object]] = {}
    sizings: dict[str, Mapping[tools.Key, Sizing]] = {}
    profiles: list[Profile] = args.profile or list(get_args(Profile))
    with prom.served(cluster, t, work, timings, keep=args.keep) as server:
        for name, extra in variants(profiles, args.variant).items():
            t0 = time.perf_counter()
            docs[name] = prom.recommend(server.url, t, work, extra)
            timings[f"{name} recommend"] = time.perf_counter() - t0
            sizings[name] = tools.podsizer_sizing(docs[name])
            sizings[f"{name} (pod plan)"] = tools.podsizer_sizing(docs[name], plan=True)
    t0 = time.perf_counter()
    sizings[PEERS[0]] = vpa_estimate.recommend(cluster, t)
    timings["VPA (build check + estimate)"] = time.perf_counter() - t0
    sizings[PEERS[1]] = tools.krr_sizing(cluster, 95)
    sizings[PEERS[2]] = tools.krr_sizing(cluster, 99)
    sizings[HINDSIGHT] = tools.hindsight_sizing(cluster)
    scores = tools.score_cluster(cluster, sizings)
    totals = {name: total(list(by_key.values())) for name, by_key in scores.items()}
    containers = sum(len(p.containers) for p in cluster.patterns)
    print(f"# podsizer quality benchmark (seed {args.seed})\n")
    print(
        f"{len(cluster.patterns)} patterns, {containers} containers; history {HISTORY_DAYS} days up to "
        f"T = {t.isoformat()} ({'--as-of T' if as_of else 'T = now: podsizer has no --as-of yet'}), "
        f"scored on the {EVAL_DAYS} days after T.\n"
    )
    print("## Pareto table (totals over all containers)\n")
    print(pareto_table(totals) + "\n")
    reason_texts = {name: goals.reasons(doc) for name, doc in docs.items()}
    checked = goals.goals(
        totals,
        {p: profile_tool(p) for p in get_args(Profile)},
        (PEERS[0], PEERS[2]),
        {p: goals.unexplained(p, _containers(cluster), reason_texts[profile_tool(p)]) for p in profiles},
    )
    print("## Goals\n")
    print("\n".join(g.line() for g in checked) + "\n")
    print("Every podsizer run against every peer:\n")
    print("\n".join(goal_lines(totals)) + "\n")
    print("Patterns that lose to a peer:\n")
    print("\n".join(losing_lines(cluster, scores)) + "\n")
    print(
        "## Per pattern\n\nwins: the cheapest tool (1 core = 8 GiB) with at most "
        f"{100 * SAFE_CPU_SHARE:g} % of pod-minutes above the CPU request and none above the memory limit "
        "(else the least risky); cells: share of pod-minutes CPU > request / "
        "pod-minutes memory > limit / CPU requested (cores, all pods) / memory requested (GiB, all pods)\n"
    )
    print(pattern_table(cluster, scores) + "\n")
    print("## Per container\n")
    print(container_table(cluster, sizings, scores) + "\n")
    print("## GPU (podsizer only)\n")
    print("\n".join(_gpu_lines(docs)) + "\n")
    print_timings(timings, started)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "seed": args.seed,
                    "t": t.isoformat(),
                    "totals": {k: asdict(v) for k, v in totals.items()},
                    "goals": [asdict(g) for g in checked],
                    "reasons": {
                        k: {"/".join(key): r for key, r in v.items()} for k, v in reason_texts.items()
                    },
                    "sizings": {
                        k: {"/".join(key): asdict(s) for key, s in v.items()} for k, v in sizings.items()
                    },
                    "scores": {
                        k: {"/".join(key): asdict(s) for key, s in v.items()} for k, v in scores.items()
                    },
                },
                indent=1,
            )
        )
    finish(work, keep=args.keep)
    return 0


def print_timings(timings: dict[str, float], started: float) -> None:
    """The Timings section: each step's seconds and the total since `started` (perf_counter)."""
    timings["total"] = time.perf_counter() - started
    print("## Timings (s)\n")
    print(", ".join(f"{k} {v:.1f}" for k, v in timings.items()))


def finish(work: Path, *, keep: bool) -> None:
    """The work directory removed, or kept and named (--keep)."""
    if keep:
        print(f"\nwork directory kept: {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
