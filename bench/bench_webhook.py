"""Benchmark: /mutate over TLS with keep-alive on one uvicorn worker vs a parse-only baseline endpoint.

Run: .venv/bin/python bench/bench_webhook.py [--rate 500] [--seconds 10] [--saturate-rate 6000]
     [--no-pin] [--nice 10] [--json FILE]

The load comes from an open-loop, constant-rate Go generator (bench/loadgen, built once into
${PODSIZER_CACHE:-~/.cache/podsizer}/bin/podsizer-loadgen): request i is due at start + i/rate and its
latency runs from that due time, so queueing delay counts. By default the server is pinned to CPU 0 and
the generator to CPU 1 so they do not compete. Without Go, a much weaker Python (httpx) generator is used
and the output says so: its figures then mostly measure the generator.

Prints, for /mutate and /mutate-baseline: achieved throughput and p50/p90/p99 latency at the offered rate
and at a saturating rate, server CPU per request (/proc/<pid>/stat), the ratios, and whether the goals
(throughput ratio >= 0.8, p99 < 5 ms at the offered rate) were met.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import copy
import hashlib
import http.client
import json
import math
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpatch
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from certs.generate import generate_bundle, write_bundle  # noqa: E402
from podsizer.api import recommendation_to_resource  # noqa: E402
from tests.unit.webhook import builders as b  # noqa: E402

LOADGEN_SRC = ROOT / "bench" / "loadgen"
ENDPOINTS = ("/mutate", "/mutate-baseline")


# --- request bodies -------------------------------------------------------------------------------


def realistic_pod(i: int) -> dict[str, Any]:
    """A ReplicaSet pod with an istio sidecar and init container, env, probes, affinity; 5-10 KB as JSON."""
    main = b.container("main", {"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "2Gi"})
    main["env"] += [
        {"name": f"FEATURE_FLAG_{k}", "value": f"enabled-for-tenant-{k}-{i}"}
        for k in range(20 + (i * 7) % 45)
    ]
    main["env"].append(
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}
    )
    for probe, path in (("readinessProbe", "/ready"), ("livenessProbe", "/live")):
        main[probe] = {
            "httpGet": {"path": path, "port": 8080, "scheme": "HTTP"},
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "failureThreshold": 3,
        }
    proxy = b.container(
        "istio-proxy",
        {"cpu": "100m", "memory": "128Mi"},
        {"cpu": "2", "memory": "1Gi"},
        image="docker.io/istio/proxyv2:1.22.3",
    )
    proxy["args"] = [
        "proxy",
        "sidecar",
        "--domain",
        "$(POD_NAMESPACE).svc.cluster.local",
        "--proxyLogLevel=warning",
        "--proxyComponentLogLevel=misc:error",
        "--log_output_level=default:info",
    ]
    init = b.container(
        "istio-init",
        {"cpu": "10m", "memory": "40Mi"},
        {"cpu": "2", "memory": "1Gi"},
        image="docker.io/istio/proxyv2:1.22.3",
    )
    containers = [main, proxy]
    if i % 3 == 0:  # a container without a recommendation: left alone
        shipper = b.container(
            "log-shipper",
            {"cpu": "50m", "memory": "64Mi"},
            {"memory": "128Mi"},
            image="fluent/fluent-bit:3.1",
        )
        containers.append(shipper)
    pod = b.replicaset_pod(
        "web",
        containers=containers,
        init=[init],
        labels={
            "app.kubernetes.io/name": "web",
            "app.kubernetes.io/instance": "web-prod",
            "app.kubernetes.io/version": "1.4.2",
            "app.kubernetes.io/part-of": "shop",
            "security.istio.io/tlsMode": "istio",
            "service.istio.io/canonical-name": "web",
            "service.istio.io/canonical-revision": "1-4-2",
        },
        annotations={
            "kubectl.kubernetes.io/restartedAt": "2026-12-01T10:00:00Z",
            "prometheus.io/scrape": "true",
            "prometheus.io/port": "15020",
            "sidecar.istio.io/status": '{"initContainers":["istio-init"],'
            '"containers":["istio-proxy"],"volumes":["istio-envoy"]}',
        },
    )
    pod["spec"]["affinity"] = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }
    return pod


def realistic_reviews(n: int) -> list[bytes]:
    """`n` pod-create AdmissionReviews of 5-10 KB each."""
    return [
        orjson.dumps(b.review(realistic_pod(i), uid=f"00000000-0000-4000-8000-{i:012d}")) for i in range(n)
    ]


# --- server ---------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of the server process (all threads), from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def runqueue_wait(pid: int) -> float:
    """Seconds the server's event-loop thread has spent runnable but waiting for a CPU (schedstat)."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def pin_to(cpu: int | None) -> Callable[[], None] | None:
    if cpu is None:
        return None

    def pin() -> None:
        os.sched_setaffinity(0, {cpu})

    return pin


def start_server(tmp: Path, port: int, cpu: int | None, nice: int) -> subprocess.Popen[bytes]:
    write_bundle(generate_bundle("podsizer-webhook", "podsizer", ["localhost"], ["127.0.0.1"]), tmp)
    store = tmp / "recs.json"
    recs = [
        b.recommendation(
            "Deployment",
            "web",
            containers=[
                b.crec("main", {"cpu": "250m", "memory": "512Mi"}),
                b.crec("istio-proxy", {"cpu": "50m", "memory": "96Mi"}),
                b.crec("istio-init", {"cpu": "10m", "memory": "32Mi"}),
            ],
        )
    ]
    recs += [b.recommendation("Deployment", f"other-{i}") for i in range(500)]
    store.write_bytes(
        orjson.dumps(
            {
                "apiVersion": "podsizer.io/v1alpha1",
                "kind": "RecommendationList",
                "items": [recommendation_to_resource(r) for r in recs],
            }
        )
    )
    env = {**os.environ, "PODSIZER_BENCH_ENDPOINTS": "true"}
    args = [
        *(["nice", "-n", str(nice)] if nice else []),
        sys.executable,
        "-m",
        "webhook",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--store",
        "file",
        "--store-file",
        str(store),
        "--tls-cert-file",
        str(tmp / "tls.crt"),
        "--tls-key-file",
        str(tmp / "tls.key"),
        "--default-mode",
        "auto",
        "--log-level",
        "error",
    ]
    # `nice` execs python, so the pid stays the server's.
    return subprocess.Popen(args, cwd=ROOT, env=env, preexec_fn=pin_to(cpu))


def https(port: int, ca: Path) -> http.client.HTTPSConnection:
    return http.client.HTTPSConnection(
        "127.0.0.1", port, context=ssl.create_default_context(cafile=str(ca)), timeout=5
    )


def wait_ready(port: int, ca: Path, proc: subprocess.Popen[bytes], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"webhook server exited with status {proc.returncode}")
        conn = https(port, ca)
        try:
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.1)
    raise RuntimeError("webhook server did not become ready")


def check_sample(port: int, ca: Path, body: bytes) -> int:
    """POST one review; the reply must carry a JSON Patch that applies and sets the recommended requests."""
    conn = https(port, ca)
    try:
        conn.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
    finally:
        conn.close()
    if resp.status != 200:
        raise RuntimeError(f"/mutate answered HTTP {resp.status}: {data[:200]!r}")
    reply = orjson.loads(data)
    review = orjson.loads(body)
    response = reply["response"]
    if response.get("uid") != review["request"]["uid"] or response.get("patchType") != "JSONPatch":
        raise RuntimeError(f"/mutate reply is not a patching AdmissionReview: {reply}")
    ops = orjson.loads(base64.b64decode(response["patch"]))
    pod = jsonpatch.apply_patch(copy.deepcopy(review["request"]["object"]), ops)
    main = b.resources_of(pod, "main")
    if main.get("requests", {}).get("cpu") != "250m":
        raise RuntimeError(f"patched pod does not carry the recommended cpu request: {main}")
    return len(ops)


# --- load generators ------------------------------------------------------------------------------


@dataclass
class Run:
    """One load run's figures (the load generator's JSON) plus the server CPU it cost."""

    name: str
    figures: dict[str, Any]
    server_cpu: float
    server_wait: float

    @property
    def completed(self) -> int:
        f = self.figures
        return int(f["ok"]) + int(f["errors"]) + int(f.get("warmup_completed", 0))

    @property
    def cpu_us_per_request(self) -> float:
        return self.server_cpu / max(1, self.completed) * 1e6

    @property
    def rps(self) -> float:
        return float(self.figures["achieved_rps"])

    def ms(self, key: str) -> float:
        return float(self.figures[key])

    def cell(self, key: str) -> str:
        value = self.ms(key)
        return f"{value:8.2f}" if value >= 0 else f"{'-':>8}"

    def line(self) -> str:
        f = self.figures
        return (
            f"{self.name:<41} {self.rps:8.1f} {self.cell('p50_ms')} {self.cell('p90_ms')}"
            f" {self.cell('p99_ms')} {self.cell('p999_ms')} {self.cell('max_ms')}"
            f" {self.cpu_us_per_request:8.0f} {self.server_wait * 1000:8.0f}"
            f" {f['ok']:>7} {f['errors']:>6} {f.get('unsent', 0):>6}"
        )


def percentile(sorted_ms: Sequence[float], q: float) -> float:
    """Nearest-rank percentile; -1 when there is nothing to rank."""
    if not sorted_ms:
        return -1.0
    return sorted_ms[min(len(sorted_ms) - 1, max(0, math.ceil(q * len(sorted_ms)) - 1))]


def merge(name: str, parts: Sequence[Run]) -> Run:
    """One Run from interleaved rounds: counts and CPU summed, rps over the summed windows, percentiles
    over all latencies."""
    lat = sorted(x for r in parts for x in r.figures["latencies_ms"])
    window = sum(float(r.figures["window_s"]) for r in parts)
    figures: dict[str, Any] = {
        key: sum(int(r.figures.get(key, 0)) for r in parts)
        for key in ("sent", "ok", "errors", "unsent", "warmup_completed")
    }
    figures["window_s"] = window
    figures["achieved_rps"] = sum(r.rps * float(r.figures["window_s"]) for r in parts) / window
    for key, q in (("p50_ms", 0.5), ("p90_ms", 0.9), ("p99_ms", 0.99), ("p999_ms", 0.999)):
        figures[key] = percentile(lat, q)
    figures["max_ms"] = lat[-1] if lat else -1.0
    figures["rounds"] = [{k: v for k, v in r.figures.items() if k != "latencies_ms"} for r in parts]
    return Run(name, figures, sum(r.server_cpu for r in parts), sum(r.server_wait for r in parts))


HEADER = (
    f"{'run':<41} {'req/s':>8} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'p99.9 ms':>8} {'max ms':>8}"
    f" {'us/req':>8} {'rq wait':>8} {'ok':>7} {'errors':>6} {'unsent':>6}"
)


def go_binary() -> str | None:
    return shutil.which("go") or next(
        (p for p in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go") if os.access(p, os.X_OK)), None
    )


def build_loadgen(go: str) -> Path:
    """`go build` bench/loadgen into the cache; skipped when the binary matches the sources and Go version."""
    cache = Path(os.environ.get("PODSIZER_CACHE") or Path.home() / ".cache" / "podsizer")
    out = cache / "bin" / "podsizer-loadgen"
    stamp = out.with_name(out.name + ".stamp")
    env = {**os.environ, "GOTOOLCHAIN": "local", "CGO_ENABLED": "0"}
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True, env=env).stdout
    digest = hashlib.sha256(version.encode())
    for src in sorted(LOADGEN_SRC.glob("*")):
        if src.suffix in (".go", ".mod", ".sum"):
            digest.update(src.name.encode() + b"\0" + src.read_bytes())
    if out.exists() and stamp.exists() and stamp.read_text() == digest.hexdigest():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    print(f"building {out} ...", flush=True)
    subprocess.run(
        ["nice", "-n", "10", go, "build", "-trimpath", "-o", str(tmp), "."],
        cwd=LOADGEN_SRC,
        env=env,
        check=True,
    )
    tmp.replace(out)
    stamp.write_text(digest.hexdigest())
    return out


def go_load(
    loadgen: Path,
    url: str,
    bodies: Path,
    ca: Path,
    rate: float,
    seconds: float,
    warmup: float,
    conns: int,
    drain: float,
    cpu: int | None,
    nice: int,
    raw: Path,
) -> dict[str, Any]:
    args = [
        *(["nice", "-n", str(nice)] if nice else []),
        str(loadgen),
        f"-url={url}",
        f"-body={bodies}",
        f"-cacert={ca}",
        f"-rate={rate}",
        f"-duration={seconds}s",
        f"-warmup={warmup}s",
        f"-conns={conns}",
        f"-drain={drain}s",
        f"-raw={raw}",
    ]
    done = subprocess.run(args, capture_output=True, text=True, preexec_fn=pin_to(cpu), timeout=seconds + 120)
    if done.returncode != 0:
        raise RuntimeError(f"podsizer-loadgen failed ({done.returncode}): {done.stderr.strip()}")
    figures: dict[str, Any] = json.loads(done.stdout)
    figures["latencies_ms"] = [int(x) / 1000 for x in raw.read_text().split()]
    return figures


def python_load(
    url: str, bodies: Sequence[bytes], ca: Path, rate: float, seconds: float, warmup: float, conns: int
) -> dict[str, Any]:
    """Fallback without Go: the same open-loop schedule from httpx on asyncio (it saturates early)."""
    import httpx

    async def run() -> dict[str, Any]:
        n_warm, n_meas = round(rate * warmup), round(rate * seconds)
        total = n_warm + n_meas
        lat: list[float] = []
        status: dict[str, int] = {}
        errors = warmup_done = 0
        next_i = 0
        last = 0.0
        start = time.perf_counter() + 0.05
        meas_start = start + n_warm / rate
        limits = httpx.Limits(max_connections=conns, max_keepalive_connections=conns)
        async with httpx.AsyncClient(verify=ssl.create_default_context(cafile=str(ca)), limits=limits) as c:

            async def worker() -> None:
                nonlocal errors, warmup_done, next_i, last
                while next_i < total:
                    i = next_i
                    next_i += 1
                    due = start + i / rate
                    if (delay := due - time.perf_counter()) > 0:
                        await asyncio.sleep(delay)
                    try:
                        r = await c.post(url, content=bodies[i % len(bodies)], timeout=10)
                        code = str(r.status_code)
                    except httpx.HTTPError:
                        code = "transport"
                    now = time.perf_counter()
                    if i < n_warm:
                        warmup_done += 1
                        continue
                    last = max(last, now)
                    status[code] = status.get(code, 0) + 1
                    if code.startswith("2"):
                        lat.append(now - due)
                    else:
                        errors += 1

            await asyncio.gather(*(worker() for _ in range(conns)))
        lat.sort()

        def pct(q: float) -> float:
            return lat[min(len(lat) - 1, max(0, int(q * len(lat) + 0.999999) - 1))] * 1000 if lat else -1

        return {
            "sent": n_meas,
            "ok": len(lat),
            "errors": errors,
            "unsent": 0,
            "warmup_completed": warmup_done,
            "achieved_rps": len(lat) / max(seconds, last - meas_start),
            "window_s": max(seconds, last - meas_start),
            "latencies_ms": [x * 1000 for x in lat],
            "p50_ms": pct(0.5),
            "p90_ms": pct(0.9),
            "p99_ms": pct(0.99),
            "p999_ms": pct(0.999),
            "max_ms": lat[-1] * 1000 if lat else -1,
            "status": status,
        }

    return asyncio.run(run())


# --- main -----------------------------------------------------------------------------------------


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", "--rps", type=float, default=500.0, help="offered rate of the main runs")
    p.add_argument("--seconds", type=float, default=10.0, help="measured seconds of each main run")
    p.add_argument("--saturate-rate", type=float, default=6000.0, help="offered rate of the saturation runs")
    p.add_argument("--saturate-seconds", type=float, default=5.0)
    p.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds before each run")
    p.add_argument("--connections", type=int, default=16, help="keep-alive connections")
    p.add_argument("--bodies", type=int, default=64, help="distinct reviews sent in rotation")
    p.add_argument("--no-pin", action="store_true", help="do not pin server to CPU 0 and load to CPU 1")
    p.add_argument("--nice", type=int, default=0, help="run server and load generator at this niceness")
    p.add_argument("--python-load", action="store_true", help="force the Python load generator")
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds per endpoint and rate")
    p.add_argument("--json", type=Path, help="also write all figures to this file")
    args = p.parse_args()

    cpus = sorted(os.sched_getaffinity(0))
    pinned = not args.no_pin and len(cpus) >= 2
    server_cpu, load_cpu = (cpus[0], cpus[1]) if pinned else (None, None)
    go = None if args.python_load else go_binary()
    loadgen = build_loadgen(go) if go else None

    load_before = os.getloadavg()
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        proc = start_server(tmp, port, server_cpu, args.nice)
        try:
            ca = tmp / "ca.crt"
            wait_ready(port, ca, proc)
            bodies = realistic_reviews(args.bodies)
            body_dir = tmp / "bodies"
            body_dir.mkdir()
            for i, body in enumerate(bodies):
                (body_dir / f"{i:04d}.json").write_bytes(body)
            n_ops = check_sample(port, ca, bodies[0])
            sizes = [len(x) for x in bodies]
            generator = (
                f"Go open-loop load generator {loadgen}"
                if loadgen
                else "PYTHON FALLBACK load generator (httpx; Go not found or --python-load): figures are "
                "bounded by the generator, not the webhook"
            )
            layout = (
                f"server pinned to CPU {server_cpu}, load generator to CPU {load_cpu}"
                if pinned
                else "no CPU pinning"
            )
            print(
                f"reviews {len(bodies)} x {min(sizes)}-{max(sizes)} bytes"
                f" (mean {sum(sizes) / len(sizes):.0f}),"
                f" sample reply: valid JSON Patch of {n_ops} ops\n"
                f"1 uvicorn worker, TLS (verified against the bench CA), HTTP/1.1 keep-alive,"
                f" {args.connections} connections; python {sys.version.split()[0]};"
                f" {os.cpu_count()} CPUs; {layout}; niceness {os.nice(0) + args.nice}\n"
                f"{generator}\n"
                f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}",
                flush=True,
            )
            # Rounds alternate the endpoints (A B, B A, ...) so drifting machine load hits both alike.
            plan = []
            # Above capacity the queue only grows: a short warm-up, and a short drain after which
            # still-queued requests are dropped (reported as unsent). Throughput counts every reply
            # completed inside the measured window.
            for rate, seconds, warmup, drain, tag in (
                (args.rate, args.seconds, args.warmup, 10.0, ""),
                (args.saturate_rate, args.saturate_seconds, min(args.warmup, 0.5), 2.0, " (saturation)"),
            ):
                for k in range(args.rounds):
                    order = ENDPOINTS if k % 2 == 0 else ENDPOINTS[::-1]
                    plan += [(path, rate, seconds / args.rounds, warmup, drain, tag) for path in order]
            parts: dict[str, list[Run]] = {}
            for path, rate, seconds, warmup, drain, tag in plan:
                url = f"https://127.0.0.1:{port}{path}"
                c0, w0 = cpu_seconds(proc.pid), runqueue_wait(proc.pid)
                if loadgen:
                    figures = go_load(
                        loadgen,
                        url,
                        body_dir,
                        ca,
                        rate,
                        seconds,
                        warmup,
                        args.connections,
                        drain,
                        load_cpu,
                        args.nice,
                        tmp / "latencies.txt",
                    )
                else:
                    if load_cpu is not None:
                        os.sched_setaffinity(0, {load_cpu})
                    figures = python_load(url, bodies, ca, rate, seconds, warmup, args.connections)
                c1, w1 = cpu_seconds(proc.pid), runqueue_wait(proc.pid)
                name = f"{path} @ {rate:.0f} rps{tag}"
                parts.setdefault(name, []).append(Run(name, figures, c1 - c0, w1 - w0))
                if proc.poll() is not None:
                    raise RuntimeError(f"webhook server exited with status {proc.returncode}")
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    load_after = os.getloadavg()
    runs = [merge(name, rs) for name, rs in parts.items()]
    runs.sort(key=lambda r: ("saturation" in r.name, ENDPOINTS.index(r.name.split()[0])))

    print(HEADER)
    print(
        "(latency from each request's scheduled time, queueing included; us/req = server CPU per request;"
        " rq wait = ms the server thread sat runnable waiting for its CPU, i.e. stolen by other processes;"
        " saturation rows: offered above capacity, so latency is the growing queue and unsent the requests"
        " still queued when the run stopped; req/s there is the capacity)"
    )
    for r in runs:
        print(r.line())
    m, base, m_sat, base_sat = runs
    thr = ratio(m.rps, base.rps)
    sat = ratio(m_sat.rps, base_sat.rps)
    cpu = ratio(base.cpu_us_per_request, m.cpu_us_per_request)
    p99 = ratio(m.ms("p99_ms"), base.ms("p99_ms"))
    for r in (m_sat, base_sat):
        if r.rps >= 0.95 * float(args.saturate_rate) and r.ms("p50_ms") < 50:
            print(f"note: {r.name} kept up with the offered rate: not saturated, raise --saturate-rate")
    print(f"ratio throughput at {args.rate:.0f} rps (mutate/baseline): {thr:.3f}")
    print(f"ratio throughput saturated (mutate/baseline): {sat:.3f}")
    print(f"ratio server CPU per request (baseline/mutate): {cpu:.3f}")
    cap_m, cap_b = 1e6 / m_sat.cpu_us_per_request, 1e6 / base_sat.cpu_us_per_request
    print(
        f"capacity of one uncontended core from server CPU per request at saturation: /mutate {cap_m:.0f}"
        f" rps, baseline {cap_b:.0f} rps, ratio {ratio(cap_m, cap_b):.3f}"
    )
    print(f"ratio p99 at {args.rate:.0f} rps (mutate/baseline, lower is better): {p99:.3f}")
    goals = {
        f"throughput ratio at {args.rate:.0f} rps >= 0.8": thr >= 0.8,
        "saturated throughput ratio >= 0.8": sat >= 0.8,
        "CPU-per-request ratio >= 0.8": cpu >= 0.8,
        f"/mutate p99 at {args.rate:.0f} rps < 5 ms ({m.ms('p99_ms'):.2f} ms)": 0 <= m.ms("p99_ms") < 5,
        f"/mutate errors at {args.rate:.0f} rps == 0": m.figures["errors"] == 0,
    }
    for goal, met in goals.items():
        print(f"goal {'MET    ' if met else 'NOT MET'} {goal}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in load_after)}")
    if args.json:
        args.json.write_bytes(
            orjson.dumps(
                {
                    "layout": {
                        "server_cpu": server_cpu,
                        "load_cpu": load_cpu,
                        "nice": os.nice(0) + args.nice,
                    },
                    "generator": "go" if loadgen else "python",
                    "load_average": {"before": load_before, "after": load_after},
                    "runs": [
                        {
                            "name": r.name,
                            "server_cpu_us_per_request": r.cpu_us_per_request,
                            "server_runqueue_wait_s": r.server_wait,
                            **{k: v for k, v in r.figures.items() if k != "latencies_ms"},
                        }
                        for r in runs
                    ],
                    "ratios": {"throughput": thr, "saturated": sat, "cpu": cpu, "p99": p99},
                    "goals": goals,
                },
                option=orjson.OPT_INDENT_2,
            )
        )
    return 0 if all(goals.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
