"""In-cluster store: one Recommendation custom resource per workload, through CustomObjectsApi.

The CRD declares `subresources: status`, so the apiserver ignores status on create and on a
spec update: the spec (targetRef; resourcePolicy belongs to users and is left as it is) is written
with create/replace, the status with replace_namespaced_custom_object_status. Both carry the
resourceVersion just read; a 409 Conflict re-reads the object and tries again.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import (
    API_GROUP,
    API_VERSION,
    PLURAL,
    ContainerPolicy,
    Recommendation,
    RecommendationError,
    object_name,
    recommendation_from_resource,
    recommendation_to_resource,
)
from podsizer.apierrors import api_error, describe, status_code
from recommender.output.store.base import StoreError, bounds_of, own_cluster

log = logging.getLogger("podsizer.store")

_Recs = list[Recommendation]
_Failures = list[tuple[Recommendation, Exception]]


class CustomObjects(Protocol):
    """The part of kubernetes.client.CustomObjectsApi this store uses."""

    def list_namespaced_custom_object(self, group: str, version: str, namespace: str, plural: str) -> Any: ...

    def list_cluster_custom_object(self, group: str, version: str, plural: str) -> Any: ...

    def get_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str
    ) -> Any: ...

    def create_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, body: Any
    ) -> Any: ...

    def replace_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, body: Any
    ) -> Any: ...

    def replace_namespaced_custom_object_status(
        self, group: str, version: str, namespace: str, plural: str, name: str, body: Any
    ) -> Any: ...


class CrdStore:
    """A RecommendationStore on the podsizer.io/v1alpha1 Recommendation custom resource.

    `namespace` limits list()/bounds() to one namespace (and put() refuses others); None: all.
    `cluster_name`: put_many() writes only that cluster's recommendations (store.base.own_cluster).
    Pass `custom_objects` to use something other than CustomObjectsApi(api_client).
    """

    def __init__(
        self,
        api_client: Any = None,
        namespace: str | None = None,
        cluster_name: str = "",
        *,
        custom_objects: CustomObjects | None = None,
        max_attempts: int = 5,
    ) -> None:
        if custom_objects is None:
            from kubernetes import client

            self.api: CustomObjects = cast(CustomObjects, client.CustomObjectsApi(api_client))
        else:
            self.api = custom_objects
        self.namespace = namespace
        self.cluster_name = cluster_name
        self.max_attempts = max_attempts

    def _items(self) -> list[Any]:
        try:
            if self.namespace is None:
                resp = self.api.list_cluster_custom_object(API_GROUP, API_VERSION, PLURAL)
            else:
                resp = self.api.list_namespaced_custom_object(API_GROUP, API_VERSION, self.namespace, PLURAL)
        except Exception as exc:
            if api_error(exc):
                where = f"namespace {self.namespace}" if self.namespace else "all namespaces"
                raise StoreError(f"cannot list {PLURAL}.{API_GROUP} in {where}: {describe(exc)}") from exc
            raise
        items = resp.get("items") if isinstance(resp, Mapping) else None
        return list(items or [])

    def list(self) -> _Recs:
        out: _Recs = []
        for item in self._items():
            try:
                out.append(recommendation_from_resource(item))
            except (RecommendationError, ValueError) as exc:
                log.warning("Recommendation %s skipped: %s", object_name(item), exc)
        return sorted(out, key=lambda r: (r.target.cluster, r.namespace, r.name))

    def _read(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            obj = self.api.get_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, name)
        except Exception as exc:
            if status_code(exc) == 404:
                return None
            if api_error(exc):
                raise StoreError(f"cannot read Recommendation {namespace}/{name}: {describe(exc)}") from exc
            raise
        return dict(obj)

    def get(self, ref: WorkloadRef) -> Recommendation | None:
        obj = self._read(ref.namespace, ref.recommendation_name)
        if obj is None:
            return None
        try:
            return recommendation_from_resource(obj)
        except (RecommendationError, ValueError) as exc:
            raise StoreError(f"Recommendation {ref.namespace}/{ref.recommendation_name}: {exc}") from exc

    def bounds(self) -> Mapping[WorkloadRef, tuple[ContainerPolicy, ...]]:
        return bounds_of(self.list())

    def put(self, rec: Recommendation) -> None:
        """Create or update one Recommendation: spec, then status, retrying conflicts."""
        if self.namespace is not None and rec.namespace != self.namespace:
            raise StoreError(
                f"Recommendation {rec.namespace}/{rec.name}: outside this store's namespace {self.namespace}"
            )
        desired = recommendation_to_resource(rec)
        desired["metadata"].pop("resourceVersion", None)
        ns, name = rec.namespace, rec.name
        last: BaseException | None = None
        for _attempt in range(self.max_attempts):
            try:
                self._put_once(ns, name, desired)
                return
            except Exception as exc:
                if status_code(exc) != 409:
                    if api_error(exc):
                        why = describe(exc)
                        raise StoreError(f"cannot write Recommendation {ns}/{name}: {why}") from exc
                    raise
                last = exc
                log.debug("Recommendation %s/%s: conflict, re-reading", ns, name)
        raise StoreError(
            f"cannot write Recommendation {ns}/{name}: still conflicting after {self.max_attempts} attempts"
            f" ({describe(last) if last else 'conflict'})"
        )

    def _put_once(self, ns: str, name: str, desired: dict[str, Any]) -> None:
        current = self._read(ns, name)
        if current is None:
            body = copy.deepcopy(desired)
            body.pop("status", None)
            current = dict(self.api.create_namespaced_custom_object(API_GROUP, API_VERSION, ns, PLURAL, body))
        else:
            spec = dict(current.get("spec") or {})
            if spec.get("targetRef") != desired["spec"]["targetRef"]:
                spec["targetRef"] = desired["spec"]["targetRef"]
                body = copy.deepcopy(current)
                body["spec"] = spec
                body.pop("status", None)
                current = dict(
                    self.api.replace_namespaced_custom_object(API_GROUP, API_VERSION, ns, PLURAL, name, body)
                )
        body = copy.deepcopy(current)
        body["status"] = desired["status"]
        self.api.replace_namespaced_custom_object_status(API_GROUP, API_VERSION, ns, PLURAL, name, body)

    def own(self, recs: Sequence[Recommendation]) -> tuple[_Recs, int]:
        """This cluster's recommendations (store.base.own_cluster) and how many others are left out."""
        return own_cluster(recs, self.cluster_name)

    def put_many(self, recs: Sequence[Recommendation]) -> _Failures:
        """Writes this cluster's recommendations (the others are left out, with one log line), each on
        its own."""
        own, others = self.own(recs)
        if others:
            log.info(
                "%d recommendations of other clusters not written (this cluster: %s)",
                others,
                self.cluster_name,
            )
        failed: _Failures = []
        for rec in own:
            try:
                self.put(rec)
            except (StoreError, ValueError) as exc:
                failed.append((rec, exc))
        return failed
