"""VPA's own estimator (the Go program bench/quality/vpa, built by scripts/build_tools.py) on a history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from bench.quality.prom import stamp
from bench.quality.score import Sizing
from bench.quality.traces import Cluster, history

ROOT = Path(__file__).resolve().parents[2]
VERSION = "v1.8.1"


def binary() -> Path:
    cache = Path(os.environ.get("PODSIZER_CACHE", str(Path.home() / ".cache" / "podsizer")))
    return cache / "bin" / "vpa-estimate"


def ensure_built() -> Path:
    """scripts/build_tools.py vpa-estimate (a no-op when the build for these sources is cached)."""
    script = ROOT / "scripts" / "build_tools.py"
    proc = subprocess.run([sys.executable, str(script), "vpa-estimate"], capture_output=True, text=True)
    path = binary()
    if proc.returncode != 0 or not path.exists():
        raise RuntimeError(f"{path} was not built: {proc.stdout}{proc.stderr}")
    return path


def request_document(cluster: Cluster, t: datetime) -> dict[str, object]:
    """The Go program's input: every workload's containers, each pod's per-minute samples and OOM kills."""
    workloads: list[dict[str, object]] = []
    for p in cluster.patterns:
        containers: list[dict[str, object]] = []
        for c in p.containers:
            pods, cpu, mem = history(p, c)
            containers.append(
                {
                    "name": c,
                    "pods": [
                        {
                            "start": stamp(t, pod.first),
                            "step": 60,
                            "cpu": cs.tolist(),
                            "memory": ms.tolist(),
                            "memory_request": pod.requests[c].get("memory", 0.0),
                            "ooms": [stamp(t, m) for name, m in pod.ooms if name == c],
                        }
                        for pod, cs, ms in zip(pods, cpu, mem, strict=True)
                    ],
                }
            )
        workloads.append({"key": p.name, "containers": containers})
    return {"workloads": workloads}


def recommend(cluster: Cluster, t: datetime) -> dict[tuple[str, str], Sizing]:
    """VPA's target per (pattern, container); the memory limit keeps the pod spec's limit/request ratio, as
    VPA's default controlledValues RequestsAndLimits does (no CPU limits in these specs)."""
    done = subprocess.run(
        [str(ensure_built())],
        input=json.dumps(request_document(cluster, t)),
        capture_output=True,
        text=True,
        check=True,
    )
    out: dict[str, dict[str, dict[str, float]]] = json.loads(done.stdout)
    result: dict[tuple[str, str], Sizing] = {}
    for p in cluster.patterns:
        spec = p.pods[-1]
        for c in p.containers:
            target = out[f"{p.name}/{c}"]["target"]
            ratio = spec.limits[c].get("memory", 0.0) / spec.requests[c]["memory"]
            limit = target["memory"] * ratio if ratio else None
            result[(p.name, c)] = Sizing(target["cpu"], target["memory"], limit)
    return result
