"""The real Argo Rollouts controller for the e2e tests: what scripts/build_tools.py built (the binary, part
`tools`, and that version's CRDs, part `argo-crds`), the controller process against the test apiserver, and
its session fixture."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.controlplane.binaries import ROOT, build_tools
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.processes import ManagedProcess, free_port

MODULE = "github.com/argoproj/argo-rollouts"
GO_MOD = ROOT / "tools" / "go.mod"
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
    """The argo-rollouts version the tools module requires, e.g. v1.10.1."""
    version: str = build_tools().pinned(go_mod, MODULE)
    return version


def find_argo_rollouts(env: Mapping[str, str] | None = None) -> tuple[ArgoRolloutsBuild | None, str]:
    """The build, or None and a sentence saying what is missing and how to build it."""
    tools = build_tools()
    cache = tools.cache_dir(os.environ if env is None else env)
    reasons = [why for part in ("tools", "argo-crds") if (why := tools.unbuilt(part, cache))]
    if reasons:
        return None, "Argo Rollouts: " + "; ".join(reasons)
    crds = tuple(sorted(tools.share("argo-crds", cache).glob("*-crd.yaml")))
    return ArgoRolloutsBuild(tools.binary("rollouts-controller", cache), crds, pinned_version()), ""


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
