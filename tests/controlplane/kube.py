"""Helpers on a real apiserver: create objects from YAML (built-in kinds and CRs), wait for conditions."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes import client, utils

from tests.support.progress import DEFAULT_STALL_S, pod_states, record_budget_wait, wait_progressing

T = TypeVar("T")
Manifest = dict[str, Any]


def wait_for(
    check: Callable[[], T | None],
    what: str,
    timeout_s: float = 60.0,
    interval_s: float = 0.5,
) -> T:
    """Calls `check` until it returns something other than None or False; raises TimeoutError naming `what`.
    For a single step (one object appears); a process of several steps follows progress instead
    (tests/support/progress.py `wait_progressing`). Its wall time joins the session's wait records.

    An ApiException inside `check` counts as "not yet" and is reported if time runs out.
    """
    started = time.monotonic()
    deadline = started + timeout_s
    last: object = None
    while True:
        try:
            value = check()
        except client.ApiException as e:
            last = f"HTTP {e.status}: {e.reason}"
            value = None
        if value is not None and value is not False:
            record_budget_wait(what, time.monotonic() - started, timeout_s, "done")
            return value
        if time.monotonic() >= deadline:
            record_budget_wait(what, time.monotonic() - started, timeout_s, "timed out")
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what} (last error: {last})")
        time.sleep(interval_s)


def to_dict(api_client: client.ApiClient, obj: object) -> Manifest:
    """A kubernetes-client model object as the JSON dict the apiserver sent (camelCase keys)."""
    data = api_client.sanitize_for_serialization(obj)
    if not isinstance(data, dict):
        raise TypeError(f"not an object: {type(obj).__name__}")
    return data


def api_error_message(error: client.ApiException) -> str:
    """The `message` of the Status object the apiserver sent with an error (or the raw body)."""
    body = error.body.decode() if isinstance(error.body, bytes) else str(error.body or "")
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError):
        return body
    return str(message) if message is not None else body


def load_manifests(source: str | Path) -> list[Manifest]:
    """The non-empty YAML documents of a file (Path) or a YAML string (str)."""
    text = source.read_text() if isinstance(source, Path) else source
    docs = [d for d in yaml.safe_load_all(text) if d]
    for d in docs:
        if not isinstance(d, dict) or "kind" not in d or "apiVersion" not in d:
            raise ValueError(f"not a Kubernetes object (needs apiVersion and kind): {str(d)[:200]}")
    return docs


def find_crd(api_client: client.ApiClient, group: str, kind: str) -> Manifest | None:
    """The stored CustomResourceDefinition that defines group/kind, if any."""
    crds = client.ApiextensionsV1Api(api_client).list_custom_resource_definition()
    for crd in to_dict(api_client, crds)["items"]:
        if crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == kind:
            found: Manifest = crd
            return found
    return None


def wait_for_crd_established(api_client: client.ApiClient, name: str, timeout_s: float = 60.0) -> None:
    """Waits until CRD `name` has condition Established=True (its API is served)."""
    ext = client.ApiextensionsV1Api(api_client)

    def established() -> bool:
        crd = to_dict(api_client, ext.read_custom_resource_definition(name))
        conditions = crd.get("status", {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    wait_for(established, f"CRD {name} Established", timeout_s)


def create_objects(
    api_client: client.ApiClient,
    manifests: Iterable[Mapping[str, Any]],
    namespace: str | None = None,
    timeout_s: float = 60.0,
) -> list[Manifest]:
    """Creates each object in order and returns what the apiserver stored (as dicts).

    CustomResourceDefinitions are created and waited on until Established; objects of a kind a CRD defines go
    through CustomObjectsApi; everything else through kubernetes.utils.create_from_dict. `namespace` applies
    to namespaced objects whose metadata has none.
    """
    ext = client.ApiextensionsV1Api(api_client)
    custom = client.CustomObjectsApi(api_client)
    created: list[Manifest] = []
    for manifest in manifests:
        obj = dict(manifest)
        api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
        group, _, version = api_version.rpartition("/")
        if kind == "CustomResourceDefinition":
            stored = to_dict(api_client, ext.create_custom_resource_definition(obj))  # type: ignore[arg-type]
            wait_for_crd_established(api_client, stored["metadata"]["name"], timeout_s)
            created.append(stored)
            continue
        crd = find_crd(api_client, group, kind) if group else None
        if crd is not None:
            plural = crd["spec"]["names"]["plural"]
            if crd["spec"]["scope"] == "Namespaced":
                ns = obj.get("metadata", {}).get("namespace") or namespace
                if not ns:
                    name = obj.get("metadata", {}).get("name")
                    raise ValueError(f"{kind} {name}: namespaced, and no namespace given")
                answer = custom.create_namespaced_custom_object(group, version, ns, plural, obj)
            else:
                answer = custom.create_cluster_custom_object(group, version, plural, obj)
            created.append(to_dict(api_client, answer))
            continue
        result = utils.create_from_dict(api_client, obj, namespace=namespace or "default")
        created.extend(to_dict(api_client, r) for r in result)
    return created


def create_from_yaml(
    api_client: client.ApiClient, source: str | Path, namespace: str | None = None, timeout_s: float = 60.0
) -> list[Manifest]:
    """create_objects() for the documents of a YAML file (Path) or string (str)."""
    return create_objects(api_client, load_manifests(source), namespace=namespace, timeout_s=timeout_s)


def list_pods(api_client: client.ApiClient, namespace: str) -> list[Manifest]:
    """The stored pods of `namespace`, as dicts."""
    pods = client.CoreV1Api(api_client).list_namespaced_pod(namespace)
    items: list[Manifest] = to_dict(api_client, pods)["items"]
    return items


def pods_owned_by(
    api_client: client.ApiClient, namespace: str, owner_kind: str, owner_name: str
) -> list[Manifest]:
    """The stored pods of `namespace` whose controller ownerReference is owner_kind/owner_name, as dicts."""
    return [
        p
        for p in list_pods(api_client, namespace)
        if any(
            ref["kind"] == owner_kind and ref["name"] == owner_name and ref.get("controller")
            for ref in p["metadata"].get("ownerReferences", [])
        )
    ]


def wait_for_pods(
    api_client: client.ApiClient,
    namespace: str,
    owner_kind: str,
    owner_name: str,
    count: int,
    stall_s: float = DEFAULT_STALL_S,
    *,
    running: Callable[[Manifest], bool] | None = None,
) -> list[Manifest]:
    """Waits until exactly `count` pods owned by owner_kind/owner_name are stored, and returns them. With
    `running`: only pods not being deleted count, and every one of them must pass it. Follows progress
    (tests/support/progress.py): fails after `stall_s` without a pod created, bound, started or deleted."""

    def check(pods: list[Manifest]) -> list[Manifest] | None:
        if running is not None:
            pods = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
            if not all(running(p) for p in pods):
                return None
        return pods if len(pods) == count else None

    what = "Running pod(s)" if running is not None else "pod(s)"
    return wait_progressing(
        lambda: pods_owned_by(api_client, namespace, owner_kind, owner_name),
        check,
        pod_states,
        f"{count} {what} of {owner_kind} {namespace}/{owner_name}",
        stall_s=stall_s,
    )


def create_namespace(
    api_client: client.ApiClient,
    name: str,
    labels: Mapping[str, str] | None = None,
    timeout_s: float = 60.0,
) -> None:
    """Creates a namespace and waits for its `default` ServiceAccount (pods are refused until it exists)."""
    core = client.CoreV1Api(api_client)
    core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=dict(labels or {})))
    )
    wait_for(
        lambda: core.read_namespaced_service_account("default", name),
        f"ServiceAccount {name}/default",
        timeout_s,
    )


def dry_run_pod_of(api_client: client.ApiClient, owner: Mapping[str, Any]) -> Manifest:
    """Server-side dry-run create of the pod `owner`'s controller would make from its template.

    The apiserver runs admission (webhooks included) and answers the pod as it would store it, stores nothing:
    a way to see what the webhook does now, before the real controller creates pods.
    """
    if "apiVersion" not in owner or "kind" not in owner:
        raise ValueError("dry_run_pod_of needs an owner read by itself (list items carry no apiVersion/kind)")
    meta, template = owner["metadata"], owner["spec"]["template"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{meta['name']}-probe-",
            "labels": dict(template.get("metadata", {}).get("labels") or {}),
            "annotations": dict(template.get("metadata", {}).get("annotations") or {}),
            "ownerReferences": [
                {
                    "apiVersion": owner["apiVersion"],
                    "kind": owner["kind"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": template["spec"],
    }
    core = client.CoreV1Api(api_client)
    answer = core.create_namespaced_pod(meta["namespace"], pod, dry_run="All")  # type: ignore[arg-type]
    return to_dict(api_client, answer)


def ensure_namespace(
    api_client: client.ApiClient, name: str, labels: Mapping[str, str] | None = None
) -> None:
    """Like create_namespace, but a namespace that exists already only gets `labels` merged in."""
    try:
        create_namespace(api_client, name, labels)
    except client.ApiException as e:
        if e.status != 409:
            raise
        client.CoreV1Api(api_client).patch_namespace(name, {"metadata": {"labels": dict(labels or {})}})
