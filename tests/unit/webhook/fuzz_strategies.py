"""Hypothesis strategies: valid pods of every controller shape, Recommendations, and mutated reviews."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from podsizer.api import ContainerPolicy, ContainerRecommendation, GpuRecommendation, Recommendation
from tests.unit.webhook import builders as b

NAMES = ["main", "app", "istio-proxy", "init-db", "log-shipper", "worker"]
WORKLOADS = ["web", "api-v2", "cart"]
CPU = st.sampled_from(["1m", "10m", "100m", "250m", "500m", "1", "2", "0.5", "1.5", "4", "64"])
MEM = st.sampled_from(["1Mi", "64Mi", "128Mi", "512Mi", "1Gi", "2Gi", "1G", "500M", "1e9", "2048Ki", "16Gi"])
GPU_COUNT = st.integers(min_value=1, max_value=8)
MIG = st.sampled_from(
    [
        "nvidia.com/mig-1g.10gb",
        "nvidia.com/mig-2g.20gb",
        "nvidia.com/mig-3g.40gb",
        "nvidia.com/gpu.shared",
        "nvidia.com/gpu",
    ]
)
ANNOTATION_KEYS = st.sampled_from(
    [
        "a/b",
        "x~y",
        "~1",
        "podsizer.io/mode",
        "podsizer.io/exclude",
        "example.com/team",
        "plain",
        "podsizer.io/applied",
    ]
)
ANNOTATION_VALUES = st.sampled_from(["auto", "dry-run", "off", "true", "false", "", "garbage", "{}"])


@st.composite
def resources(draw: st.DrawFn) -> dict[str, Any] | None:
    """Valid resources: request <= limit for cpu/memory; GPUs whole with request == limit."""
    from kubernetes.utils import parse_quantity

    if draw(st.integers(0, 9)) == 0:
        return None
    req: dict[str, Any] = {}
    lim: dict[str, Any] = {}
    for name, strat in (("cpu", CPU), ("memory", MEM)):
        choice = draw(st.sampled_from(["none", "req", "lim", "both"]))
        a, c = draw(strat), draw(strat)
        lo, hi = sorted([a, c], key=lambda q: parse_quantity(q))
        if choice == "req":
            req[name] = lo
        elif choice == "lim":
            lim[name] = hi
        elif choice == "both":
            req[name], lim[name] = lo, hi
    if draw(st.integers(0, 3)) == 0:
        n = str(draw(GPU_COUNT))
        lim["nvidia.com/gpu"] = n
        if draw(st.booleans()):
            req["nvidia.com/gpu"] = n
    out: dict[str, Any] = {}
    if req or draw(st.booleans()):
        out["requests"] = req
    if lim or draw(st.booleans()):
        out["limits"] = lim
    return out


@st.composite
def containers(draw: st.DrawFn, max_size: int = 4) -> list[dict[str, Any]]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=max_size, unique=True))
    out = []
    for n in names:
        c = b.container(n)
        res = draw(resources())
        if res is None:
            del c["resources"]
        else:
            c["resources"] = res
        out.append(c)
    return out


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    shape = draw(
        st.sampled_from(["rs", "rs", "rs", "rollout", "dc", "dc", "sts", "ds", "deployer", "hook", "bare"])
    )
    workload = draw(st.sampled_from(WORKLOADS))
    cs = draw(containers(max_size=3))
    if shape == "rs":
        pod = b.replicaset_pod(workload, containers=cs)
    elif shape == "rollout":
        pod = b.rollout_pod(workload, containers=cs)
    elif shape == "dc":
        pod = b.dc_pod(workload, draw(st.integers(1, 30)), containers=cs)
    elif shape in ("sts", "ds"):
        pod = b.statefulset_pod(workload, containers=cs)
        if shape == "ds":
            pod["metadata"]["ownerReferences"][0]["kind"] = "DaemonSet"
    elif shape == "deployer":
        pod = b.deployer_pod(workload)
    elif shape == "hook":
        pod = b.hook_pod(workload, hook=draw(st.sampled_from(["pre", "mid", "post"])))
    else:
        pod = b.replicaset_pod(workload, containers=cs)
        del pod["metadata"]["ownerReferences"]
    if draw(st.integers(0, 3)) == 0:
        init = draw(containers(max_size=2))
        for c in init:
            if draw(st.booleans()):
                c["restartPolicy"] = "Always"
        names = {c["name"] for c in pod["spec"]["containers"]}
        init = [c for c in init if c["name"] not in names]
        if init:
            pod["spec"]["initContainers"] = init
    ann = draw(st.dictionaries(ANNOTATION_KEYS, ANNOTATION_VALUES, max_size=3))
    if draw(st.booleans()):
        pod["metadata"]["annotations"] = ann
    else:
        pod["metadata"].pop("annotations", None)
    return pod


@st.composite
def container_recs(draw: st.DrawFn) -> list[ContainerRecommendation]:
    out = []
    for n in draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=True)):
        req: dict[str, str] = {}
        if draw(st.booleans()):
            req["cpu"] = draw(CPU)
        if draw(st.booleans()):
            req["memory"] = draw(MEM)
        lim: dict[str, str] = {}
        if draw(st.booleans()):
            g = str(draw(st.integers(0, 4)))
            req["nvidia.com/gpu"] = lim["nvidia.com/gpu"] = g
        out.append(b.crec(n, req, lim, draw(st.floats(0, 1)), draw(st.integers(0, 4)) == 0))
    return out


@st.composite
def recommendations(draw: st.DrawFn) -> list[Recommendation]:
    recs = []
    for kind in draw(
        st.lists(
            st.sampled_from(["Deployment", "Rollout", "DeploymentConfig", "StatefulSet", "DaemonSet"]),
            max_size=4,
            unique=True,
        )
    ):
        gpu = None
        if draw(st.booleans()):
            gpu = GpuRecommendation(
                "NVIDIA A100 80GB PCIe", 1, 0.1, 2**30, suggested_resource=draw(st.none() | MIG)
            )
        policy: tuple[ContainerPolicy, ...] = ()
        if draw(st.booleans()):
            lo = draw(st.sampled_from([0.0, 0.05, 0.5]))
            hi = draw(st.sampled_from([1.0, 4.0, 64.0]))
            policy = (
                ContainerPolicy(
                    draw(st.sampled_from(["*", *NAMES])), {"cpu": lo}, {"cpu": hi, "memory": 8 * 2**30}
                ),
            )
        recs.append(
            b.recommendation(
                kind,
                draw(st.sampled_from(WORKLOADS)),
                containers=draw(container_recs()),
                gpu=gpu,
                policy=policy,
            )
        )
    return recs


JSON_LEAF = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5) | st.floats(allow_nan=False)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(_paths(v, (*prefix, i)))
    return out


@st.composite
def mutated(draw: st.DrawFn, review: dict[str, Any]) -> dict[str, Any] | list[Any] | str | int | None:
    """A few random edits anywhere in the review: delete a member, replace a node, wrap it in a list."""
    doc: Any = copy.deepcopy(review)
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(doc)
        path = paths[draw(st.integers(0, len(paths) - 1))]
        action = draw(st.sampled_from(["delete", "replace", "wrap"]))
        if not path:
            if action == "replace":
                doc = draw(JSON_VALUE)
            continue
        parent = doc
        for t in path[:-1]:
            parent = parent[t]
        key = path[-1]
        if action == "delete":
            del parent[key]
        elif action == "replace":
            parent[key] = draw(JSON_VALUE)
        else:
            parent[key] = [parent[key]]
    return doc  # type: ignore[no-any-return]


_KIND_OF_SHAPE = {
    "rs": "Deployment",
    "rollout": "Rollout",
    "dc": "DeploymentConfig",
    "sts": "StatefulSet",
    "ds": "DaemonSet",
}


@st.composite
def matching_rec(draw: st.DrawFn, pod: dict[str, Any]) -> Recommendation | None:
    """Mostly a Recommendation for the pod's own workload, covering some of its containers."""
    from podsizer.cluster import OwnerCache
    from podsizer.owners import resolve_pod

    ref = resolve_pod(pod, "shop", OwnerCache())
    if ref is None:
        return None
    names = [c["name"] for s in ("initContainers", "containers") for c in pod["spec"].get(s) or []]
    chosen = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
    recs = []
    for n in chosen:
        req = {"cpu": draw(CPU), "memory": draw(MEM)}
        lim: dict[str, str] = {}
        if draw(st.integers(0, 2)) == 0:
            req["nvidia.com/gpu"] = lim["nvidia.com/gpu"] = str(draw(st.integers(0, 4)))
        if draw(st.booleans()):  # the Recommendation's own limits (limit policy "recommended")
            lim["memory"] = draw(MEM)
            if draw(st.booleans()):
                lim["cpu"] = draw(CPU)
        recs.append(
            b.crec(n, req, lim, draw(st.sampled_from([0.2, 0.6, 0.95])), draw(st.integers(0, 5)) == 0)
        )
    gpu = None
    if draw(st.booleans()):
        gpu = GpuRecommendation(
            "NVIDIA A100 80GB PCIe", 1, 0.1, 2**30, suggested_resource=draw(st.none() | MIG)
        )
    policy: tuple[ContainerPolicy, ...] = ()
    if draw(st.integers(0, 2)) == 0:
        policy = (
            ContainerPolicy(
                draw(st.sampled_from(["*", *names])),
                {"cpu": draw(st.sampled_from([0.0, 0.5]))},
                {"cpu": draw(st.sampled_from([1.0, 4.0])), "memory": 8 * 2**30},
            ),
        )
    return b.recommendation(ref.kind, ref.name, containers=recs, gpu=gpu, policy=policy)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, Any], list[Recommendation]]:
    """A pod and the store: usually its own workload's Recommendation, sometimes unrelated ones only."""
    pod = draw(pods())
    recs = draw(recommendations()) if draw(st.integers(0, 4)) == 0 else []
    own = draw(matching_rec(pod)) if draw(st.integers(0, 9)) > 0 else None
    if own is not None:
        recs = [r for r in recs if r.target != own.target] + [own]
    return pod, recs
