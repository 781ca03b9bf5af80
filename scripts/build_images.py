#!/usr/bin/env python3
"""Builds the real node's images without a registry, once per content of their inputs, and proves each.

No image registry can be reached here, so every image the real-node tests run is made on this machine with
buildah (chroot isolation, its own storage under $PODSIZER_CACHE/images, never the machine's) and saved as a
docker archive that the node's containerd imports (`ctr images import`):

- `pause`: upstream's pause.c from the k8s.io/kubernetes module the tools module pins, compiled as its
  Makefile does (`gcc -Os -Wall -Werror -static`), proven by `pause -v`;
- `node-images`: the pause image (FROM scratch, /pause, USER 65535:65535: upstream's build/pause/Dockerfile),
  tagged as containerd's sandbox image, and the load program's (scripts/build_tools.py part `load`);
- `base-image`: the stand-in for the Dockerfile's UBI 9 python-311 base: `debootstrap --variant=minbase`
  of Debian bookworm (Python 3.11) laid out as UBI's (tests/controlplane/images/base.Containerfile), proven
  by running it: Python 3.11 from /opt/app-root, uid 1001, group 0;
- `podsizer-image`: the project's Dockerfile built FROM that base (--build-arg BASE), proven by running
  `podsizer --version` in it as an arbitrary uid in group 0.

Runs after scripts/system-deps.sh (buildah, debootstrap, gcc) and scripts/build_tools.py (the load program).
Standard library only. Same rule, stamps, logs and step-time rows as scripts/build_tools.py.

    scripts/build_images.py [PART ...]     # default: every part
    scripts/build_images.py --list         # the parts and their outputs
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_tools as bt  # the shared rule: stamps, logs, checks, the step table

ROOT = bt.ROOT
IMAGES_DIR = ROOT / "tests" / "controlplane" / "images"
BASE_CONTAINERFILE = IMAGES_DIR / "base.Containerfile"
DEBIAN_SUITE = "bookworm"  # Python 3.11, as UBI 9's python-311
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_PACKAGES = ("python3", "python3-venv", "ca-certificates")
BASE_REF = f"localhost/podsizer-test-base:{DEBIAN_SUITE}"
# The uid OpenShift's restricted-v2 would pick from a namespace's range: not the image's 1001, group 0.
ARBITRARY_UID = "1000680000"
# What the Dockerfile COPYs (and .dockerignore lets through): the image's inputs.
DOCKERFILE_INPUTS = (
    "Dockerfile",
    ".dockerignore",
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "podsizer",
    "recommender",
    "console",
    "webhook",
    "updater",
    "certs",
)
# This machine's pip settings and CA bundle, mounted into the Dockerfile's RUN steps when present (a
# TLS-intercepting proxy: pip in the build must trust what pip here trusts). None of it stays in the image.
BUILD_MOUNTS = ("/etc/pip.conf", "/etc/ssl/certs/ca-certificates.crt")


def project_version() -> str:
    """pyproject.toml's version: the podsizer image's tag."""
    match = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    if match is None:
        raise SystemExit("build: pyproject.toml has no version line")
    return match.group(1)


def pause_tag() -> str:
    """The pause version upstream's build/pause/Makefile names (`TAG ?= 3.10.1`), in the pinned module."""
    makefile = _kubernetes_source() / "build" / "pause" / "Makefile"
    match = re.search(r"^TAG \?= (\S+)", makefile.read_text(), re.MULTILINE)
    if match is None:
        raise SystemExit(f"build: {makefile} has no 'TAG ?= ...' line")
    return match.group(1)


def refs() -> dict[str, str]:
    """Image name -> reference, as the archives name them and the node's pods use them."""
    return {
        "pause": f"registry.k8s.io/pause:{pause_tag()}",
        "load": f"localhost/podsizer-load:{bt.load_version()}",
        "podsizer": f"localhost/podsizer:{project_version()}",
    }


def archive(cache: Path, image: str) -> Path:
    """Where an image's docker archive goes."""
    return cache / "images" / f"{image}.tar"


def _images_dir(cache: Path) -> Path:
    path = cache / "images"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _kubernetes_source() -> Path:
    """k8s.io/kubernetes's source in the Go module cache (downloaded if absent): pause.c and its Makefile."""
    log = bt.cache_dir() / "logs" / "kubernetes-source.log"
    try:
        return bt.module_source("k8s.io/kubernetes", bt.TOOLS, log)
    except bt.BuildFailed as exc:
        raise SystemExit(f"build: {exc} (log: {log})") from None


def _run(args: Sequence[str], log: Path, cwd: Path | None = None) -> str:
    """Runs one command under nice, its output appended to log; its stdout; BuildFailed naming the log."""
    with log.open("a") as out:
        out.write(f"$ {' '.join(args)}\n")
        out.flush()
        proc = subprocess.run(
            ["nice", "-n", "10", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=out, text=True
        )
        out.write(proc.stdout)
    if proc.returncode != 0:
        raise bt.BuildFailed(f"{args[0]} {args[1] if len(args) > 1 else ''} exited {proc.returncode}", log)
    return proc.stdout


def buildah(cache: Path) -> list[str]:
    """buildah on the tests' own image storage (never the machine's /var/lib/containers)."""
    images = cache / "images"
    return [
        "buildah",
        "--root",
        str(images / "storage"),
        "--runroot",
        str(images / "runroot"),
        "--storage-driver",
        "overlay",
    ]


def _has_image(cache: Path, ref: str) -> bool:
    proc = subprocess.run([*buildah(cache), "inspect", "--type", "image", ref], capture_output=True)
    return proc.returncode == 0


def _run_in(cache: Path, ref: str, user: str, command: Sequence[str], log: Path) -> str:
    """Runs `command` in a container of image ref as user (buildah run, chroot isolation); its output."""
    b = buildah(cache)
    container = _run([*b, "from", "--pull=never", "--quiet", ref], log).strip()
    try:
        return _run([*b, "run", "--isolation", "chroot", "--user", user, container, "--", *command], log)
    finally:
        _run([*b, "rm", container], log)


def _save(cache: Path, ref: str, image: str, log: Path) -> None:
    """The image as a docker archive named ref (written beside, then moved into place)."""
    dest = archive(cache, image)
    tmp = dest.with_suffix(".tar.tmp")
    tmp.unlink(missing_ok=True)
    _run([*buildah(cache), "push", "--quiet", ref, f"docker-archive:{tmp}:{ref}"], log)
    os.replace(tmp, dest)


def archive_problems(path: Path, ref: str) -> list[str]:
    """What is wrong with a docker archive: missing, not naming ref, or missing the blobs it names."""
    if not path.is_file() or path.stat().st_size == 0:
        return [f"{path} is missing or empty"]
    try:
        with tarfile.open(path) as tar:
            names = set(tar.getnames())
            member = tar.extractfile("manifest.json")
            manifest = json.loads(member.read()) if member is not None else []
    except (OSError, tarfile.TarError, KeyError, ValueError) as exc:
        return [f"{path} is not a docker archive: {exc}"]
    entry = next((m for m in manifest if ref in (m.get("RepoTags") or [])), None)
    if entry is None:
        return [f"{path} does not hold {ref}"]
    missing = [n for n in [entry.get("Config", ""), *entry.get("Layers", [])] if n not in names]
    return [f"{path}: {ref} names missing blobs {missing}"] if missing else []


# ---- pause -----------------------------------------------------------------------------------------


def _pause_check() -> bt.Check:
    return bt.Check(("-v",), f"pause.c v{pause_tag()}")


def _build_pause(cache: Path, log: Path) -> None:
    source = _kubernetes_source() / "build" / "pause" / "linux" / "pause.c"
    bin_dir = cache / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    tmp = bin_dir / ".pause.tmp"
    _run(
        [
            "gcc",
            "-Os",
            "-Wall",
            "-Werror",
            "-static",
            f"-DVERSION=v{pause_tag()}",
            "-o",
            str(tmp),
            str(source),
        ],
        log,
    )
    if why := bt._check(tmp, _pause_check()):
        raise bt.BuildFailed(f"built but unusable: {why}", log)
    os.replace(tmp, bin_dir / "pause")


def _pause_problems(cache: Path) -> list[str]:
    why = bt._check(cache / "bin" / "pause", _pause_check())
    return [why] if why else []


# ---- node-images: pause and the load program --------------------------------------------------------


def _scratch_image(cache: Path, binary: Path, ref: str, user: str, log: Path) -> None:
    """FROM scratch, the static binary at /<name>, USER user, ENTRYPOINT it: committed as ref."""
    b = buildah(cache)
    container = _run([*b, "from", "scratch"], log).strip()
    try:
        _run([*b, "copy", "--chmod", "0755", container, str(binary), f"/{binary.name}"], log)
        _run(
            [
                *b,
                "config",
                "--entrypoint",
                json.dumps([f"/{binary.name}"]),
                "--user",
                user,
                "--os",
                "linux",
                "--arch",
                "amd64",
                container,
            ],
            log,
        )
        _run([*b, "commit", "--quiet", "--rm", container, ref], log)
    except bt.BuildFailed:
        subprocess.run([*b, "rm", container], capture_output=True)
        raise


def _build_node_images(cache: Path, log: Path) -> None:
    r = refs()
    _scratch_image(cache, cache / "bin" / "pause", r["pause"], "65535:65535", log)
    _scratch_image(cache, bt.binary("podsizer-load", cache), r["load"], "65532:65532", log)
    for image in ("pause", "load"):
        _save(cache, r[image], image, log)


def _node_images_problems(cache: Path) -> list[str]:
    r = refs()
    return [why for image in ("pause", "load") for why in archive_problems(archive(cache, image), r[image])]


# ---- base-image: the UBI stand-in ------------------------------------------------------------------


def _base_record(cache: Path) -> Path:
    return cache / "images" / "base-image.json"


def _prove_base(cache: Path, log: Path) -> dict[str, str]:
    """Runs the base: Python 3.11 from /opt/app-root's venv, as uid 1001 in group 0."""
    out = _run_in(
        cache, BASE_REF, "1001", ["sh", "-c", "command -v python; python --version; id -u; id -g"], log
    ).split()
    facts = {"python": out[0], "version": out[2] if len(out) > 2 else "", "uid": out[-2], "gid": out[-1]}
    if facts["python"] != "/opt/app-root/bin/python" or not facts["version"].startswith("3.11"):
        raise bt.BuildFailed(f"base image: python is {facts}, not 3.11 from /opt/app-root/bin", log)
    if (facts["uid"], facts["gid"]) != ("1001", "0"):
        raise bt.BuildFailed(f"base image: runs as {facts['uid']}:{facts['gid']}, not 1001:0", log)
    return facts


def _build_base(cache: Path, log: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix=".base-", dir=_images_dir(cache)))
    try:
        rootfs = work / "rootfs"
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(DEBIAN_PACKAGES)}",
                DEBIAN_SUITE,
                str(rootfs),
                DEBIAN_MIRROR,
            ],
            log,
        )
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in (rootfs / leftover).glob("*"):
                if path.is_file():
                    path.unlink()
        context = work / "context"
        context.mkdir()
        _run(["tar", "-C", str(rootfs), "-cf", str(context / "rootfs.tar"), "."], log)
        shutil.rmtree(rootfs)
        shutil.copy(BASE_CONTAINERFILE, context / "Containerfile")
        _run(
            [
                *buildah(cache),
                "bud",
                "--isolation",
                "chroot",
                "--quiet",
                "--layers=false",
                "-t",
                BASE_REF,
                str(context),
            ],
            log,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    facts = _prove_base(cache, log)
    image_id = _run(
        [*buildah(cache), "inspect", "--type", "image", "--format", "{{.FromImageID}}", BASE_REF], log
    ).strip()
    _base_record(cache).write_text(json.dumps({"ref": BASE_REF, "id": image_id, **facts}) + "\n")


def _base_problems(cache: Path) -> list[str]:
    record = _base_record(cache)
    if not record.is_file():
        return [f"{record} is missing"]
    if not _has_image(cache, BASE_REF):
        return [f"{BASE_REF} is not in {cache / 'images' / 'storage'}"]
    return []


# ---- podsizer-image: the project's Dockerfile -------------------------------------------------------


def _build_podsizer(cache: Path, log: Path) -> None:
    ref = refs()["podsizer"]
    mounts = [arg for path in BUILD_MOUNTS if Path(path).is_file() for arg in ("-v", f"{path}:{path}:ro")]
    _run(
        [
            *buildah(cache),
            "bud",
            "--isolation",
            "chroot",
            "--layers=false",
            "--pull=never",
            *mounts,
            "--build-arg",
            f"BASE={BASE_REF}",
            "-t",
            ref,
            "-f",
            str(ROOT / "Dockerfile"),
            str(ROOT),
        ],
        log,
    )
    answer = _run_in(cache, ref, f"{ARBITRARY_UID}:0", ["podsizer", "--version"], log)
    if f"podsizer {project_version()}" not in answer:
        raise bt.BuildFailed(
            f"podsizer image: `podsizer --version` as uid {ARBITRARY_UID} said {answer!r}", log
        )
    _save(cache, ref, "podsizer", log)


def _podsizer_problems(cache: Path) -> list[str]:
    return archive_problems(archive(cache, "podsizer"), refs()["podsizer"])


def _parts() -> dict[str, bt.Part]:
    tools_parts = bt._parts()
    cache = bt.cache_dir()
    kubernetes = bt.pinned(bt.TOOLS / "go.mod", "k8s.io/kubernetes")
    gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    base_salt = json.dumps([DEBIAN_SUITE, DEBIAN_MIRROR, DEBIAN_PACKAGES, BASE_REF])
    parts = [
        bt.StepPart(
            name="pause",
            inputs=(),
            salt=json.dumps(["pause.c", kubernetes, gcc]),
            output_paths=lambda c: [c / "bin" / "pause"],
            problems=_pause_problems,
            build=_build_pause,
        ),
        bt.StepPart(
            name="node-images",
            inputs=(cache / "bin" / "pause", bt.binary("podsizer-load", cache)),
            salt=json.dumps(["node-images", refs()["pause"], refs()["load"], bt._stamp(tools_parts["load"])]),
            output_paths=lambda c: [archive(c, "pause"), archive(c, "load")],
            problems=_node_images_problems,
            build=_build_node_images,
        ),
        bt.StepPart(
            name="base-image",
            inputs=(BASE_CONTAINERFILE,),
            salt=base_salt,
            output_paths=lambda c: [_base_record(c)],
            problems=_base_problems,
            build=_build_base,
        ),
        bt.StepPart(
            name="podsizer-image",
            inputs=tuple(ROOT / name for name in DOCKERFILE_INPUTS),
            # the base's record holds its image id: a rebuilt base makes a new podsizer image
            salt=json.dumps(["podsizer-image", refs()["podsizer"], _read(_base_record(cache)), BUILD_MOUNTS]),
            output_paths=lambda c: [archive(c, "podsizer")],
            problems=_podsizer_problems,
            build=_build_podsizer,
        ),
    ]
    return {p.name: p for p in parts}


def _read(path: Path) -> str:
    return path.read_text() if path.is_file() else ""


def parts() -> dict[str, bt.Part]:
    """This script's parts (in build order), for the tests' rule (build_tools.unbuilt)."""
    return _parts()


def main(argv: Sequence[str] | None = None) -> int:
    return bt.main(argv, _parts, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
