"""The Dockerfile follows hadolint's rules and Red Hat's container certification (preflight) requirements."""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass

import pytest

from tests.integration.install.support import ROOT

REQUIRED_LABELS = {
    "name",
    "vendor",
    "version",
    "release",
    "summary",
    "description",
    "maintainer",
    "io.k8s.display-name",
}
LAYER_INSTRUCTIONS = {"RUN", "COPY", "ADD"}


@dataclass(frozen=True)
class Instruction:
    line: int
    keyword: str
    args: str


def parse(text: str) -> list[Instruction]:
    """Dockerfile instructions with continuation lines joined and comments dropped."""
    out: list[Instruction] = []
    buf, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):
            continue
        if not buf:
            start = n
        if line.endswith("\\"):
            buf += line[:-1].rstrip() + " "
            continue
        buf += line
        keyword, _, args = buf.partition(" ")
        out.append(Instruction(start, keyword.upper(), args.strip()))
        buf = ""
    assert not buf, "Dockerfile ends inside a continued line"
    return out


def stages(instructions: list[Instruction]) -> list[list[Instruction]]:
    """The build stages; the global ARGs before the first FROM (nothing else may stand there) left out."""
    out: list[list[Instruction]] = []
    for ins in instructions:
        if ins.keyword == "FROM":
            out.append([])
        if not out and ins.keyword == "ARG":
            continue
        assert out, f"line {ins.line}: {ins.keyword} before FROM"
        out[-1].append(ins)
    return out


def global_args(instructions: list[Instruction]) -> dict[str, str]:
    """The ARGs before the first FROM with their defaults: what FROM ${NAME} expands to."""
    found: dict[str, str] = {}
    for ins in instructions:
        if ins.keyword == "FROM":
            break
        name, _, default = ins.args.partition("=")
        found[name] = default
    return found


def labels(stage: list[Instruction]) -> dict[str, str]:
    found: dict[str, str] = {}
    for ins in stage:
        if ins.keyword == "LABEL":
            for token in shlex.split(ins.args):
                key, _, value = token.partition("=")
                found[key] = value
    return found


@pytest.fixture(scope="module")
def dockerfile() -> list[Instruction]:
    return parse((ROOT / "Dockerfile").read_text())


def test_base_images_are_pinned_ubi9_python(dockerfile: list[Instruction]) -> None:
    """By default: the BASE build argument (tests build FROM a stand-in of its layout) defaults to it."""
    assert any(ins.keyword == "FROM" for ins in dockerfile)
    defaults = global_args(dockerfile)
    stage_names = set()
    for ins in dockerfile:
        if ins.keyword != "FROM":
            continue
        image = re.sub(r"\$\{(\w+)\}", lambda m: defaults[m.group(1)], ins.args.split()[0])
        if image in stage_names:
            continue
        parts = ins.args.split()
        if len(parts) == 3 and parts[1].upper() == "AS":
            stage_names.add(parts[2])
        repo, _, tag = image.rpartition(":")
        assert repo == "registry.access.redhat.com/ubi9/python-311", image  # preflight: UBI base
        assert tag and tag != "latest" and re.fullmatch(r"\d+\.\d+-\d+", tag), (
            f"DL3006/DL3007: unpinned {image}"
        )


def test_final_user_is_numeric_non_root(dockerfile: list[Instruction]) -> None:
    users = [i.args for i in stages(dockerfile)[-1] if i.keyword == "USER"]
    assert users, "DL3002: no USER in the final stage"
    assert re.fullmatch(r"[1-9]\d*(:0)?", users[-1]), (
        f"final USER must be a numeric non-root UID: {users[-1]}"
    )


def test_no_add_no_healthcheck_no_latest(dockerfile: list[Instruction]) -> None:
    keywords = [i.keyword for i in dockerfile]
    assert "ADD" not in keywords, "DL3020: use COPY (and never ADD a URL)"
    assert "HEALTHCHECK" not in keywords, "Kubernetes probes, not HEALTHCHECK"
    assert "MAINTAINER" not in keywords, "DL4000: MAINTAINER is deprecated"
    assert all(":latest" not in i.args for i in dockerfile)


def test_pip_never_caches_and_no_sudo_or_apt(dockerfile: list[Instruction]) -> None:
    runs = [i for i in dockerfile if i.keyword == "RUN"]
    assert runs
    for ins in runs:
        for cmd in re.split(r"&&|;", ins.args):
            words = cmd.split()
            if words[:2] == ["pip", "install"] or words[:3] == ["python", "-m", "pip"]:
                assert "--no-cache-dir" in words, f"DL3042: line {ins.line}: {cmd.strip()}"
            if words[:2] == ["pip", "wheel"]:
                assert "--no-cache-dir" in words, f"line {ins.line}: {cmd.strip()}"
            assert "sudo" not in words, f"DL3004: line {ins.line}"
            assert not {"apt-get", "apt"} & set(words), f"line {ins.line}: not a Debian base"
            assert words[:1] != ["cd"], f"DL3003: use WORKDIR, line {ins.line}"


def test_red_hat_labels_and_licenses(dockerfile: list[Instruction]) -> None:
    final = stages(dockerfile)[-1]
    found = labels(final)
    missing = REQUIRED_LABELS - found.keys()
    assert not missing, f"missing labels {sorted(missing)}"
    assert all(found[k] for k in REQUIRED_LABELS)
    copies = [i.args.split() for i in final if i.keyword == "COPY"]
    assert any(c[-1].startswith("/licenses") and "LICENSE" in c for c in copies), (
        "preflight: license in /licenses"
    )
    assert "Apache License" in (ROOT / "LICENSE").read_text()[:200]


def test_arbitrary_uid_support_and_entrypoint(dockerfile: list[Instruction]) -> None:
    final = stages(dockerfile)[-1]
    runs = " ".join(i.args for i in final if i.keyword == "RUN")
    assert re.search(r"chgrp -R 0 ", runs) and re.search(r"chmod -R g=u ", runs), "group 0 permissions"
    entry = [i.args for i in final if i.keyword == "ENTRYPOINT"]
    assert entry == ['["podsizer"]'], "exec-form ENTRYPOINT podsizer"
    env = " ".join(i.args for i in final if i.keyword == "ENV")
    assert "HOME=/tmp" in env and "PYTHONDONTWRITEBYTECODE=1" in env, "writes only under /tmp"


def test_layer_count_is_within_the_certification_limit(dockerfile: list[Instruction]) -> None:
    final = stages(dockerfile)[-1]
    # UBI python-311 has fewer than 10 layers; preflight allows 40 in all.
    assert sum(1 for i in final if i.keyword in LAYER_INSTRUCTIONS) + 10 <= 40


def test_parser_joins_continuations_and_skips_comments() -> None:
    parsed = parse("# c\nFROM a:1 AS b\nRUN x \\\n  # inner\n  && y\nUSER 1001\n")
    assert [(i.keyword, i.args) for i in parsed] == [
        ("FROM", "a:1 AS b"),
        ("RUN", "x && y"),
        ("USER", "1001"),
    ]
    assert parsed[1].line == 3


def test_every_python_package_reaches_the_image(dockerfile: list[Instruction]) -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]]
    copied = {i.args.split()[-2] for i in stages(dockerfile)[0] if i.keyword == "COPY"}
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert packages
    for package in packages:
        assert package in copied, f"build stage does not COPY {package}"
        assert f"!{package}/" in ignore, f".dockerignore keeps {package} out of the build context"


def _extras(requirement: str) -> set[str]:
    """The extras of a pip requirement or path argument, e.g. '.[aws]' -> {'aws'}."""
    match = re.fullmatch(r"[^\[\]]+(?:\[([^\]]*)\])?", requirement)
    assert match is not None, f"not a requirement: {requirement!r}"
    return {e.strip() for e in (match.group(1) or "").split(",") if e.strip()}


def _pip_target(run: Instruction, subcommand: str) -> str:
    """The one requirement or path a `pip <subcommand>` of a RUN names (its last non-option argument)."""
    words = shlex.split(run.args)
    start = next(i for i, w in enumerate(words) if w == "pip" and words[i + 1] == subcommand)
    args: list[str] = []
    for word in words[start + 2 :]:
        if word in ("&&", ";", "||"):
            break
        args.append(word)
    values = {"--wheel-dir", "--find-links", "-w", "-f"}
    targets = [a for i, a in enumerate(args) if not a.startswith("-") and args[i - 1] not in values]
    assert len(targets) == 1, f"line {run.line}: pip {subcommand} of {targets}"
    return targets[0]


def test_the_image_installs_every_runtime_extra(dockerfile: list[Instruction]) -> None:
    """Extras other than dev are imported by the roles when a setting asks (aws: botocore for SigV4)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    runtime = set(pyproject["project"]["optional-dependencies"]) - {"dev"}
    assert "aws" in runtime
    build, final = stages(dockerfile)[0], stages(dockerfile)[-1]
    (wheel,) = [i for i in build if i.keyword == "RUN" and "pip wheel" in i.args]
    (install,) = [
        i for i in final if i.keyword == "RUN" and "pip install" in i.args and "/tmp/wheels" in i.args
    ]
    assert _extras(_pip_target(wheel, "wheel")) == runtime, "the build stage makes wheels for every extra"
    installed = _pip_target(install, "install")
    assert installed.startswith("podsizer[") and _extras(installed) == runtime, installed


def test_extras_parser_reads_requirements() -> None:
    assert _extras(".[aws]") == {"aws"}
    assert _extras("podsizer[aws, gcp]") == {"aws", "gcp"}
    assert _extras("podsizer") == set()
