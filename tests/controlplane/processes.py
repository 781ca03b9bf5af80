"""Child processes of the control plane: one log file each, stopped for sure; free loopback ports."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL me when the test process dies, even if it is killed itself."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def log_tail(path: Path, lines: int = 60) -> str:
    """The last `lines` lines of a log file, or a note that it is missing."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


class ManagedProcess:
    """One child process in its own session, its stdout and stderr in `log_path`."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            log.write(("$ " + " ".join(self.argv) + "\n").encode())
            log.flush()
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._proc.pid

    def exit_code(self) -> int | None:
        """The exit status if the process has ended, else None."""
        return self._proc.poll()

    def describe_failure(self) -> str:
        """Name, exit status and log tail, for an error message."""
        code = self.exit_code()
        state = "still running" if code is None else f"exited with {code}"
        return f"{self.name} ({state}), log {self.log_path}:\n{log_tail(self.log_path)}"

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the process group, then SIGKILL it after `grace_s`; safe to call twice."""
        if self._proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGTERM)
        try:
            self._proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL the process group at once (as a crash or OOM kill would) and reap it."""
        if self._proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait(timeout=30)
