"""scripts/build_tools.py marks a part built only when its outputs exist and answer; else it builds again."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from tests.controlplane.binaries import build_tools

needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="go not installed")


@pytest.fixture
def bt() -> ModuleType:
    return build_tools()


def _module(tmp_path: Path, version: str) -> Path:
    """A Go module without dependencies whose program prints `hello <version>` for --version."""
    module = tmp_path / "hello"
    module.mkdir()
    (module / "go.mod").write_text("module example.test/hello\n\ngo 1.21\n")
    (module / "main.go").write_text(
        textwrap.dedent(f"""\
        package main

        import "fmt"

        func main() {{ fmt.Println("hello {version}") }}
        """)
    )
    return module


def _part(bt: ModuleType, module: Path, expect: str) -> object:
    check = bt.Check(("--version",), expect)
    return bt.GoPart(name="hello", module=module, packages={"hello": "."}, checks={"hello": check})


def test_pinned_reads_a_require_line_of_a_block(bt: ModuleType, tmp_path: Path) -> None:
    go_mod = tmp_path / "go.mod"
    go_mod.write_text("module x\n\nrequire (\n\tgithub.com/argoproj/argo-rollouts v1.10.1 // indirect\n)\n")
    assert bt.pinned(go_mod, "github.com/argoproj/argo-rollouts") == "v1.10.1"


def test_pinned_refuses_a_go_mod_without_the_module(bt: ModuleType, tmp_path: Path) -> None:
    go_mod = tmp_path / "go.mod"
    go_mod.write_text("module x\n\nrequire k8s.io/api v0.35.4\n")
    with pytest.raises(SystemExit, match="argo-rollouts"):
        bt.pinned(go_mod, "github.com/argoproj/argo-rollouts")


def test_a_binary_is_proven_by_its_version_answer(bt: ModuleType, tmp_path: Path) -> None:
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\necho 'tool v1.2.3'\n")
    script.chmod(0o755)
    assert bt._check(script, bt.Check(("--version",), "v1.2.3")) == ""
    assert "without 'v9.9.9'" in bt._check(script, bt.Check(("--version",), "v9.9.9"))
    script.write_text("")
    assert "missing or empty" in bt._check(script, bt.Check(("--version",), "v1.2.3"))


@needs_go
def test_built_once_then_cached_then_rebuilt_when_an_output_is_broken(bt: ModuleType, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    part = _part(bt, _module(tmp_path, "v1"), "hello v1")
    assert bt.build_part(part, cache) == "built"
    binary = cache / "bin" / "hello"
    assert "hello v1" in subprocess.run([binary], capture_output=True, text=True).stdout
    assert bt.build_part(part, cache) == "cached"
    binary.write_bytes(b"")  # an interrupted copy, a full disk: the stamp alone must not count
    assert bt.build_part(part, cache) == "built"
    assert binary.stat().st_size > 0


@needs_go
def test_changed_sources_are_built_again(bt: ModuleType, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    module = _module(tmp_path, "v1")
    assert bt.build_part(_part(bt, module, "hello v1"), cache) == "built"
    (module / "main.go").write_text((module / "main.go").read_text().replace("v1", "v2"))
    assert bt.build_part(_part(bt, module, "hello v2"), cache) == "built"


@needs_go
def test_a_build_whose_output_fails_its_check_leaves_no_stamp_and_no_binary(
    bt: ModuleType, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    part = _part(bt, _module(tmp_path, "v1"), "hello v2")
    with pytest.raises(bt.BuildFailed, match="built but unusable"):
        bt.build_part(part, cache)
    assert not (cache / "bin" / "hello").exists()
    assert not (cache / "bin" / ".stamps" / "hello").exists()


@needs_go
def test_a_failing_compile_names_its_log(bt: ModuleType, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    module = _module(tmp_path, "v1")
    (module / "main.go").write_text("package main\n\nfunc main() { undefined() }\n")
    with pytest.raises(bt.BuildFailed) as failure:
        bt.build_part(_part(bt, module, "hello v1"), cache)
    assert failure.value.log == cache / "logs" / "hello.log"
    assert "undefined" in failure.value.log.read_text()


def _crd_part(bt: ModuleType) -> object:
    return bt.CopyPart(
        name="crds", module_dir=Path("/nonexistent"), module="example.test/crds",
        source_glob="manifests/crds/*-crd.yaml", dest="crds", required=("rollout-crd.yaml",),
    )  # fmt: skip


def test_an_empty_crd_folder_is_a_failure_not_a_build(bt: ModuleType, tmp_path: Path) -> None:
    """A fresh-machine failure: a module source without its CRDs cached an empty folder."""
    source = tmp_path / "src"
    (source / "manifests" / "crds").mkdir(parents=True)
    log = tmp_path / "copy.log"
    log.write_text("")
    with pytest.raises(bt.BuildFailed, match="no manifests/crds"):
        bt._copy_from(source, _crd_part(bt), tmp_path / "cache", log)
    assert not (tmp_path / "cache" / "share" / "crds").exists()


def test_copied_crds_are_proven_by_name_and_kind(bt: ModuleType, tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "manifests" / "crds").mkdir(parents=True)
    (source / "manifests" / "crds" / "experiment-crd.yaml").write_text("kind: CustomResourceDefinition\n")
    cache = tmp_path / "cache"
    log = tmp_path / "copy.log"
    bt._copy_from(source, _crd_part(bt), cache, log)
    assert bt._problems(_crd_part(bt), cache) == [f"{cache}/share/crds/rollout-crd.yaml is missing or empty"]
    (source / "manifests" / "crds" / "rollout-crd.yaml").write_text("kind: CustomResourceDefinition\n")
    bt._copy_from(source, _crd_part(bt), cache, log)
    assert bt._problems(_crd_part(bt), cache) == []


@needs_go
def test_unbuilt_names_the_command_until_the_stamp_matches(bt: ModuleType, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert bt.unbuilt("kwok", cache) == "kwok is not built (run scripts/build_tools.py kwok)"
    stamps = cache / "bin" / ".stamps"
    stamps.mkdir(parents=True)
    (stamps / "kwok").write_text("0" * 20 + "\n")
    assert "other sources" in bt.unbuilt("kwok", cache)
    (stamps / "kwok").write_text(bt._stamp(bt._parts()["kwok"]) + "\n")
    assert bt.unbuilt("kwok", cache) == f"kwok: {cache}/bin/kwok missing (run scripts/build_tools.py kwok)"
    (cache / "bin" / "kwok").write_text("#!/bin/sh\n")
    assert bt.unbuilt("kwok", cache) == ""


def _step_part(bt: ModuleType, source: Path, builds: list[str]) -> object:
    """A StepPart that copies `source` to share/copy.txt, proven by its content being non-empty."""

    def build(cache: Path, log: Path) -> None:
        builds.append(source.read_text())
        out = cache / "share" / "copy.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(source.read_text())

    def problems(cache: Path) -> list[str]:
        out = cache / "share" / "copy.txt"
        return [] if out.is_file() and out.read_text() else [f"{out} is missing or empty"]

    return bt.StepPart("copy", (source,), "salt", lambda c: [c / "share" / "copy.txt"], problems, build)


def test_a_step_part_is_built_once_per_content_of_its_inputs_and_again_when_its_output_breaks(
    bt: ModuleType, tmp_path: Path
) -> None:
    cache, source, builds = tmp_path / "cache", tmp_path / "input.txt", []
    source.write_text("one")
    part = _step_part(bt, source, builds)
    assert bt.build_part(part, cache) == "built"
    assert bt.build_part(part, cache) == "cached"
    source.write_text("two")
    assert bt.build_part(part, cache) == "built"
    (cache / "share" / "copy.txt").write_text("")
    assert bt.build_part(part, cache) == "built"
    assert builds == ["one", "two", "two"]
    assert bt.unbuilt("copy", cache, {"copy": part}, "build_images") == ""


def test_a_step_part_whose_output_stays_broken_fails_without_a_stamp(bt: ModuleType, tmp_path: Path) -> None:
    cache, source = tmp_path / "cache", tmp_path / "input.txt"
    source.write_text("")  # copies an empty file: its check fails
    part = _step_part(bt, source, [])
    with pytest.raises(bt.BuildFailed, match="outputs incomplete"):
        bt.build_part(part, cache)
    assert not (cache / "bin" / ".stamps" / "copy").exists()
    assert "is not built (run scripts/build_images.py copy)" in bt.unbuilt(
        "copy", cache, {"copy": part}, "build_images"
    )
