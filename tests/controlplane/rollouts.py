"""The real Argo Rollouts controller for the e2e tests: what scripts/build-argo-rollouts.sh cached (the binary
and that version's CRDs), the controller process against the test apiserver, and its session fixture."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.controlplane.binaries import ROOT
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.processes import ManagedProcess, free_port

MODULE = "github.com/argoproj/argo-rollouts"
GO_MOD = Path(__file__).resolve().parent / "argo" / "go.mod"
BUILD_SCRIPT = ROOT / "scripts" / "build-argo-rollouts.sh"
REQUIRE_ENV = "PODSIZER_REQUIRE_CONTROLPLANE"
# Logged by controller.Manager.startLeading once every informer cache has synced and the workers run.
STARTED_LINE = "Started controller"


class RolloutsControllerError(RuntimeError):
    """The controller did not come up; the message carries its log tail."""


@dataclass(frozen=True)
class ArgoRolloutsBuild:
    """The cached rollouts-controller binary and the CRDs of the same module version."""

    controller: Path
    crds: tuple[Path, ...]
    version: str


def pinned_version(go_mod: Path = GO_MOD) -> str:
    """The argo-rollouts version the wrapper module requires, e.g. v1.10.1."""
    pattern = r"^\s*(?:require\s+)?github\.com/argoproj/argo-rollouts\s+(v\S+)"
    match = re.search(pattern, go_mod.read_text(), re.MULTILINE)
    if match is None:
        raise ValueError(f"{go_mod}: no 'require {MODULE} vX.Y.Z' line")
    return match.group(1)


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where the build script writes: ${PODSIZER_CACHE:-~/.cache/podsizer}/argo-rollouts/<version>."""
    environ: Mapping[str, str] = os.environ if env is None else env
    base = Path(environ.get("PODSIZER_CACHE") or Path.home() / ".cache" / "podsizer")
    return base / "argo-rollouts" / pinned_version()


def find_argo_rollouts(env: Mapping[str, str] | None = None) -> tuple[ArgoRolloutsBuild | None, str]:
    """The build, or None and a sentence saying what is missing and how to build it."""
    directory = cache_dir(env)
    controller = directory / "rollouts-controller"
    crds = tuple(sorted((directory / "crds").glob("*-crd.yaml")))
    missing = [] if os.access(controller, os.X_OK) else [str(controller)]
    if not any(p.name == "rollout-crd.yaml" for p in crds):
        missing.append(str(directory / "crds" / "rollout-crd.yaml"))
    if missing:
        script = BUILD_SCRIPT.relative_to(ROOT)
        return None, f"Argo Rollouts missing: {', '.join(missing)} (build it with {script})"
    return ArgoRolloutsBuild(controller, crds, pinned_version()), ""


def argo_crd_files(env: Mapping[str, str] | None = None) -> list[Path]:
    """The built version's CRDs (Rollout, Experiment, AnalysisRun, ...AnalysisTemplate); [] if unbuilt."""
    build, _ = find_argo_rollouts(env)
    return list(build.crds) if build is not None else []


class RolloutsController:
    """`rollouts-controller` against one apiserver: no leader election, metrics and healthz on free ports."""

    def __init__(self, build: ArgoRolloutsBuild, kubeconfig: Path, log_dir: Path) -> None:
        self.build = build
        self.kubeconfig = kubeconfig
        self.log_path = log_dir / "argo-rollouts.log"
        self.healthz_port = 0
        self.metrics_port = 0
        self._proc: ManagedProcess | None = None

    def argv(self) -> list[str]:
        """The command line. Upstream binds its two HTTP ports on 0.0.0.0 (no flag for the address)."""
        return [
            str(self.build.controller),
            f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            f"--metricsPort={self.metrics_port}",
            f"--healthzPort={self.healthz_port}",
            "--logformat=text",
            "--loglevel=info",
            "--rollout-threads=2",
            "--experiment-threads=1",
            "--analysis-threads=1",
            "--service-threads=1",
            "--ingress-threads=1",
        ]

    def start(self, timeout_s: float = 120.0) -> None:
        """Starts the controller; returns once /healthz answers and its informers have synced."""
        self.healthz_port, self.metrics_port = free_port(), free_port()
        self._proc = ManagedProcess("argo-rollouts", self.argv(), self.log_path)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.exit_code() is not None:
                raise RolloutsControllerError(f"exited before it was ready:\n{self.describe()}")
            if self._healthy() and STARTED_LINE in self.log_path.read_text(errors="replace"):
                return
            time.sleep(0.5)
        raise RolloutsControllerError(f"not ready after {timeout_s:.0f} s:\n{self.describe()}")

    def _healthy(self) -> bool:
        try:
            answer = httpx.get(f"http://127.0.0.1:{self.healthz_port}/healthz", timeout=2.0)
        except httpx.HTTPError:
            return False
        return answer.status_code == 200

    def alive(self) -> bool:
        """True while the process runs."""
        return self._proc is not None and self._proc.exit_code() is None

    def describe(self) -> str:
        """State and log tail, for a failure message."""
        return "not started" if self._proc is None else self._proc.describe_failure()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a grace period; safe to call twice."""
        if self._proc is not None:
            self._proc.stop()


@pytest.fixture(scope="session")
def argo_rollouts_build() -> ArgoRolloutsBuild:
    """The built controller and CRDs (podsizer_crds installs those CRDs when they are built). Skips when not
    built, or fails then under PODSIZER_REQUIRE_CONTROLPLANE (CI)."""
    build, reason = find_argo_rollouts()
    if build is None:
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{REQUIRE_ENV} is set but {reason}", pytrace=False)
        pytest.skip(f"E2E SKIPPED: {reason}; set {REQUIRE_ENV}=1 to make this a failure")
    return build


@pytest.fixture(scope="session")
def argo_rollouts(
    control_plane: ControlPlane,
    podsizer_crds: list[dict[str, object]],
    argo_rollouts_build: ArgoRolloutsBuild,
) -> Iterator[RolloutsController]:
    """The real Argo Rollouts controller against the session's apiserver, started once its CRDs are
    Established; its log joins the control plane's (copied to test-artifacts/ at the end)."""
    controller = RolloutsController(argo_rollouts_build, control_plane.kubeconfig_path, control_plane.log_dir)
    try:
        controller.start()
    except RolloutsControllerError as e:
        controller.stop()
        pytest.fail(f"Argo Rollouts controller did not start: {e}", pytrace=False)
    try:
        yield controller
    finally:
        controller.stop()
