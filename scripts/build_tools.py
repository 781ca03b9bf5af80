#!/usr/bin/env python3
"""Builds every Go program the tests run, each part once per content of its inputs, and proves each output.

Parts (see _parts): `tools` is one Go module (tools/go.mod) holding the control plane, the kubelet,
containerd, etcd, helm, kubeconform, the Argo Rollouts controller and olm-validate on one dependency graph,
built by one `go build` so client-go and its friends compile once; `kwok` (tools/kwok) and `vpa-estimate`
(bench/quality/vpa) need other Kubernetes library versions and are modules of their own; `load`
(tools/load, the real node's load program) has no dependencies; `argo-crds` copies the CRDs of the Argo
Rollouts version the tools module pins, `olm-crds` those of the operator-framework API version it pins (the
schemas of CatalogSource and Subscription). scripts/build_images.py adds parts of its own kind (StepPart:
the real node's images) under the same rule.

A part is done when its stamp (a hash of its inputs and flags) matches and every output exists, is not
empty and answers its version command with the pinned version; otherwise it is built again. Outputs go to
$PODSIZER_CACHE/bin (binaries) and $PODSIZER_CACHE/share; a build writes into a temporary folder and moves
the outputs in only after they pass. A failing part stops the run (exit 1) naming its log. Standard
library only: it runs before the virtual environment exists.

    scripts/build_tools.py [PART ...]     # default: every part
    scripts/build_tools.py --list         # the parts and their outputs
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GO_ENV = {"CGO_ENABLED": "0", "GOFLAGS": "-mod=mod -buildvcs=false"}


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """$PODSIZER_CACHE, default ~/.cache/podsizer."""
    environ = os.environ if env is None else env
    return Path(environ.get("PODSIZER_CACHE") or Path.home() / ".cache" / "podsizer")


def pinned(go_mod: Path, module: str) -> str:
    """The version of `module` that go_mod requires (a require line, inside a block or not)."""
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod.read_text(), re.MULTILINE)
    if match is None:
        raise SystemExit(f"build: {go_mod} has no 'require {module} vX.Y.Z' line")
    return match.group(1)


@dataclass(frozen=True)
class Check:
    """How an output proves it runs: the arguments, optional stdin, and a text its output must contain."""

    args: tuple[str, ...]
    expect: str
    stdin: str | None = None


@dataclass(frozen=True)
class GoPart:
    """One `go build` of some main packages of one module into bin/, with the checks of each binary."""

    name: str
    module: Path
    packages: dict[str, str]  # binary name -> package path
    checks: dict[str, Check]
    ldflags: str = ""
    tags: str = ""
    extra_inputs: tuple[Path, ...] = ()

    def outputs(self, cache: Path) -> list[Path]:
        return [cache / "bin" / name for name in self.packages]


@dataclass(frozen=True)
class CopyPart:
    """Files of a module's source (in the module cache, read-only) copied into share/."""

    name: str
    module_dir: Path
    module: str
    source_glob: str
    dest: str
    required: tuple[str, ...] = field(default=())

    def outputs(self, cache: Path) -> list[Path]:
        return [cache / "share" / self.dest / name for name in self.required]


@dataclass(frozen=True)
class StepPart:
    """Outputs made by a function of another build script (scripts/build_images.py): its stamp hashes the
    `inputs` files (folders: every file under them) and `salt` (versions, flags, other parts' stamps);
    `problems` says what is wrong with its outputs (empty: present and proven); `build(cache, log)` makes
    them, raising BuildFailed."""

    name: str
    inputs: tuple[Path, ...]
    salt: str
    output_paths: Callable[[Path], list[Path]]
    problems: Callable[[Path], list[str]]
    build: Callable[[Path, Path], None]

    def outputs(self, cache: Path) -> list[Path]:
        return self.output_paths(cache)


Part = GoPart | CopyPart | StepPart
TOOLS = ROOT / "tools"
KWOK = TOOLS / "kwok"
LOAD = TOOLS / "load"
VPA = ROOT / "bench" / "quality" / "vpa"


# The CRDs the Argo Rollouts controller's informers wait for.
ARGO_CRD_KINDS = ("rollout", "experiment", "analysis-run", "analysis-template", "cluster-analysis-template")
# The OLM CRDs whose schemas validate the catalog examples (CatalogSource, Subscription) offline.
OLM_CRD_KINDS = ("catalogsources", "subscriptions")


def _parts() -> dict[str, Part]:
    k8s = pinned(TOOLS / "go.mod", "k8s.io/kubernetes")
    etcd = pinned(TOOLS / "go.mod", "go.etcd.io/etcd/server/v3")
    helm = pinned(TOOLS / "go.mod", "helm.sh/helm/v3")
    kubeconform = pinned(TOOLS / "go.mod", "github.com/yannh/kubeconform")
    argo = pinned(TOOLS / "go.mod", "github.com/argoproj/argo-rollouts")
    olm_api = pinned(TOOLS / "go.mod", "github.com/operator-framework/api")
    containerd = pinned(TOOLS / "go.mod", "github.com/containerd/containerd/v2")
    # Prometheus' module versions v0.3XY.Z are its releases 3.XY.Z
    prometheus_module = pinned(TOOLS / "go.mod", "github.com/prometheus/prometheus")
    prometheus = re.sub(r"^v0\.3(\d\d)\.", r"3.\1.", prometheus_module)
    kwok = pinned(KWOK / "go.mod", "sigs.k8s.io/kwok")
    load = load_version()
    minor = k8s.split(".")[1]
    argo_pkg = "github.com/argoproj/argo-rollouts"
    containerd_pkg = "github.com/containerd/containerd/v2"
    # One -ldflags for every binary of the module: -X of a symbol a binary lacks is ignored by the linker.
    # The stamps are what each project's own Makefile sets; helm's Kubernetes version is the one
    # `helm template` and `helm lint` assume without --kube-version.
    tools_ldflags = " ".join(
        [
            "-s -w",
            f"-X k8s.io/component-base/version.gitVersion={k8s}",
            f"-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor={minor}",
            f"-X go.etcd.io/etcd/api/v3/version.GitSHA=module-{etcd}",
            f"-X helm.sh/helm/v3/internal/version.version={helm}",
            *(f"-X helm.sh/helm/v3/pkg/{p}.k8sVersionMajor=1" for p in ("lint/rules", "chartutil")),
            *(f"-X helm.sh/helm/v3/pkg/{p}.k8sVersionMinor={minor}" for p in ("lint/rules", "chartutil")),
            f"-X main.version={kubeconform}",
            f"-X {argo_pkg}/utils/version.version={argo.removeprefix('v')}",
            f"-X {argo_pkg}/utils/version.gitTag={argo} -X {argo_pkg}/utils/version.gitTreeState=clean",
            f"-X {argo_pkg}/utils/version.gitCommit=module-{argo}",
            f"-X {containerd_pkg}/version.Version={containerd}",
            f"-X {containerd_pkg}/version.Revision=module-{containerd}",
            f"-X github.com/prometheus/common/version.Version={prometheus}",
            f"-X github.com/prometheus/common/version.Revision=module-{prometheus_module}",
            "-X github.com/prometheus/common/version.Branch=module",
        ]
    )
    kube = Check(("--version",), f"Kubernetes {k8s}")
    parts: list[Part] = [
        GoPart(
            name="tools",
            module=TOOLS,
            packages={
                "kube-apiserver": "./cmd/kube-apiserver",
                "kube-controller-manager": "./cmd/kube-controller-manager",
                "kube-scheduler": "./cmd/kube-scheduler",
                "kubelet": "./cmd/kubelet",
                "etcd": "./cmd/etcd",
                "olm-validate": "./cmd/olm-validate",
                "helm": "helm.sh/helm/v3/cmd/helm",
                "kubeconform": "github.com/yannh/kubeconform/cmd/kubeconform",
                "rollouts-controller": f"{argo_pkg}/cmd/rollouts-controller",
                "containerd": f"{containerd_pkg}/cmd/containerd",
                "containerd-shim-runc-v2": f"{containerd_pkg}/cmd/containerd-shim-runc-v2",
                "ctr": f"{containerd_pkg}/cmd/ctr",
                "prometheus": "github.com/prometheus/prometheus/cmd/prometheus",
            },
            checks={
                "kube-apiserver": kube,
                "kube-controller-manager": kube,
                "kube-scheduler": kube,
                "kubelet": kube,
                "etcd": Check(("--version",), f"etcd Version: {etcd.removeprefix('v')}"),
                "olm-validate": Check(("--version",), f"github.com/operator-framework/api@{olm_api}"),
                "helm": Check(("version", "--short"), helm),
                "kubeconform": Check(("-v",), kubeconform),
                "rollouts-controller": Check(("--version",), argo),
                "containerd": Check(("--version",), f"{containerd_pkg} {containerd}"),
                "containerd-shim-runc-v2": Check(("-v",), f"Version:  {containerd}"),
                "ctr": Check(("--version",), f"ctr {containerd_pkg} {containerd}"),
                "prometheus": Check(("--version",), f"prometheus, version {prometheus}"),
            },
            ldflags=tools_ldflags,
            # containerd's snapshotters for btrfs, devmapper and zfs need cgo (the node uses overlayfs);
            # Prometheus with only its Kubernetes service discovery (Debian's has none). The other programs'
            # packages and files are the same with and without them (go list -deps; docs/testing.md).
            tags="no_btrfs no_devmapper no_zfs remove_all_sd enable_kubernetes_sd",
        ),
        GoPart(
            name="kwok",
            module=KWOK,
            packages={"kwok": "."},
            checks={"kwok": Check(("--version",), kwok.removeprefix("v"))},
            ldflags="-s -w",
        ),
        GoPart(
            name="load",
            module=LOAD,
            packages={"podsizer-load": "."},
            checks={"podsizer-load": Check(("--version",), f"podsizer-load {load}")},
            ldflags="-s -w",
        ),
        GoPart(
            name="vpa-estimate",
            module=VPA,
            packages={"vpa-estimate": "."},
            checks={"vpa-estimate": Check((), "{}", stdin='{"workloads": []}')},
            ldflags="-s -w",
        ),
        CopyPart(
            name="argo-crds",
            module_dir=TOOLS,
            module=argo_pkg,
            source_glob="manifests/crds/*-crd.yaml",
            dest=f"argo-rollouts/{argo}/crds",
            required=tuple(f"{kind}-crd.yaml" for kind in ARGO_CRD_KINDS),
        ),
        CopyPart(
            name="olm-crds",
            module_dir=TOOLS,
            module="github.com/operator-framework/api",
            source_glob="crds/operators.coreos.com_*.yaml",
            dest=f"olm/{olm_api}/crds",
            required=tuple(f"operators.coreos.com_{kind}.yaml" for kind in OLM_CRD_KINDS),
        ),
    ]
    return {p.name: p for p in parts}


def load_version() -> str:
    """The version tools/load/main.go declares (`const version = "..."`): its binary's and its image's tag."""
    match = re.search(r'^const version = "([^"]+)"', (LOAD / "main.go").read_text(), re.MULTILINE)
    if match is None:
        raise SystemExit(f"build: {LOAD / 'main.go'} has no 'const version = \"...\"' line")
    return match.group(1)


def _go(args: Sequence[str], cwd: Path, log: Path) -> None:
    """Runs one go command, output appended to log; raises BuildFailed naming the log on failure."""
    env = {**os.environ, **GO_ENV}
    with log.open("a") as out:
        out.write(f"$ (cd {cwd} && go {' '.join(args)})\n")
        out.flush()
        proc = subprocess.run(["nice", "-n", "10", "go", *args], cwd=cwd, env=env, stdout=out, stderr=out)
    if proc.returncode != 0:
        raise BuildFailed(f"go {args[0]} exited {proc.returncode}", log)


class BuildFailed(Exception):
    def __init__(self, why: str, log: Path) -> None:
        super().__init__(why)
        self.log = log


def _module_files(module: Path) -> list[Path]:
    """The module's .go, go.mod and go.sum files, leaving out nested modules (each is a part of its own)."""
    files = []
    for directory, subdirs, names in os.walk(module):
        subdirs[:] = sorted(d for d in subdirs if not (Path(directory, d) / "go.mod").exists())
        files += [Path(directory, n) for n in sorted(names) if n.endswith(".go") or n in {"go.mod", "go.sum"}]
    return files


def _tree_files(paths: Sequence[Path]) -> list[Path]:
    """The files named and every file under the folders named (sorted; caches of Python left out)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(
                p for p in path.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
            )  # fmt: skip
        else:
            files.append(path)  # a missing file (another part's output not built yet) is hashed as missing
    return files


def _stamp(part: Part) -> str:
    """A hash of everything that decides the part's outputs: its sources, go.mod/go.sum, flags, Go version
    (a StepPart: its input files and salt)."""
    digest = hashlib.sha256()
    if isinstance(part, StepPart):
        digest.update(part.salt.encode())
        for path in _tree_files(part.inputs):
            digest.update(str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path).encode())
            digest.update(path.read_bytes() if path.is_file() else b"\0missing")
        return digest.hexdigest()[:20]
    go_version = subprocess.run(["go", "version"], capture_output=True, text=True, check=True).stdout
    digest.update(go_version.encode())
    if isinstance(part, GoPart):
        digest.update(json.dumps([part.packages, part.ldflags, part.tags, GO_ENV], sort_keys=True).encode())
        for path in [*_module_files(part.module), *part.extra_inputs]:
            digest.update(str(path.relative_to(part.module)).encode())
            digest.update(path.read_bytes())
    else:
        version = pinned(part.module_dir / "go.mod", part.module)
        digest.update(json.dumps([part.module, version, part.source_glob, part.required]).encode())
    return digest.hexdigest()[:20]


def _check(path: Path, check: Check) -> str:
    """'' when the binary at path answers its check; else why not."""
    if not path.is_file() or path.stat().st_size == 0:
        return f"{path} is missing or empty"
    if not os.access(path, os.X_OK):
        return f"{path} is not executable"
    try:
        proc = subprocess.run(
            [str(path), *check.args], input=check.stdin, capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{path} {' '.join(check.args)} did not run: {exc}"
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 or check.expect not in output:
        tail = " | ".join(output.strip().splitlines()[-3:])
        return f"{path} {' '.join(check.args)} exited {proc.returncode} without {check.expect!r}: {tail}"
    return ""


def _problems(part: Part, cache: Path) -> list[str]:
    """What is wrong with the part's outputs now (empty: all present and proven)."""
    if isinstance(part, StepPart):
        return part.problems(cache)
    if isinstance(part, GoPart):
        return [why for name in part.packages if (why := _check(cache / "bin" / name, part.checks[name]))]
    problems = []
    for path in part.outputs(cache):
        if not path.is_file() or path.stat().st_size == 0:
            problems.append(f"{path} is missing or empty")
        elif "kind: CustomResourceDefinition" not in path.read_text(errors="replace"):
            problems.append(f"{path} is not a CustomResourceDefinition")
    return problems


def _build_go(part: GoPart, cache: Path, log: Path) -> None:
    bin_dir = cache / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=bin_dir, prefix=f".{part.name}-") as tmp:
        # No `go mod download` first: it fetches every module of the build list, tests' dependencies too
        # (minutes on a fresh machine); `go build` fetches only the modules of the packages it compiles.
        # Several packages: -o names each binary after its package path's last element; one: after the binary.
        single = len(part.packages) == 1
        target = f"{tmp}/{next(iter(part.packages))}" if single else f"{tmp}/"
        args = ["build", "-trimpath", f"-ldflags={part.ldflags}", "-o", target]
        if part.tags:
            args.append(f"-tags={part.tags}")
        _go([*args, *part.packages.values()], part.module, log)
        built = Path(tmp)
        for name, check in part.checks.items():
            if why := _check(built / name, check):
                raise BuildFailed(f"built but unusable: {why}", log)
        for name in part.packages:
            os.replace(built / name, bin_dir / name)


def module_source(module: str, module_dir: Path, log: Path) -> Path:
    """The source folder of `module` at the version module_dir's go.mod pins, in the module cache (downloaded
    if absent); `go mod download`'s output in log."""
    version = pinned(module_dir / "go.mod", module)
    env = {**os.environ, **GO_ENV}
    proc = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        cwd=module_dir,
        env=env,
        capture_output=True,
        text=True,
    )
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise BuildFailed(f"go mod download {module}@{version} exited {proc.returncode}", log)
    return Path(json.loads(proc.stdout)["Dir"])


def _copy_from(source: Path, part: CopyPart, cache: Path, log: Path) -> None:
    """Copies the part's files from source into share/ (a temporary folder renamed into place)."""
    files = sorted(source.glob(part.source_glob))
    if not files:
        raise BuildFailed(f"no {part.source_glob} in {source}", log)
    dest = cache / "share" / part.dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}-"))
    for path in files:
        (tmp / path.name).write_bytes(path.read_bytes())
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)


def build_part(part: Part, cache: Path) -> str:
    """Builds the part unless its stamp matches and its outputs pass; returns 'cached' or 'built'."""
    stamps = cache / "bin" / ".stamps"
    stamps.mkdir(parents=True, exist_ok=True)
    logs = cache / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    stamp_file = stamps / part.name
    stamp = _stamp(part)
    if stamp_file.exists() and stamp_file.read_text().strip() == stamp:
        problems = _problems(part, cache)
        if not problems:
            return "cached"
        print(f"build: {part.name}: stamp matches but {problems[0]}; building again", flush=True)
    stamp_file.unlink(missing_ok=True)
    log = logs / f"{part.name}.log"
    log.write_text("")
    print(f"build: {part.name}: building (log: {log})", flush=True)
    if isinstance(part, GoPart):
        _build_go(part, cache, log)
    elif isinstance(part, StepPart):
        part.build(cache, log)
    else:
        _copy_from(module_source(part.module, part.module_dir, log), part, cache, log)
    if problems := _problems(part, cache):
        raise BuildFailed(f"outputs incomplete after the build: {'; '.join(problems)}", log)
    stamp_file.write_text(stamp + "\n")
    return "built"


def unbuilt(
    name: str, cache: Path, parts: Mapping[str, Part] | None = None, script: str = "build_tools"
) -> str:
    """'' when the part's stamp matches its current inputs and its outputs are there; else what to do.

    The tests' rule for "built" (cheap: no binary is run; the build ran the checks before it wrote the stamp).
    `parts` and `script`: another build script's parts (scripts/build_images.py).
    """
    part = (_parts() if parts is None else parts)[name]
    stamp_file = cache / "bin" / ".stamps" / part.name
    command = f"scripts/{script}.py {name}"
    if not stamp_file.exists():
        return f"{name} is not built (run {command})"
    if stamp_file.read_text().strip() != _stamp(part):
        return f"{name} was built from other sources than these (run {command})"
    missing = [str(p) for p in part.outputs(cache) if not p.is_file() or p.stat().st_size == 0]
    if missing:
        return f"{name}: {', '.join(missing)} missing (run {command})"
    return ""


def binary(name: str, cache: Path) -> Path:
    """Where a built program lives."""
    return cache / "bin" / name


def share(part_name: str, cache: Path) -> Path:
    """The folder a copy part fills (the Argo Rollouts CRDs, the OLM CRDs)."""
    part = _parts()[part_name]
    assert isinstance(part, CopyPart), part_name
    return cache / "share" / part.dest


def run(
    names: Sequence[str],
    report: Callable[[str, str, float], None],
    parts: Callable[[], Mapping[str, Part]] | None = None,
) -> int:
    """Builds the parts named (default: all of `parts()`, default this script's), in order; 1 at the first
    failure (its log's tail printed), 2 for an unknown name. The parts are made again before each one is
    built: a part may hash what the one before it built (scripts/build_images.py)."""
    make = _parts if parts is None else parts
    known = make()
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"build: unknown part(s) {', '.join(unknown)}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    cache = cache_dir()
    for name in names or list(known):
        start = time.monotonic()
        try:
            status = build_part(make()[name], cache)
        except BuildFailed as exc:
            report(name, "FAILED", time.monotonic() - start)
            print(f"build: {name} FAILED: {exc} (log: {exc.log}); last lines:", file=sys.stderr)
            for line in exc.log.read_text(errors="replace").splitlines()[-25:]:
                print(f"    {line}", file=sys.stderr)
            return 1
        elapsed = time.monotonic() - start
        report(name, status, elapsed)
        print(f"build: {name}: {status} in {elapsed:.0f} s", flush=True)
    return 0


def report_to(path: str | None) -> Callable[[str, str, float], None]:
    """Appends 'step<TAB>status<TAB>seconds' rows to the file test.sh prints at the end (when given)."""

    def report(name: str, status: str, seconds: float) -> None:
        if path:
            with open(path, "a") as out:
                out.write(f"build {name}\t{status}\t{seconds:.0f}\n")

    return report


def main(
    argv: Sequence[str] | None = None,
    parts: Callable[[], Mapping[str, Part]] = _parts,
    description: str = __doc__.splitlines()[0],
) -> int:
    """The command line of this script, and of scripts/build_images.py with its own parts."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("parts", nargs="*", help="parts to build (default: all)")
    parser.add_argument("--list", action="store_true", help="list the parts and their outputs")
    args = parser.parse_args(argv)
    if args.list:
        cache = cache_dir()
        for part in parts().values():
            print(f"{part.name}: {' '.join(str(p) for p in part.outputs(cache))}")
        return 0
    return run(args.parts, report_to(os.environ.get("BUILD_STEP_TIMES")), parts)


if __name__ == "__main__":
    sys.exit(main())
