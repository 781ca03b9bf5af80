"""Benchmark: the webhook's RSS and small-review latency under each hostile load, next to the quiet baseline.

Run: .venv/bin/python bench/bench_hostile.py [--seconds 8] [--distinct 1500] [--json FILE]

Starts `python -m webhook` (json store, default limits) on 127.0.0.1 over TLS, then runs one phase per attack
while a probe sends small reviews back to back on a keep-alive connection:

  quiet        nothing else
  cache-fill   large distinct reviews (pods of a recommended workload, each with a different set of
               ~150 containers), filling the decision cache
  huge-headers 4 connections each sending a 64 MB header
  trickle      500 connections sending a request's headers one line a second
  idle         200 TLS connections that never send a request
  heavy        6 clients posting ~4.8 MB reviews back to back

  mid-size     like heavy, while the probe sends ~300 kB reviews (decided in a thread too): they wait
               for at most the review being decided, not behind the queue of 4.8 MB ones

and prints per phase: the server's peak RSS and the probe's p50/p99 with their ratios to quiet, plus what
happened to the attackers (connections cut, still open after the header deadline). Figures depend on the
machine: on a small shared one the ratios matter more than the milliseconds.

Then two convergence cases, each a count that should be 0 (and the updater's most actions per pod 1):

  reinvocation  --pods random pods (1-3 containers, random requests, limits and recommendations) sent to
                the webhook, patched, given a sidecar (as an injector does with reinvocationPolicy IfNeeded)
                and sent again: how many second answers change something, and how many records lost the
                original values
  updater       --workloads random workloads (template, recommendation, running pods) under the updater
                (recreate or in-place-or-recreate, the real admission for replacements: tests/unit/updater/
                sim.py; one in four with the webhook down) for --passes passes: pods acted on twice,
                replacements acted on (webhook up) or evicted; and the most actions per running pod (1);
                then --workloads/10 workloads of 2 pods whose Recommendation alternates 1000m/1Gi <->
                25m/32Mi every pass: actions per workload (2 with damping: each pod once)
"""

from __future__ import annotations

import argparse
import copy
import http.client
import json
import os
import random
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from certs.generate import generate_bundle, write_bundle  # noqa: E402
from podsizer.api import Recommendation, recommendation_to_resource  # noqa: E402
from recommender.model.raw import ContainerSamples, OwnerLink, PodInfo, RawDataset  # noqa: E402
from tests.unit.webhook import builders as b  # noqa: E402

HEADER_DEADLINE = 10.0  # the webhook's default header_timeout_seconds
HEAVY_CONTAINERS = 10_000  # ~4.8 MB of review


@dataclass
class Phase:
    name: str
    rss_mb: float
    p50_ms: float
    p99_ms: float
    probes: int
    errors: int
    note: str


@dataclass(frozen=True)
class Target:
    port: int
    ca: Path
    pid: int

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))

    def connect(self, timeout: float = 10.0) -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        return self.context().wrap_socket(raw, server_hostname="127.0.0.1")

    def https(self, timeout: float = 30.0) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=self.context())

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0


# --- the server -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def webhook(tmp: Path, more: Sequence[Recommendation] = ()) -> Iterator[Target]:
    """The webhook over TLS, auto mode, with Deployment web's Recommendation and `more`."""
    write_bundle(generate_bundle("podsizer-webhook", "podsizer", ["localhost"], ["127.0.0.1"]), tmp)
    store = tmp / "recs.json"
    items = [recommendation_to_resource(r) for r in [b.recommendation(), *more]]
    store.write_bytes(
        orjson.dumps({"apiVersion": "podsizer.io/v1alpha1", "kind": "RecommendationList", "items": items})
    )
    port = free_port()
    args = [sys.executable, "-m", "webhook", "--host", "127.0.0.1", "--port", str(port), "--store", "json"]
    args += ["--store-file", str(store), "--tls-cert-file", str(tmp / "tls.crt")]
    args += ["--tls-key-file", str(tmp / "tls.key"), "--default-mode", "auto", "--log-level", "error"]
    proc = subprocess.Popen(args, cwd=ROOT, env=dict(os.environ))
    target = Target(port, tmp / "ca.crt", proc.pid)
    try:
        wait_ready(target, proc)
        yield target
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def wait_ready(target: Target, proc: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"webhook exited with status {proc.returncode}")
        conn = target.https(timeout=5)
        try:
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.2)
    raise RuntimeError("webhook did not become ready")


# --- bodies ---------------------------------------------------------------------------------------


def small_review() -> bytes:
    return orjson.dumps(b.review(b.replicaset_pod(), uid="probe"))


def mid_review(size: int = 300_000) -> bytes:
    """A legitimate review of about `size` bytes: over the offload threshold, so it takes the queue."""
    extra = [b.container(f"c{k}", {"cpu": "500m", "memory": "1Gi"}) for k in range(size // 480)]
    pod = b.replicaset_pod(containers=[b.container("main", {"cpu": "500m"}), *extra])
    return orjson.dumps(b.review(pod, uid="probe-mid"))


def distinct_review(i: int, containers: int = 150) -> bytes:
    extra = [b.container(f"c{i}-{k}", {"cpu": "100m", "memory": "64Mi"}) for k in range(containers)]
    pod = b.replicaset_pod(containers=[b.container("main", {"cpu": "500m"}), *extra])
    return orjson.dumps(b.review(pod, uid=f"fill-{i}"))


def heavy_review(i: int) -> bytes:
    extra = [b.container(f"c{k}", {"cpu": "500m", "memory": "1Gi"}) for k in range(HEAVY_CONTAINERS)]
    pod = b.replicaset_pod(containers=[b.container("main", {"cpu": "500m"}), *extra])
    return orjson.dumps(b.review(pod, uid=f"heavy-{i}"))


def post(conn: http.client.HTTPSConnection, body: bytes) -> int:
    conn.request("POST", "/mutate", body, {"content-type": "application/json"})
    resp = conn.getresponse()
    resp.read()
    return resp.status


def post_reply(conn: http.client.HTTPSConnection, body: bytes) -> dict[str, Any]:
    conn.request("POST", "/mutate", body, {"content-type": "application/json"})
    reply: dict[str, Any] = orjson.loads(conn.getresponse().read())
    return reply


# --- the probe ------------------------------------------------------------------------------------


def percentile(sorted_ms: Sequence[float], q: float) -> float:
    if not sorted_ms:
        return float("nan")
    return sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))]


def probe(
    target: Target, seconds: float, stop: threading.Event | None = None, body: bytes | None = None
) -> tuple[list[float], int, float]:
    """Small reviews (or `body`) back to back, 20 ms apart, for `seconds`: (latencies ms, errors, RSS)."""
    body = body or small_review()
    latencies: list[float] = []
    errors = 0
    peak = target.rss_mb()
    conn = target.https(timeout=10)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        started = time.perf_counter()
        try:
            ok = post(conn, body) == 200
        except (OSError, http.client.HTTPException):
            ok = False
            conn.close()
            conn = target.https(timeout=10)
        if ok:
            latencies.append((time.perf_counter() - started) * 1000)
        else:
            errors += 1
        peak = max(peak, target.rss_mb())
        time.sleep(0.02)
    conn.close()
    return sorted(latencies), errors, peak


def phase(
    name: str,
    target: Target,
    seconds: float,
    attack: Callable[[threading.Event], str] | None = None,
    body: bytes | None = None,
) -> Phase:
    """Probe for `seconds` (with `body`, else small reviews) while `attack` runs in a thread; the attack
    returns its note when stopped."""
    stop = threading.Event()
    notes: list[str] = []
    runner = None
    if attack is not None:
        runner = threading.Thread(target=lambda: notes.append(attack(stop)), daemon=True)
        runner.start()
        time.sleep(0.5)
    latencies, errors, peak = probe(target, seconds, body=body)
    stop.set()
    if runner is not None:
        runner.join(timeout=120)
    peak = max(peak, target.rss_mb())
    note = notes[0] if notes else ""
    p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
    return Phase(name, peak, p50, p99, len(latencies), errors, note)


# --- the attacks ----------------------------------------------------------------------------------


def cache_fill(target: Target, count: int) -> Callable[[threading.Event], str]:
    def attack(stop: threading.Event) -> str:
        sent = 0
        conn = target.https()
        for i in range(count):
            if stop.is_set():
                break
            try:
                post(conn, distinct_review(i))
                sent += 1
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = target.https()
        conn.close()
        return f"{sent} distinct ~{len(distinct_review(0)) // 1000} kB reviews"

    return attack


def huge_headers(
    target: Target, clients: int = 4, size: int = 64 * 1024 * 1024
) -> Callable[[threading.Event], str]:
    def one(results: list[int]) -> None:
        block, sent = b"h" * 65536, 0
        deadline = time.monotonic() + 30
        try:
            with target.connect() as sock:
                sock.sendall(b"POST /mutate HTTP/1.1\r\nhost: x\r\nx-huge: ")
                while sent < size and time.monotonic() < deadline:
                    sock.sendall(block)
                    sent += len(block)
        except (OSError, ssl.SSLError):
            results.append(sent)

    def attack(stop: threading.Event) -> str:
        cut: list[int] = []
        threads = [threading.Thread(target=one, args=(cut,), daemon=True) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        return f"{len(cut)}/{clients} cut before {size >> 20} MB"

    return attack


def open_many(target: Target, count: int) -> list[ssl.SSLSocket]:
    socks = []
    for _ in range(count):
        try:
            socks.append(target.connect())
        except (OSError, ssl.SSLError):
            break
    return socks


def closed_by_server(sock: ssl.SSLSocket) -> bool:
    """Whether the server closed the connection: EOF, an error, or a 408 it sent before closing."""
    sock.setblocking(False)
    data = b""
    for _ in range(100):
        try:
            chunk = sock.recv(65536)
        except ssl.SSLWantReadError:
            return data.startswith(b"HTTP/1.1 408")
        except (OSError, ssl.SSLError):
            return True
        if not chunk:
            return True
        data += chunk
    return False


def still_open(socks: Sequence[ssl.SSLSocket]) -> int:
    """Connections the server has not closed."""
    return sum(0 if closed_by_server(s) else 1 for s in socks)


def slow_connections(target: Target, count: int, trickle: bool) -> Callable[[threading.Event], str]:
    def attack(stop: threading.Event) -> str:
        socks = open_many(target, count)
        opened = time.monotonic()
        if trickle:
            for s in socks:
                s.sendall(b"POST /mutate HTTP/1.1\r\n")
        line = 0
        while not stop.is_set() and time.monotonic() - opened < HEADER_DEADLINE + 3:
            if trickle:
                for s in socks:
                    with suppress(OSError, ssl.SSLError):
                        s.sendall(b"x-slow-%d: 1\r\n" % line)
                line += 1
            stop.wait(1.0)
        while time.monotonic() - opened < HEADER_DEADLINE + 3:  # the probe ended first: wait for the cut
            time.sleep(0.2)
        alive = still_open(socks)
        for s in socks:
            s.close()
        return f"{alive}/{len(socks)} open after {HEADER_DEADLINE + 3:.0f} s"

    return attack


def heavy(target: Target, clients: int = 6) -> Callable[[threading.Event], str]:
    body = heavy_review(0)

    def one(stop: threading.Event, done: list[int]) -> None:
        conn = target.https(timeout=120)
        while not stop.is_set():
            try:
                done.append(post(conn, body))
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = target.https(timeout=120)
        conn.close()

    def attack(stop: threading.Event) -> str:
        done: list[int] = []
        threads = [threading.Thread(target=one, args=(stop, done), daemon=True) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        ok = sum(1 for s in done if s == 200)
        return f"{clients} clients, {ok}/{len(done)} x {len(body) / 1e6:.2f} MB answered 200"

    return attack


# --- convergence: reinvocation and the updater ------------------------------------------------------


Case = tuple[dict[str, Any], Recommendation]


def random_case(rng: random.Random, i: int) -> Case:
    """A pod of 1-3 containers with random cpu requests (and limits) and its workload's Recommendation."""
    containers, recs = [], []
    for k in range(rng.randint(1, 3)):
        request = rng.randint(5, 8000)
        limit = {"cpu": f"{request * rng.choice((1, 2, 4))}m"} if rng.random() < 0.5 else None
        containers.append(b.container(f"c{k}", {"cpu": f"{request}m", "memory": "64Mi"}, limit))
        recs.append(b.crec(f"c{k}", {"cpu": f"{rng.randint(1, 64_000)}m", "memory": "64Mi"}))
    workload = f"w{i}"
    return b.replicaset_pod(deployment=workload, containers=containers), b.recommendation(
        name=workload, containers=recs
    )


def reinvocation(target: Target, cases: Sequence[Case]) -> str:
    """Each pod admitted, patched, given a sidecar and admitted again: changed second answers and records
    that lost the originals."""
    conn, changed, lost = target.https(), 0, 0
    for i, (pod, _) in enumerate(cases):
        first = b.apply_reply(pod, post_reply(conn, orjson.dumps(b.review(pod, uid=f"r{i}"))))
        injected = copy.deepcopy(first)
        injected["spec"]["containers"].append(b.container("istio-proxy", {"cpu": "100m"}))
        second = post_reply(conn, orjson.dumps(b.review(injected, uid=f"r{i}b")))
        changed += bool(b.decode_patch(second))
        after = b.apply_reply(injected, second)
        lost += _annotations(after) != _annotations(first)
    conn.close()
    return f"{len(cases)} pods: {changed} second answers changed something, {lost} records lost the originals"


def _annotations(pod: dict[str, Any]) -> str | None:
    record: str | None = pod.get("metadata", {}).get("annotations", {}).get("podsizer.io/applied")
    return record


def updater_convergence(rng: random.Random, workloads: int, passes: int) -> str:
    """Random workloads under the updater (one in four with the webhook down, failing open): pods acted on
    twice, replacements acted on with the webhook up, replacements evicted, the most actions per pod."""
    from tests.unit.updater.sim import SimCluster, created, simple_rec  # the tests' simulated cluster

    total = twice = touched = evicted_replacements = down = 0
    worst = 0.0
    for _ in range(workloads):
        cpu = rng.randint(10, 8000)
        template = {"requests": {"cpu": f"{cpu}m", "memory": f"{rng.randint(16, 4096)}Mi"}}
        wanted = {"cpu": f"{rng.randint(1, 256_000)}m", "memory": f"{rng.randint(16, 2**20)}Mi"}
        webhook = rng.random() >= 0.25
        down += not webhook
        mode = rng.choice(["recreate", "in-place-or-recreate"])
        sim = SimCluster(template, simple_rec(wanted), mode, webhook=webhook)
        created(sim, rng.randint(1, 3), None if rng.random() < 0.5 else [template])
        first = set(sim.pods)
        actions = sim.passes(passes)
        names = [name for _, name in actions]
        total += len(actions)
        twice += len(names) - len(set(names))
        touched += webhook and bool(set(names) - first)
        evicted_replacements += sum(kind == "evicted" and name not in first for kind, name in actions)
        worst = max(worst, len(actions) / len(first))
    return (
        f"{workloads} workloads ({down} with the webhook down) x {passes} passes: {total} actions, "
        f"{twice} on a pod acted on before, {touched} workloads with a replacement acted on (webhook up), "
        f"{evicted_replacements} replacements evicted, at most {worst:g} actions per running pod"
        f"\n{'':<14}{updater_alternating(max(1, workloads // 10), passes)}"
    )


def updater_alternating(workloads: int, passes: int) -> str:
    """The probe's flapping Recommendation (1000m/1Gi <-> 25m/32Mi, a pass apart; template 100m/128Mi,
    two pods each, half recreate and half in-place-or-recreate): actions per workload over the passes.
    Drives the sim through what every version of it has, so the same bench measures older code too."""
    from podsizer.snapshot import RecommendationSnapshot, SnapshotHolder
    from tests.unit.updater.sim import PASS_INTERVAL, SimCluster, created, simple_rec

    flapping = (simple_rec({"cpu": "1000m", "memory": "1Gi"}), simple_rec({"cpu": "25m", "memory": "32Mi"}))
    template = {"requests": {"cpu": "100m", "memory": "128Mi"}}
    counts: dict[str, list[int]] = {"recreate": [], "in-place-or-recreate": []}
    for i in range(workloads):
        mode = list(counts)[i % 2]
        sim = created(SimCluster(template, flapping[0], mode), 2, [template])
        updater = sim.updater()
        holder = updater.snapshots
        assert isinstance(holder, SnapshotHolder)
        for k in range(passes):
            rec = flapping[k % 2]
            holder.swap(RecommendationSnapshot.of([rec], sim.now))
            sim.rec, sim.admitter = rec, SimCluster(template, rec).admitter  # replacements get it too
            sim.now += PASS_INTERVAL
            updater.run_once()
        counts[mode].append(len(sim.actions))
    shown = ", ".join(f"{mode} {sum(n) / len(n):g} (at most {max(n)})" for mode, n in counts.items() if n)
    return f"alternating recommendation, {workloads} workloads of 2 pods x {passes} passes: actions {shown}"


# --- the table ------------------------------------------------------------------------------------


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "-"


def table(phases: Sequence[Phase]) -> str:
    quiet = phases[0]
    head = (
        f"{'phase':<13} {'RSS MB':>7} {'ratio':>6} {'p50 ms':>7} {'p99 ms':>7} {'p99 ratio':>9} {'probes':>6}"
    )
    lines = [head + "  attack", "-" * (len(head) + 40)]
    for p in phases:
        rss = f"{p.rss_mb:>7.1f} {ratio(p.rss_mb, quiet.rss_mb):>6}"
        latency = f"{p.p50_ms:>7.1f} {p.p99_ms:>7.1f} {ratio(p.p99_ms, quiet.p99_ms):>9}"
        errors = f" ({p.errors} probe errors)" if p.errors else ""
        lines.append(f"{p.name:<13} {rss} {latency} {p.probes:>6}  {p.note}{errors}")
    return "\n".join(lines)


# --- recommender cases (--recommender-cases) -------------------------------------------------------
# Run: .venv/bin/python bench/bench_hostile.py --recommender-cases trickle (or all): one line per case.
# `podsizer` runs from this file's tree (PYTHONPATH=ROOT), so a copy of this file in an old worktree measures
# the old code with the same venv.

TRICKLE_EVERY_S = 2.5  # a header byte every 2.5 s: what the probe of issue 32 sent


def podsizer_argv(*args: str) -> list[str]:
    return [sys.executable, "-c", "from podsizer.cli import main; raise SystemExit(main())", *args]


def podsizer_env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSIZER_")}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    return env | {"PYTHONPATH": str(ROOT)} | {f"PODSIZER_{k.upper()}": v for k, v in settings.items()}


def trickle_recommend(url: str, cap_s: float) -> str:
    """`podsizer recommend` with PODSIZER_PROMETHEUS_TIMEOUT_SECONDS=4: its wall time and how it ended."""
    argv = podsizer_argv("recommend", "--source=prometheus", f"--prometheus-url={url}", "--no-progress")
    t0 = time.monotonic()
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=cap_s,
            env=podsizer_env(prometheus_timeout_seconds="4"),
        )
    except subprocess.TimeoutExpired:
        return f"recommend (timeout 4s): still running after {cap_s:.0f}s (killed)"
    last = (done.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
    clear = "timed out" in done.stderr and "within 4s" in done.stderr and "Traceback" not in done.stderr
    took = time.monotonic() - t0
    return f"recommend (timeout 4s): {took:.1f}s, exit {done.returncode}, clear error: {clear}: {last[:160]}"


def trickle_sigterm(server: Any, timeout_s: int, tmp: Path, cap_s: float) -> str:
    """The time SIGTERM takes to stop `podsizer run` 1 s into a trickled read (timeout `timeout_s`)."""
    settings = {"prometheus_timeout_seconds": str(timeout_s), "metrics_port": "0", "incremental": "false"}
    argv = podsizer_argv("run", "--source=prometheus", f"--prometheus-url={server.url}")
    argv += ["--store=json", f"--store-file={tmp / 'recs.json'}"]
    import signal

    proc = subprocess.Popen(argv, stderr=subprocess.DEVNULL, env=podsizer_env(**settings))
    try:
        before = server.accepted
        ends = time.monotonic() + cap_s
        while (server.accepted == before or server.answering == 0) and time.monotonic() < ends:
            if proc.poll() is not None:
                return f"timeout {timeout_s}s: `run` exited {proc.returncode} before the read began"
            time.sleep(0.05)
        time.sleep(1.0)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=cap_s)
        except subprocess.TimeoutExpired:
            return f"timeout {timeout_s}s: not stopped {cap_s:.0f}s after SIGTERM (killed)"
        return f"timeout {timeout_s}s: {time.monotonic() - t0:.1f}s (exit {proc.returncode})"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def trickle_case(cap_s: float = 150.0) -> str:
    """A Prometheus that trickles its header bytes: `recommend`'s wall time and error, and how long SIGTERM
    takes to stop `run` in the middle of a trickled read."""
    from tests.support.trickle import TrickleServer

    with tempfile.TemporaryDirectory() as tmp, TrickleServer(TRICKLE_EVERY_S, "headers", cap_s * 2) as server:
        recommend = trickle_recommend(server.url, cap_s)
        stops = [trickle_sigterm(server, t, Path(tmp), cap_s) for t in (4, 60)]
    return f"{recommend}\n{'':<13} SIGTERM during a trickled read of `run`: {'; '.join(stops)}"


def _spiked_week(end: float) -> RawDataset:
    """A week at 60 s: shop/web's working set near 100 MiB (p99 about 112 MiB) with two 3 TiB scrapes;
    shop/glitch's three replicas each with 2 TiB at the same two scrapes (one bad scrape of a node)."""
    mi = 2.0**20
    ts = np.arange(end - 7 * 86400, end + 1, 60.0)
    rng = np.random.default_rng(32)

    def memory(spike: float, at: list[int]) -> npt.NDArray[np.float64]:
        wave = 1.0 + 0.08 * np.sin(np.arange(ts.size) * 2 * np.pi / 1440)
        values = np.round(100 * mi * wave * rng.uniform(0.97, 1.03, ts.size))
        values[at] = spike
        return values

    cpu = np.full(ts.size, 0.2)
    pods = [PodInfo("shop", "web-5f8b-a", "node-1", "ReplicaSet", "web-5f8b")]
    series = [ContainerSamples("shop", "web-5f8b-a", "app", ts, cpu, memory(3.0 * 2**40, [900, 7000]))]
    for i in range(3):
        pods.append(PodInfo("shop", f"glitch-7c9d-{i}", "node-2", "ReplicaSet", "glitch-7c9d"))
        series.append(
            ContainerSamples("shop", f"glitch-7c9d-{i}", "app", ts, cpu, memory(2.0 * 2**40, [3000, 3001]))
        )
    owners = (
        OwnerLink("shop", "ReplicaSet", "web-5f8b", "Deployment", "web"),
        OwnerLink("shop", "ReplicaSet", "glitch-7c9d", "Deployment", "glitch"),
    )
    at = [datetime.fromtimestamp(float(t), UTC) for t in (ts[0], end)]
    return RawDataset(at[0], at[1], tuple(pods), owners, tuple(series))


def spike_case() -> str:
    """Bad scrapes in a real Prometheus (_spiked_week): the memory request `podsizer recommend` gives each
    workload, by remote read and by range queries (the honest level is about 130Mi)."""
    from tests.integration.prometheus.server import running_prometheus
    from tests.support.openmetrics import backfill, write_dataset

    end = float(int(time.time()) // 3600 * 3600)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        files = write_dataset(_spiked_week(end), Path(tmp) / "om", workers=2)
        backfill(files, Path(tmp) / "data", workers=2, promtool="/usr/bin/promtool")
        with running_prometheus(Path(tmp) / "data", retention_days=9) as server:
            for read in ("remote-read", "query"):
                argv = podsizer_argv("recommend", "--source=prometheus", f"--prometheus-url={server.url}")
                env = podsizer_env(prometheus_read=read)
                done = subprocess.run([*argv, "--no-progress", "-o", "json"], capture_output=True, env=env)
                items = json.loads(done.stdout)["items"] if done.returncode == 0 else []
                got = {
                    i["spec"]["targetRef"]["name"]: i["status"]["containers"][0]["requests"] for i in items
                }
                shown = ", ".join(f"{w} {got.get(w, {}).get('memory', '-')}" for w in ("web", "glitch"))
                out.append(f"{read}: {shown}")
    return "memory requests: " + "; ".join(out)


def bomb_case(series: int = 300, window_days: int = 1) -> str:
    """A remote-read endpoint answering decompression bombs (tests/support/steady_prometheus.py): `podsizer
    recommend`'s peak RSS (wait4) and wall time on honest data (chunks of 120 samples 15 s apart), a naive
    bomb (chunks of 65,535 samples: 16 KB each) and a plausible one (chunks of the most samples a chunk may
    declare, one a second), each of `series` series, with the ratio to honest. BENCH_PODSIZER_ROOT names
    another checkout whose `podsizer` runs (an old worktree, this venv)."""
    from tests.support import steady_prometheus as fake

    root = Path(os.environ.get("BENCH_PODSIZER_ROOT", ROOT))
    shown, honest = [], 0
    for chunks in (fake.HONEST, fake.NAIVE_BOMB, fake.PLAUSIBLE_BOMB):
        with fake.SteadyPrometheus(series, chunks) as server:
            flags = ("--window-days", str(window_days), "--allow-empty")
            ran = fake.recommend(server.url, root, *flags, timeout=1800)
        honest = honest or ran.rss_bytes
        said = (ran.stderr.strip().splitlines() or [""])[-1]
        ended = "read" if ran.status == 0 else f"exit {ran.status}: {said.split(' with ')[-1][:90]}"
        rss = f"{ran.rss_bytes / 2**20:.0f} MB ({ran.rss_bytes / honest:.2f}x)"
        shown.append(f"{chunks.name}: peak RSS {rss}, {ran.seconds:.1f} s, {ended}")
    rows = "\n".join(f"{'':<14}{row}" for row in shown)
    return f"{series} series x {window_days} day, code {root}\n{rows}"


RECOMMENDER_CASES: dict[str, Callable[[], str]] = {
    "trickle": trickle_case,
    "spike": spike_case,
    "bomb": bomb_case,
}


def recommender_cases(names: str) -> int:
    """Runs the named recommender cases (comma-separated; "all": every one) and prints one line each."""
    chosen = list(RECOMMENDER_CASES) if names == "all" else [n for n in names.split(",") if n]
    for name in chosen:
        print(f"{name:<13} {RECOMMENDER_CASES[name]()}", flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=8.0, help="probe time per phase")
    parser.add_argument("--distinct", type=int, default=1500, help="large distinct reviews in cache-fill")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--only", default="", help="comma-separated phases and cases to run (default: all)")
    parser.add_argument("--pods", type=int, default=2000, help="pods of the reinvocation case")
    parser.add_argument("--workloads", type=int, default=200, help="workloads of the updater case")
    parser.add_argument("--passes", type=int, default=10, help="updater passes per workload")
    parser.add_argument(
        "--recommender-cases",
        default="",
        help=f"comma-separated recommender cases to run instead ({', '.join(RECOMMENDER_CASES)}, or all)",
    )
    args = parser.parse_args()
    if args.recommender_cases:
        return recommender_cases(args.recommender_cases)
    rng = random.Random(28)
    cases = [random_case(rng, i) for i in range(args.pods)]
    chosen = [a for a in args.only.split(",") if a]
    with tempfile.TemporaryDirectory() as tmp, webhook(Path(tmp), [rec for _, rec in cases]) as target:
        probe(target, 1.0)  # warm up
        seconds = args.seconds
        attacks: dict[str, tuple[float, Callable[[threading.Event], str], bytes | None]] = {
            "cache-fill": (seconds * 2, cache_fill(target, args.distinct), None),
            "huge-headers": (seconds, huge_headers(target), None),
            "trickle": (seconds, slow_connections(target, 500, trickle=True), None),
            "idle": (seconds, slow_connections(target, 200, trickle=False), None),
            "heavy": (seconds, heavy(target, clients=4), None),
            "mid-size": (seconds, heavy(target, clients=4), mid_review()),
        }
        phases = [phase("quiet", target, seconds)]
        phases += [phase(name, target, *attacks[name]) for name in chosen or attacks if name in attacks]
        notes = {}
        if not chosen or "reinvocation" in chosen:
            notes["reinvocation"] = reinvocation(target, cases)
    if not chosen or "updater" in chosen:
        notes["updater"] = updater_convergence(rng, args.workloads, args.passes)
    print(table(phases))
    print()
    for name, note in notes.items():
        print(f"{name:<13} {note}")
    if args.json is not None:
        args.json.write_text(
            json.dumps({"phases": [asdict(p) for p in phases], "convergence": notes}, indent=2)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
