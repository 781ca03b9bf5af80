"""Shown = applied: the webhook's auto patch, its dry-run annotation, `recommend -o json` and the console
state the same changes for the same random pod, Recommendation, policy and annotations (the functions the
commands call; tests/integration/agreement runs the entry points themselves).

The recommend output and the console see current values as a metrics source reports them (numbers in
base units), never the pod's own spelling ("0.5" or "500m"), so `from` and `to` are compared as exact
quantities; containers, sections, fields and resources are compared as they are.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.build import build_console_data
from podsizer.api import Recommendation, WorkloadRef
from podsizer.api.quantity import parse
from podsizer.keys import ALLOW_LARGE_CHANGE_KEY
from podsizer.owners import Skipped
from podsizer.plausibility import Ceilings
from podsizer.podspec import quantity
from podsizer.policy import LIMIT_POLICIES, Mode, PlanPolicy
from podsizer.resources import GPU
from podsizer.subject import Subject
from recommender.model.aggregate import aggregate
from recommender.model.raw import ContainerSamples, OwnerLink, PodInfo, RawDataset
from recommender.output.report import Report, render
from recommender.sizing.engine import RecommendationRun
from tests.support.hypo import examples
from tests.unit.webhook import builders as b
from tests.unit.webhook import fuzz_strategies as fz

WEB = WorkloadRef("shop", "Deployment", "web")
RS = "web-7d4b9c8f5"
POD_NAME = f"{RS}-x2k9q"
Statement = list[tuple[str, str, str, str, Decimal | None, Decimal | None]]


def _maybe(*values: str) -> st.SearchStrategy[str | None]:
    """None (the annotation absent) half of the time, else one of `values`."""
    return st.none() | st.sampled_from(values)


ANNOTATIONS = st.fixed_dictionaries(
    {
        "podsizer.io/mode": _maybe("auto", "Auto", "dry-run", "DRY-RUN", "off", "OFF", "garbage", ""),
        "podsizer.io/exclude": st.none() | st.none() | st.sampled_from(["true", "TRUE", "false", "yes"]),
        "podsizer.io/gpu": _maybe("keep", "resize", "RESIZE", "Keep", "garbage"),
        ALLOW_LARGE_CHANGE_KEY: _maybe("true", "TRUE", "false", "garbage"),
    }
).map(lambda d: {k: v for k, v in d.items() if v is not None})
LABELS = st.dictionaries(st.just("podsizer.io/exclude"), st.sampled_from(["true", "false"]), max_size=1)
POLICIES = st.builds(
    PlanPolicy,
    limit_policy=st.sampled_from(LIMIT_POLICIES),
    gpu_resize=st.booleans(),
    allow_mig_swap=st.booleans(),
    min_confidence=st.sampled_from([0.0, 0.5, 0.9]),
    default_mode=st.just("auto"),
    ceilings=st.sampled_from([Ceilings(), Ceilings(2.0, 2.0 * 2**30, 2.0, "largest node's allocatable")]),
    max_change_factor=st.sampled_from([None, 4.0, 1.5]),
)
# Absurd but storable values (the codec refuses anything past int64): the plausibility guard clamps them.
ABSURD_CPU = st.sampled_from(["1000", "256001m", "3"])
ABSURD_MEMORY = st.sampled_from(["1Ei", "5Ti", "3Gi"])


@dataclass(frozen=True)
class Case:
    pod: dict[str, Any]
    rec: Recommendation
    policy: PlanPolicy


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A ReplicaSet pod of Deployment shop/web (app and init containers, GPUs, any resources), its
    Recommendation (bounds with "*", low confidence, GPU and MIG suggestions) and a policy."""
    app = draw(fz.containers(max_size=3))
    names = {c["name"] for c in app}
    init: list[dict[str, Any]] = []
    if draw(st.booleans()):
        init = [c for c in draw(fz.containers(max_size=2)) if c["name"] not in names]
    pod = b.replicaset_pod(
        "web",
        RS.removeprefix("web-"),
        containers=app,
        init=init,
        annotations=draw(ANNOTATIONS),
        labels=draw(LABELS),
    )
    rec = draw(fz.matching_rec(pod))
    assert rec is not None and rec.target == WEB
    if draw(st.booleans()):  # GPU containers: every container holds GPUs and gets a GPU recommendation
        _hold_gpus(pod, draw(st.integers(1, 8)))
        rec = _recommend_gpus(rec, draw(st.sampled_from([0, 1, 2, 5, 8, 1000])))
    if draw(st.integers(0, 2)) == 0:
        rec = _absurd(rec, draw(ABSURD_CPU), draw(ABSURD_MEMORY))
    return Case(pod, rec, draw(POLICIES))


def _absurd(rec: Recommendation, cpu: str, memory: str) -> Recommendation:
    containers = [
        b.crec(c.name, {**c.requests, "cpu": cpu, "memory": memory}, c.limits, c.confidence, c.low_confidence)
        for c in rec.containers
    ]
    return dataclasses.replace(rec, containers=tuple(containers))


def _hold_gpus(pod: dict[str, Any], count: int) -> None:
    for section in ("initContainers", "containers"):
        for c in pod["spec"].get(section) or []:
            res = c.setdefault("resources", {})
            res.setdefault("limits", {})[GPU] = str(count)
            if count % 2:
                res.setdefault("requests", {})[GPU] = str(count)


def _recommend_gpus(rec: Recommendation, count: int) -> Recommendation:
    containers = [
        b.crec(
            c.name,
            {**c.requests, GPU: str(count)},
            {**c.limits, GPU: str(count)},
            c.confidence,
            c.low_confidence,
        )
        for c in rec.containers
    ]
    return b.recommendation("Deployment", "web", containers=containers, gpu=rec.gpu, policy=rec.policy)


def _q(value: object) -> Decimal | None:
    return None if value is None else quantity(value)


def _from_json(changes: Sequence[Mapping[str, Any]]) -> Statement:
    return sorted(
        (
            c["container"],
            c["containerType"],
            c["field"],
            c["resource"],
            _q(c["from"]),
            _q(c["to"]),
        )
        for c in changes
    )


def _resources(pod: Mapping[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for section in ("initContainers", "containers"):
        for c in pod["spec"].get(section) or []:
            res = c.get("resources") or {}
            for fld in ("requests", "limits"):
                out[(c["name"], section, fld)] = dict(res.get(fld) or {})
    return out


def _diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> Statement:
    """What the patch really changed in the pod's resources, as changes."""
    old, new = _resources(before), _resources(after)
    out: Statement = []
    for key, values in old.items():
        for resource in sorted(set(values) | set(new[key])):
            if values.get(resource) != new[key].get(resource):
                out.append((*key, resource, _q(values.get(resource)), _q(new[key].get(resource))))
    return sorted(out)


def webhook_statement(case: Case, default_mode: Mode) -> Statement:
    """(a)/(b): the webhook's reply; an auto patch by its effect on the pod, dry-run by its annotation."""
    pod = case.pod
    reply, decision = b.admitter(case.rec, default_mode=default_mode, policy=case.policy).review(
        b.review(pod)
    )
    patched = b.apply_reply(pod, reply)
    if decision.outcome == "applied":
        return _diff(pod, patched)
    if decision.outcome == "dry-run":
        assert _diff(pod, patched) == []
        return _from_json(json.loads(patched["metadata"]["annotations"]["podsizer.io/dry-run"])["changes"])
    assert decision.outcome == "skipped", decision
    return []


def _floats(values: Mapping[str, str] | None) -> dict[str, float]:
    return {k: parse(v) for k, v in (values or {}).items()}


def _containers(pod: Mapping[str, Any]) -> list[tuple[str, bool, dict[str, float], dict[str, float]]]:
    """(name, init, requests, limits) of each container, in base units as a metrics source has them."""
    out = []
    for section in ("initContainers", "containers"):
        for c in pod["spec"].get(section) or []:
            res = c.get("resources") or {}
            out.append(
                (
                    c["name"],
                    section == "initContainers",
                    _floats(res.get("requests")),
                    _floats(res.get("limits")),
                )
            )
    return out


def _dataset(pod: Mapping[str, Any]) -> RawDataset:
    """The pod as a metrics source reports it (its labels, annotations and current values, one sample per
    container): what `recommend` and the console both read, through the one aggregation."""
    cs = _containers(pod)
    meta = pod["metadata"]
    info = PodInfo(
        "shop",
        POD_NAME,
        "node-1",
        "ReplicaSet",
        RS,
        meta.get("labels") or {},
        meta.get("annotations") or {},
        {n: r for n, _, r, _ in cs},
        {n: lim for n, _, _, lim in cs},
        tuple(n for n, init, _, _ in cs if init),
    )
    t = np.array([b.T1.timestamp() - 60.0])
    one = (np.full(1, 0.1), np.full(1, 1e8))
    samples = tuple(ContainerSamples("shop", POD_NAME, n, t, *one) for n, *_ in cs)
    owner = OwnerLink("shop", "ReplicaSet", RS, "Deployment", "web")
    return RawDataset(b.T0, b.T1, (info,), (owner,), samples)


def recommend_statement(case: Case) -> tuple[str, Statement]:
    """(c): `recommend -o json`: the item's plan, from the snapshot the aggregation makes of the pod."""
    snapshot = aggregate(_dataset(case.pod), source="test")
    run = RecommendationRun(recommendations=(case.rec,))
    (item,) = json.loads(render(Report.of(run, snapshot, case.policy), "json"))["items"]
    return item["plan"]["mode"], _from_json(item["plan"]["changes"])


def console_statement(case: Case) -> tuple[str, Statement]:
    """(d): the console's workload row, built from the same raw dataset and its snapshot."""
    raw = _dataset(case.pod)
    run = RecommendationRun(recommendations=(case.rec,), skipped=(Skipped(Subject.of_namespace("x"), "y"),))
    data = build_console_data(raw, aggregate(raw, source="test"), run, b.T1, policy=case.policy)
    (row,) = data.workloads()
    return row.mode, _from_json([ch.to_json() for c in row.containers for ch in c.changes])


@settings(
    max_examples=examples(2000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(cases())
def test_webhook_patch_dry_run_annotation_recommend_and_console_state_the_same_changes(case: Case) -> None:
    auto = webhook_statement(case, "auto")
    dry_run = webhook_statement(case, "dry-run")
    recommend_mode, recommend = recommend_statement(case)
    console_mode, console = console_statement(case)
    assert auto == dry_run == recommend == console
    assert recommend_mode == console_mode


@settings(max_examples=examples(500), deadline=None)
@given(cases())
def test_the_mode_recommend_and_the_console_show_is_the_one_the_webhook_acts_on(case: Case) -> None:
    _, decision = b.admitter(case.rec, default_mode="auto", policy=case.policy).review(b.review(case.pod))
    mode, _ = recommend_statement(case)
    if decision.outcome == "applied":
        assert mode == "auto"
    elif decision.outcome == "dry-run":
        assert mode == "dry-run"
    else:
        assert decision.reason in (
            "mode-off",
            "excluded-pod",
            "low-confidence",
            "no-change",
            "invalid-bounds",
            "policy-limited",
        )
        if decision.reason == "mode-off":
            assert mode == "off"
        elif decision.reason == "excluded-pod":
            assert mode == "excluded"
