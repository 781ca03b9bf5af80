"""Where the e2e tests look for the Argo Rollouts build: the pinned version and what counts as built."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.controlplane.rollouts import find_argo_rollouts, pinned_version


def test_pinned_version_reads_the_require_line_of_a_block(tmp_path: Path) -> None:
    go_mod = tmp_path / "go.mod"
    go_mod.write_text(
        "module x\n\ngo 1.26.1\n\nrequire (\n"
        "\tgithub.com/argoproj/argo-rollouts v1.10.1 // indirect\n\tk8s.io/api v0.34.5 // indirect\n)\n"
    )
    assert pinned_version(go_mod) == "v1.10.1"


def test_pinned_version_refuses_a_go_mod_without_argo(tmp_path: Path) -> None:
    go_mod = tmp_path / "go.mod"
    go_mod.write_text("module x\n\nrequire k8s.io/api v0.34.5\n")
    with pytest.raises(ValueError, match="argo-rollouts"):
        pinned_version(go_mod)


def _build_dir(cache: Path) -> Path:
    return cache / "argo-rollouts" / pinned_version()


def test_a_binary_without_the_rollout_crd_is_not_a_build(tmp_path: Path) -> None:
    directory = _build_dir(tmp_path)
    directory.mkdir(parents=True)
    (directory / "rollouts-controller").write_text("#!/bin/sh\n")
    (directory / "rollouts-controller").chmod(0o755)
    build, reason = find_argo_rollouts({"PODSIZER_CACHE": str(tmp_path)})
    assert build is None
    assert "crds/rollout-crd.yaml" in reason and "scripts/build-argo-rollouts.sh" in reason


def test_binary_and_crds_make_a_build_listing_every_crd(tmp_path: Path) -> None:
    directory = _build_dir(tmp_path)
    (directory / "crds").mkdir(parents=True)
    (directory / "rollouts-controller").write_text("#!/bin/sh\n")
    (directory / "rollouts-controller").chmod(0o755)
    for name in ("rollout-crd.yaml", "experiment-crd.yaml", "kustomization.yaml"):
        (directory / "crds" / name).write_text("{}\n")
    build, reason = find_argo_rollouts({"PODSIZER_CACHE": str(tmp_path)})
    assert build is not None and reason == ""
    assert [p.name for p in build.crds] == ["experiment-crd.yaml", "rollout-crd.yaml"]
    assert build.controller == directory / "rollouts-controller" and build.version == pinned_version()
