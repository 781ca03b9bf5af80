"""In-cluster checkpoint store: one UsageCheckpoint custom resource per workload, through the one
custom-object client (podsizer.kube.objects).

The object sits in the workload's namespace, named like its Recommendation (object_name), labelled
managed-by podsizer and, in a multi-cluster setup, with its cluster; spec.data is the blob in base64.
A store reads and writes only its own cluster's objects (those without a cluster label when its cluster
is ""). A write lists them once, then creates, replaces (with the listed resourceVersion; a 409 Conflict
re-reads the object and tries again) or deletes each on a small thread pool; an object whose stored
spec is already the one to write is left alone.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import re
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

from podsizer.api.identity import WorkloadRef
from podsizer.apierrors import KubeApiError
from podsizer.keys import CLUSTER_LABEL
from podsizer.kube.objects import CustomObjectClient, CustomObjects, StillConflicting
from podsizer.kube.resources import USAGE_CHECKPOINTS
from recommender.checkpoints.base import BlobKey, CheckpointStoreError, ReadResult, WriteResult

log = logging.getLogger("podsizer.checkpoints")

KIND = USAGE_CHECKPOINTS.kind
PLURAL = USAGE_CHECKPOINTS.plural
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "podsizer"
MAX_DATA_CHARS = 1_048_576
"""spec.data's maxLength in the CRD (manifests/crds/usagecheckpoint.yaml)."""
MAX_BLOB_BYTES = MAX_DATA_CHARS // 4 * 3
"""The largest blob whose base64 fits spec.data (768 KiB)."""
MAX_NAME = 253

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_HASH_CHARS = 10


def object_name(ref: WorkloadRef) -> str:
    """The UsageCheckpoint's name: ref.recommendation_name (<kind-lowercase>-<name>) when it is a valid
    object name, else that name made valid and cut short, plus a hash of the workload's kind and name."""
    name = ref.recommendation_name
    if len(name) <= MAX_NAME and _SUBDOMAIN.match(name):
        return name
    digest = hashlib.sha256(f"{ref.kind}/{ref.name}".encode()).hexdigest()[:_HASH_CHARS]
    cleaned = re.sub(r"[^a-z0-9.-]+", "-", name.lower())
    cleaned = re.sub(r"\.{2,}|-?\.-?", ".", cleaned)[: MAX_NAME - _HASH_CHARS - 1]
    cleaned = re.sub(r"^[^a-z0-9]+|[^a-z0-9]+$", "", cleaned)
    return f"{cleaned}-{digest}" if cleaned else digest


def label_selector(cluster: str) -> str:
    """The objects of a store in `cluster`: managed by podsizer, with that cluster label (or none)."""
    managed = f"{MANAGED_BY_LABEL}={MANAGED_BY}"
    return f"{managed},{CLUSTER_LABEL}={cluster}" if cluster else f"{managed},!{CLUSTER_LABEL}"


def _meta(item: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = item.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


_Item = Mapping[str, Any]


def _cluster_of(item: _Item) -> str:
    labels = _meta(item).get("labels")
    return str(labels.get(CLUSTER_LABEL, "")) if isinstance(labels, Mapping) else ""


def _where(item: Mapping[str, Any]) -> tuple[str, str]:
    meta = _meta(item)
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


@dataclass(frozen=True)
class _Outcome:
    """What one create/replace/delete did."""

    written: int = 0
    deleted: int = 0
    bytes: int = 0
    failure: str | None = None
    api_failure: bool = False


def _failed(exc: KubeApiError) -> _Outcome:
    """A write that failed; an API failure unless it only kept meeting conflicts."""
    return _Outcome(failure=str(exc), api_failure=not isinstance(exc, StillConflicting))


class CrdCheckpointStore:
    """A CheckpointStore of one blob per workload, each in a podsizer.io/v1alpha1 UsageCheckpoint.

    `cluster`: the cluster this store is in; it reads and writes only that cluster's objects, and a
    write leaves out blobs of other clusters' workloads (with a log line). `concurrency`: how many
    writes run at once. Pass `custom_objects` to use something other than CustomObjectsApi(api_client).
    """

    per_workload = True

    def __init__(
        self,
        api_client: Any = None,
        cluster: str = "",
        *,
        custom_objects: CustomObjects | None = None,
        concurrency: int = 8,
        max_attempts: int = 5,
    ) -> None:
        if not _LABEL_VALUE.match(cluster) or len(cluster) > 63:
            raise ValueError(f"cluster name {cluster!r} is not a valid label value (63 characters at most)")
        if concurrency < 1:
            raise ValueError(f"checkpoint write concurrency must be at least 1, not {concurrency}")
        self.objects = CustomObjectClient.of(api_client, USAGE_CHECKPOINTS, custom_objects)
        self.cluster = cluster
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self.name = f"crd {USAGE_CHECKPOINTS.name}" + (f" (cluster {cluster})" if cluster else "")

    def __repr__(self) -> str:
        return f"CrdCheckpointStore(cluster={self.cluster!r})"

    def _list(self) -> list[dict[str, Any]]:
        """This store's objects, page by page; CheckpointStoreError when they cannot be listed."""
        try:
            return self.objects.list(label_selector=label_selector(self.cluster))
        except KubeApiError as exc:
            raise CheckpointStoreError(str(exc)) from exc

    def _decode(self, item: Mapping[str, Any]) -> tuple[WorkloadRef, bytes]:
        """The workload and blob one object holds; ValueError saying why not."""
        namespace, name = _where(item)
        spec = item.get("spec")
        if not isinstance(spec, Mapping):
            raise ValueError("no spec")
        target = spec.get("targetRef")
        if not isinstance(target, Mapping):
            raise ValueError("no spec.targetRef")
        kind, workload = target.get("kind"), target.get("name")
        if not isinstance(kind, str) or not isinstance(workload, str) or not workload:
            raise ValueError("spec.targetRef needs a kind and a name")
        cluster = spec.get("cluster") or ""
        if cluster != self.cluster:
            raise ValueError(f"spec.cluster {cluster!r} is not this store's cluster {self.cluster!r}")
        ref = WorkloadRef(namespace, kind, workload, self.cluster)  # ValueError: an unsupported kind
        if name != object_name(ref):
            raise ValueError(
                f"named {name}, but a checkpoint of {kind}/{workload} is named {object_name(ref)}"
            )
        data = spec.get("data")
        if not isinstance(data, str):
            raise ValueError("no spec.data")
        try:
            blob = base64.b64decode(data, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"spec.data is not base64: {exc}") from exc
        if spec.get("bytes") != len(blob):
            raise ValueError(f"spec.data holds {len(blob)} bytes, spec.bytes says {spec.get('bytes')}")
        return ref, blob

    def read(self) -> ReadResult:
        blobs: dict[BlobKey, bytes] = {}
        unreadable: list[str] = []
        for item in self._list():
            try:
                ref, blob = self._decode(item)
            except ValueError as exc:
                namespace, name = _where(item)
                unreadable.append(f"{KIND} {namespace}/{name}: {exc}")
                continue
            blobs[ref] = blob
        return ReadResult(blobs=blobs, unreadable=tuple(sorted(unreadable)))

    def _spec(self, ref: WorkloadRef, blob: bytes) -> dict[str, Any]:
        return {
            "targetRef": {"kind": ref.kind, "name": ref.name},
            "cluster": ref.cluster,
            "data": base64.b64encode(blob).decode("ascii"),
            "bytes": len(blob),
        }

    def _body(self, ref: WorkloadRef, spec: dict[str, Any], resource_version: str | None) -> dict[str, Any]:
        labels = {MANAGED_BY_LABEL: MANAGED_BY, **({CLUSTER_LABEL: ref.cluster} if ref.cluster else {})}
        meta: dict[str, Any] = {"name": object_name(ref), "namespace": ref.namespace, "labels": labels}
        if resource_version:
            meta["resourceVersion"] = resource_version
        return {"apiVersion": USAGE_CHECKPOINTS.api_version, "kind": KIND, "metadata": meta, "spec": spec}

    def _own(self, blobs: Mapping[BlobKey, bytes]) -> dict[tuple[str, str], tuple[WorkloadRef, bytes]]:
        """This cluster's blobs by (namespace, object name); ValueError for key None."""
        own: dict[tuple[str, str], tuple[WorkloadRef, bytes]] = {}
        others = 0
        for key, blob in blobs.items():
            if key is None:
                raise ValueError(f"{self.name} keeps one blob per workload: key None is not a workload")
            if key.cluster != self.cluster:
                others += 1
                continue
            own[(key.namespace, object_name(key))] = (key, blob)
        if others:
            log.info("%d checkpoints of other clusters not written (this cluster: %r)", others, self.cluster)
        return own

    def write(self, blobs: Mapping[BlobKey, bytes]) -> WriteResult:
        """Creates or replaces each changed blob's object and deletes this cluster's objects of workloads
        not in `blobs`; failures are lines in WriteResult.failed. CheckpointStoreError when the objects
        cannot be listed, or when every create/replace/delete failed with an API or connection error."""
        own = self._own(blobs)
        stored = {_where(item): item for item in self._list()}
        tasks: list[Callable[[], _Outcome]] = []
        for where, (ref, blob) in sorted(own.items()):
            spec = self._spec(ref, blob)
            current = stored.get(where)
            if current is not None and current.get("spec") == spec:
                continue
            if len(blob) > MAX_BLOB_BYTES:
                line = f"{KIND} {where[0]}/{where[1]}: {len(blob)} bytes, more than {MAX_BLOB_BYTES} fit"
                tasks.append(partial(_Outcome, failure=line))
                continue
            tasks.append(partial(self._put, ref, spec, len(blob), current))
        for namespace, name in sorted(stored.keys() - own.keys()):
            version = _meta(stored[(namespace, name)]).get("resourceVersion")
            tasks.append(partial(self._delete, namespace, name, str(version) if version else None))
        outcomes = self._run(tasks)
        failed = tuple(o.failure for o in outcomes if o.failure)
        if outcomes and all(o.api_failure for o in outcomes):
            more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            raise CheckpointStoreError(f"cannot write any {USAGE_CHECKPOINTS.name}: {failed[0]}{more}")
        return WriteResult(
            written=sum(o.written for o in outcomes),
            deleted=sum(o.deleted for o in outcomes),
            bytes=sum(o.bytes for o in outcomes),
            failed=failed,
        )

    def _run(self, tasks: list[Callable[[], _Outcome]]) -> list[_Outcome]:
        if len(tasks) <= 1 or self.concurrency == 1:
            return [task() for task in tasks]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(tasks))) as pool:
            return list(pool.map(lambda task: task(), tasks))

    def _put(self, ref: WorkloadRef, spec: dict[str, Any], size: int, listed: _Item | None) -> _Outcome:
        """Create (nothing `listed`) or replace one object; a conflict re-reads it and tries again."""
        namespace, name = ref.namespace, object_name(ref)

        def step(current: dict[str, Any] | None) -> _Outcome:
            if current is not None and _cluster_of(current) != self.cluster:
                why = "the object of that name belongs to another cluster"
                return _Outcome(failure=f"cannot write {KIND} {namespace}/{name}: {why}")
            found = _meta(current).get("resourceVersion") if current is not None else None
            body = self._body(ref, spec, str(found) if found else None)
            if current is None:
                self.objects.create(namespace, body)
            else:
                self.objects.replace(namespace, name, body)
            return _Outcome(written=1, bytes=size)

        try:
            current = dict(listed) if listed is not None else None
            return self.objects.write(namespace, name, step, current=current, attempts=self.max_attempts)
        except KubeApiError as exc:
            return _failed(exc)

    def _delete(self, namespace: str, name: str, version: str | None) -> _Outcome:
        """Delete one object, only as it was listed (a precondition on its resourceVersion)."""
        try:
            deleted = self.objects.delete(namespace, name, version)
        except KubeApiError as exc:
            return _failed(exc)
        return _Outcome(deleted=1) if deleted else _Outcome()
