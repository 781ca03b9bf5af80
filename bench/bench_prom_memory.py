"""Peak RSS of one Prometheus collection when Prometheus answers every range query with a huge matrix.

A fake Prometheus (tests/integration/faults/fakeprom.py, in its own process) answers the CPU and memory
range queries of one namespace with `--series` container series of 7 days of 5-minute points (plus
`--pad-bytes` of junk series whatever the range: an answer no split makes small). The
collection runs in a fresh process per case, so its peak RSS (ru_maxrss) is its own:

    .venv/bin/python bench/bench_prom_memory.py --series 1400 [--tree /tmp/podsizer-head]
    .venv/bin/python bench/bench_prom_memory.py --series 10 --pad-bytes 200000000

--tree runs the collection with another checkout's code (e.g. `git archive HEAD | tar -x -C DIR`), for a
before/after comparison; --max-response-bytes sets the cap where that code has one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SERVE = """
import sys, time
from tests.integration.faults.fakeprom import FakeProm, serve
mode = "huge" if int(sys.argv[2]) else "ok"
served = serve(FakeProm(mode=mode, wide=int(sys.argv[1]), pad_bytes=int(sys.argv[2])))
print(served.url, flush=True)
time.sleep(3600)
"""

COLLECT = """
import json, resource, sys, time, inspect
from datetime import UTC, datetime, timedelta
from recommender.input.prometheus import PromClient, PrometheusSource
from recommender.model import SourceError
url, cap = sys.argv[1], int(sys.argv[2])
kw = {"max_response_bytes": cap} if "max_response_bytes" in inspect.signature(PromClient).parameters else {}
end = datetime.now(UTC)
t0 = time.monotonic()
outcome = "ok"
try:
    data = PrometheusSource(PromClient(url, timeout=600, **kw), namespaces=["shop"]).dataset(
        end - timedelta(days=7), end
    )
    outcome = f"{len(data.containers)} container series, {len(data.skipped)} skipped"
except SourceError as exc:
    outcome = f"SourceError: {exc}"[:200]
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
took = time.monotonic() - t0
print(json.dumps({"rss_bytes": rss, "seconds": took, "outcome": outcome, "capped": bool(kw)}))
"""


def _answer_bytes(url: str) -> int:
    """Size of one memory range answer over the 7-day window, as the fake sends it."""
    import httpx

    end = time.time()
    form = {
        "query": 'max_over_time(container_memory_working_set_bytes{namespace="shop"}[300s])',
        "start": f"{end - 7 * 86400:.0f}",
        "end": f"{end:.0f}",
        "step": "300",
    }
    # streamed: a child inherits this process's peak RSS (ru_maxrss survives fork and exec)
    with httpx.stream("POST", f"{url}/api/v1/query_range", data=form, timeout=600) as resp:
        return sum(len(chunk) for chunk in resp.iter_bytes())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--series", type=int, default=2000, help="container series per answer")
    parser.add_argument(
        "--pad-bytes", type=int, default=0, help="junk series of this many bytes in every range answer"
    )
    parser.add_argument("--tree", type=Path, default=ROOT, help="checkout whose recommender code runs")
    parser.add_argument("--max-response-bytes", type=int, default=64 * 2**20)
    args = parser.parse_args()
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    fake = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(args.series), str(args.pad_bytes)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert fake.stdout is not None
        url = fake.stdout.readline().strip()
        size = _answer_bytes(url)
        run = subprocess.run(
            [sys.executable, "-c", COLLECT, url, str(args.max_response_bytes)],
            cwd=args.tree,
            env=os.environ | {"PYTHONPATH": str(args.tree)},
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )
        if run.returncode != 0:
            sys.exit(f"collection failed: {run.stderr[-2000:]}")
        got = json.loads(run.stdout.strip().splitlines()[-1])
        print(
            f"tree={args.tree} answer={size / 1e6:.1f} MB per range query capped={got['capped']} "
            f"cap={args.max_response_bytes} peak_rss={got['rss_bytes'] / 1e6:.0f} MB "
            f"time={got['seconds']:.1f}s outcome={got['outcome']}"
        )
    finally:
        fake.terminate()
        fake.wait(timeout=10)


if __name__ == "__main__":
    main()
