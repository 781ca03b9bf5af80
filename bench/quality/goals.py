"""The issue's goals, checked on a run: who dominates whom, zero OOM risk, every result explained.

- balanced dominates VPA: no more CPU and memory requested in total, no more risk (mean share of pod-minutes
  above the CPU request, containers and pod-minutes above the memory limit);
- conservative dominates KRR simple p99 the same way and keeps zero containers at OOM risk;
- every pattern's result is explained in the reason text: each container's reason names how its CPU and
  its memory were derived ("cpu: ...", "memory: ..."), and where a pattern takes a special path the reason
  names it (EXPECTED_WORDS; the burst path only in profiles that turn it on).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from bench.quality.score import Total, dominates, safe
from podsizer.settings.profiles import PRESETS, Profile

EXPECTED_WORDS: Mapping[str, tuple[str, ...]] = {
    "trend": ("for the trend",),
    "oom": ("OOMKilled",),
    "hpa-web": ("autopilot",),
    "rollout-down": ("replaced",),
    "weekly": ("a weekly cycle cannot be ruled out",),
    "gpu-train": ("gpu:",),
    "gpu-infer": ("gpu:",),
    "gpu-idle": ("gpu:", "MIG"),
}
"""Words the reason of a pattern's containers must hold (any profile)."""
BURSTY = ("batch",)
"""Patterns whose reason must name the burst path in a profile that turns it on."""


@dataclass(frozen=True)
class Goal:
    """One goal line: what is claimed, whether it holds, and why not."""

    text: str
    holds: bool
    detail: str = ""

    def line(self) -> str:
        verdict = "yes" if self.holds else "no"
        return f"- {self.text}: **{verdict}**" + (f" ({self.detail})" if self.detail else "")


def no_worse(a: Total, b: Total) -> bool:
    """a dominates b, or ties it on every axis."""
    return dominates(a, b) or (
        a.mean_cpu_over_share,
        a.oom_containers,
        a.memory_over_minutes,
        a.cpu_requested,
        a.memory_requested,
    ) == (b.mean_cpu_over_share, b.oom_containers, b.memory_over_minutes, b.cpu_requested, b.memory_requested)


def why_not(a: Total, b: Total) -> str:
    worse = [
        name
        for name, x, y in (
            ("mean share CPU > request", a.mean_cpu_over_share, b.mean_cpu_over_share),
            ("containers memory > limit", a.oom_containers, b.oom_containers),
            ("pod-minutes memory > limit", a.memory_over_minutes, b.memory_over_minutes),
            ("CPU requested", a.cpu_requested, b.cpu_requested),
            ("memory requested", a.memory_requested, b.memory_requested),
        )
        if x > y
    ]
    return "worse on " + ", ".join(worse) if worse else ""


def reasons(doc: Mapping[str, object]) -> dict[tuple[str, str], str]:
    """(workload name, container) -> the workload's reason and the container's, as a user reads them."""
    out: dict[tuple[str, str], str] = {}
    for item in cast(Sequence[Mapping[str, Mapping[str, object]]], doc.get("items") or []):
        name = str(cast(Mapping[str, object], item["spec"]["targetRef"])["name"])
        status = item["status"]
        for c in cast(Sequence[Mapping[str, object]], status.get("containers") or []):
            out[(name, str(c["name"]))] = f"{status.get('reason') or ''}; {c.get('reason') or ''}"
    return out


def unexplained(
    profile: Profile, patterns: Mapping[str, Sequence[str]], texts: Mapping[tuple[str, str], str]
) -> list[str]:
    """'pattern/container: what the reason lacks' for each container whose result is not explained."""
    burst = bool(PRESETS[profile].get("cpu_burst_path", False))
    out: list[str] = []
    for pattern, containers in patterns.items():
        words = EXPECTED_WORDS.get(pattern, ()) + (("bursty",) if burst and pattern in BURSTY else ())
        for c in containers:
            text = texts.get((pattern, c))
            if text is None:
                out.append(f"{pattern}/{c}: no recommendation")
                continue
            lacking = [w for w in ("cpu:", "memory:", *words) if w not in text]
            if lacking:
                out.append(f"{pattern}/{c}: reason lacks {', '.join(repr(w) for w in lacking)}")
    return out


def goals(
    totals: Mapping[str, Total],
    tool_of: Mapping[Profile, str],
    peers: tuple[str, str],
    missing: Mapping[Profile, Sequence[str]],
) -> list[Goal]:
    """The issue's three goals; `tool_of` names each profile's row, `peers` = (VPA, KRR p99), `missing`
    each profile's unexplained containers."""
    vpa, krr99 = peers
    out: list[Goal] = []
    bal, cons = totals.get(tool_of["balanced"]), totals.get(tool_of["conservative"])
    if bal is not None:
        out.append(
            Goal(
                f"balanced dominates {vpa}: no more CPU and memory requested in total, no more minutes "
                "above request or limit",
                no_worse(bal, totals[vpa]),
                why_not(bal, totals[vpa]),
            )
        )
    if cons is not None:
        holds = no_worse(cons, totals[krr99]) and cons.oom_containers == 0
        detail = why_not(cons, totals[krr99])
        if cons.oom_containers:
            detail = "; ".join(x for x in (detail, f"{cons.oom_containers} containers at OOM risk") if x)
        out.append(
            Goal(f"conservative dominates {krr99} and keeps zero containers at OOM risk", holds, detail)
        )
    lacking = [f"{p}: {x}" for p, xs in missing.items() for x in xs]
    out.append(
        Goal(
            "every pattern's result is explained in the reason text (" + ", ".join(missing) + ")",
            not lacking,
            "; ".join(lacking),
        )
    )
    return out


def losing(
    per_pattern: Mapping[str, Mapping[str, Total]], tool: str, peers: Sequence[str]
) -> tuple[list[str], list[str]]:
    """The patterns where `tool` loses to a peer: 'pattern (by peer, ...)' where a peer dominates it, and
    'pattern (peer, ...)' where it is unsafe (score.safe) and a peer is safe."""
    beaten: list[str] = []
    riskier: list[str] = []
    for pattern, totals in per_pattern.items():
        mine = totals[tool]
        if by := [p for p in peers if dominates(totals[p], mine)]:
            beaten.append(f"{pattern} (by {', '.join(by)})")
        if not safe(mine) and (ok := [p for p in peers if safe(totals[p])]):
            riskier.append(f"{pattern} ({', '.join(ok)})")
    return beaten, riskier
