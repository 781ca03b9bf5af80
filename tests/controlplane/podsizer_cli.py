"""Runs the `podsizer` console script (as installed by pip next to this interpreter) for e2e tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from kubernetes import client

from podsizer.api import API_GROUP, API_VERSION, PLURAL
from tests.controlplane.binaries import ROOT
from tests.controlplane.kube import Manifest

# The built-in demo data set's namespaces (recommendations are written into the workload's namespace).
DEMO_NAMESPACES = ("analytics", "legacy", "ml", "platform", "shop")


def recommend_and_write(kubeconfig: Path, *source_args: str, timeout_s: float = 240.0) -> dict[str, Any]:
    """`podsizer recommend <source_args> --write --store crd -o json`; returns the JSON report."""
    podsizer = Path(sys.executable).with_name("podsizer")
    argv = [str(podsizer), "recommend", *source_args, "--write", "--store", "crd"]
    argv += ["--kubeconfig", str(kubeconfig), "--output", "json", "--no-progress"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def stored_recommendations(
    api_client: client.ApiClient, namespaces: tuple[str, ...]
) -> dict[tuple[str, str], Manifest]:
    """The Recommendation objects in `namespaces`, keyed by (namespace, name)."""
    listed = client.CustomObjectsApi(api_client).list_cluster_custom_object(API_GROUP, API_VERSION, PLURAL)
    if not isinstance(listed, dict):
        raise TypeError(f"unexpected list answer: {listed!r}")
    return {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in listed["items"]
        if o["metadata"]["namespace"] in namespaces
    }


def reported_recommendations(report: dict[str, Any]) -> dict[tuple[str, str], Manifest]:
    """The report's items, keyed by (namespace, name)."""
    return {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in report["items"]}
