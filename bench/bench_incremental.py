"""Incremental recommender benchmark: real-Prometheus cycles side by side with full-window runs, and the
usage model for many simulated containers built in memory.

Real Prometheus, per `--containers` N (the synthetic cluster of bench/bench_prometheus.py: 7 days at 60 s
plus one extra hour, backfilled with promtool; T = the data's end, block-aligned, T0 = T - 1 h):
    a. full window at T: PrometheusSource.collect(T - 7d, T), what every cycle costs today (= e, the
       full rebuild compared with);
    b. cold start of the incremental path at T0: IncrementalSource.collect(T0 - 7d, T0);
    c. steady cycle: the same IncrementalSource .collect(T - 7d, T), which reads only the new hour;
    d. restart: a new IncrementalSource restoring b's checkpoint (FileCheckpointStore), then the steady
       cycle at T.
Each phase: wall time, Prometheus CPU-seconds, queries sent, this process's peak RSS during the phase
(VmHWM, reset before each phase). Then the ratios to the goals, model state bytes per container (in
memory and serialised) and the parity of recommendations: both snapshots (c's and a's; d's vs c's) sized
by the sizing engine, relative difference over every (workload, container, resource, request|limit).
Each size and the simulated part run in their own process, so one's memory never counts in another's.

In memory (`--simulated` N, 0 skips it): N simulated containers x 7 days at 60 s fed to UsageStates;
state bytes per container, peak RSS, checkpoint size and the percentile error of the histograms.

    nice -n 10 .venv/bin/python bench/bench_incremental.py --containers 5000 10000 --simulated 100000
    nice -n 10 .venv/bin/python bench/bench_incremental.py --containers 5000 --simulated 0 \\
        --data /tmp/bench-incremental   # keeps the generated TSDBs there and reuses them next time
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_prometheus import Cluster, backfill  # noqa: E402
from collect_once import CountingTransport  # noqa: E402

from podsizer.api.identity import WorkloadRef  # noqa: E402
from podsizer.api.quantity import parse  # noqa: E402
from podsizer.settings.roles import RecommenderSettings  # noqa: E402
from recommender.checkpoints.filestore import FileCheckpointStore  # noqa: E402
from recommender.incremental.source import CycleReport, IncrementalSource  # noqa: E402
from recommender.input.prometheus import PromClient, PrometheusSource  # noqa: E402
from recommender.model import FloatArray, UsageSnapshot  # noqa: E402
from recommender.model.checkpoint import CheckpointSettings, dumps, loads  # noqa: E402
from recommender.model.checkpoint import read as read_checkpoint  # noqa: E402
from recommender.model.histogram import CPU_BUCKETS, MEMORY_BUCKETS, BucketScheme  # noqa: E402
from recommender.model.recency import DEFAULT, weighted_quantiles  # noqa: E402
from recommender.model.state_batch import add_rows  # noqa: E402
from recommender.model.usage_state import StateKey, UsageState  # noqa: E402
from recommender.sizing.engine import RecommendationRun, recommend  # noqa: E402
from recommender.wiring import build_prices  # noqa: E402
from tests.integration.prometheus.server import cpu_seconds, running_prometheus  # noqa: E402
from tests.support.openmetrics import BLOCK_SECONDS  # noqa: E402

MI = 2.0**20
KIB = 1024.0
DAY = 86400.0
END = datetime(2026, 12, 1, tzinfo=UTC)
GOAL_STATE_BYTES = 10 * 1024
GOAL_RSS_MIB = 1024.0
QS = (0.5, 0.9, 0.95, 0.99)
PATTERNS = ("steady", "daily", "spiky", "batch", "leak", "late-start")
HOUR_S = 3600
GOAL_STEADY_S = 3.0
"""The steady loop cycle at 10,000 containers (fleet scale; it was 5 s when the incremental path came)."""
GOAL_CPU_RATIO = 50.0
GOAL_PARITY = 0.02
R = TypeVar("R")


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def simulate(ids: range, ts: FloatArray, seed: int) -> tuple[FloatArray, FloatArray]:
    """(cpu cores, memory bytes) matrices, one row per container id, one column per timestamp."""
    rng = np.random.default_rng([seed, ids.start])
    n, t = len(ids), ts.size
    kind = np.arange(ids.start, ids.stop)[:, None] % len(PATTERNS)
    level = np.clip(rng.lognormal(np.log(0.1), 1.2, (n, 1)), 0.002, 50.0)
    mem_level = np.clip(rng.lognormal(np.log(256 * MI), 1.0, (n, 1)), 8 * MI, 256 * 1024 * MI)
    phase = rng.uniform(0, 2 * np.pi, (n, 1))
    day = np.sin(2 * np.pi * (ts[None, :] % DAY) / DAY + phase)
    cpu = level * (1.0 + 0.15 * rng.standard_normal((n, t), dtype=np.float32))
    cpu = np.where(kind == 1, cpu + 0.6 * level * day, cpu)
    cpu = np.where((kind == 2) & (rng.random((n, t), dtype=np.float32) < 0.005), cpu * 6.0, cpu)
    cpu = np.where((kind == 3) & (day < 0.8), 0.05 * level, cpu)
    mem = mem_level * (1.0 + 0.03 * rng.standard_normal((n, t), dtype=np.float32))
    mem = np.where(kind == 1, mem * (1.0 + 0.2 * day), mem)
    mem = np.where(kind == 4, mem * (1.0 + (ts[None, :] - ts[0]) / (ts[-1] - ts[0])), mem)
    gone = (rng.random((n, t), dtype=np.float32) < 0.01) | (
        (kind == 5) & (np.arange(t)[None, :] < 2 * t // 3)
    )
    cpu, mem = np.abs(cpu).astype(np.float64), np.abs(mem).astype(np.float64)
    cpu[gone] = np.nan
    mem[gone] = np.nan
    return cpu, mem


def chunks(total: int, size: int) -> Iterator[range]:
    for lo in range(0, total, size):
        yield range(lo, min(total, lo + size))


def key_of(i: int) -> StateKey:
    return StateKey(WorkloadRef(f"ns-{i % 200:03d}", "Deployment", f"app-{i:06d}"), "main")


def deep_size(key: StateKey, s: UsageState) -> int:
    """Bytes of one state's object graph: the state, its histograms and arrays, its key's objects."""
    w = key.workload
    hists = [h for h in (s.cpu, s.memory, s.gpu_activity, s.gpu_framebuffer) if h is not None]
    days = list(s.open_cpu.values())  # the open day's undecayed CPU histogram (recurrence)
    parts: list[object] = [key, w, w.namespace, w.kind, w.name, key.container, s, s.ooms, *hists, *days]
    parts += [h.weights for h in hists] + [h.span for h in days] + [s.day_cpu, s.open_cpu, s.open_hours]
    return sum(sys.getsizeof(p) for p in parts)


def errors(
    cpu: FloatArray, mem: FloatArray, ts: FloatArray, states: list[UsageState]
) -> dict[tuple[str, float], list[tuple[float, float]]]:
    """(relative error, error / bucket resolution) per (resource, q) of each state vs the exact one."""
    out: dict[tuple[str, float], list[tuple[float, float]]] = {}
    for name, m, scheme in (("cpu", cpu, CPU_BUCKETS), ("memory", mem, MEMORY_BUCKETS)):
        for row, state in zip(m, states, strict=True):
            keep = np.isfinite(row)
            w = DEFAULT.age_weights(ts[keep], float(ts[keep].max()))
            exact = weighted_quantiles(row[keep][None, :], w[None, :], QS)[:, 0]
            hist = state.cpu if name == "cpu" else state.memory
            for q, e in zip(QS, exact.tolist(), strict=True):
                got = hist.percentile(q)
                out.setdefault((name, q), []).append((abs(got - e) / e, abs(got - e) / _res(scheme, e)))
    return out


def _res(scheme: BucketScheme, value: float) -> float:
    return scheme.resolution(value)


def verdict(ok: bool) -> str:
    return "meets goal" if ok else "MISSES goal"


def simulated_part(args: argparse.Namespace) -> None:
    """The in-memory part: `--simulated` containers' UsageStates built, checkpointed and checked."""
    start = END - timedelta(days=args.days)
    ts = start.timestamp() + args.step * np.arange(int(args.days * DAY / args.step), dtype=np.float64)
    every = max(1, args.simulated // max(1, args.check))
    gc.collect()
    base = _rss_mib()
    states: dict[StateKey, UsageState] = {}
    errs: dict[tuple[str, float], list[tuple[float, float]]] = {}
    t0 = time.perf_counter()
    for ids in chunks(args.simulated, args.chunk):
        cpu, mem = simulate(ids, ts, args.seed)
        made = [UsageState.empty(DEFAULT.half_life_s) for _ in ids]
        add_rows(made, ts, cpu, mem, [None] * len(ids))  # as a cycle adds a grid's series
        for state in made:
            state.close_days()  # and closes the days before each state's newest, as build_states does
        states.update((key_of(i), state) for i, state in zip(ids, made, strict=True))
        picked = [j for j, i in enumerate(ids) if i % every == 0]
        if picked:
            for k, v in errors(
                cpu[picked], mem[picked], ts, [states[key_of(ids[j])] for j in picked]
            ).items():
                errs.setdefault(k, []).extend(v)
    build_s = time.perf_counter() - t0
    del cpu, mem
    gc.collect()
    rss_built = _rss_mib()

    n = len(states)
    weights = sum(s.nbytes() for s in states.values()) / n
    graph = sum(deep_size(k, s) for k, s in states.items()) / n
    settings = CheckpointSettings(DEFAULT.half_life_s, args.step)
    t1 = time.perf_counter()
    blob = dumps(states, settings)
    dump_s = time.perf_counter() - t1
    rss_dumped = _rss_mib()
    states.clear()  # a restart: the loaded states replace the built ones
    gc.collect()
    t2 = time.perf_counter()
    back = loads(blob, settings)
    load_s = time.perf_counter() - t2
    assert len(back) == n

    samples = n * ts.size
    print(
        f"{n:,} containers x {ts.size:,} samples ({args.days} d at {args.step:.0f} s), {samples * 2:,} values"
    )
    print(f"build                  {build_s:8.1f} s   ({build_s / n * 1e3:.2f} ms per container)")
    print(f"checkpoint dump/load   {dump_s:8.1f} s / {load_s:.1f} s")
    print()
    print(f"{'figure':38s} {'measured':>14s} {'goal':>12s}")
    print(f"{'state in memory: histogram weights':38s} {weights:11.0f} B  {'':>12s}")
    ok = graph < GOAL_STATE_BYTES
    print(f"{'state in memory: whole object graph':38s} {graph:11.0f} B  {'< 10 KiB':>12s}  {verdict(ok)}")
    ser = len(blob) / n
    ok = ser < GOAL_STATE_BYTES
    print(f"{'state serialised (checkpoint)':38s} {ser:11.0f} B  {'< 10 KiB':>12s}  {verdict(ok)}")
    print(f"{'checkpoint size':38s} {len(blob) / MI:10.1f} MiB")
    rss = _rss_mib()
    scale = f"{'< 1 GiB':>12s}  {verdict(rss < GOAL_RSS_MIB)}" if n >= 100_000 else "(goal at 100,000)"
    print(f"{'peak RSS (whole run)':38s} {rss:10.0f} MiB {scale}")
    steps = f"{rss_built:.0f} / {rss_dumped:.0f} MiB (start: {base:.0f} MiB)"
    print(f"{'peak RSS after build / after dump':38s} {steps:>14s}")
    print()
    checked = len(next(iter(errs.values()), []))
    print(f"percentile error vs exact weighted percentile (24 h decay), {checked} containers:")
    print(f"{'':14s} {'median rel':>11s} {'max rel':>9s} {'max err/bucket width':>21s}")
    for (name, q), v in sorted(errs.items()):
        rel = np.array([r for r, _ in v])
        res = max(b for _, b in v)
        print(f"{name:7s} p{q * 100:<5.0f} {np.median(rel) * 100:10.2f}% {rel.max() * 100:8.2f}% {res:21.2f}")


# ---- the real-Prometheus part ----


class ExtraHourCluster(Cluster):
    """bench_prometheus's cluster with `extra_s` more data before its `days` (a partial first 2 h window):
    a full window at T0 = T - extra_s needs data from T0 - days on."""

    def __init__(
        self, containers: int, namespaces: int, days: int, step: int, end: int, extra_s: int
    ) -> None:
        super().__init__(containers, namespaces, days, step, end)
        self.data_start = self.start - extra_s
        first = self.data_start - self.data_start % BLOCK_SECONDS
        self.windows = list(range(first, self.start, BLOCK_SECONDS)) + self.windows

    def timestamps(self, k: int) -> FloatArray:
        ts = super().timestamps(k)
        return ts[ts >= self.data_start]


@dataclass(frozen=True)
class Case:
    """One size's generated data: where, for which cluster, and what generating it took."""

    containers: int
    namespaces: int
    days: int
    step: int
    info_step: int
    extra_s: int
    end: int
    generate_s: float = 0.0

    def cluster(self) -> ExtraHourCluster:
        return ExtraHourCluster(
            self.containers, self.namespaces, self.days, self.step, self.end, self.extra_s
        )

    def same_data(self, other: Case) -> bool:
        """The same cluster, whenever it was generated."""
        ignored = {"generate_s": 0.0, "end": 0}
        return asdict(self) | ignored == asdict(other) | ignored


def read_case(path: Path) -> Case | None:
    try:
        raw = json.loads(path.read_text())
        return Case(**{k: raw[k] for k in Case.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def ensure_data(args: argparse.Namespace, n: int, folder: Path) -> tuple[Case, bool]:
    """The case's TSDB under folder/data: reused when folder/case.json describes the same data generated
    less than a day ago (well within Prometheus's retention), else generated (in a child process: its
    memory never counts here). Returns (case, reused)."""
    end = int(time.time()) // 60 * 60
    want = Case(n, args.namespaces, args.days, args.step, args.info_step, HOUR_S, end)
    have = read_case(folder / "case.json")
    if have is not None and (folder / "data").is_dir() and have.same_data(want) and end - have.end < DAY:
        return have, True
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    t0 = time.perf_counter()
    flags = [*common_flags(args), "--containers", str(n), "--end", str(end)]
    subprocess.run(
        [sys.executable, __file__, "--part", "generate", "--case", str(folder), *flags], check=True
    )
    case = Case(**(asdict(want) | {"generate_s": time.perf_counter() - t0}))
    (folder / "case.json").write_text(json.dumps(asdict(case)))
    return case, False


def generate_part(args: argparse.Namespace) -> None:
    """Child: writes and backfills the case's data into --case/data."""
    case = Case(args.containers[0], args.namespaces, args.days, args.step, args.info_step, HOUR_S, args.end)
    backfill(case.cluster(), args.case / "data", args.info_step, args.workers)


def common_flags(args: argparse.Namespace) -> list[str]:
    names = ("namespaces", "days", "step", "info_step", "workers", "concurrency")
    return [x for name in names for x in (f"--{name.replace('_', '-')}", str(getattr(args, name)))]


@dataclass(frozen=True)
class Phase:
    """What one phase cost: wall time, Prometheus CPU-seconds, queries sent, this process's peak RSS
    during the phase (and its RSS when the phase began)."""

    wall_s: float
    prom_cpu_s: float
    own_cpu_s: float
    queries: int
    peak_rss: int
    rss_before: int

    def line(self) -> str:
        cpu = f"Prometheus CPU {self.prom_cpu_s:7.2f} s  own CPU {self.own_cpu_s:7.2f} s"
        rss = f"peak RSS {self.peak_rss / MI:5.0f} MiB (at start {self.rss_before / MI:.0f})"
        return f"wall {self.wall_s:7.2f} s  {cpu}  queries {self.queries:4d}  {rss}"


def _proc_status_bytes(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _own_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def reset_peak_rss() -> bool:
    """Resets this process's VmHWM to its current RSS (Linux clear_refs 5); False where not allowed."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class Meter:
    """Measures phases against one Prometheus process and one counting transport."""

    def __init__(self, pid: int, transport: CountingTransport) -> None:
        self.pid, self.transport = pid, transport

    def run(self, fn: Callable[[], R]) -> tuple[R, Phase]:
        gc.collect()
        before = _proc_status_bytes("VmRSS")
        if not reset_peak_rss():
            print("  (peak RSS cannot be reset here: figures are the process's peak so far)")
        q0, c0, own0, t0 = self.transport.count, cpu_seconds(self.pid), _own_cpu(), time.perf_counter()
        out = fn()
        wall = time.perf_counter() - t0
        prom, own = cpu_seconds(self.pid) - c0, _own_cpu() - own0
        phase = Phase(wall, prom, own, self.transport.count - q0, _proc_status_bytes("VmHWM"), before)
        return out, phase


Key = tuple[str, str, str, str]
"""(workload, container, resource, "request" | "limit")"""


@dataclass(frozen=True)
class Sized:
    """One snapshot's recommendations as numbers, and the workloads it held and was sized for."""

    values: Mapping[Key, float]
    snapshot_workloads: frozenset[str]
    recommended: frozenset[str]
    seconds: float


def size_snapshot(snapshot: UsageSnapshot, now: datetime) -> Sized:
    """The sizing engine with the default settings' policy and prices (as recommender.wiring builds them)."""
    settings = RecommenderSettings()
    policy, prices = settings.to_sizing_policy(), build_prices(settings)
    t0 = time.perf_counter()
    run: RecommendationRun = recommend(snapshot, policy, prices, now, bounds={})
    took = time.perf_counter() - t0
    values: dict[Key, float] = {}
    for rec in run.recommendations:
        for c in rec.containers:
            for kind, quantities in (("request", c.requests), ("limit", c.limits)):
                for res, q in quantities.items():
                    values[(str(rec.target), c.name, res, kind)] = parse(q)
    workloads = frozenset(str(w) for w in snapshot.workloads())
    return Sized(values, workloads, frozenset(str(r.target) for r in run.recommendations), took)


@dataclass(frozen=True)
class Parity:
    """Relative differences of `got` against `want` over the values both have."""

    compared: int
    max_rel: float
    p99_rel: float
    within: float
    values_only_want: int
    values_only_got: int
    snapshot_only_want: tuple[str, ...]
    snapshot_only_got: tuple[str, ...]
    sized_only_want: tuple[str, ...]
    sized_only_got: tuple[str, ...]
    worst: tuple[tuple[Key, float, float], ...]


def rel_diff(got: float, want: float) -> float:
    if got == want:
        return 0.0
    return abs(got - want) / abs(want) if want else math.inf


def parity(got: Sized, want: Sized) -> Parity:
    common = sorted(set(got.values) & set(want.values))
    rel = np.array([rel_diff(got.values[k], want.values[k]) for k in common], dtype=np.float64)
    order = np.argsort(-rel, kind="stable")[:5] if rel.size else np.array([], dtype=np.int64)
    worst = tuple((common[i], got.values[common[i]], want.values[common[i]]) for i in order.tolist())
    return Parity(
        compared=len(common),
        max_rel=float(rel.max()) if rel.size else math.nan,
        p99_rel=float(np.quantile(rel, 0.99)) if rel.size else math.nan,
        within=float(np.mean(rel <= GOAL_PARITY)) if rel.size else math.nan,
        values_only_want=len(set(want.values) - set(got.values)),
        values_only_got=len(set(got.values) - set(want.values)),
        snapshot_only_want=tuple(sorted(want.snapshot_workloads - got.snapshot_workloads)),
        snapshot_only_got=tuple(sorted(got.snapshot_workloads - want.snapshot_workloads)),
        sized_only_want=tuple(sorted(want.recommended - got.recommended)),
        sized_only_got=tuple(sorted(got.recommended - want.recommended)),
        worst=worst,
    )


def print_parity(title: str, p: Parity) -> None:
    print(
        f"  {title}: {p.compared:,} values compared; max {p.max_rel * 100:.2f} %,"
        f" p99 {p.p99_rel * 100:.2f} %, within 2 %: {p.within * 100:.2f} %"
    )
    print(
        f"    values only in the reference / only in the other: {p.values_only_want} / {p.values_only_got};"
        f" workloads in one snapshot only: {len(p.snapshot_only_want)} / {len(p.snapshot_only_got)},"
        f" sized in one run only: {len(p.sized_only_want)} / {len(p.sized_only_got)}"
    )
    for name, names in (
        ("in the reference snapshot only", p.snapshot_only_want),
        ("in the other snapshot only", p.snapshot_only_got),
        ("sized in the reference only", p.sized_only_want),
        ("sized in the other only", p.sized_only_got),
    ):
        if names:
            print(f"    {name}: {', '.join(names[:5])}{' ...' if len(names) > 5 else ''}")
    for key, got, want in p.worst[:3]:
        if got != want:
            print(f"    worst: {'/'.join(key)}: {got:.6g} vs {want:.6g} ({rel_diff(got, want) * 100:.2f} %)")


def flushed(inc: IncrementalSource) -> float:
    """Waits for the cycle's checkpoint (serialised and written in the background, off the cycle's wall
    time); prints and returns how long that took after the cycle returned."""
    t0 = time.perf_counter()
    inc.flush()
    seconds = time.perf_counter() - t0
    print(
        f"     checkpoint written in the background: {inc.checkpoint_bytes / MI:.2f} MiB,"
        f" done {seconds:.2f} s later"
    )
    return seconds


def tree_bytes(path: Path) -> int:
    """Bytes of a file, or of every file under a folder."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def copy_checkpoint(src: Path, dst: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy2(src, dst)


def cycle_line(report: CycleReport | None) -> str:
    """The IncrementalSource's last cycle report in one line."""
    if report is None:
        return "no cycle report"
    return (
        f"cycle {report.kind} ({report.reason or 'no rebuild'}) {report.seconds:.2f} s, read"
        f" {report.read_from:%m-%d %H:%M}..{report.read_to:%m-%d %H:%M}, {report.states:,} states,"
        f" {report.state_bytes / MI:.1f} MiB in memory"
    )


Figures = dict[str, float]
PHASES = (("a", "a/e full window at T"), ("b", "b cold start at T0"), ("c", "c steady cycle at T"))
PHASES_D = (("d", "d restart, cycle at T"),)


def record(figures: Figures, name: str, phase: Phase) -> None:
    figures |= {
        f"{name}_wall_s": phase.wall_s,
        f"{name}_prom_cpu_s": phase.prom_cpu_s,
        f"{name}_own_cpu_s": phase.own_cpu_s,
        f"{name}_queries": float(phase.queries),
        f"{name}_peak_rss_mib": phase.peak_rss / MI,
    }


def record_parity(figures: Figures, name: str, p: Parity) -> None:
    figures |= {
        f"{name}_max_rel": p.max_rel,
        f"{name}_p99_rel": p.p99_rel,
        f"{name}_within": p.within,
        f"{name}_compared": float(p.compared),
        f"{name}_values_only": float(p.values_only_want + p.values_only_got),
        f"{name}_workloads_only_full": float(len(p.snapshot_only_want)),
        f"{name}_workloads_only_incremental": float(len(p.snapshot_only_got)),
    }


def prometheus_part(args: argparse.Namespace) -> None:
    """Child: phases a-d against a Prometheus serving --case/data; figures to --case/result.json."""
    case = read_case(args.case / "case.json")
    if case is None:
        raise SystemExit(f"no case.json under {args.case}")
    figures: Figures = {"pods": float(case.containers)}
    end = datetime.fromtimestamp(case.cluster().end, UTC)
    print(
        f"[{case.containers:,} containers] T = {end:%Y-%m-%d %H:%M} UTC,"
        f" window {case.days} d at {case.step} s"
    )
    t0 = time.perf_counter()
    with running_prometheus(args.case / "data", retention_days=case.days + 2, ready_timeout=900) as server:
        figures["prom_start_s"] = time.perf_counter() - t0
        transport = CountingTransport()
        with PromClient(server.url, timeout=600.0, transport=transport) as client:
            source = PrometheusSource(client, concurrency=args.concurrency)
            meter = Meter(server.pid, transport)
            snapshot, a = meter.run(partial(source.collect, end - timedelta(days=case.days), end))
            print(f"  a  full window at T   {a.line()}")
            record(figures, "a", a)
            figures["containers_full"] = float(len(snapshot.containers))
            full = size_snapshot(snapshot, end)
            del snapshot
            print(
                f"     sized: {len(full.values):,} values, {len(full.recommended):,} workloads,"
                f" {full.seconds:.1f} s"
            )
            try:
                incremental_phases(case, source, meter, full, figures)
            except Exception:  # the figures so far still count; the traceback says what failed
                print("  the incremental phases FAILED:", flush=True)
                traceback.print_exc()
                sys.stderr.flush()
    (args.case / "result.json").write_text(json.dumps(figures))


def incremental_phases(
    case: Case, source: PrometheusSource, meter: Meter, full: Sized, figures: Figures
) -> None:
    """Phases b, c and d, the state and checkpoint sizes, and the parity of c with a and of d with c."""
    end = datetime.fromtimestamp(case.cluster().end, UTC)
    end0, window = end - timedelta(seconds=HOUR_S), timedelta(days=case.days)
    with tempfile.TemporaryDirectory(prefix="bench-incremental-ckpt-") as tmp:
        path, path_b = Path(tmp) / "checkpoint", Path(tmp) / "checkpoint-after-b"
        inc = IncrementalSource(source, window=window, store=FileCheckpointStore(path))
        _, b = meter.run(partial(inc.collect, end0 - window, end0))
        print(f"  b  cold start at T0   {b.line()}\n     {cycle_line(inc.last_cycle)}")
        record(figures, "b", b)
        figures["b_checkpoint_write_s"] = flushed(inc)
        figures["ckpt_b_bytes"] = float(tree_bytes(path))
        copy_checkpoint(path, path_b)
        snapshot, c = meter.run(partial(inc.collect, end - window, end))
        print(f"  c  steady cycle at T  {c.line()}\n     {cycle_line(inc.last_cycle)}")
        record(figures, "c", c)
        figures["c_checkpoint_write_s"] = flushed(inc)
        if inc.last_cycle is not None:
            figures |= {"state_bytes": inc.last_cycle.state_bytes, "states": inc.last_cycle.states}
        figures["ckpt_c_bytes"] = float(tree_bytes(path))
        steady = size_snapshot(snapshot, end)
        del snapshot, inc
        p = parity(steady, full)
        print_parity("c vs a (incremental vs full window)", p)
        record_parity(figures, "parity", p)
        restart_phase(source, window, end, path_b, steady, meter, figures)


def restart_phase(
    source: PrometheusSource,
    window: timedelta,
    end: datetime,
    path: Path,
    steady: Sized,
    meter: Meter,
    figures: Figures,
) -> None:
    """Phase d: a new IncrementalSource restoring the checkpoint at `path`, then the cycle at `end`.
    The restore happens inside that cycle; it is also timed on its own (store read + checkpoint decode)."""
    restarted = IncrementalSource(source, window=window, store=FileCheckpointStore(path))
    t0 = time.perf_counter()
    blobs = FileCheckpointStore(path).read().blobs
    states = sum(len(read_checkpoint(blob, restarted.settings).states) for blob in blobs.values())
    figures["d_restore_s"] = time.perf_counter() - t0
    snapshot, d = meter.run(partial(restarted.collect, end - window, end))
    print(
        f"  d  restart: b's checkpoint ({states:,} states) reads and decodes in"
        f" {figures['d_restore_s']:.2f} s; the new source's first cycle at T:\n     {d.line()}"
        f"\n     {cycle_line(restarted.last_cycle)}"
    )
    record(figures, "d", d)
    again = size_snapshot(snapshot, end)
    del snapshot
    p = parity(again, steady)
    print_parity("d vs c (restarted vs uninterrupted)", p)
    record_parity(figures, "restart", p)


def cell(value: float | None, fmt: str) -> str:
    return "-" if value is None or math.isnan(value) else fmt.format(value)


Row = tuple[str, Callable[[Figures], float | None], str, str, Callable[[float], bool] | None, int]
"""(label, value, format, goal, goal check, smallest size the goal applies to)"""


def _get(key: str, scale: float = 1.0) -> Callable[[Figures], float | None]:
    return lambda f: f[key] * scale if key in f else None


def _ratio(num: str, den: str) -> Callable[[Figures], float | None]:
    return lambda f: f[num] / f[den] if num in f and den in f and f[den] > 0 else None


def _per(key: str, count: str) -> Callable[[Figures], float | None]:
    return lambda f: f[key] / f[count] if key in f and f.get(count) else None


def row(
    label: str,
    value: Callable[[Figures], float | None],
    fmt: str,
    goal: str = "",
    check: Callable[[float], bool] | None = None,
    applies: int = 0,
) -> Row:
    return (label, value, fmt, goal, check, applies)


def summary_rows() -> list[Row]:
    rows = [
        row("data generation + backfill (s)", _get("gen_s"), "{:.0f}"),
        row("Prometheus ready after (s)", _get("prom_start_s"), "{:.1f}"),
        row("containers in the full-window snapshot", _get("containers_full"), "{:,.0f}"),
        row("pod containers in the cluster", _get("pods"), "{:,.0f}"),
        row("states in the incremental model", _get("states"), "{:,.0f}"),
    ]
    for p, label in PHASES + PHASES_D:
        rows += [
            row(f"{label}: wall (s)", _get(f"{p}_wall_s"), "{:.2f}"),
            row(f"{label}: Prometheus CPU (s)", _get(f"{p}_prom_cpu_s"), "{:.2f}"),
            row(f"{label}: own CPU (s)", _get(f"{p}_own_cpu_s"), "{:.2f}"),
            row(f"{label}: queries", _get(f"{p}_queries"), "{:.0f}"),
            row(f"{label}: peak RSS (MiB)", _get(f"{p}_peak_rss_mib"), "{:.0f}"),
        ]
    steady, ten_k, kib10 = (lambda v: v < GOAL_STEADY_S), 10_000, "< 10 KiB"
    small = lambda v: v < GOAL_STATE_BYTES  # noqa: E731
    return [
        *rows,
        row("checkpoint written after b / after c (s)", _get("b_checkpoint_write_s"), "{:.2f}"),
        row("", _get("c_checkpoint_write_s"), "{:.2f}"),
        row("d restart: restore (s)", _get("d_restore_s"), "{:.2f}"),
        row("checkpoint after b / after c (KiB)", _get("ckpt_b_bytes", 1 / KIB), "{:,.0f}"),
        row("", _get("ckpt_c_bytes", 1 / KIB), "{:,.0f}"),
        row("steady cycle wall (s)", _get("c_wall_s"), "{:.2f}", f"< {GOAL_STEADY_S:g} s", steady, ten_k),
        row("full / steady wall (x)", _ratio("a_wall_s", "c_wall_s"), "{:.1f}"),
        row(
            "full / steady Prometheus CPU (x)",
            _ratio("a_prom_cpu_s", "c_prom_cpu_s"),
            "{:.1f}",
            ">= 50x",
            lambda v: v >= GOAL_CPU_RATIO,
            ten_k,
        ),
        row("full / cold-start wall (x)", _ratio("a_wall_s", "b_wall_s"), "{:.2f}"),
        row("state per model state, in memory (B)", _per("state_bytes", "states"), "{:,.0f}", kib10, small),
        row("state per model state, serialised (B)", _per("ckpt_c_bytes", "states"), "{:,.0f}", kib10, small),
        row("state per pod container, in memory (B)", _per("state_bytes", "pods"), "{:,.0f}"),
        row("state per pod container, serialised (B)", _per("ckpt_c_bytes", "pods"), "{:,.0f}"),
        row("parity c vs a: max rel diff (%)", _get("parity_max_rel", 100), "{:.2f}"),
        row("parity c vs a: p99 rel diff (%)", _get("parity_p99_rel", 100), "{:.2f}"),
        row(
            "parity c vs a: share within 2 % (%)",
            _get("parity_within", 100),
            "{:.2f}",
            "100 %",
            lambda v: v >= 100.0,
        ),
        row("parity c vs a: values compared", _get("parity_compared"), "{:,.0f}"),
        row("parity c vs a: values in one run only", _get("parity_values_only"), "{:.0f}"),
        row("workloads only in a / only in c", _get("parity_workloads_only_full"), "{:.0f}"),
        row("", _get("parity_workloads_only_incremental"), "{:.0f}"),
        row("parity d vs c: max rel diff (%)", _get("restart_max_rel", 100), "{:.2f}"),
    ]


def print_summary(results: Mapping[int, Figures]) -> None:
    sizes = sorted(results)
    print()
    print(f"{'figure':42s}" + "".join(f"{n:>14,}" for n in sizes) + "   goal")
    for label, value, fmt, goal, check, applies in summary_rows():
        cells, verdicts = [], []
        for n in sizes:
            v = value(results[n])
            cells.append(cell(v, fmt))
            if check is not None and v is not None and not math.isnan(v) and n >= applies:
                verdicts.append(f"{n:,}: {'meets' if check(v) else 'MISSES'}")
        where = f" (at {applies:,})" if applies else ""
        tail = f"   {goal}{where}  {'; '.join(verdicts)}" if goal else ""
        print((f"{label:42s}" + "".join(f"{c:>14s}" for c in cells) + tail).rstrip())


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--containers", type=int, nargs="*", default=[5_000, 10_000], help="real-Prometheus sizes"
    )
    ap.add_argument("--simulated", type=int, default=100_000, help="in-memory containers (0: skip)")
    ap.add_argument("--data", type=Path, help="keep each size's generated TSDB here and reuse it next time")
    ap.add_argument("--namespaces", type=int, default=20)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--step", type=int, default=60, help="sample interval, seconds")
    ap.add_argument("--info-step", type=int, default=600, help="kube-state-metrics sample interval, seconds")
    ap.add_argument("--workers", type=int, default=2, help="parallel writers/promtool runs")
    ap.add_argument("--concurrency", type=int, default=3, help="parallel namespace queries per collect()")
    ap.add_argument("--chunk", type=int, default=64, help="simulated containers generated at once")
    ap.add_argument(
        "--check", type=int, default=200, help="simulated containers whose percentiles are checked"
    )
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--part", choices=("generate", "prometheus", "simulated"), help=argparse.SUPPRESS)
    ap.add_argument("--case", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--end", type=int, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def child(args: argparse.Namespace, part: str, *extra: str) -> None:
    """Runs one part of this script in its own process (its output goes straight to ours)."""
    sys.stdout.flush()
    subprocess.run([sys.executable, __file__, "--part", part, *common_flags(args), *extra], check=True)


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # a pipe's output stays in order
    args = parse_args()
    parts = {"generate": generate_part, "prometheus": prometheus_part, "simulated": simulated_part}
    if args.part is not None:
        parts[args.part](args)
        return
    results: dict[int, Figures] = {}
    root = args.data or Path(tempfile.mkdtemp(prefix="bench-incremental-"))
    try:
        for n in args.containers:
            folder = root / f"containers-{n}"
            case, reused = ensure_data(args, n, folder)
            how = "reused (generated earlier in" if reused else "generated + backfilled in"
            print(f"[{n:,} containers] data {how} {case.generate_s:.0f} s{')' if reused else ''}", flush=True)
            child(args, "prometheus", "--containers", str(n), "--case", str(folder))
            results[n] = {"gen_s": case.generate_s} | json.loads((folder / "result.json").read_text())
    finally:
        if args.data is None:
            shutil.rmtree(root, ignore_errors=True)
    if args.simulated > 0:
        print(f"\n[in memory] {args.simulated:,} simulated containers")
        child(
            args,
            "simulated",
            "--simulated",
            str(args.simulated),
            "--chunk",
            str(args.chunk),
            "--check",
            str(args.check),
            "--seed",
            str(args.seed),
        )
    if results:
        print_summary(results)


if __name__ == "__main__":
    main()
