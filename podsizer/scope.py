"""The one scope rule: which workloads a run sizes (namespace globs in/out, a label selector, kinds)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from podsizer.api.identity import SUPPORTED_KINDS, WorkloadRef
from podsizer.selector import Selector, parse

if TYPE_CHECKING:
    from podsizer.settings.roles import MetricsSourceSettings

KeyAlias = Callable[[str], str]
"""A second spelling of a label key, looked up when the first is absent (see Selector.matches)."""

_GLOB_CHARS = frozenset("*?[")


def is_glob(pattern: str) -> bool:
    return any(c in _GLOB_CHARS for c in pattern)


def kind_named(name: str) -> str:
    """The supported workload kind spelled `name` in any case; ValueError naming the supported ones."""
    by_lower = {k.lower(): k for k in SUPPORTED_KINDS}
    kind = by_lower.get(name.strip().lower())
    if kind is None:
        known = ", ".join(SUPPORTED_KINDS)
        raise ValueError(f"unknown workload kind {name.strip()!r}; expected one of {known}")
    return kind


@dataclass(frozen=True)
class Scope:
    """Namespaces (globs; empty: all) minus excluded ones (globs), a label selector matched against the
    workload's pod labels, and workload kinds (empty: all). The default scope takes everything."""

    namespaces: tuple[str, ...] = ()
    exclude_namespaces: tuple[str, ...] = ()
    selector: Selector = field(default_factory=Selector)
    kinds: tuple[str, ...] = ()

    @property
    def everything(self) -> bool:
        return not (self.namespaces or self.exclude_namespaces or self.selector or self.kinds)

    def matches_namespace(self, namespace: str) -> bool:
        if self.namespaces and not any(fnmatchcase(namespace, p) for p in self.namespaces):
            return False
        return not any(fnmatchcase(namespace, p) for p in self.exclude_namespaces)

    def matches(
        self, workload: WorkloadRef, pod_labels: Mapping[str, str], key_alias: KeyAlias | None = None
    ) -> bool:
        """The workload is in scope: its namespace, its kind and its pods' labels."""
        return (
            self.matches_namespace(workload.namespace)
            and (not self.kinds or workload.kind in self.kinds)
            and self.selector.matches(pod_labels, key_alias)
        )

    def listed_namespaces(self) -> list[str] | None:
        """The namespaces to read when every include is a plain name (no discovery needed), else None."""
        if not self.namespaces or any(is_glob(p) for p in self.namespaces):
            return None
        return sorted({ns for ns in self.namespaces if self.matches_namespace(ns)})

    def unmatched(
        self,
        pod_labels: Mapping[WorkloadRef, Mapping[str, str]],
        key_alias: KeyAlias | None = None,
        skipped_namespaces: Collection[str] = (),
    ) -> tuple[str, ...]:
        """What in the scope matched nothing among `pod_labels`' workloads (all the source saw), one line
        each: an include namespace pattern, the selector (within the namespaces), a kind (within both).
        A namespace the source found but skipped (an error, no series) is reported there, not here."""
        seen = {w.namespace for w in pod_labels} | set(skipped_namespaces)
        out = [
            f"namespace {'pattern ' if is_glob(p) else ''}{p!r} matched no workload"
            for p in self.namespaces
            if not any(fnmatchcase(ns, p) for ns in seen)
        ]
        in_ns = [w for w in pod_labels if self.matches_namespace(w.namespace)]
        selected = [w for w in in_ns if self.selector.matches(pod_labels[w], key_alias)]
        if self.selector and in_ns and not selected:
            out.append(f"label selector '{self.selector}' matched no workload in the namespaces in scope")
        out.extend(
            f"kind {k} matched no workload in scope"
            for k in self.kinds
            if selected and not any(w.kind == k for w in selected)
        )
        return tuple(out)


def scope_of(settings: MetricsSourceSettings) -> Scope:
    """The scope the settings give (namespaces, exclude_namespaces, selector, kinds)."""
    return Scope(
        namespaces=settings.namespaces,
        exclude_namespaces=settings.exclude_namespaces,
        selector=parse(settings.selector),
        kinds=settings.kinds,
    )
