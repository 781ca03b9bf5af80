"""Seeded, deterministic per-minute usage traces of everyday workload patterns (history + evaluation days)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from recommender.model import FloatArray

MI = 2.0**20
GI = 2.0**30
MINUTES_PER_DAY = 1440
HISTORY_DAYS = 7
EVAL_DAYS = 2
HISTORY = HISTORY_DAYS * MINUTES_PER_DAY
"""Minute index of T: history is [0, HISTORY), evaluation [HISTORY, TOTAL)."""
TOTAL = (HISTORY_DAYS + EVAL_DAYS) * MINUTES_PER_DAY
NAMESPACE = "quality"
CPU_NODE = "node-1"


@dataclass(frozen=True, eq=False)
class PodTrace:
    """One pod: per-minute CPU cores and memory bytes per container from minute `first` on.

    `ooms` are (container, minute) pairs where the container was OOM-killed (history only)."""

    name: str
    owner_kind: str | None
    owner_name: str | None
    first: int
    cpu: Mapping[str, FloatArray]
    memory: Mapping[str, FloatArray]
    requests: Mapping[str, Mapping[str, float]]
    limits: Mapping[str, Mapping[str, float]]
    node: str = CPU_NODE
    ooms: tuple[tuple[str, int], ...] = ()

    @property
    def last(self) -> int:
        """One past the pod's last minute."""
        return self.first + next(iter(self.cpu.values())).size


@dataclass(frozen=True, eq=False)
class GpuTrace:
    """dcgm-exporter activity and framebuffer use of the GPU one container holds, per minute from `first`."""

    pod: str
    container: str
    node: str
    uuid: str
    model: str
    first: int
    sm_active: FloatArray
    fb_used_mib: FloatArray
    fb_total_mib: float


@dataclass(frozen=True)
class Hpa:
    """A HorizontalPodAutoscaler on the pattern's Deployment."""

    min_replicas: int
    max_replicas: int
    cpu_target: float
    current_replicas: int


@dataclass(frozen=True, eq=False)
class Pattern:
    """One workload: its pods over history and evaluation, and what the pattern is."""

    name: str
    description: str
    kind: str
    containers: tuple[str, ...]
    pods: tuple[PodTrace, ...]
    replicasets: tuple[str, ...] = ()
    hpa: Hpa | None = None
    gpus: tuple[GpuTrace, ...] = ()
    namespace: str = NAMESPACE


@dataclass(frozen=True, eq=False)
class Cluster:
    seed: int
    patterns: tuple[Pattern, ...]


# ---- building blocks ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ctx:
    """What every pattern function gets: its own random stream and the minute grid."""

    rng: np.random.Generator
    m: FloatArray = field(default_factory=lambda: np.arange(TOTAL, dtype=np.float64))

    @property
    def day(self) -> FloatArray:
        return self.m / MINUTES_PER_DAY

    def daily(self, peak_hour: float = 14.0) -> FloatArray:
        """0..1 daily shape, 1 at peak_hour, 0 twelve hours later."""
        hours = (self.m % MINUTES_PER_DAY) / 60.0
        return 0.5 * (1.0 + np.cos(2 * np.pi * (hours - peak_hour) / 24.0))

    def noise(self, rel: float) -> FloatArray:
        return np.clip(1.0 + rel * self.rng.standard_normal(TOTAL), 0.0, None)

    def jitter(self, sd: float) -> FloatArray:
        return sd * self.rng.standard_normal(TOTAL)


def _spec(
    cpu: float, memory: float, mem_limit: float | None = None
) -> tuple[dict[str, float], dict[str, float]]:
    return {"cpu": cpu, "memory": memory}, {"memory": mem_limit if mem_limit is not None else 2 * memory}


def _pod(
    name: str,
    owner: tuple[str | None, str | None],
    span: tuple[int, int],
    usage: Mapping[str, tuple[FloatArray, FloatArray]],
    spec: Mapping[str, tuple[dict[str, float], dict[str, float]]],
    *,
    node: str = CPU_NODE,
    ooms: tuple[tuple[str, int], ...] = (),
) -> PodTrace:
    lo, hi = span
    return PodTrace(
        name,
        owner[0],
        owner[1],
        lo,
        {c: np.clip(cpu[lo:hi], 0.0, None) for c, (cpu, _) in usage.items()},
        {c: np.clip(mem[lo:hi], 1.0 * MI, None) for c, (_, mem) in usage.items()},
        {c: s[0] for c, s in spec.items()},
        {c: s[1] for c, s in spec.items()},
        node,
        ooms,
    )


def _rs(name: str) -> str:
    return f"{name}-7c9d8f6b5"


def _deployment(
    name: str,
    description: str,
    usage: Mapping[str, tuple[FloatArray, FloatArray]],
    spec: Mapping[str, tuple[dict[str, float], dict[str, float]]],
    replicas: int = 1,
) -> Pattern:
    """A Deployment whose `replicas` pods all see the same usage shape (each its own noise draw)."""
    rs = _rs(name)
    pods = tuple(_pod(f"{rs}-p{i:04d}", ("ReplicaSet", rs), (0, TOTAL), usage, spec) for i in range(replicas))
    return Pattern(name, description, "Deployment", tuple(usage), pods, (rs,))


# ---- the patterns ------------------------------------------------------------------------------


def steady(c: _Ctx) -> Pattern:
    cpu = 0.25 * c.noise(0.05)
    mem = 300 * MI + c.jitter(3 * MI)
    return _deployment("steady", "250m with 5% noise, 300 MiB", {"app": (cpu, mem)}, {"app": _spec(1, GI)})


def daily(c: _Ctx) -> Pattern:
    shape = c.daily()
    cpu = (0.1 + 0.7 * shape) * c.noise(0.08)
    mem = 500 * MI + 150 * MI * shape + c.jitter(5 * MI)
    return _deployment(
        "daily", "daily cycle 100m..800m peaking at 14:00", {"app": (cpu, mem)}, {"app": _spec(1, GI)}
    )


def weekly(c: _Ctx) -> Pattern:
    weekend = np.isin(np.floor(c.day) % 7, (5, 6))
    factor = np.where(weekend, 0.25, 1.0)
    shape = c.daily(11.0)
    cpu = (0.08 + 0.9 * shape * factor) * c.noise(0.08)
    mem = 400 * MI + 250 * MI * shape * factor + c.jitter(5 * MI)
    return _deployment(
        "weekly",
        "daily cycle to 980m on weekdays, a quarter of it on days 5-6; the scored days are weekdays",
        {"app": (cpu, mem)},
        {"app": _spec(1, GI)},
    )


def trend(c: _Ctx) -> Pattern:
    cpu = (0.2 + 0.04 * c.day) * c.noise(0.05)
    mem = 400 * MI + 25 * MI * c.day + c.jitter(4 * MI)
    return _deployment(
        "trend", "linear growth: +40m and +25 MiB a day", {"app": (cpu, mem)}, {"app": _spec(1, GI)}
    )


def _rollout(
    c: _Ctx,
    name: str,
    description: str,
    at_day: float,
    before: tuple[float, float],
    after: tuple[float, float],
) -> Pattern:
    """Two pods of an old ReplicaSet until `at_day`, then two pods of a new one with other usage."""
    at = int(at_day * MINUTES_PER_DAY)
    old, new = f"{name}-5f8b7d6c4", f"{name}-9a7c6b5d8"
    spec = {"app": _spec(1.5, 1.5 * GI)}
    pods = []
    for rs, (cores, mib), span in ((old, before, (0, at)), (new, after, (at, TOTAL))):
        for i in range(2):
            usage = {"app": (cores * c.noise(0.05), mib * MI + c.jitter(5 * MI))}
            pods.append(_pod(f"{rs}-r{i:04d}", ("ReplicaSet", rs), span, usage, spec))
    return Pattern(name, description, "Deployment", ("app",), tuple(pods), (old, new))


def rollout_down(c: _Ctx) -> Pattern:
    return _rollout(
        c, "rollout-down", "rollout at day 5.5 cuts use from 1 core / 900 MiB to 245m / 420 MiB",
        5.5, (1.0, 900.0), (0.245, 420.0),
    )  # fmt: skip


def rollout_up(c: _Ctx) -> Pattern:
    return _rollout(
        c, "rollout-up", "rollout at day 6 doubles CPU (300m -> 600m) and memory 300 -> 480 MiB",
        6.0, (0.3, 300.0), (0.6, 480.0),
    )  # fmt: skip


def leak(c: _Ctx) -> Pattern:
    since = (c.m + 500) % (36 * 60)  # restarted every 36 h
    mem = 200 * MI + 20 * MI * since / 60 + c.jitter(3 * MI)
    cpu = 0.1 * c.noise(0.05)
    return _deployment(
        "leak",
        "memory leak of 20 MiB/h from 200 MiB, container restarted every 36 h (peaks ~920 MiB)",
        {"app": (cpu, mem)},
        {"app": _spec(0.5, GI, 2 * GI)},
    )


def jvm_heap(c: _Ctx) -> Pattern:
    saw = (c.m % 15) / 15.0
    mem = 1.0 * GI + 0.6 * GI * saw + c.jitter(5 * MI)
    cpu = 0.35 * c.noise(0.05)
    return _deployment(
        "jvm-heap", "JVM heap sawtooth 1.0 -> 1.6 GiB every 15 min, 350m", {"app": (cpu, mem)},
        {"app": _spec(1, 2 * GI, 3 * GI)},
    )  # fmt: skip


def jvm_gc(c: _Ctx) -> Pattern:
    burst = (c.m % 10) < 2
    cpu = np.where(burst, 1.4, 0.3) * c.noise(0.05)
    mem = 1.4 * GI + c.jitter(10 * MI)
    return _deployment(
        "jvm-gc", "300m with a 2-minute 1.4-core GC burst every 10 minutes, 1.4 GiB", {"app": (cpu, mem)},
        {"app": _spec(1, 2 * GI, 3 * GI)},
    )  # fmt: skip


def batch(c: _Ctx) -> Pattern:
    phase = (c.m + 37) % 240
    on = phase < 20
    cpu = np.where(on, 2.0, 0.02) * c.noise(0.08)
    mem = np.where(on, 0.9 * GI + 0.2 * GI * phase / 20, 256 * MI) + c.jitter(4 * MI)
    return _deployment(
        "batch", "idles at 20m / 256 MiB, bursts 20 minutes every 4 h to 2 cores / 1.1 GiB",
        {"worker": (cpu, mem)}, {"worker": _spec(2, 2 * GI)},
    )  # fmt: skip


def cron(c: _Ctx) -> Pattern:
    minute_of_day = c.m % MINUTES_PER_DAY
    hourly = (c.m % 60) < 5
    nightly = (minute_of_day >= 120) & (minute_of_day < 135)
    cpu = np.where(nightly, 1.6, np.where(hourly, 0.9, 0.1)) * c.noise(0.05)
    mem = np.where(nightly, 700 * MI, 350 * MI) + c.jitter(4 * MI)
    return _deployment(
        "cron", "100m base, 900m for 5 min at every full hour, 1.6 cores 02:00-02:15",
        {"app": (cpu, mem)}, {"app": _spec(1, GI)},
    )  # fmt: skip


def startup(c: _Ctx) -> Pattern:
    """Two replicas, each pod replaced every 30 h (staggered): 3-minute 1.5-core start, memory ramp."""
    rs = _rs("startup")
    spec = {"app": _spec(1, GI)}
    pods: list[PodTrace] = []
    life = 30 * 60
    for replica, offset in ((0, 0), (1, 15 * 60)):
        starts = [0, *range(life - offset, TOTAL, life)]
        for k, lo in enumerate(starts):
            hi = starts[k + 1] if k + 1 < len(starts) else TOTAL
            age = c.m - lo
            cpu = np.where(age < 3, 1.5, 0.2) * c.noise(0.05)
            mem = 200 * MI + 400 * MI * np.clip(age / 10, 0, 1) + c.jitter(4 * MI)
            pods.append(
                _pod(f"{rs}-s{replica}{k:03d}", ("ReplicaSet", rs), (lo, hi), {"app": (cpu, mem)}, spec)
            )
    return Pattern(
        "startup", "pods replaced every 30 h; each start: 1.5 cores for 3 min, memory ramps 200 -> 600 MiB",
        "Deployment", ("app",), tuple(pods), (rs,),
    )  # fmt: skip


def hpa(c: _Ctx) -> Pattern:
    """Replica count 2..8 follows the daily load; every replica runs at a steady ~350m."""
    rs = _rs("hpa-web")
    hourly = np.repeat(np.arange(TOTAL // 60 + 1), 60)[:TOTAL]
    shape = c.daily()[hourly * 60]
    replicas = np.clip(np.rint(2 + 6 * shape + 0.5 * c.rng.standard_normal(hourly.max() + 1)[hourly]), 2, 8)
    spec = {"app": _spec(1, GI)}
    pods: list[PodTrace] = []
    for slot in range(8):
        alive = replicas > slot
        edges = np.flatnonzero(np.diff(np.concatenate(([0], alive.astype(np.int8), [0]))))
        for k, (lo, hi) in enumerate(zip(edges[::2], edges[1::2], strict=True)):
            usage = {"app": (0.35 * c.noise(0.06), 380 * MI + c.jitter(5 * MI))}
            pods.append(_pod(f"{rs}-h{slot}{k:03d}", ("ReplicaSet", rs), (int(lo), int(hi)), usage, spec))
    return Pattern(
        "hpa-web", "HPA (CPU target 70%) scales 2..8 replicas with the daily load; each replica ~350m",
        "Deployment", ("app",), tuple(pods), (rs,),
        Hpa(2, 8, 0.7, int(replicas[HISTORY - 1])),
    )  # fmt: skip


def canary(c: _Ctx) -> Pattern:
    """Stable ReplicaSet: 3 pods with 30% of the traffic each; canary: 1 pod with 10%."""
    stable, cand = "canary-6d5c4b3a2", "canary-8e7f6a5b4"
    shape = c.daily()
    spec = {"app": _spec(1, GI)}
    pods = []
    for rs, share, count in ((stable, 0.30, 3), (cand, 0.10, 1)):
        for i in range(count):
            cpu = (0.1 + 1.6 * share * (0.4 + 0.6 * shape)) * c.noise(0.06)
            mem = (450 + 100 * share) * MI + c.jitter(5 * MI)
            pods.append(_pod(f"{rs}-c{i:04d}", ("ReplicaSet", rs), (0, TOTAL), {"app": (cpu, mem)}, spec))
    return Pattern(
        "canary", "canary split: 3 stable pods at 30% of the traffic each, 1 canary pod at 10%",
        "Deployment", ("app",), tuple(pods), (stable, cand),
    )  # fmt: skip


def oom_killed(demand: FloatArray, limit: float, restart: float) -> tuple[FloatArray, list[int]]:
    """What the cluster saw of a memory demand under a limit: in history every minute at the limit is an
    OOM kill (the working set clamped at the limit), after which the container ramps back from `restart`
    over 30 minutes; the scored days hold the demand. Returns the series and the minutes of the kills."""
    seen = demand.copy()
    kills: list[int] = []
    for i in range(HISTORY):
        if seen[i] >= limit:
            seen[i] = limit
            kills.append(i)
            ramp = np.linspace(restart, seen[min(i + 30, TOTAL - 1)], 30)
            seen[i + 1 : i + 31] = np.minimum(ramp, demand[i + 1 : i + 31])
    return np.concatenate((seen[:HISTORY], demand[HISTORY:])), kills


def oom(c: _Ctx) -> Pattern:
    """Memory limit 512 MiB; an import every other day lifts the daily peak past it: OOM-killed in history.

    History holds what the cluster saw (clamped at the limit, restart, ramp back); the scored days hold the
    demand (the 50-minute import on day 8 wants ~600 MiB, more than any history sample shows)."""
    limit = 512 * MI
    shape = c.daily(20.0) ** 2
    minute_of_day = c.m % MINUTES_PER_DAY
    imports = np.isin(np.floor(c.day), (2, 4, 6, 8)) & (minute_of_day >= 1180) & (minute_of_day < 1230)
    demand = 340 * MI + 150 * MI * shape + np.where(imports, 110 * MI, 0.0) + c.jitter(3 * MI)
    mem, kills = oom_killed(demand, limit, 150 * MI)
    cpu = 0.2 * c.noise(0.05)
    rs = _rs("oom")
    pod = _pod(
        f"{rs}-o0000", ("ReplicaSet", rs), (0, TOTAL), {"app": (cpu, mem)},
        {"app": ({"cpu": 0.5, "memory": limit}, {"memory": limit})}, ooms=tuple(("app", k) for k in kills),
    )  # fmt: skip
    return Pattern(
        "oom", "memory limit 512 MiB, daily peak ~490 MiB, +110 MiB for 50 min on import days: OOM-killed",
        "Deployment", ("app",), (pod,), (rs,),
    )  # fmt: skip


def sidecar(c: _Ctx) -> Pattern:
    shape = c.daily()
    app = ((0.1 + 0.4 * shape) * c.noise(0.06), 350 * MI + c.jitter(4 * MI))
    proxy = (0.03 * c.noise(0.1), 64 * MI + c.jitter(1 * MI))
    return _deployment(
        "sidecar", "app with a daily cycle plus a small steady istio-proxy sidecar (30m, 64 MiB)",
        {"app": app, "istio-proxy": proxy}, {"app": _spec(1, GI), "istio-proxy": _spec(0.1, 128 * MI)},
    )  # fmt: skip


def multi(c: _Ctx) -> Pattern:
    shape = c.daily(16.0)
    load = (0.15 + 0.5 * shape) * c.noise(0.07)
    spikes = np.where(c.rng.random(TOTAL) < 0.02, 0.25, 0.0)
    usage = {
        "app": (load, 700 * MI + 100 * MI * shape + c.jitter(5 * MI)),
        "log-shipper": (0.02 + 0.1 * load + spikes, 120 * MI + c.jitter(2 * MI)),
        "config-reloader": (0.002 * c.noise(0.2), 18 * MI + c.jitter(0.3 * MI)),
    }
    spec = {
        "app": _spec(1, 2 * GI),
        "log-shipper": _spec(0.2, 256 * MI),
        "config-reloader": _spec(0.05, 64 * MI),
    }
    return _deployment(
        "multi", "2 replicas of a 3-container pod: app (daily), log shipper (follows app, spikes), reloader",
        usage, spec, replicas=2,
    )  # fmt: skip


def spiky(c: _Ctx) -> Pattern:
    base = 0.15 * np.exp(0.25 * c.rng.standard_normal(TOTAL))
    starts = c.rng.random(TOTAL) < 4 / 60  # ~4 spikes an hour
    length = c.rng.integers(1, 4, TOTAL)
    height = c.rng.uniform(0.8, 2.0, TOTAL)
    extra = np.zeros(TOTAL)
    for i in np.flatnonzero(starts):
        extra[i : i + length[i]] = np.maximum(extra[i : i + length[i]], height[i])
    cpu = base + extra
    mem = 400 * MI + 50 * MI * (extra > 0) + c.jitter(6 * MI)
    return _deployment(
        "spiky", "noisy web: ~150m log-normal with ~4 spikes an hour of 1-3 min to 0.8-2 cores",
        {"web": (cpu, mem)}, {"web": _spec(2, GI)},
    )  # fmt: skip


def db(c: _Ctx) -> Pattern:
    """StatefulSet: daily CPU; the page cache warms 2 -> 3 GiB over 3 days, reset by a restart at day 4.2."""
    restart = int(4.2 * MINUTES_PER_DAY)
    age = np.where(c.m < restart, c.m, c.m - restart) / MINUTES_PER_DAY
    mem = 2 * GI + GI * (1 - np.exp(-age / 1.0)) + c.jitter(8 * MI)
    cpu = (0.3 + 0.5 * c.daily(10.0)) * c.noise(0.06)
    pod = _pod(
        "db-0", ("StatefulSet", "db"), (0, TOTAL), {"postgres": (cpu, mem)}, {"postgres": _spec(2, 4 * GI)}
    )
    return Pattern(
        "db", "StatefulSet: 300m..800m daily, cache warms 2 -> 3 GiB, restart at day 4.2",
        "StatefulSet", ("postgres",), (pod,),
    )  # fmt: skip


def tiny(c: _Ctx) -> Pattern:
    cpu = 0.004 * c.noise(0.2)
    mem = 24 * MI + c.jitter(0.5 * MI)
    return _deployment(
        "tiny", "an almost idle helper: 4m, 24 MiB", {"app": (cpu, mem)}, {"app": _spec(0.1, 128 * MI)}
    )


def _gpu_pattern(
    c: _Ctx,
    name: str,
    description: str,
    kind: str,
    usage: tuple[FloatArray, FloatArray],
    sm: FloatArray,
    fb_mib: FloatArray,
    index: int,
) -> Pattern:
    container = "main"
    owner: tuple[str | None, str | None] = (
        ("StatefulSet", name) if kind == "StatefulSet" else ("ReplicaSet", _rs(name))
    )
    pod_name = f"{name}-0" if kind == "StatefulSet" else f"{_rs(name)}-g0000"
    node = f"gpu-node-{index}"
    requests = {"cpu": 8.0, "memory": 32 * GI, "nvidia.com/gpu": 1.0}
    limits = {"memory": 64 * GI, "nvidia.com/gpu": 1.0}
    pod = _pod(pod_name, owner, (0, TOTAL), {container: usage}, {container: (requests, limits)}, node=node)
    gpu = GpuTrace(
        pod_name, container, node, f"GPU-{index:08d}-0000-4000-8000-{index:012d}", "NVIDIA A100-SXM4-80GB",
        0, np.clip(sm, 0, 1), np.clip(fb_mib, 0, 81920), 81920.0,
    )  # fmt: skip
    rs = () if kind == "StatefulSet" else (_rs(name),)
    return Pattern(name, description, kind, (container,), (pod,), rs, gpus=(gpu,))


def gpu_train(c: _Ctx) -> Pattern:
    usage = (3.5 * c.noise(0.05), 24 * GI + c.jitter(100 * MI))
    sm = 0.9 + c.jitter(0.03)
    fb = 60000 + c.jitter(500)
    return _gpu_pattern(c, "gpu-train", "GPU training: SM active ~0.9, 60 GB framebuffer, 3.5 cores, 24 GiB",
                        "StatefulSet", usage, sm, fb, 1)  # fmt: skip


def gpu_infer(c: _Ctx) -> Pattern:
    shape = c.daily()
    usage = ((0.8 + 0.6 * shape) * c.noise(0.06), 10 * GI + c.jitter(50 * MI))
    sm = 0.15 + 0.55 * shape + c.jitter(0.03)
    fb = 22000 + c.jitter(200)
    return _gpu_pattern(c, "gpu-infer", "GPU inference, diurnal: SM active 0.15..0.7, 22 GB framebuffer",
                        "Deployment", usage, sm, fb, 2)  # fmt: skip


def gpu_idle(c: _Ctx) -> Pattern:
    usage = (0.02 * c.noise(0.2), 1.5 * GI + c.jitter(10 * MI))
    sm = 0.005 + np.abs(c.jitter(0.002))
    fb = 1200 + c.jitter(20)
    return _gpu_pattern(c, "gpu-idle", "an idle GPU notebook: SM active ~0.5%, 1.2 GB framebuffer, 20m",
                        "Deployment", usage, sm, fb, 3)  # fmt: skip


PATTERNS: tuple[Callable[[_Ctx], Pattern], ...] = (
    steady, daily, weekly, trend, rollout_down, rollout_up, leak, jvm_heap, jvm_gc, batch, cron, startup,
    hpa, canary, oom, sidecar, multi, spiky, db, tiny, gpu_train, gpu_infer, gpu_idle,
)  # fmt: skip


def generate(seed: int = 14) -> Cluster:
    """Every pattern, each from its own random stream [seed, index]: same seed, same traces."""
    return Cluster(seed, tuple(fn(_Ctx(np.random.default_rng([seed, i]))) for i, fn in enumerate(PATTERNS)))


def window(
    pattern: Pattern, container: str, lo: int, hi: int
) -> tuple[list[PodTrace], list[FloatArray], list[FloatArray]]:
    """The pods alive in minutes [lo, hi) and their CPU and memory of `container` in that window."""
    pods: list[PodTrace] = []
    cpu: list[FloatArray] = []
    mem: list[FloatArray] = []
    for pod in pattern.pods:
        a, b = max(lo, pod.first), min(hi, pod.last)
        if a < b:
            pods.append(pod)
            cpu.append(pod.cpu[container][a - pod.first : b - pod.first])
            mem.append(pod.memory[container][a - pod.first : b - pod.first])
    return pods, cpu, mem


def history(pattern: Pattern, container: str) -> tuple[list[PodTrace], list[FloatArray], list[FloatArray]]:
    return window(pattern, container, 0, HISTORY)


def evaluation(pattern: Pattern, container: str) -> tuple[list[PodTrace], list[FloatArray], list[FloatArray]]:
    return window(pattern, container, HISTORY, TOTAL)
