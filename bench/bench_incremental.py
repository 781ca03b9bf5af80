"""Incremental usage model benchmark (in-memory part): UsageStates for N simulated containers.

Simulates N containers x 7 days at 60 s (a mix of steady, daily, spiky, batch, leaking and late-starting
patterns with 1 % gaps), generated in chunks, and feeds each container's series to a UsageState
(recommender.model.usage_state) through its public add path. Prints, side by side with the issue-15
goals: model state bytes per container in memory (histogram weights, and the whole object graph) and
serialised (recommender.model.checkpoint), peak RSS, build and checkpoint times, and the percentile error
of the histograms against the exact weighted percentiles (recency.weighted_quantiles with the same 24 h
decay: what aggregate() computes) on a sample of containers. The Prometheus parts (cold start, steady
cycles) come with the incremental cycles.

    nice -n 10 .venv/bin/python bench/bench_incremental.py                      # 20,000 containers
    nice -n 10 .venv/bin/python bench/bench_incremental.py --containers 100000  # the goal's scale
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from podsizer.api.identity import WorkloadRef  # noqa: E402
from recommender.model import FloatArray  # noqa: E402
from recommender.model.checkpoint import CheckpointSettings, dumps, loads  # noqa: E402
from recommender.model.histogram import CPU_BUCKETS, MEMORY_BUCKETS, BucketScheme  # noqa: E402
from recommender.model.recency import DEFAULT, weighted_quantiles  # noqa: E402
from recommender.model.usage_state import StateKey, UsageState  # noqa: E402

MI = 2.0**20
KIB = 1024.0
DAY = 86400.0
END = datetime(2026, 12, 1, tzinfo=UTC)
GOAL_STATE_BYTES = 10 * 1024
GOAL_RSS_MIB = 1024.0
QS = (0.5, 0.9, 0.95, 0.99)
PATTERNS = ("steady", "daily", "spiky", "batch", "leak", "late-start")


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
    parts: list[object] = [key, w, w.namespace, w.kind, w.name, key.container, s, s.ooms, *hists]
    parts += [h.weights for h in hists]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--containers", type=int, default=20_000)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--step", type=float, default=60.0)
    ap.add_argument("--chunk", type=int, default=64, help="containers simulated at once")
    ap.add_argument("--check", type=int, default=200, help="containers whose percentiles are checked")
    ap.add_argument("--seed", type=int, default=15)
    args = ap.parse_args()

    start = END - timedelta(days=args.days)
    ts = start.timestamp() + args.step * np.arange(int(args.days * DAY / args.step), dtype=np.float64)
    every = max(1, args.containers // max(1, args.check))
    gc.collect()
    base = _rss_mib()
    states: dict[StateKey, UsageState] = {}
    errs: dict[tuple[str, float], list[tuple[float, float]]] = {}
    t0 = time.perf_counter()
    for ids in chunks(args.containers, args.chunk):
        cpu, mem = simulate(ids, ts, args.seed)
        for j, i in enumerate(ids):
            state = UsageState.empty(DEFAULT.half_life_s)
            state.add_samples(ts, cpu[j], mem[j])
            states[key_of(i)] = state
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


if __name__ == "__main__":
    main()
