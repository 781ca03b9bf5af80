"""Benchmark: /mutate over TLS with keep-alive on one uvicorn worker vs a parse-only baseline endpoint.

Run: .venv/bin/python bench/bench_webhook.py [--rps 500] [--seconds 10] [--connections 16]
Prints, for /mutate and /mutate-baseline: achieved throughput and p50/p99 latency at the offered rate,
the saturated (closed-loop) throughput of each, and the ratios. Goal: ratio >= 0.8 and p99 < 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from certs.generate import generate_bundle, write_bundle  # noqa: E402
from recommender.api import recommendation_to_resource  # noqa: E402
from tests.unit.webhook import builders as b  # noqa: E402


def realistic_reviews(n: int) -> list[bytes]:
    """5-10 KB pod-create reviews: app + sidecar + init container, env, probes, volumes, affinity."""
    out = []
    for i in range(n):
        main = b.container("main", {"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "2Gi"})
        main["env"] += [
            {"name": f"FEATURE_FLAG_{k}", "value": f"enabled-for-tenant-{k}-{i}"} for k in range(30)
        ]
        main["readinessProbe"] = {
            "httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"},
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "failureThreshold": 3,
        }
        main["livenessProbe"] = {
            "httpGet": {"path": "/live", "port": 8080, "scheme": "HTTP"},
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
        pod = b.replicaset_pod(
            "web",
            containers=[main, proxy],
            init=[init],
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
        out.append(orjson.dumps(b.review(pod, uid=f"00000000-0000-4000-8000-{i:012d}")))
    return out


def cpu_seconds(pid: int) -> float:
    """utime + stime of the server process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Run:
    name: str
    sent: int
    ok: int
    errors: int
    seconds: float
    latencies: list[float]
    server_cpu: float = 0.0

    @property
    def cpu_us_per_request(self) -> float:
        return self.server_cpu / max(1, self.ok) * 1e6

    @property
    def rps(self) -> float:
        return self.ok / self.seconds

    def pct(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        s = sorted(self.latencies)
        return s[min(len(s) - 1, int(q * len(s)))] * 1000

    def line(self) -> str:
        return (
            f"{self.name:<28} {self.rps:8.1f} req/s  p50 {self.pct(0.50):6.2f} ms"
            f"  p99 {self.pct(0.99):6.2f} ms  server CPU {self.cpu_us_per_request:6.0f} us/req"
            f"  ok {self.ok}  errors {self.errors}"
        )


def merge(runs: list[Run]) -> Run:
    return Run(
        runs[0].name,
        sum(r.sent for r in runs),
        sum(r.ok for r in runs),
        sum(r.errors for r in runs),
        sum(r.seconds for r in runs),
        [x for r in runs for x in r.latencies],
        sum(r.server_cpu for r in runs),
    )


async def open_loop(
    client: httpx.AsyncClient,
    path: str,
    bodies: list[bytes],
    rps: float,
    seconds: float,
    name: str,
    workers: int,
) -> Run:
    """Offer `rps` for `seconds` (bounded by count and time): request i is sent at start + i/rps by one of
    `workers` keep-alive connections; latency runs from the send to the full response."""
    total = int(rps * seconds)
    lat: list[float] = []
    errors = 0
    next_i = 0
    start = time.perf_counter()
    deadline = start + seconds * 3 + 5

    async def worker() -> None:
        nonlocal errors, next_i
        while next_i < total and time.perf_counter() < deadline:
            i = next_i
            next_i += 1
            delay = start + i / rps - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            t = time.perf_counter()
            try:
                r = await client.post(path, content=bodies[i % len(bodies)])
                r.raise_for_status()
                lat.append(time.perf_counter() - t)
            except Exception:
                errors += 1

    await asyncio.gather(*(worker() for _ in range(workers)))
    return Run(name, total, len(lat), errors, time.perf_counter() - start, lat)


async def closed_loop(
    client: httpx.AsyncClient, path: str, bodies: list[bytes], workers: int, seconds: float, name: str
) -> Run:
    """As fast as `workers` concurrent keep-alive connections go: the saturated throughput."""
    lat: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()

    async def worker(w: int) -> None:
        nonlocal errors
        i = w
        while time.perf_counter() < deadline:
            t = time.perf_counter()
            try:
                r = await client.post(path, content=bodies[i % len(bodies)])
                r.raise_for_status()
                lat.append(time.perf_counter() - t)
            except Exception:
                errors += 1
            i += workers

    await asyncio.gather(*(worker(w) for w in range(workers)))
    return Run(name, len(lat) + errors, len(lat), errors, time.perf_counter() - start, lat)


def start_server(tmp: Path, port: int) -> subprocess.Popen[bytes]:
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
    return subprocess.Popen(args, cwd=ROOT, env=env)


async def main_async(args: argparse.Namespace) -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        proc = start_server(tmp, port)
        try:
            ctx = ssl.create_default_context(cafile=str(tmp / "ca.crt"))
            limits = httpx.Limits(
                max_connections=args.connections, max_keepalive_connections=args.connections
            )
            async with httpx.AsyncClient(
                verify=ctx, base_url=f"https://127.0.0.1:{port}", limits=limits, timeout=10
            ) as client:
                for _ in range(200):
                    try:
                        if (await client.get("/readyz")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    await asyncio.sleep(0.1)
                else:
                    print("server did not become ready", file=sys.stderr)
                    return 1
                bodies = realistic_reviews(64)
                sizes = [len(x) for x in bodies]
                reply = (await client.post("/mutate", content=bodies[0])).json()
                assert reply["response"].get("patchType") == "JSONPatch", (
                    "the benchmark must exercise a patch"
                )
                print(
                    f"review size {min(sizes)}-{max(sizes)} bytes (mean {statistics.mean(sizes):.0f}); "
                    f"1 uvicorn worker, TLS, keep-alive, {args.connections} connections; "
                    f"python {sys.version.split()[0]}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
                )
                # warm-up
                await closed_loop(client, "/mutate", bodies, 4, 1.0, "warm-up")
                await closed_loop(client, "/mutate-baseline", bodies, 4, 1.0, "warm-up")
                results: list[Run] = []
                sat: list[Run] = []
                # Interleave the two endpoints (several rounds) so drifting machine load hits both alike.
                for _ in range(args.rounds):
                    for path in ("/mutate", "/mutate-baseline"):
                        c0 = cpu_seconds(proc.pid)
                        run = await open_loop(
                            client,
                            path,
                            bodies,
                            args.rps,
                            args.seconds / args.rounds,
                            f"{path} @ {args.rps:.0f} rps",
                            args.connections,
                        )
                        run.server_cpu = cpu_seconds(proc.pid) - c0
                        results.append(run)
                for _ in range(args.rounds):
                    for path in ("/mutate", "/mutate-baseline"):
                        c0 = cpu_seconds(proc.pid)
                        run = await closed_loop(
                            client,
                            path,
                            bodies,
                            args.connections,
                            args.saturate_seconds / args.rounds,
                            f"{path} saturated",
                        )
                        run.server_cpu = cpu_seconds(proc.pid) - c0
                        sat.append(run)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    results = [merge([r for r in results if r.name == n]) for n in dict.fromkeys(r.name for r in results)]
    sat = [merge([r for r in sat if r.name == n]) for n in dict.fromkeys(r.name for r in sat)]
    for r in results + sat:
        print(r.line())
    m, base = results
    print(f"ratio at {args.rps:.0f} rps (throughput mutate/baseline): {m.rps / base.rps:.3f}")
    print(f"ratio saturated (throughput mutate/baseline): {sat[0].rps / sat[1].rps:.3f}")
    print(
        "ratio by server CPU per request (baseline/mutate, load-independent): "
        f"{base.cpu_us_per_request / m.cpu_us_per_request:.3f}"
    )
    print(f"p99 /mutate at {args.rps:.0f} rps: {m.pct(0.99):.2f} ms (goal < 5 ms)")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rps", type=float, default=500.0)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--saturate-seconds", type=float, default=5.0)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds per endpoint")
    args = p.parse_args()
    try:
        import uvloop

        return uvloop.run(main_async(args))
    except ImportError:
        return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
