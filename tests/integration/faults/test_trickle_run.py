"""`podsizer run` against a Prometheus that trickles its answers' header bytes (tests/support/trickle.py): the
cycle that waits on it is an overrun /livez names, and SIGTERM stops the process within seconds, in the
middle of the read."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.controlplane.processes import free_port
from tests.support.trickle import TrickleServer

ROOT = Path(__file__).resolve().parents[3]
GRACE_S = 2
TIMEOUT_S = 90  # one request may take this long: far past the grace, so the trickled read is an overrun
LASTING_S = 180.0


def _start(url: str, port: int, tmp_path: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSIZER_")}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    argv = [str(Path(sys.executable).with_name("podsizer")), "run", "--source=prometheus"]
    argv += [f"--prometheus-url={url}", f"--prometheus-timeout-seconds={TIMEOUT_S}"]
    argv += [f"--liveness-grace-seconds={GRACE_S}", f"--metrics-port={port}", "--metrics-host=127.0.0.1"]
    argv += ["--store=json", f"--store-file={tmp_path / 'recs.json'}", "--namespaces=shop"]
    log = (tmp_path / "run.log").open("wb")
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)


def _livez(port: int) -> httpx.Response | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/livez", timeout=5)
    except httpx.HTTPError:
        return None  # not listening yet


def _wait_for_overrun(proc: subprocess.Popen[bytes], port: int, server: TrickleServer, log: Path) -> str:
    """/livez's 503 body, waiting while the process starts and the read begins (a slow machine takes
    longer); fails only when the trickled read is over and /livez never said so."""
    while time.monotonic() < server.started + LASTING_S:
        assert proc.poll() is None, f"podsizer run exited {proc.returncode}:\n{log.read_text()[-3000:]}"
        got = _livez(port)
        if got is not None and got.status_code == 503:
            return got.text
        time.sleep(0.2)
    raise AssertionError(f"/livez never failed during the trickled read:\n{log.read_text()[-3000:]}")


def test_a_trickled_read_fails_livez_naming_the_overrun_and_sigterm_stops_run_within_seconds(
    tmp_path: Path,
) -> None:
    port = free_port()
    with TrickleServer(every=0.5, phase="headers", lasting=LASTING_S) as server:
        proc = _start(server.url, port, tmp_path)
        try:
            reason = _wait_for_overrun(proc, port, server, tmp_path / "run.log")
            assert server.answering == 1, "the overrun is the read in progress"
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            status = proc.wait(timeout=LASTING_S)
            stopped_in = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert reason.startswith("cycle overran: no progress for "), reason
    assert f"more than PODSIZER_LIVENESS_GRACE_SECONDS ({GRACE_S}s) allows" in reason
    assert "last progress: the cycle started" in reason
    assert stopped_in < 10, f"SIGTERM took {stopped_in:.1f}s"
    assert status == 0, (tmp_path / "run.log").read_text()[-3000:]
