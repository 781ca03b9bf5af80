"""`podsizer demo`: the whole path on built-in data, no cluster needed.

Recommendations from the demo data set -> the JSON store -> the real webhook over TLS -> a pod mutated in
auto mode, the same pod annotated in dry-run mode, and an OpenShift deployer pod left alone.
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import socket
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import jsonpatch
from prometheus_client import CollectorRegistry

from podsizer.api import WorkloadRef
from podsizer.api.quantity import format_resource
from podsizer.keys import APPLIED_KEY, DRY_RUN_KEY, MODE_KEY
from podsizer.settings import RecommenderSettings
from recommender.commands import one_run
from recommender.input.demo_cluster import build_demo_dataset
from recommender.model.raw import PodInfo, RawDataset
from recommender.model.samples import owner_graph
from recommender.output.report import render
from recommender.output.store import JsonFileStore
from recommender.wiring import Wiring

DEFAULT_WORKLOAD = "shop/Deployment/storefront"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory for the demo's store and certificates (default: a new temporary directory)",
    )
    parser.add_argument(
        "--workload",
        default=DEFAULT_WORKLOAD,
        help=f"namespace/Kind/name of the demo workload whose pod is admitted (default {DEFAULT_WORKLOAD})",
    )


def _parse_workload(text: str) -> WorkloadRef:
    parts = text.split("/")
    if len(parts) != 3:
        raise ValueError(f"--workload: expected namespace/Kind/name, got {text!r}")
    return WorkloadRef(*parts)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _resources(requests: Mapping[str, float], limits: Mapping[str, float]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    if requests:
        out["requests"] = {k: format_resource(k, v) for k, v in requests.items()}
    if limits:
        out["limits"] = {k: format_resource(k, v) for k, v in limits.items()}
    return out


def _pod_as_created(info: PodInfo, mode: str | None) -> dict[str, Any]:
    """The pod object a ReplicaSet/RC controller would send to admission: generateName, no name."""
    annotations = dict(info.annotations)
    if mode is not None:
        annotations[MODE_KEY] = mode
    metadata: dict[str, Any] = {
        "namespace": info.namespace,
        "labels": dict(info.labels),
        "annotations": annotations,
    }
    if info.owner_kind and info.owner_name:
        metadata["generateName"] = f"{info.owner_name}-"
        metadata["ownerReferences"] = [
            {
                "apiVersion": "apps/v1" if info.owner_kind != "ReplicationController" else "v1",
                "kind": info.owner_kind,
                "name": info.owner_name,
                "uid": "00000000-0000-4000-8000-000000000001",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    else:
        metadata["name"] = info.name
    containers = [
        {
            "name": name,
            "image": f"registry.example.com/{name}:1.0",
            "resources": _resources(info.requests.get(name, {}), info.limits.get(name, {})),
        }
        for name in info.requests
    ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {"containers": containers}}


def _review(pod: Mapping[str, Any], uid: str) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": pod["metadata"]["namespace"],
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
            "object": pod,
            "dryRun": False,
        },
    }


def _pod_of(raw: RawDataset, target: WorkloadRef) -> PodInfo:
    graph = owner_graph(raw)
    for info in raw.pods:
        if info.namespace == target.namespace and graph.resolve(info.namespace, info.name) == target:
            return info
    raise ValueError(f"--workload: the demo data set has no pod of {target}")


def _deployer_pod(raw: RawDataset) -> PodInfo | None:
    return next((p for p in raw.pods if "openshift.io/deployer-pod-for.name" in p.labels), None)


def _admit(client: httpx.Client, url: str, pod: dict[str, Any], uid: str) -> dict[str, Any]:
    """POST the review to the webhook; returns the pod as the apiserver would store it, plus the reply."""
    reply = client.post(url, json=_review(pod, uid))
    reply.raise_for_status()
    response = reply.json()["response"]
    patch = json.loads(base64.b64decode(response["patch"])) if response.get("patch") else []
    stored = jsonpatch.apply_patch(copy.deepcopy(pod), patch)
    return {"allowed": response["allowed"], "patch": patch, "pod": stored}


def _show_resources(title: str, pod: Mapping[str, Any]) -> None:
    print(f"  {title}:")
    for c in pod["spec"]["containers"]:
        print(f"    {c['name']}: {json.dumps(c.get('resources', {}), sort_keys=True)}")


@dataclass(frozen=True)
class DemoResult:
    """What the demo showed, for tests: the pods as stored after admission."""

    store_file: Path
    recommendations: int
    auto_pod: Mapping[str, Any]
    dry_run_pod: Mapping[str, Any]
    created_pod: Mapping[str, Any]
    deployer_patch: tuple[Any, ...] | None


def run(args: argparse.Namespace) -> int:
    try:
        target = _parse_workload(args.workload)
    except ValueError as exc:
        print(f"podsizer demo: {exc}")
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="podsizer-demo-"))
    try:
        demo(out, target)
    except DemoError as exc:
        print(f"podsizer demo: {exc}")
        return 1
    print(f"\nDemo files are in {out}. Next: `podsizer console` for the web view of the same data.")
    return 0


class DemoError(RuntimeError):
    """The demo could not run; the message says which step failed."""


def demo(out: Path, target: WorkloadRef) -> DemoResult:
    """Run the whole demo, printing each step, and return what it produced."""
    from certs.generate import generate_bundle, write_bundle
    from certs.reload import ReloadingTLS
    from podsizer.cluster import OwnerCache
    from podsizer.settings import WebhookSettings
    from podsizer.snapshot import SnapshotHolder
    from webhook.app import create_app
    from webhook.file_store import FileStoreLoader
    from webhook.server import ServerThread

    now = datetime.now(UTC).replace(second=0, microsecond=0)
    out.mkdir(parents=True, exist_ok=True)

    print("== 1. Recommendations from the built-in demo data set (7 days of a cluster)\n")
    store_file = out / "recommendations.json"
    # `podsizer recommend --source demo` with the default settings (the webhook below runs with them too)
    run_settings = RecommenderSettings(source="demo", store_file=store_file)
    result = one_run(run_settings, Wiring(clock=lambda: now), None, progress=False)
    print(render(result.report, "table"), end="")
    recommendations = list(result.run.recommendations)
    JsonFileStore(store_file).put_many(recommendations)
    print(f"\nWrote {len(recommendations)} Recommendations to {store_file}")
    raw = build_demo_dataset(now)  # the data set the run read: the pods to admit come from it

    try:
        info = _pod_of(raw, target)
    except ValueError as exc:
        raise DemoError(str(exc)) from exc

    print("\n== 2. The admission webhook, over TLS, serving from that store\n")
    tls_dir = out / "tls"
    write_bundle(generate_bundle("podsizer-webhook", "podsizer", ip_addresses=["127.0.0.1"]), tls_dir)
    settings = WebhookSettings(
        store="json",
        store_file=store_file,
        tls_cert_file=tls_dir / "tls.crt",
        tls_key_file=tls_dir / "tls.key",
    )
    holder = SnapshotHolder()
    loader = FileStoreLoader(store_file, holder, lambda: datetime.now(UTC))
    if not loader.load_once():
        raise DemoError(f"the webhook could not load {store_file}: {loader.last_error}")
    app = create_app(settings, holder, OwnerCache(), CollectorRegistry(), lambda: datetime.now(UTC))
    port = _free_port()
    server = ServerThread(app, port, ReloadingTLS(settings.tls_cert_file, settings.tls_key_file)).start()
    url = f"https://127.0.0.1:{port}/mutate"
    print(f"Webhook listening on {url} (certificate signed by {tls_dir / 'ca.crt'})")
    try:
        with httpx.Client(verify=ssl.create_default_context(cafile=tls_dir / "ca.crt"), timeout=10) as client:
            print(f"\n-- auto mode: a new pod of {target} (podsizer.io/mode: auto)")
            auto = _admit(client, url, _pod_as_created(info, "auto"), "demo-auto")
            _show_resources("as created by the controller", _pod_as_created(info, "auto"))
            _show_resources("as stored after admission", auto["pod"])
            applied = auto["pod"]["metadata"]["annotations"].get(APPLIED_KEY)
            print(f"  podsizer.io/applied: {applied}")

            print(f"\n-- dry-run mode (the default): the same pod of {target}")
            dry = _admit(client, url, _pod_as_created(info, None), "demo-dry-run")
            annotation = dry["pod"]["metadata"]["annotations"].get(DRY_RUN_KEY)
            unchanged = dry["pod"]["spec"] == _pod_as_created(info, None)["spec"]
            print(f"  resources unchanged: {unchanged}")
            print(f"  podsizer.io/dry-run: {annotation}")

            deployer = _deployer_pod(raw)
            deployer_patch = None
            if deployer is not None:
                print(f"\n-- an OpenShift deployer pod ({deployer.namespace}/{deployer.name}), mode auto")
                skipped = _admit(client, url, _pod_as_created(deployer, "auto"), "demo-deployer")
                ops = len(skipped["patch"])
                print(f"  allowed: {skipped['allowed']}, patch operations: {ops} (never mutated)")
                deployer_patch = tuple(skipped["patch"])
    except httpx.HTTPError as exc:
        raise DemoError(f"calling the webhook at {url} failed: {exc}") from exc
    finally:
        server.stop()
    return DemoResult(
        store_file=store_file,
        recommendations=len(recommendations),
        auto_pod=auto["pod"],
        dry_run_pod=dry["pod"],
        created_pod=_pod_as_created(info, None),
        deployer_patch=deployer_patch,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="podsizer demo", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
