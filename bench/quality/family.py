"""A randomised trace family: workloads drawn from parameter distributions, so that a change that
wins on one hand-made pattern but loses elsewhere shows up.

Every workload has one primary pattern family (FAMILIES, drawn with FAMILY_WEIGHTS) and common parameters
drawn around it: level (log-uniform 20m..2 cores), memory (log-uniform 64 MiB..4 GiB), noise (relative
standard deviation 2..25 %, a third of the workloads log-normal), a daily cycle (in 60 % of the workloads
besides `daily` and `hpa`, which always have one: amplitude 0.3..3 x the level, a cosine or a business-hours
plateau peaking at a random hour), 1..3 replicas (60 % of the workloads one) and a small sidecar (15 %). The
primary family adds its own feature (FAMILY_NOTES). Minute 0 is a Monday 00:00 UTC (T = the start of day 7,
a Monday); history is days 0-6 and the scored days 7-8, as in traces.py. One random stream per workload
(`[seed, index]`): the same seed gives the same traces, bit for bit; workloads of one seed live in the
namespace `family-<seed>`, so several seeds share one Prometheus.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from bench.quality.traces import (
    GI,
    HISTORY,
    MI,
    MINUTES_PER_DAY,
    TOTAL,
    Cluster,
    Hpa,
    Pattern,
    PodTrace,
    _Ctx,
    _pod,
    _spec,
    oom_killed,
)
from recommender.model import FloatArray

FAMILY_WEIGHTS: Mapping[str, float] = {
    "steady": 2.0,
    "daily": 2.0,
    "weekend": 1.0,
    "heavy-day": 1.0,
    "bursty": 1.0,
    "batch": 1.0,
    "cron": 1.0,
    "step-up": 1.0,
    "step-down": 1.0,
    "rollout-up": 1.0,
    "rollout-down": 1.0,
    "trend-up": 1.0,
    "trend-down": 1.0,
    "leak": 1.0,
    "restarts": 1.0,
    "hpa": 1.0,
    "oom": 1.0,
}
"""Every feature the issue lists once, steady and daily workloads twice as often."""
FAMILIES = tuple(FAMILY_WEIGHTS)
FAMILY_NOTES: Mapping[str, str] = {
    "steady": "no daily cycle",
    "daily": "a daily cycle always",
    "weekend": "Saturday and Sunday at 15..70 % of the load",
    "heavy-day": "one (70 %) or two weekdays at 1.5..4 x the load",
    "bursty": "bursts of 1..30 min, 1..15 % of the time, 2..8 x the level, at random or periodic times",
    "batch": "idles at 2..20 % of the level; runs every 1..6 h for 5..45 min at 1..3 x the level",
    "cron": "a nightly job at a random hour for 5..60 min at 2..10 x the level (and small hourly ones: 40 %)",
    "step-up": "the load steps up x1.3..2.5 at a random time of days 1..6.5, and stays",
    "step-down": "the load steps down to 25..80 % at a random time of days 1..6.5, and stays",
    "rollout-up": "a new ReplicaSet at a random time of days 1..6.5 with x1.3..2.5 the use",
    "rollout-down": "a new ReplicaSet at a random time of days 1..6.5 with 25..80 % of the use",
    "trend-up": "the level grows 3..12 % of the start a day (memory too)",
    "trend-down": "the level falls 3..10 % of the start a day",
    "leak": "memory leaks 5..60 MiB/h, the container restarts every 12..72 h",
    "restarts": "pods replaced every 8..48 h; each start: 1..5 min at 2..8 x the level, memory ramps up",
    "hpa": "an HPA (CPU target 50..80 %) scales 2 to 3..8 replicas with the daily load; steady replicas",
    "oom": "memory limit just above the daily peak; an extra 10..30 % for 20..90 min every 2-3 days: killed",
}
AUTOPILOT_FAMILIES = ("hpa",)
"""Families podsizer sizes by the autopilot (per-replica steady state / the HPA's target), not by a
percentile: under a real HPA the target, not the request, decides how often a pod runs above its request
(a larger request only means fewer, busier pods), and the scores replay the trace's replica counts (an HPA
that never reacts). The regression rule is printed for them, with this caveat."""
NAMESPACE_PREFIX = "family-"


def namespace(seed: int) -> str:
    return f"{NAMESPACE_PREFIX}{seed}"


def family_of(pattern_name: str) -> str:
    """The primary family of a workload name ('heavy-day-017' -> 'heavy-day')."""
    return pattern_name.rsplit("-", 1)[0]


@dataclass(frozen=True)
class _Draw:
    """The common parameters of one workload."""

    level: float
    memory: float
    noise: float
    lognormal: bool
    daily_amplitude: float
    peak_hour: float
    plateau: bool
    replicas: int
    sidecar: bool


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _draw(rng: np.random.Generator, family: str) -> _Draw:
    daily = family in ("daily", "hpa") or (family != "steady" and rng.random() < 0.6)
    return _Draw(
        level=_log_uniform(rng, 0.02, 2.0),
        memory=_log_uniform(rng, 64 * MI, 4 * GI),
        noise=float(rng.uniform(0.02, 0.25)),
        lognormal=bool(rng.random() < 1 / 3),
        daily_amplitude=float(rng.uniform(0.3, 3.0)) if daily else 0.0,
        peak_hour=float(rng.uniform(0, 24)),
        plateau=bool(rng.random() < 0.4),
        replicas=1 if rng.random() < 0.6 else int(rng.integers(2, 4)),
        sidecar=bool(rng.random() < 0.15),
    )


def _shape(c: _Ctx, d: _Draw) -> FloatArray:
    """The load over time relative to the level: 1 + amplitude x the daily shape (0..1)."""
    if d.daily_amplitude == 0:
        return np.ones(TOTAL)
    if d.plateau:  # business hours: 10 hours at the top, ramps of an hour
        hours = ((c.m % MINUTES_PER_DAY) / 60.0 - d.peak_hour + 5.0) % 24.0
        top = np.clip(np.minimum(hours, 11.0 - hours), 0.0, 1.0)
        return 1.0 + d.daily_amplitude * top
    return 1.0 + d.daily_amplitude * c.daily(d.peak_hour)


def _noise(c: _Ctx, d: _Draw) -> FloatArray:
    if d.lognormal:
        return np.exp(d.noise * c.rng.standard_normal(TOTAL) - d.noise**2 / 2)
    return c.noise(d.noise)


def _weekday(c: _Ctx) -> FloatArray:
    """0 = Monday for every minute (minute 0 is Monday 00:00)."""
    return np.floor(c.day) % 7


def _bursts(c: _Ctx, level: float) -> FloatArray:
    length = int(c.rng.integers(1, 31))
    share = float(c.rng.uniform(0.01, 0.15))
    height = level * float(c.rng.uniform(2.0, 8.0))
    on = np.zeros(TOTAL, dtype=bool)
    if c.rng.random() < 0.5:  # periodic
        period = max(length + 1, round(length / share))
        on = (c.m + int(c.rng.integers(0, period))) % period < length
    else:
        starts = np.flatnonzero(c.rng.random(TOTAL) < share / length)
        for s in starts:
            on[s : s + length] = True
    return np.where(on, height, 0.0)


def _step_at(c: _Ctx) -> int:
    return int(c.rng.uniform(1.0, 6.5) * MINUTES_PER_DAY)


def _factor(c: _Ctx, family: str) -> float:
    return float(c.rng.uniform(1.3, 2.5) if family.endswith("up") else c.rng.uniform(0.25, 0.8))


@dataclass(frozen=True)
class _Load:
    """CPU and memory of the main container per minute (before each replica's noise), and what else."""

    cpu: FloatArray
    memory: FloatArray
    mem_limit: float | None = None
    """A memory limit the demand exceeds: history holds OOM kills (traces.oom_killed)."""


def _load(c: _Ctx, family: str, d: _Draw) -> _Load:
    shape = _shape(c, d)
    cpu = d.level * shape
    mem = d.memory * (1.0 + 0.15 * (shape - 1.0) / max(1.0, d.daily_amplitude))
    if family == "weekend":
        factor = float(c.rng.uniform(0.15, 0.7))
        low = np.isin(_weekday(c), (5, 6))
        cpu, mem = np.where(low, cpu * factor, cpu), np.where(low, mem * (0.5 + factor / 2), mem)
    elif family == "heavy-day":
        days = c.rng.choice(7, size=1 if c.rng.random() < 0.7 else 2, replace=False)
        factor = float(c.rng.uniform(1.5, 4.0))
        heavy = np.isin(_weekday(c), days)
        cpu, mem = np.where(heavy, cpu * factor, cpu), np.where(heavy, mem * (1 + (factor - 1) / 4), mem)
    elif family == "bursty":
        cpu = cpu + _bursts(c, d.level)
    elif family == "batch":
        period = int(c.rng.choice([60, 120, 180, 240, 360]))
        length = int(c.rng.integers(5, 46))
        on = (c.m + int(c.rng.integers(0, period))) % period < min(length, period - 1)
        idle = float(c.rng.uniform(0.02, 0.2))
        cpu = np.where(on, d.level * float(c.rng.uniform(1.0, 3.0)), d.level * idle * shape)
        mem = np.where(on, mem, mem * 0.4)
    elif family == "cron":
        minute = c.m % MINUTES_PER_DAY
        at, length = int(c.rng.integers(0, 24)) * 60, int(c.rng.integers(5, 61))
        nightly = (minute >= at) & (minute < at + length)
        cpu = np.where(nightly, d.level * float(c.rng.uniform(2.0, 10.0)), cpu)
        if c.rng.random() < 0.4:
            cpu = np.where(~nightly & (c.m % 60 < 3), cpu * 3.0, cpu)
        mem = np.where(nightly, mem * 1.5, mem)
    elif family in ("step-up", "step-down"):
        at, factor = _step_at(c), _factor(c, family)
        after = c.m >= at
        cpu, mem = np.where(after, cpu * factor, cpu), np.where(after, mem * (1 + (factor - 1) / 2), mem)
    elif family == "trend-up":
        slope = float(c.rng.uniform(0.03, 0.12))
        cpu, mem = cpu * (1 + slope * c.day), mem * (1 + slope / 2 * c.day)
    elif family == "trend-down":
        slope = float(c.rng.uniform(0.03, 0.10))
        cpu = cpu * np.clip(1 - slope * c.day, 0.2, None)
    elif family == "leak":
        rate = float(c.rng.uniform(5, 60)) * MI / 60
        every = int(c.rng.uniform(12, 72) * 60)
        since = (c.m + int(c.rng.integers(0, every))) % every
        mem = mem + rate * since
    elif family == "oom":
        return _oom(c, cpu, mem)
    return _Load(cpu, mem)


def _oom(c: _Ctx, cpu: FloatArray, mem: FloatArray) -> _Load:
    """Extra memory for a while every 2-3 days lifts the demand past a limit just above the usual peak (each
    replica's history is then what the cluster saw: _usage)."""
    limit = float(mem.max()) * float(c.rng.uniform(1.02, 1.1))
    extra = float(c.rng.uniform(0.1, 0.3))
    length = int(c.rng.integers(20, 91))
    every = int(c.rng.integers(2, 4))
    at = int(c.rng.integers(0, MINUTES_PER_DAY - length))
    minute = c.m % MINUTES_PER_DAY
    days = np.floor(c.day).astype(np.int64)
    on = (days % every == int(c.rng.integers(0, every))) & (minute >= at) & (minute < at + length)
    return _Load(cpu, mem * np.where(on, 1.0 + extra, 1.0), limit)


def _sidecar(c: _Ctx) -> tuple[FloatArray, FloatArray]:
    level, memory = float(c.rng.uniform(0.01, 0.05)), float(c.rng.uniform(32, 128)) * MI
    return level * c.noise(0.1), memory + c.jitter(memory * 0.01)


def _specs(d: _Draw, load: _Load) -> dict[str, tuple[dict[str, float], dict[str, float]]]:
    requests = max(0.05, round(2 * float(np.percentile(load.cpu, 90)), 2))
    mem_request = 2 ** np.ceil(np.log2(float(load.memory.max())))
    out = {"app": _spec(requests, mem_request, load.mem_limit)}
    if load.mem_limit is not None:
        out["app"] = ({"cpu": requests, "memory": load.mem_limit}, {"memory": load.mem_limit})
    if d.sidecar:
        out["sidecar"] = _spec(0.1, 256 * MI)
    return out


def _usage(
    c: _Ctx, d: _Draw, load: _Load, side: tuple[FloatArray, FloatArray] | None
) -> tuple[dict[str, tuple[FloatArray, FloatArray]], tuple[tuple[str, int], ...]]:
    """One replica's usage: the load with its own noise (memory with 1 % jitter) and, under a memory limit
    the demand exceeds, what the cluster saw (kills in history) with the minutes of its OOM kills."""
    cpu = load.cpu * _noise(c, d)
    memory = load.memory + c.jitter(0.01 * d.memory)
    kills: list[int] = []
    if load.mem_limit is not None:
        memory, kills = oom_killed(memory, load.mem_limit, 0.4 * load.mem_limit)
    usage = {"app": (cpu, memory)}
    if side is not None:
        usage["sidecar"] = (side[0] * c.noise(0.05), side[1])
    return usage, tuple(("app", k) for k in kills)


def _replica(
    c: _Ctx,
    d: _Draw,
    at: tuple[str, tuple[str, str], tuple[int, int]],
    load: _Load,
    side: tuple[FloatArray, FloatArray] | None,
    spec: Mapping[str, tuple[dict[str, float], dict[str, float]]],
) -> PodTrace:
    """One pod (name, owner, span) of the load."""
    usage, ooms = _usage(c, d, load, side)
    return _pod(at[0], at[1], at[2], usage, spec, ooms=ooms)


def _template(name: str, k: int) -> str:
    """The k-th ReplicaSet's name (a Deployment's pod-template-hash style suffix)."""
    return f"{name}-{0x5F8B7D6C4 + 0x1A2B3C * k:x}"


def _pods_of(
    c: _Ctx, name: str, family: str, d: _Draw, load: _Load, side: tuple[FloatArray, FloatArray] | None
) -> tuple[list[PodTrace], tuple[str, ...], Hpa | None]:
    spec = _specs(d, load)
    rs = _template(name, 0)
    if family in ("rollout-up", "rollout-down"):
        at, factor = _step_at(c), _factor(c, family)
        new = _template(name, 1)
        after = replace(load, cpu=load.cpu * factor, memory=load.memory * (1 + (factor - 1) / 2))
        pods = []
        for template, source, span in ((rs, load, (0, at)), (new, after, (at, TOTAL))):
            for i in range(d.replicas):
                at = (f"{template}-r{i:04d}", ("ReplicaSet", template), span)
                pods.append(_replica(c, d, at, source, side, spec))
        return pods, (rs, new), None
    if family == "restarts":
        life = int(c.rng.uniform(8, 48) * 60)
        burst, height = int(c.rng.integers(1, 6)), float(c.rng.uniform(2.0, 8.0))
        pods = []
        for replica in range(d.replicas):
            offset = int(c.rng.integers(0, life))
            starts = [0, *range(life - offset, TOTAL, life)]
            for k, lo in enumerate(starts):
                hi = starts[k + 1] if k + 1 < len(starts) else TOTAL
                age = c.m - lo
                started = replace(
                    load,
                    cpu=np.where(age < burst, d.level * height, load.cpu),
                    memory=load.memory * (0.4 + 0.6 * np.clip(age / 15, 0, 1)),
                )
                at = (f"{rs}-s{replica}{k:03d}", ("ReplicaSet", rs), (lo, hi))
                pods.append(_replica(c, d, at, started, side, spec))
        return pods, (rs,), None
    if family == "hpa":
        return _hpa_pods(c, name, d, load, side)
    pods = [
        _replica(c, d, (f"{rs}-p{i:04d}", ("ReplicaSet", rs), (0, TOTAL)), load, side, spec)
        for i in range(d.replicas)
    ]
    return pods, (rs,), None


def _hpa_pods(
    c: _Ctx, name: str, d: _Draw, load: _Load, side: tuple[FloatArray, FloatArray] | None
) -> tuple[list[PodTrace], tuple[str, ...], Hpa]:
    """Replicas follow the daily load (an HPA at a CPU target): each replica runs near the level."""
    rs = _template(name, 0)
    top = int(c.rng.integers(3, 9))
    target = float(c.rng.uniform(0.5, 0.8))
    hourly = np.repeat(np.arange(TOTAL // 60 + 1), 60)[:TOTAL]
    want = load.cpu / load.cpu.max() * top
    wobble = 0.5 * c.rng.standard_normal(int(hourly.max()) + 1)[hourly]
    replicas = np.clip(np.rint(want[hourly * 60] + wobble), 2, top).astype(np.int64)
    steady = replace(load, cpu=np.full(TOTAL, d.level), memory=np.full(TOTAL, d.memory))
    spec = _specs(d, steady)
    pods: list[PodTrace] = []
    for slot in range(top):
        alive = replicas > slot
        edges = np.flatnonzero(np.diff(np.concatenate(([0], alive.astype(np.int8), [0]))))
        for k, (lo, hi) in enumerate(zip(edges[::2], edges[1::2], strict=True)):
            at = (f"{rs}-h{slot:02d}{k:03d}", ("ReplicaSet", rs), (int(lo), int(hi)))
            pods.append(_replica(c, d, at, steady, side, spec))
    return pods, (rs,), Hpa(2, top, target, int(replicas[HISTORY - 1]))


def workload(rng: np.random.Generator, family: str, index: int, ns: str) -> Pattern:
    """One workload of `family` from its random stream."""
    c = _Ctx(rng)
    d = _draw(rng, family)
    name = f"{family}-{index:03d}"
    load = _load(c, family, d)
    side = _sidecar(c) if d.sidecar else None
    pods, templates, hpa = _pods_of(c, name, family, d, load, side)
    containers = ("app", "sidecar") if d.sidecar else ("app",)
    kind = "Deployment"
    if family in ("steady", "daily", "leak", "oom") and rng.random() < 0.2:  # a StatefulSet: one template
        kind, templates = "StatefulSet", ()
        pods = [replace(p, name=f"{name}-{i}", owner_kind="StatefulSet", owner_name=name)
                for i, p in enumerate(pods)]  # fmt: skip
    return Pattern(name, f"{family}: {FAMILY_NOTES[family]}", kind, containers, tuple(pods), templates, hpa,
                   namespace=ns)  # fmt: skip


def families_of(rng: np.random.Generator, count: int) -> list[str]:
    """`count` primary families drawn with FAMILY_WEIGHTS."""
    weights = np.array(list(FAMILY_WEIGHTS.values()))
    picks = rng.choice(len(FAMILIES), size=count, p=weights / weights.sum())
    return [FAMILIES[i] for i in picks]


def generate(seed: int, count: int = 120) -> Cluster:
    """`count` workloads of one seed in namespace family-<seed>: each from its own stream [seed, index]."""
    ns = namespace(seed)
    chosen = families_of(np.random.default_rng([seed, 0, 24]), count)
    patterns = tuple(
        workload(np.random.default_rng([seed, i + 1, 24]), family, i, ns) for i, family in enumerate(chosen)
    )
    return Cluster(seed, patterns)


def heavy_monday(seed: int = 24, ns: str = "heavy-day") -> Pattern:
    """The benchmark's largest loss as one trace: 400m with 5 % noise and a daily cycle to twice that, every
    Monday at 3 x; T is a Monday, so the first scored day is as heavy as the first day of history."""
    c = _Ctx(np.random.default_rng([seed, 24]))
    heavy = _weekday(c) == 0
    cpu = 0.4 * (1.0 + c.daily(14.0)) * np.where(heavy, 3.0, 1.0) * c.noise(0.05)
    mem = 600 * MI + c.jitter(6 * MI)
    name = "heavy-monday"
    rs = _template(name, 0)
    pod = _pod(f"{rs}-m0000", ("ReplicaSet", rs), (0, TOTAL), {"app": (cpu, mem)}, {"app": _spec(4.0, GI)})
    return Pattern(name, "400m..800m daily, every Monday 3 x", "Deployment", ("app",), (pod,), (rs,),
                   namespace=ns)  # fmt: skip
