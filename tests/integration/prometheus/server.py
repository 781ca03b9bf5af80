"""Starts a real Prometheus over a backfilled TSDB on a free 127.0.0.1 port (tests and bench)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

PROMETHEUS = "/usr/bin/prometheus"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Server:
    url: str
    pid: int


@contextmanager
def serving(
    name: str, argv: Sequence[str], port: int, health_path: str, log_path: Path, ready_timeout: float
) -> Iterator[Server]:
    """Runs `argv` (a server on 127.0.0.1:`port`, its output in `log_path`) until the block exits. Ready once
    `health_path` answers 200; an exit or `ready_timeout` before that raises with the log's tail."""
    url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(list(argv), stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_ready(proc, name, url + health_path, log_path, ready_timeout)
            yield Server(url, proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_ready(
    proc: subprocess.Popen[bytes], name: str, health_url: str, log_path: Path, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}: {_tail(log_path)}")
        try:
            if httpx.get(health_url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} not ready after {timeout}s: {_tail(log_path)}")
        time.sleep(0.1)


def _tail(log_path: Path) -> str:
    return log_path.read_text(errors="replace")[-2000:]


@contextmanager
def running_prometheus(
    data_dir: Path, retention_days: int, *, ready_timeout: float = 60.0
) -> Iterator[Server]:
    """Serves data_dir (no scrapes, no compaction of the backfilled 2 h blocks) until the block exits."""
    config = data_dir.parent / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1m\nscrape_configs: []\n")
    port = free_port()
    argv = [
        PROMETHEUS,
        f"--config.file={config}",
        f"--storage.tsdb.path={data_dir}",
        f"--storage.tsdb.retention.time={retention_days}d",
        "--storage.tsdb.min-block-duration=2h",
        "--storage.tsdb.max-block-duration=2h",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]
    log_path = data_dir.parent / "prometheus.log"
    with serving("prometheus", argv, port, "/-/ready", log_path, ready_timeout) as server:
        yield server


def rss_bytes(pid: int) -> int:
    """Resident set size of a process from /proc (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
