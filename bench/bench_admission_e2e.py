"""Pod-creation latency through the real apiserver with and without the podsizer webhook (auto mode).

A test cluster (tests/controlplane: etcd, kube-apiserver, controller-manager, scheduler, kwok) with `--nodes`
kwok nodes. Two namespaces: `plain` (no webhook is called) and `auto` (labelled for the webhook, mode auto,
a Recommendation per Deployment). Each namespace gets `--deployments` Deployments created with 0 replicas;
once the webhook serves them, the bench scales them up in turn, alternating namespaces, and waits until
their pods run on the kwok nodes. The real ReplicaSet controller creates every pod.

Latency is the apiserver's own: each pod CREATE's audit event (ResponseComplete) minus its
requestReceivedTimestamp, so it covers admission (webhook included) and the etcd write, and not the
controller-manager's client-side rate limiting. Goal: p99 with the webhook within 1.2x of without.

Run: .venv/bin/python -m bench.bench_admission_e2e [--pods 1000] [--nodes 50]
(needs scripts/build_tools.py first).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from kubernetes import client

from podsizer.api import WorkloadRef
from tests.controlplane.binaries import find_binaries
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.fixtures import CRD_FILES
from tests.controlplane.kube import create_from_yaml, create_namespace, create_objects, list_pods, wait_for
from tests.controlplane.nodes import is_running
from tests.controlplane.podsizer_webhook import E2E_NAMESPACE_LABEL, WebhookProcess, register_webhook
from tests.controlplane.recommendations import put_recommendation, simple_recommendation
from tests.controlplane.workloads import (
    container_resources,
    deployment,
    deployment_replicaset,
    wait_until_webhook_acts,
)

TEMPLATE = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}
RECOMMENDED = {"cpu": "50m", "memory": "48Mi"}
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  verbs: ["create"]
  resources: [{group: "", resources: ["pods"]}]
- level: None
"""


def _audit_args(workdir: Path) -> tuple[list[str], Path]:
    policy = workdir / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    log = workdir / "audit.log"
    args = [
        f"--audit-policy-file={policy}",
        f"--audit-log-path={log}",
        "--audit-log-mode=batch",  # off the request path, like both sides of the comparison
        "--audit-log-batch-max-wait=1s",
        "--audit-log-maxsize=0",
    ]
    return args, log


def _timestamp(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _latencies_ms(audit_log: Path, namespace: str) -> list[float]:
    """Milliseconds from request received to response complete of each pod CREATE (201) in `namespace`."""
    values: list[float] = []
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        if (
            event.get("stage") == "ResponseComplete"
            and event.get("verb") == "create"
            and ref.get("resource") == "pods"
            and not ref.get("subresource")
            and ref.get("namespace") == namespace
            and (event.get("responseStatus") or {}).get("code") == 201
            and "dryRun=" not in event.get("requestURI", "")  # wait_until_webhook_acts's probes
        ):
            received = _timestamp(event["requestReceivedTimestamp"])
            values.append((_timestamp(event["stageTimestamp"]) - received) * 1000)
    return values


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def _prepare(admin: client.ApiClient, namespace: str, deployments: int, webhook: bool) -> list[str]:
    """Deployments d-0.. with 0 replicas; in the webhook's namespace each gets a Recommendation and the bench
    waits until the webhook applies it to a dry-run pod."""
    names = [f"d-{i}" for i in range(deployments)]
    for name in names:
        create_objects(admin, [deployment(name, "main", TEMPLATE)], namespace=namespace)
        if webhook:
            put_recommendation(
                admin,
                simple_recommendation(WorkloadRef(namespace, "Deployment", name), {"main": RECOMMENDED}),
            )
    if webhook:
        for name in names:
            rs = deployment_replicaset(admin, namespace, name)
            wait_until_webhook_acts(
                admin,
                rs,
                lambda pod: (container_resources(pod) or {}).get("requests") == RECOMMENDED,
                f"the webhook to serve {namespace}/{name}",
            )
    return names


def _scale_and_wait(admin: client.ApiClient, namespace: str, name: str, replicas: int) -> None:
    """Scales Deployment `name` and waits on its status (cheap: the bench must not load the apiserver by
    listing hundreds of pods while it measures) until every replica is Ready, i.e. Running on a kwok node."""
    apps = client.AppsV1Api(admin)
    apps.patch_namespaced_deployment_scale(name, namespace, {"spec": {"replicas": replicas}})

    def ready() -> bool:
        status = apps.read_namespaced_deployment_status(name, namespace).status
        return bool(status is not None and status.ready_replicas == replicas)

    wait_for(ready, f"{replicas} Ready pods of {namespace}/{name}", 300)


def _check_mutated(admin: client.ApiClient, namespace: str, expect: bool) -> int:
    pods = list_pods(admin, namespace)
    mutated = sum(
        1 for p in pods if (p["spec"]["containers"][0]["resources"].get("requests") or {}) == RECOMMENDED
    )
    if expect and mutated != len(pods):
        raise SystemExit(f"{namespace}: only {mutated} of {len(pods)} pods carry the recommendation")
    if not expect and mutated:
        raise SystemExit(f"{namespace}: {mutated} pods were mutated without the webhook")
    return len(pods)


def run(pods: int, nodes: int, deployments: int) -> int:
    binaries, reason = find_binaries()
    if binaries is None:
        print(reason, file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="podsizer-bench-admission-"))
    audit, audit_log = _audit_args(workdir)
    replicas = pods // deployments
    with ControlPlane(binaries, node_count=nodes, apiserver_args=audit) as plane:
        admin = plane.api_client()
        for path in CRD_FILES:
            create_from_yaml(admin, path)
        hook = WebhookProcess(workdir, plane.kubeconfig_path)
        hook.start()
        try:
            register_webhook(admin, "podsizer-bench", hook, {E2E_NAMESPACE_LABEL: "true"})
            create_namespace(admin, "plain")
            create_namespace(admin, "auto", {E2E_NAMESPACE_LABEL: "true", "podsizer.io/mode": "auto"})
            plain = _prepare(admin, "plain", deployments, webhook=False)
            auto = _prepare(admin, "auto", deployments, webhook=True)
            t0 = time.monotonic()
            for p, a in zip(plain, auto, strict=True):
                _scale_and_wait(admin, "plain", p, replicas)
                _scale_and_wait(admin, "auto", a, replicas)
            elapsed = time.monotonic() - t0
            stored = {ns: _check_mutated(admin, ns, expect=ns == "auto") for ns in ("plain", "auto")}
            all_running = all(is_running(p) for ns in ("plain", "auto") for p in list_pods(admin, ns))
            time.sleep(3)  # the audit batch is flushed every second
            without, with_hook = _latencies_ms(audit_log, "plain"), _latencies_ms(audit_log, "auto")
        finally:
            hook.stop()
    _report(binaries.version, nodes, stored, all_running, elapsed, without, with_hook)
    return 0


def _report(
    version: str,
    nodes: int,
    stored: dict[str, int],
    all_running: bool,
    elapsed: float,
    without: list[float],
    with_hook: list[float],
) -> None:
    print(f"kube-apiserver {version}, {nodes} kwok nodes; pods stored: {stored}; all Running: {all_running}")
    print(f"scale-up of both namespaces took {elapsed:.0f} s (ReplicaSet controller, kube-api-qps 20)")
    print(
        f"{'pod CREATE latency (apiserver audit)':40} {'without webhook':>16} {'with webhook':>14}"
        f" {'ratio':>7}"
    )
    for label, q in (("p50", 50.0), ("p90", 90.0), ("p99", 99.0)):
        a, b = _percentile(without, q), _percentile(with_hook, q)
        print(f"{label:40} {a:13.1f} ms {b:11.1f} ms {b / a:7.2f}")
    print(f"{'mean':40} {statistics.fmean(without):13.1f} ms {statistics.fmean(with_hook):11.1f} ms")
    print(f"{'requests':40} {len(without):16d} {len(with_hook):14d}")
    ratio = _percentile(with_hook, 99.0) / _percentile(without, 99.0)
    print(f"goal p99 with/without <= 1.20: {'met' if ratio <= 1.2 else 'NOT met'} ({ratio:.2f})")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--pods", type=int, default=1000, help="pods per namespace (with and without webhook)"
    )
    parser.add_argument("--nodes", type=int, default=50, help="kwok nodes")
    parser.add_argument("--deployments", type=int, default=20, help="Deployments per namespace")
    args = parser.parse_args(argv[1:])
    return run(args.pods, args.nodes, args.deployments)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
