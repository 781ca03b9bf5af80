"""An in-memory CustomObjectsApi for the CRD stores' tests (UsageCheckpoints; Recommendations, with their
status subresource): label selectors, paging, resourceVersions (a stale one is a 409), delete
preconditions, and injected failures; thread-safe."""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

G, V, P = "podsizer.io", "v1alpha1", "usagecheckpoints"
RECOMMENDATIONS = "recommendations"


def _matches(labels: Mapping[str, str], selector: str) -> bool:
    """Equality (`k=v`) and does-not-exist (`!k`) requirements, comma-separated."""
    for req in filter(None, selector.split(",")):
        if req.startswith("!"):
            if req[1:] in labels:
                return False
        else:
            key, _, value = req.partition("=")
            if labels.get(key) != value:
                return False
    return True


class FakeCustomObjects:
    """One namespaced CRD (`plural`). With `status_subresource`, as the apiserver keeps one: create and
    replace leave status alone, replace_status changes status only."""

    def __init__(self, plural: str = P, status_subresource: bool = False) -> None:
        self.plural, self.status_subresource = plural, status_subresource
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.rv = 0
        self.calls: list[str] = []
        self.fail: dict[str, int] = {}  # op -> HTTP status of every such call
        self.fail_next: dict[str, list[int]] = {}  # op -> statuses of the next calls
        self.namespaces: set[str] | None = None  # None: every namespace exists
        self.hidden: set[tuple[str, str]] = set()  # left out of lists (as if created after the list)
        self.lock = threading.Lock()

    def _check(self, group: str, version: str, plural: str, op: str) -> None:
        assert (group, version, plural) == (G, V, self.plural)
        self.calls.append(op)
        queue = self.fail_next.get(op)
        if queue:
            raise ApiException(status=queue.pop(0), reason="Injected")
        if op in self.fail:
            raise ApiException(status=self.fail[op], reason="Injected")

    def _bump(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(obj)

    def list_cluster_custom_object(
        self, group: str, version: str, plural: str, *, label_selector: str = "", limit: int = 0, **kw: Any
    ) -> Any:
        return self._list(group, version, plural, None, label_selector, limit, kw.get("_continue"))

    def list_namespaced_custom_object(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        *,
        label_selector: str = "",
        limit: int = 0,
        **kw: Any,
    ) -> Any:
        return self._list(group, version, plural, namespace, label_selector, limit, kw.get("_continue"))

    def _list(
        self,
        group: str,
        version: str,
        plural: str,
        namespace: str | None,
        label_selector: str,
        limit: int,
        token: str | None,
    ) -> Any:
        with self.lock:
            self._check(group, version, plural, "list" if namespace is None else "list_namespaced")
            found = [
                copy.deepcopy(o)
                for key, o in sorted(self.objects.items())
                if key not in self.hidden
                and namespace in (None, key[0])
                and _matches(o["metadata"].get("labels") or {}, label_selector)
            ]
            start = int(token or 0)
            end = start + limit if limit else len(found)
            meta = {"continue": str(end)} if end < len(found) else {}
            return {"items": found[start:end], "metadata": meta}

    def get_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str
    ) -> Any:
        with self.lock:
            self._check(group, version, plural, "get")
            if (namespace, name) not in self.objects:
                raise ApiException(status=404, reason="Not Found")
            return copy.deepcopy(self.objects[(namespace, name)])

    def create_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, body: Any
    ) -> Any:
        with self.lock:
            self._check(group, version, plural, "create")
            if self.namespaces is not None and namespace not in self.namespaces:
                raise ApiException(status=404, reason="Not Found")
            key = (namespace, body["metadata"]["name"])
            if key in self.objects:
                raise ApiException(status=409, reason="AlreadyExists")
            assert "resourceVersion" not in body["metadata"]
            obj = copy.deepcopy(body)
            obj["metadata"]["namespace"] = namespace
            if self.status_subresource:
                obj.pop("status", None)
            self.objects[key] = obj
            return self._bump(obj)

    def _current(self, namespace: str, name: str, body: Any) -> dict[str, Any]:
        if (namespace, name) not in self.objects:
            raise ApiException(status=404, reason="Not Found")
        current = self.objects[(namespace, name)]
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ApiException(status=409, reason="Conflict")
        return current

    def replace_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, body: Any
    ) -> Any:
        with self.lock:
            self._check(group, version, plural, "replace")
            current = self._current(namespace, name, body)
            obj = copy.deepcopy(body)
            obj["metadata"]["namespace"] = namespace
            if self.status_subresource:
                obj.pop("status", None)
                if "status" in current:
                    obj["status"] = current["status"]
            self.objects[(namespace, name)] = obj
            return self._bump(obj)

    def replace_namespaced_custom_object_status(
        self, group: str, version: str, namespace: str, plural: str, name: str, body: Any
    ) -> Any:
        with self.lock:
            self._check(group, version, plural, "replace_status")
            assert self.status_subresource, f"{self.plural} has no status subresource"
            current = self._current(namespace, name, body)
            current["status"] = copy.deepcopy(body["status"])
            return self._bump(current)

    def delete_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, *, body: Any = None
    ) -> Any:
        with self.lock:
            self._check(group, version, plural, "delete")
            if (namespace, name) not in self.objects:
                raise ApiException(status=404, reason="Not Found")
            wanted = ((body or {}).get("preconditions") or {}).get("resourceVersion")
            if wanted and wanted != self.objects[(namespace, name)]["metadata"]["resourceVersion"]:
                raise ApiException(status=409, reason="Conflict")
            del self.objects[(namespace, name)]
            return {"status": "Success"}


def fake_recommendations() -> FakeCustomObjects:
    """The Recommendation CRD: recommendations.podsizer.io, with its status subresource."""
    return FakeCustomObjects(RECOMMENDATIONS, status_subresource=True)
