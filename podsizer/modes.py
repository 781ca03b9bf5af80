"""Modes, update modes, exclusion and the GPU opt-in: one precedence (pod > workload > namespace >
configuration)."""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from podsizer.api import WorkloadRef
from podsizer.keys import (
    ALLOW_LARGE_CHANGE_KEY,
    ALLOW_SINGLE_REPLICA_KEY,
    EXCLUDE_KEY,
    GPU_KEY,
    MODE_KEY,
    UPDATE_MODE_KEY,
)
from podsizer.policy import MODES, Mode, PlanPolicy
from podsizer.untrusted import one_line, shown

log = logging.getLogger("podsizer.modes")
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_GPU_RESIZE = {"keep": False, "resize": True}
GPU_CHOICES = tuple(_GPU_RESIZE)
Scope = Literal["pod", "workload", "namespace"]
UpdateMode = Literal["off", "initial", "recreate", "in-place-or-recreate"]
UPDATE_MODES: tuple[UpdateMode, ...] = ("off", "initial", "recreate", "in-place-or-recreate")
_UPDATE_MODES: Mapping[str, UpdateMode] = {m: m for m in UPDATE_MODES}
T = TypeVar("T")


class Metadata(Protocol):
    """The labels and annotations podsizer reads from a pod, a workload or a namespace."""

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def annotations(self) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class Meta:
    """A plain Metadata value (a pod's own metadata, a test's, the console's)."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str]


class MetadataLookup(Protocol):
    """Namespace and workload metadata from a watched cache (never an API call per request)."""

    def namespace(self, name: str) -> Metadata | None: ...

    def workload(self, ref: WorkloadRef) -> Metadata | None: ...


class NoMetadata:
    """Standalone: no cluster to watch; only the pod itself and configuration decide."""

    def namespace(self, name: str) -> Metadata | None:
        return None

    def workload(self, ref: WorkloadRef) -> Metadata | None:
        return None


@dataclass(frozen=True)
class Resolved:
    """What the metadata decides for a pod: its mode (and where from), an opt-out, the GPU opt-in."""

    mode: Mode
    mode_source: str = "default"
    excluded_by: Scope | None = None
    gpu_resize: bool = False
    gpu_source: str = "default"
    ignored: tuple[str, ...] = ()  # invalid values passed over, e.g. "invalid podsizer.io/mode 'x' (pod ...)"
    allow_large_change: bool = False  # podsizer.io/allow-large-change: lifts the maximum change factor

    def describe(self) -> str:
        """Where the mode came from, for people: "podsizer.io/mode pod annotation", "default; invalid ..."."""
        return "; ".join((self.mode_source, *self.ignored))


def _true(m: Mapping[str, str] | None) -> bool:
    return m is not None and m.get(EXCLUDE_KEY, "").strip().lower() == "true"


def opted_out(meta: Metadata | None) -> bool:
    """`podsizer.io/exclude: "true"` (any case) as a label or an annotation."""
    return meta is not None and (_true(meta.annotations) or _true(meta.labels))


def _is_glob(entry: str) -> bool:
    return any(c in entry for c in "*?[")


def namespace_excluded(namespace: str, excluded: Collection[str]) -> bool:
    """Is `namespace` one of the excluded names or matched by one of its glob patterns (`openshift-*`,
    `kube-*`: fnmatch syntax, case-sensitive like namespace names)?"""
    if namespace in excluded:
        return True
    return any(_is_glob(e) and fnmatch.fnmatchcase(namespace, e) for e in excluded)


def excluded_by(
    pod: Metadata | None, workload: Metadata | None = None, namespace: Metadata | None = None
) -> Scope | None:
    """The first of pod, namespace, workload that opts out; None when none does."""
    if opted_out(pod):
        return "pod"
    if opted_out(namespace):
        return "namespace"
    if opted_out(workload):
        return "workload"
    return None


def _choice(key: str, value: str | None, where: str, choices: Mapping[str, T]) -> T | None:
    """The one rule of every podsizer.io/ label and annotation value: a name of `choices` in any case,
    spaces around it ignored; unset gives None, and so does an invalid value, logged (the next level
    decides)."""
    if value is None:
        return None
    v = value.strip().lower()
    if v in choices:
        return choices[v]
    names = list(choices)
    expected = f"{names[0]} or {names[1]}" if len(names) == 2 else f"one of {', '.join(names)}"
    log.warning("ignoring %s=%s on %s: expected %s", key, shown(value), one_line(where), expected)
    return None


_TRUE_OR_FALSE = {"true": True, "false": False}
_MODES: Mapping[str, Mode] = {m: m for m in MODES}


def parse_mode(value: str | None, where: str = "") -> Mode | None:
    """off, dry-run or auto (_choice)."""
    return _choice(MODE_KEY, value, where, _MODES)


def parse_gpu(value: str | None, where: str = "") -> bool | None:
    """keep -> False, resize -> True (_choice)."""
    return _choice(GPU_KEY, value, where, _GPU_RESIZE)


def parse_allow_large_change(value: str | None, where: str = "") -> bool | None:
    """`true` or `false` (_choice)."""
    return _choice(ALLOW_LARGE_CHANGE_KEY, value, where, _TRUE_OR_FALSE)


def _levels(
    key: str, pod: Metadata | None, workload: Metadata | None, namespace: Metadata | None
) -> tuple[tuple[str | None, str], ...]:
    """The value of `key` per level, first wins: pod annotation, workload annotation, namespace label."""
    return (
        (pod.annotations.get(key) if pod is not None else None, "pod annotation"),
        (workload.annotations.get(key) if workload is not None else None, "workload annotation"),
        (namespace.labels.get(key) if namespace is not None else None, "namespace label"),
    )


def _first(
    key: str, parse: Callable[[str | None, str], T | None], levels: tuple[tuple[str | None, str], ...]
) -> tuple[T | None, str, tuple[str, ...]]:
    """The first valid value by precedence, where it came from, and the invalid values passed over."""
    ignored: list[str] = []
    for value, src in levels:
        parsed = parse(value, src)
        if parsed is not None:
            return parsed, f"{key} {src}", tuple(ignored)
        if value is not None:
            ignored.append(f"invalid {key} {value!r} ({src})")
    return None, "default", tuple(ignored)


def resolve(
    policy: PlanPolicy,
    pod: Metadata | None,
    workload: Metadata | None = None,
    namespace: Metadata | None = None,
) -> Resolved:
    """Exclusion, then mode and GPU opt-in by precedence: pod > workload > namespace > configuration."""
    found: tuple[Mode | None, str, tuple[str, ...]] = _first(
        MODE_KEY, parse_mode, _levels(MODE_KEY, pod, workload, namespace)
    )
    mode, mode_source, bad_mode = found
    gpu, gpu_source, bad_gpu = _first(GPU_KEY, parse_gpu, _levels(GPU_KEY, pod, workload, namespace))
    large, _, bad_large = _first(
        ALLOW_LARGE_CHANGE_KEY,
        parse_allow_large_change,
        _levels(ALLOW_LARGE_CHANGE_KEY, pod, workload, namespace),
    )
    return Resolved(
        policy.default_mode if mode is None else mode,
        mode_source,
        excluded_by(pod, workload, namespace),
        policy.gpu_resize if gpu is None else gpu,
        gpu_source,
        bad_mode + bad_gpu + bad_large,
        large is True,
    )


def parse_update_mode(value: str | None, where: str = "") -> UpdateMode | None:
    """off, initial, recreate or in-place-or-recreate (_choice)."""
    return _choice(UPDATE_MODE_KEY, value, where, _UPDATE_MODES)


@dataclass(frozen=True)
class UpdatePermission:
    """What the updater may do to a running pod: the update mode in force (after the admission mode), where
    it came from, and whether a single-replica workload may be evicted."""

    mode: UpdateMode
    source: str = "default"
    allow_single_replica: bool = False
    ignored: tuple[str, ...] = ()

    @property
    def in_place(self) -> bool:
        return self.mode == "in-place-or-recreate"

    @property
    def recreate(self) -> bool:
        return self.mode in ("recreate", "in-place-or-recreate")


def parse_allow_single_replica(value: str | None, where: str = "") -> bool | None:
    """`true` or `false` (_choice)."""
    return _choice(ALLOW_SINGLE_REPLICA_KEY, value, where, _TRUE_OR_FALSE)


def resolve_update(
    default: UpdateMode,
    resolved: Resolved,
    pod: Metadata | None,
    workload: Metadata | None = None,
    namespace: Metadata | None = None,
) -> UpdatePermission:
    """The update mode by the same precedence as the mode (pod > workload > namespace > `default`).

    The updater acts only where admission applies (`resolved.mode` auto, not excluded): a pod it evicts
    is re-created through the webhook, so in dry-run or off a recreation would change nothing and the
    updater would evict forever. Anywhere else the mode in force is `initial` (admission only) or `off`.
    """
    levels = _levels(UPDATE_MODE_KEY, pod, workload, namespace)
    got: tuple[UpdateMode | None, str, tuple[str, ...]] = _first(UPDATE_MODE_KEY, parse_update_mode, levels)
    found, source, bad = got
    mode: UpdateMode = default if found is None else found
    single, _, bad_single = _first(
        ALLOW_SINGLE_REPLICA_KEY,
        parse_allow_single_replica,
        _levels(ALLOW_SINGLE_REPLICA_KEY, pod, workload, namespace),
    )
    if mode in ("recreate", "in-place-or-recreate") and (resolved.excluded_by or resolved.mode != "auto"):
        why = (
            f"excluded ({resolved.excluded_by})"
            if resolved.excluded_by
            else f"podsizer.io/mode {resolved.mode}"
        )
        return UpdatePermission("initial", f"{source}; {why}", single is True, bad + bad_single)
    return UpdatePermission(mode, source, single is True, bad + bad_single)
