"""manifests/install, the OLM bundle and the catalog are what scripts/render-manifests.sh makes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.install.support import MANIFESTS, ROOT, load_yaml_docs, renderer, tool


@pytest.fixture(scope="module")
def fresh() -> dict[Path, str]:
    rendered: dict[Path, str] = renderer().render_all(str(tool("helm")))
    return rendered


def test_committed_files_equal_a_fresh_render(fresh: dict[Path, str]) -> None:
    stale = [str(p.relative_to(ROOT)) for p, text in fresh.items() if not p.exists() or p.read_text() != text]
    assert stale == [], "out of date; run scripts/render-manifests.sh: " + ", ".join(stale)


def test_render_covers_every_generated_file(fresh: dict[Path, str]) -> None:
    generated = {p for p in (MANIFESTS / "install").iterdir()} | {
        p for folder in ("olm", "catalog") for p in (MANIFESTS / folder).rglob("*") if p.is_file()
    }
    assert generated == set(fresh), "files in manifests/install, olm or catalog that no render produces"


def test_kustomization_lists_the_rendered_files() -> None:
    (kustomization,) = load_yaml_docs(MANIFESTS / "install" / "kustomization.yaml")
    assert kustomization["kind"] == "Kustomization"
    for resource in kustomization["resources"]:
        assert (MANIFESTS / "install" / resource).is_file(), resource
    assert set(kustomization["resources"]) == {p.name for p in (MANIFESTS / "install").glob("*.yaml")} - {
        "kustomization.yaml"
    }


def test_plain_install_namespace_enforces_restricted_pod_security() -> None:
    (ns,) = load_yaml_docs(MANIFESTS / "install" / "namespace.yaml")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    objects = load_yaml_docs(MANIFESTS / "install" / "podsizer.yaml")
    namespaced = [o for o in objects if "namespace" in o["metadata"]]
    assert namespaced and {o["metadata"]["namespace"] for o in namespaced} == {ns["metadata"]["name"]}
