"""scripts/package_chart.py makes a Helm repository that real helm installs from: served over HTTP, added with
`helm repo add`, rendered from the packaged chart, every object valid for kubeconform."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import yaml

from tests.integration.install.schemas import kubeconform, write_standalone_schemas
from tests.integration.install.support import CHART, KUBE_VERSIONS, NAMESPACE, RELEASE, ROOT, pod_specs, tool

SCRIPT = ROOT / "scripts" / "package_chart.py"
REGISTRY = "registry.example.com/team"


def _version() -> str:
    version: str = yaml.safe_load((CHART / "Chart.yaml").read_text())["version"]
    return version


def _package(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--helm", str(tool("helm")), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("chart-repo")
    proc = _package(out)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def served(repo: Path) -> Iterator[str]:
    """The repository folder served on a free 127.0.0.1 port, as a static web server would."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(repo))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _helm(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """helm with its configuration, cache and repository list under home (nothing of the user's)."""
    env: Mapping[str, str] = {
        **os.environ,
        "HOME": str(home),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    proc = subprocess.run([str(tool("helm")), *args], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, f"helm {' '.join(args)}: {proc.stderr}"
    return proc


def test_index_lists_the_package_by_its_digest(repo: Path) -> None:
    tgz = repo / f"podsizer-{_version()}.tgz"
    index = yaml.safe_load((repo / "index.yaml").read_text())
    (entry,) = index["entries"]["podsizer"]
    assert entry["version"] == _version()
    assert entry["digest"] == hashlib.sha256(tgz.read_bytes()).hexdigest()
    assert entry["urls"] == [tgz.name]


def test_url_goes_into_the_index_and_an_existing_index_is_merged(tmp_path: Path) -> None:
    out = tmp_path / "repo"
    out.mkdir()
    older = {
        "apiVersion": "v1",
        "entries": {"podsizer": [{"name": "podsizer", "version": "0.0.9", "urls": ["podsizer-0.0.9.tgz"]}]},
    }
    (out / "index.yaml").write_text(yaml.safe_dump(older))
    proc = _package(out, "--url", "https://charts.example.com/podsizer")
    assert proc.returncode == 0, proc.stderr
    entries = yaml.safe_load((out / "index.yaml").read_text())["entries"]["podsizer"]
    assert {e["version"]: e["urls"] for e in entries} == {
        _version(): [f"https://charts.example.com/podsizer/podsizer-{_version()}.tgz"],
        "0.0.9": ["podsizer-0.0.9.tgz"],
    }


def test_a_bad_url_is_refused_naming_it(tmp_path: Path) -> None:
    proc = _package(tmp_path, "--url", "charts.example.com")
    assert proc.returncode == 2
    assert "--url 'charts.example.com'" in proc.stderr
    assert not list(tmp_path.iterdir()), "nothing is packaged when the arguments are wrong"


def test_installs_from_the_served_repository(served: str, tmp_path: Path) -> None:
    home = tmp_path / "helm"
    _helm(home, "repo", "add", "podsizer", served)
    found = _helm(home, "search", "repo", "podsizer/podsizer", "--output", "yaml").stdout
    assert [(c["name"], c["version"]) for c in yaml.safe_load(found)] == [("podsizer/podsizer", _version())]
    rendered = _helm(
        home,
        *("template", RELEASE, "podsizer/podsizer", "--version", _version(), "--namespace", NAMESPACE),
        *("--kube-version", KUBE_VERSIONS[-1], "--set", f"image.repository={REGISTRY}/podsizer"),
        *("--set", "recommender.prometheus.url=http://prometheus.monitoring.svc:9090"),
    ).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "MutatingWebhookConfiguration", "Service", "ClusterRole"} <= kinds
    images = {c["image"] for _, spec in pod_specs(docs, "package") for c in spec["containers"]}
    assert images == {f"{REGISTRY}/podsizer:{_version()}"}
    schemas = tmp_path / "schemas"
    write_standalone_schemas(schemas, docs)
    (tmp_path / "all.yaml").write_text(rendered)
    report = kubeconform(KUBE_VERSIONS[-1], schemas, tmp_path / "all.yaml")
    assert report["summary"] == {"valid": len(docs), "invalid": 0, "errors": 0, "skipped": 0}, report
