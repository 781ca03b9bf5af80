"""One typed client of one custom resource: paged lists, get-or-none, create-or-replace with conflict
retry; every failure leaves it as a KubeApiError naming the object (through podsizer.apierrors)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, Protocol, TypeVar, cast

from podsizer.apierrors import KubeApiError, describe, failing_as
from podsizer.kube.pages import PAGE_SIZE, items, pages
from podsizer.kube.resources import CustomResource

log = logging.getLogger("podsizer.kube")

Obj = dict[str, Any]
T = TypeVar("T")


class StillConflicting(KubeApiError):
    """Every attempt of a write met a 409 Conflict: another writer kept changing the object."""


def where(namespace: str | None) -> str:
    """`namespace shop`, or `all namespaces` for a cluster-wide list."""
    return f"namespace {namespace}" if namespace else "all namespaces"


class CustomObjects(Protocol):
    """The part of kubernetes.client.CustomObjectsApi this client calls."""

    def list_cluster_custom_object(self, group: str, version: str, plural: str, **kwargs: Any) -> Any: ...

    def list_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, **kwargs: Any
    ) -> Any: ...

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

    def delete_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, *, body: Any = ...
    ) -> Any: ...


class Read(Enum):
    """`write(current=Read.FIRST)`: the caller has not read the object; the client reads it first."""

    FIRST = "first"


def _obj(value: object) -> Obj:
    return dict(value) if isinstance(value, Mapping) else {}


class CustomObjectClient:
    """Namespaced objects of one custom resource, as plain JSON dicts.

    Every call returns, or raises KubeApiError naming the object and the failure (`cannot list
    recommendations.podsizer.io in namespace shop: HTTP 403 Forbidden`); other exceptions pass unchanged.
    """

    def __init__(self, api: CustomObjects, resource: CustomResource, page_size: int = PAGE_SIZE) -> None:
        self.api = api
        self.resource = resource
        self.page_size = page_size

    @classmethod
    def of(
        cls, api_client: object, resource: CustomResource, api: CustomObjects | None = None
    ) -> CustomObjectClient:
        """The client over `api`, by default kubernetes.client.CustomObjectsApi(api_client)."""
        if api is None:
            from kubernetes import client

            api = cast(CustomObjects, client.CustomObjectsApi(api_client))
        return cls(api, resource)

    def _what(self, verb: str, namespace: str, name: str) -> str:
        return f"cannot {verb} {self.resource.kind} {namespace}/{name}"

    def lister(self, namespace: str | None = None) -> Callable[..., Any]:
        """The raw list call (all namespaces, or one) taking the client's keyword arguments: what a
        watch follows (podsizer.kube.watch)."""
        r, api = self.resource, self.api

        def list_fn(**kwargs: Any) -> Any:
            if namespace is None:
                return api.list_cluster_custom_object(r.group, r.version, r.plural, **kwargs)
            return api.list_namespaced_custom_object(r.group, r.version, namespace, r.plural, **kwargs)

        list_fn.__doc__ = f"{r.kind} objects; the watch treats it like any list_* call."
        return list_fn

    def list(self, namespace: str | None = None, label_selector: str = "") -> list[Obj]:
        """Every object (of one namespace, or all), page by page; `label_selector` filters them."""
        list_fn = self.lister(namespace)
        selector = {"label_selector": label_selector} if label_selector else {}

        def fetch(paging: dict[str, Any]) -> Mapping[str, Any]:
            page = list_fn(**selector, **paging)
            return page if isinstance(page, Mapping) else {}

        with failing_as(f"cannot list {self.resource.name} in {where(namespace)}"):
            return [item for page in pages(fetch, self.page_size) for item in items(page)]

    def get(self, namespace: str, name: str) -> Obj | None:
        """The object, or None when there is none of that name."""
        r = self.resource
        try:
            with failing_as(self._what("read", namespace, name)):
                found = self.api.get_namespaced_custom_object(r.group, r.version, namespace, r.plural, name)
        except KubeApiError as exc:
            if exc.status == 404:
                return None
            raise
        return _obj(found)

    def create(self, namespace: str, body: Mapping[str, Any]) -> Obj:
        r = self.resource
        name = str(_obj(body.get("metadata")).get("name") or "")
        with failing_as(self._what("create", namespace, name)):
            made = self.api.create_namespaced_custom_object(r.group, r.version, namespace, r.plural, body)
        return _obj(made)

    def replace(self, namespace: str, name: str, body: Mapping[str, Any]) -> Obj:
        """Replace the object (its spec, where the resource has a status subresource)."""
        return self._replace("replace", self.api.replace_namespaced_custom_object, namespace, name, body)

    def replace_status(self, namespace: str, name: str, body: Mapping[str, Any]) -> Obj:
        """Replace the object's status through the status subresource."""
        call = self.api.replace_namespaced_custom_object_status
        return self._replace("replace the status of", call, namespace, name, body)

    def _replace(
        self, verb: str, call: Callable[..., Any], namespace: str, name: str, body: Mapping[str, Any]
    ) -> Obj:
        r = self.resource
        with failing_as(self._what(verb, namespace, name)):
            return _obj(call(r.group, r.version, namespace, r.plural, name, body))

    def delete(self, namespace: str, name: str, resource_version: str | None = None) -> bool:
        """Delete the object, only as it was at `resource_version` when given; False: it was gone."""
        r = self.resource
        body = {"preconditions": {"resourceVersion": resource_version}} if resource_version else {}
        try:
            with failing_as(self._what("delete", namespace, name)):
                self.api.delete_namespaced_custom_object(
                    r.group, r.version, namespace, r.plural, name, body=body
                )
        except KubeApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def write(
        self,
        namespace: str,
        name: str,
        step: Callable[[Obj | None], T],
        *,
        current: Obj | Read | None = Read.FIRST,
        attempts: int = 5,
    ) -> T:
        """Create or replace one object: `step(current)` writes it from what is stored (None: nothing yet).

        `current` is what the caller already read (by default the object is read first). A 409 Conflict,
        or a 404 while the object existed (deleted meanwhile), re-reads it and runs `step` again, up to
        `attempts` times (then StillConflicting). Any other failure: KubeApiError `cannot write <kind> ..`.
        """
        if attempts < 1:
            raise ValueError(f"a write makes at least 1 attempt, not {attempts}")
        what = self._what("write", namespace, name)
        last: KubeApiError | None = None
        try:
            for attempt in range(attempts):
                seen = self.get(namespace, name) if attempt or current is Read.FIRST else current
                try:
                    return step(seen)
                except KubeApiError as exc:
                    if not (exc.status == 409 or (exc.status == 404 and seen is not None)):
                        raise
                    last = exc
                    log.debug("%s: HTTP %s, re-reading", what, exc.status)
        except KubeApiError as exc:
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            raise KubeApiError(f"{what}: {describe(cause)}", exc.status) from cause
        how = f" ({describe(last.__cause__ or last)})" if last is not None else ""
        raise StillConflicting(f"{what}: still conflicting after {attempts} attempts{how}", 409)
