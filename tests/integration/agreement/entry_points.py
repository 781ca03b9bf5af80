"""The five entry points, each run once over every case: `podsizer recommend -o json --write` and
`podsizer explain` (subprocesses), `podsizer console` (a server, its JSON API over HTTP), `podsizer webhook`
(a server over HTTPS: the auto patch and the dry-run annotation) and the updater's pass (Updater.run_once as
a library: its entry point short of a cluster). Each gives what it says a workload's pod gets."""

from __future__ import annotations

import base64
import copy
import json
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import jsonpatch
from prometheus_client import CollectorRegistry

from certs.generate import generate_bundle, write_bundle
from podsizer.api import WorkloadRef
from podsizer.cluster import OwnerCache
from podsizer.keys import APPLIED_KEY, DRY_RUN_KEY
from podsizer.limitrange import ClusterPolicy
from podsizer.modes import NoMetadata
from podsizer.podspec import CurrentResources, quantity
from podsizer.settings import UpdaterSettings, load
from podsizer.snapshot import SnapshotHolder, parse_store_document
from tests.controlplane.processes import ManagedProcess, free_port
from tests.integration.agreement.cases import Case
from tests.unit.webhook import builders
from updater.cli import config_of
from updater.kube import EventType, Outcome, Subject
from updater.loop import Updater
from updater.metrics import UpdaterMetrics
from updater.record import Recorder

PODSIZER = str(Path(sys.executable).with_name("podsizer"))
ChangeKey = tuple[str, str, str, str, Decimal | None, Decimal | None]


@dataclass(frozen=True)
class Said:
    """What one entry point says a workload's new pod gets: the mode it shows ("excluded", "off", "dry-run",
    "auto"; "" where it cannot say), why nothing changes (None: it changes), and the exact changes."""

    mode: str
    skip: str | None
    changes: frozenset[ChangeKey]


def _q(value: object) -> Decimal | None:
    return None if value is None else quantity(value)


def changes_of(changes: Sequence[Mapping[str, Any]]) -> frozenset[ChangeKey]:
    """Changes as (container, section, field, resource, from, to), quantities compared exactly."""
    return frozenset(
        (c["container"], c["containerType"], c["field"], c["resource"], _q(c["from"]), _q(c["to"]))
        for c in changes
    )


def _ref(item: Mapping[str, Any]) -> WorkloadRef:
    target = item["spec"]["targetRef"]
    return WorkloadRef(item["metadata"]["namespace"], target["kind"], target["name"])


def _plan_said(plan: Mapping[str, Any]) -> Said:
    return Said(str(plan.get("mode", "")), plan.get("skip"), changes_of(plan.get("changes", [])))


def _run(argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float) -> str:
    done = subprocess.run(list(argv), capture_output=True, text=True, env=dict(env), cwd=cwd, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(argv[:3])} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done.stdout


def recommend(env: Mapping[str, str], cwd: Path, timeout: float = 300.0) -> dict[WorkloadRef, Said]:
    """`podsizer recommend -o json --write`: each item's plan (it also writes the store the others read)."""
    doc = json.loads(
        _run([PODSIZER, "recommend", "-o", "json", "--write", "--no-progress"], env, cwd, timeout)
    )
    return {_ref(item): _plan_said(item["plan"]) for item in doc["items"]}


def explain(
    env: Mapping[str, str], cwd: Path, workloads: Sequence[WorkloadRef], timeout: float = 300.0
) -> dict[WorkloadRef, Said]:
    """`podsizer explain -o json W1 W2 ...`: every workload's plan from one run."""
    names = [str(w) for w in workloads]
    docs = json.loads(_run([PODSIZER, "explain", "-o", "json", "--no-progress", *names], env, cwd, timeout))
    docs = docs if isinstance(docs, list) else [docs]
    return {_ref(d["recommendation"]): _plan_said(d["plan"]) for d in docs}


def _wait(url: str, proc: ManagedProcess, client: httpx.Client, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.exit_code() is not None:
            raise AssertionError(proc.describe_failure())
        try:
            if client.get(url).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{url} not ready in {timeout:.0f} s: {proc.describe_failure()}")


@contextmanager
def _served(name: str, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> Iterator[ManagedProcess]:
    proc = ManagedProcess(name, argv, cwd / "logs" / f"{name}.log", env, cwd)
    try:
        yield proc
    finally:
        proc.stop()


def console(env: Mapping[str, str], cwd: Path, timeout: float = 300.0) -> dict[WorkloadRef, Said]:
    """`podsizer console` over the same data and store: every workload of its overview API."""
    port = free_port()
    argv = [PODSIZER, "console", "--console-host", "127.0.0.1", "--console-port", str(port)]
    out: dict[WorkloadRef, Said] = {}
    with _served("console", argv, env, cwd) as proc, httpx.Client(timeout=60) as client:
        base = f"http://127.0.0.1:{port}"
        _wait(f"{base}/healthz", proc, client, timeout)
        page, pages = 1, 1
        while page <= pages:
            body = client.get(f"{base}/api/overview", params={"per_page": 500, "page": page}).json()
            pages = body["page"]["pages"]
            for w in body["workloads"]:
                ref = WorkloadRef(w["workload"]["namespace"], w["workload"]["kind"], w["workload"]["name"])
                changes = [ch for c in w["containers"] for ch in c["changes"]]
                out[ref] = Said(w["mode"], w["plan_skip"], changes_of(changes))
            page += 1
    return out


def _resources(pod: Mapping[str, Any]) -> dict[tuple[str, str, str], dict[str, str]]:
    out: dict[tuple[str, str, str], dict[str, str]] = {}
    for section in ("initContainers", "containers"):
        for c in pod["spec"].get(section) or []:
            for fld in ("requests", "limits"):
                out[(c["name"], section, fld)] = dict((c.get("resources") or {}).get(fld) or {})
    return out


def _diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> frozenset[ChangeKey]:
    """What a patch really changed in the pod's resources."""
    old, new = _resources(before), _resources(after)
    return frozenset(
        (*key, r, _q(values.get(r)), _q(new[key].get(r)))
        for key, values in old.items()
        for r in set(values) | set(new[key])
        if _q(values.get(r)) != _q(new[key].get(r))
    )


def _admitted(pod: Mapping[str, Any], reply: Mapping[str, Any]) -> Said:
    """The webhook's reply as a statement: auto (the patch's effect on the pod, equal to its applied
    record), dry-run (the annotation; resources untouched) or nothing (no patch: it cannot say why)."""
    response = reply["response"]
    assert response["allowed"] is True
    if not response.get("patch"):
        return Said("", "not-patched", frozenset())
    patched = jsonpatch.apply_patch(copy.deepcopy(pod), json.loads(base64.b64decode(response["patch"])))
    annotations = patched["metadata"].get("annotations") or {}
    if APPLIED_KEY in annotations:
        changes = _diff(pod, patched)
        assert changes == changes_of(json.loads(annotations[APPLIED_KEY])["changes"]), pod["metadata"]
        return Said("auto", None, changes)
    assert _diff(pod, patched) == frozenset()
    return Said("dry-run", None, changes_of(json.loads(annotations[DRY_RUN_KEY])["changes"]))


def webhook(
    env: Mapping[str, str], cwd: Path, cases: Sequence[Case], timeout: float = 120.0
) -> dict[WorkloadRef, Said]:
    """`podsizer webhook` over TLS from the store: one AdmissionReview per case's new pod."""
    tls = write_bundle(
        generate_bundle("podsizer-webhook", "podsizer", ip_addresses=["127.0.0.1"]), cwd / "tls"
    )
    port = free_port()
    served = {
        **env,
        "PODSIZER_TLS_CERT_FILE": str(tls["tls.crt"]),
        "PODSIZER_TLS_KEY_FILE": str(tls["tls.key"]),
    }
    argv = [PODSIZER, "webhook", "--host", "127.0.0.1", "--port", str(port)]
    context = ssl.create_default_context(cafile=str(tls["ca.crt"]))
    with _served("webhook", argv, served, cwd) as proc, httpx.Client(verify=context, timeout=60) as client:
        base = f"https://127.0.0.1:{port}"
        _wait(f"{base}/readyz", proc, client, timeout)

        def admit(i: int) -> Said:
            pod = cases[i].pod
            review = builders.review(pod, pod["metadata"]["namespace"], uid=f"case-{i}")
            reply = client.post(f"{base}/mutate", json=review)
            reply.raise_for_status()
            return _admitted(cases[i].pod, reply.json())

        with ThreadPoolExecutor(4) as pool:
            said = list(pool.map(admit, range(len(cases))))
    return {c.workload: s for c, s in zip(cases, said, strict=True)}


class _Standalone(NoMetadata):
    """The cluster view of a standalone run: no watched workloads, namespaces, policies or nodes."""

    def replicas(self, ref: WorkloadRef) -> int | None:
        return None

    def cluster_policy(self, namespace: str) -> ClusterPolicy | None:
        return None

    def largest_allocatable(self) -> Mapping[str, float]:
        return {}

    def template(self, ref: WorkloadRef) -> tuple[CurrentResources, ...] | None:
        return None


class _NoApi:
    """The updater runs dry: it records, never resizes or evicts; events and usage go nowhere."""

    def resize(self, namespace: str, name: str, body: Mapping[str, Any]) -> tuple[Outcome, str]:
        raise AssertionError("a dry-run updater resized a pod")

    def evict(self, namespace: str, name: str) -> tuple[Outcome, str]:
        raise AssertionError("a dry-run updater evicted a pod")

    def event(self, subject: Subject, type_: EventType, reason: str, message: str) -> None:
        return None

    def usage(self, namespace: str, name: str) -> Mapping[str, Decimal] | None:
        return None


def updater(env: Mapping[str, str], store: Path, cases: Sequence[Case]) -> dict[WorkloadRef, Said]:
    """One dry-run pass of the updater (its own settings loader, config and decision) over the running
    pods, from the store file: the workloads it acts on, with the changes it would make."""
    settings = load(UpdaterSettings, env={**env, "PODSIZER_UPDATER_DRY_RUN": "true"})
    holder = SnapshotHolder()
    holder.swap(parse_store_document(json.loads(store.read_bytes()), str(store), lambda: datetime.now(UTC)))
    api = _NoApi()
    pods = [c.running for c in cases]
    run = Updater(
        config_of(settings),
        lambda: pods,
        OwnerCache(),
        _Standalone(),
        holder,
        api,
        Recorder(api, UpdaterMetrics(CollectorRegistry()), dry_run=True),
        lambda: datetime.now(UTC),
    )
    return {
        c.workload: Said(
            "auto", None if a.changes else a.reason, changes_of([ch.to_json() for ch in a.changes])
        )
        for c, a in run.run_once()
    }
