"""In-cluster store: one Recommendation custom resource per workload, through the one custom-object
client (podsizer.kube.objects: paged lists, conflict retry, errors).

The CRD declares `subresources: status`, so the apiserver ignores status on create and on a
spec update: the spec (targetRef; resourcePolicy belongs to users and is left as it is) is written
with create/replace, the status with replace_namespaced_custom_object_status. Both carry the
resourceVersion just read; a 409 Conflict re-reads the object and tries again.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from podsizer.api.identity import WorkloadRef
from podsizer.api.resource import (
    ContainerPolicy,
    Recommendation,
    RecommendationError,
    object_name,
    recommendation_from_resource,
    recommendation_to_resource,
)
from podsizer.apierrors import KubeApiError
from podsizer.kube.objects import CustomObjectClient, CustomObjects
from podsizer.kube.resources import RECOMMENDATIONS
from recommender.output.store.base import StoreError, bounds_of, own_cluster

log = logging.getLogger("podsizer.store")

_Recs = list[Recommendation]
_Failures = list[tuple[Recommendation, Exception]]


class CrdStore:
    """A RecommendationStore on the podsizer.io/v1alpha1 Recommendation custom resource.

    `namespace` limits list()/bounds() to one namespace (and put() refuses others); None: all.
    `cluster_name`: put_many() writes only that cluster's recommendations (store.base.own_cluster).
    Pass `custom_objects` to use something other than CustomObjectsApi(api_client).
    """

    def __init__(
        self,
        api_client: object = None,
        namespace: str | None = None,
        cluster_name: str = "",
        *,
        custom_objects: CustomObjects | None = None,
        max_attempts: int = 5,
    ) -> None:
        self.objects = CustomObjectClient.of(api_client, RECOMMENDATIONS, custom_objects)
        self.namespace = namespace
        self.cluster_name = cluster_name
        self.max_attempts = max_attempts

    def list(self) -> _Recs:
        try:
            items = self.objects.list(self.namespace)
        except KubeApiError as exc:
            raise StoreError(str(exc)) from exc
        out: _Recs = []
        for item in items:
            try:
                out.append(recommendation_from_resource(item))
            except (RecommendationError, ValueError) as exc:
                log.warning("Recommendation %s skipped: %s", object_name(item), exc)
        return sorted(out, key=lambda r: (r.target.cluster, r.namespace, r.name))

    def get(self, ref: WorkloadRef) -> Recommendation | None:
        try:
            obj = self.objects.get(ref.namespace, ref.recommendation_name)
        except KubeApiError as exc:
            raise StoreError(str(exc)) from exc
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

        def step(current: dict[str, Any] | None) -> None:
            self._put_once(ns, name, desired, current)

        try:
            self.objects.write(ns, name, step, attempts=self.max_attempts)
        except KubeApiError as exc:
            raise StoreError(str(exc)) from exc

    def _put_once(self, ns: str, name: str, desired: dict[str, Any], current: dict[str, Any] | None) -> None:
        if current is None:
            body = copy.deepcopy(desired)
            body.pop("status", None)
            current = self.objects.create(ns, body)
        else:
            spec = dict(current.get("spec") or {})
            if spec.get("targetRef") != desired["spec"]["targetRef"]:
                spec["targetRef"] = desired["spec"]["targetRef"]
                body = copy.deepcopy(current)
                body["spec"] = spec
                body.pop("status", None)
                current = self.objects.replace(ns, name, body)
        body = copy.deepcopy(current)
        body["status"] = desired["status"]
        self.objects.replace_status(ns, name, body)

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
