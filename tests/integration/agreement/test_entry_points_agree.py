"""Shown = applied, through the entry points a user runs: the same data file of random workloads
(pods, podsizer.io/ annotations and labels, the users' bounds in the store) goes through `podsizer recommend
-o json --write`, `podsizer explain`, the console's JSON API over HTTP, the webhook over HTTPS (its auto patch
and its dry-run annotation) and the updater's dry-run pass, under several plan policies; all must state the
same changes for every workload. One process (or server) per entry point and policy, over every case.

Cases: 2,000 in all under HYPOTHESIS_PROFILE=ci, a twentieth locally; AGREEMENT_SEED=N replays a run (the
seed is in every failure message). The updater is the one entry point run as a library (Updater.run_once
over the cases' running pods, from the store file): its entry point short of a cluster.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from podsizer.api import WorkloadRef
from podsizer.keys import UPDATE_MODE_KEY
from podsizer.settings.loader import TOOLING_VARIABLES
from recommender.input.demo_cluster import build_demo_dataset
from recommender.input.file import dump_dataset
from recommender.output.store import JsonFileStore
from tests.integration.agreement import entry_points as ep
from tests.integration.agreement.cases import Case, case_of, generate
from tests.support.hypo import examples

pytestmark = pytest.mark.integration

END = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
CASES = examples(2000)
# The plan policies (one settings set for every process) the cases are split over.
POLICIES: Mapping[str, Mapping[str, str]] = {
    "defaults": {},
    "cap-auto-gpu-resize": {
        "PODSIZER_LIMIT_POLICY": "cap",
        "PODSIZER_DEFAULT_MODE": "auto",
        "PODSIZER_GPU_RESIZE": "true",
        "PODSIZER_MAX_CHANGE_FACTOR": "1.5",
        "PODSIZER_MAX_CPU_CORES": "4",
    },
    "leave-no-factor": {
        "PODSIZER_LIMIT_POLICY": "leave",
        "PODSIZER_MAX_CHANGE_FACTOR": "",
        "PODSIZER_MIN_CONFIDENCE": "0.6",
        "PODSIZER_DEFAULT_MODE": "auto",
    },
    "recommended-limits": {"PODSIZER_LIMIT_POLICY": "recommended", "PODSIZER_MAX_MEMORY_BYTES": "8Gi"},
}
SEED = int(os.environ.get("AGREEMENT_SEED") or random.SystemRandom().randrange(2**31))


@dataclass(frozen=True)
class Run:
    """Every entry point's statements for one policy's cases."""

    policy: str
    seed: int
    cases: list[Case]
    recommend: dict[WorkloadRef, ep.Said]
    explain: dict[WorkloadRef, ep.Said]
    console: dict[WorkloadRef, ep.Said]
    webhook: dict[WorkloadRef, ep.Said]
    updater: dict[WorkloadRef, ep.Said]


def environment(root: Path, policy: Mapping[str, str]) -> dict[str, str]:
    """One set of settings for every process: the data file, the store, the window, the policy."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSIZER_") or k in TOOLING_VARIABLES}
    return env | {
        "PODSIZER_SOURCE": "file",
        "PODSIZER_CONSOLE_SOURCE": "file",
        "PODSIZER_SOURCE_FILE": str(root / "data.json"),
        "PODSIZER_STORE": "json",
        "PODSIZER_STORE_FILE": str(root / "store.json"),
        "PODSIZER_AS_OF": END.isoformat(),
        "PODSIZER_WINDOW_DAYS": "7",
        "PODSIZER_LOG_LEVEL": "warning",
        "PODSIZER_CONFIDENCE_FULL_SAMPLES": "100",  # hourly samples: 4 days or more are trusted
        "PODSIZER_UPDATE_THRESHOLD": "0",  # the updater acts on every change: its statement is complete
        "PODSIZER_UPDATE_USE_BAND": "false",
        **policy,
    }


def run_all(root: Path, policy: str, seed: int, cases_n: int) -> Run:
    """The cases written as one data file (and the bounds as the store), then every entry point once:
    recommend first (it writes the store the others read), then explain, the console and the webhook side
    by side (each its own process), then the updater's pass."""
    generated = generate(seed, cases_n, END)
    dump_dataset(generated.dataset(), root / "data.json")
    JsonFileStore(root / "store.json").put_many(generated.seeded_store())
    env = environment(root, POLICIES[policy])
    recommended = ep.recommend(env, root)
    with ThreadPoolExecutor(3) as pool:
        explained = pool.submit(ep.explain, env, root, sorted(recommended))
        console = pool.submit(ep.console, env, root)
        webhook = pool.submit(ep.webhook, env, root, generated.cases)
        said = (explained.result(), console.result(), webhook.result())
    return Run(
        policy,
        seed,
        generated.cases,
        recommended,
        *said,
        ep.updater(env, root / "store.json", generated.cases),
    )


@pytest.fixture(scope="module", params=sorted(POLICIES))
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    policy = str(request.param)
    seed = SEED + sorted(POLICIES).index(policy)
    yield run_all(tmp_path_factory.mktemp(policy), policy, seed, max(10, CASES // len(POLICIES)))


def _running(changes: frozenset[ep.ChangeKey]) -> frozenset[ep.ChangeKey]:
    """The changes that matter to a running pod: its app containers' (these pods have no sidecars)."""
    return frozenset(c for c in changes if c[1] == "containers")


def disagreements(r: Run, case: Case) -> list[str]:
    """What the entry points say differently about one case's workload (empty: they agree)."""
    ref, shown = case.workload, r.recommend.get(case.workload)
    web, upd = r.webhook[ref], r.updater.get(ref)
    out: list[str] = []
    if shown is None:  # no Recommendation of this run: nothing may change it
        if web.changes or (upd is not None and upd.changes):
            out.append(f"no recommendation, yet the webhook says {web} and the updater {upd}")
        return out
    for name, said in (("explain", r.explain.get(ref)), ("console", r.console.get(ref))):
        if said != shown:
            out.append(f"{name} says {said}, recommend {shown}")
    applies = bool(shown.changes) and shown.mode in ("auto", "dry-run")
    expected = (
        ep.Said(shown.mode, None, shown.changes) if applies else ep.Said("", "not-patched", frozenset())
    )
    if web != expected:
        out.append(f"the webhook says {web}, recommend {shown}")
    acts = shown.mode == "auto" and case.pod["metadata"]["annotations"].get(UPDATE_MODE_KEY) in (
        "recreate",
        "in-place-or-recreate",
    )
    if acts != (upd is not None):
        out.append(f"the updater {'skips' if upd is None else 'acts on'} it, recommend says {shown}")
    elif upd is not None and upd.changes != _running(shown.changes):
        out.append(f"the updater would change {sorted(upd.changes)}, recommend {sorted(shown.changes)}")
    elif upd is not None and not upd.changes and upd.skip not in (shown.skip, "within-threshold"):
        out.append(f"the updater skips it for {upd.skip}, recommend for {shown.skip}")
    return out


def test_recommend_explain_console_webhook_and_updater_state_the_same_changes(run: Run) -> None:
    found = {str(c.workload): d for c in run.cases if (d := disagreements(run, c))}
    shown = "\n".join(f"  {w}: {'; '.join(d)}" for w, d in list(found.items())[:15])
    assert not found, (
        f"{len(found)} of {len(run.cases)} workloads disagree (policy {run.policy}, "
        f"AGREEMENT_SEED={run.seed}):\n{shown}"
    )
    assert len(run.webhook) == len(run.cases) and len(run.recommend) > len(run.cases) // 2
    assert set(run.explain) == set(run.recommend) and set(run.console) >= set(run.recommend)


def test_the_cases_cover_every_kind_of_statement(run: Run) -> None:
    """The agreement above is over cases that apply, annotate, opt out, switch off and act (not all
    skipped): each kind is among them (enough cases make every one likely; the counts are in the message)."""
    kinds = Counter(
        "applied" if s.mode == "auto" and s.changes else
        "annotated" if s.mode == "dry-run" and s.changes else
        s.mode if s.mode in ("excluded", "off") else
        f"skip:{s.skip}"
        for s in run.recommend.values()
    )  # fmt: skip
    kinds["updater acts"] = sum(1 for u in run.updater.values() if u.changes)
    wanted = {"applied", "excluded", "off", "updater acts"}
    if run.policy == "defaults":
        wanted.add("annotated")
    if len(run.cases) >= 100:
        assert wanted <= set(kinds), f"{dict(kinds)} (AGREEMENT_SEED={run.seed})"
    assert kinds["applied"] + kinds["annotated"] > 0, dict(kinds)


STOREFRONT = WorkloadRef("shop", "Deployment", "storefront")


def test_a_workload_whose_pods_all_opt_out_is_excluded_by_every_entry_point(tmp_path: Path) -> None:
    """The demo data as a file, every pod of shop/storefront annotated `podsizer.io/exclude: "true"`:
    `recommend -o json` once said mode dry-run with 3 changes (it planned without the pods' metadata) while
    the console and the webhook said excluded."""
    raw = build_demo_dataset(END)
    opted_out = {"podsizer.io/exclude": "true"}
    pods = tuple(
        replace(p, annotations={**p.annotations, **opted_out}) if p.name.startswith("storefront-") else p
        for p in raw.pods
    )
    assert sum(p.annotations.get("podsizer.io/exclude") == "true" for p in pods) == 3
    dump_dataset(replace(raw, pods=pods), tmp_path / "data.json")
    env = environment(tmp_path, {"PODSIZER_DEFAULT_MODE": "auto"})
    shown = ep.recommend(env, tmp_path)[STOREFRONT]
    assert shown == ep.Said("excluded", "excluded-pod", frozenset())
    case = case_of(STOREFRONT, next(p for p in pods if p.name.startswith("storefront-")), END)
    with ThreadPoolExecutor(3) as pool:
        explained = pool.submit(ep.explain, env, tmp_path, [STOREFRONT])
        console = pool.submit(ep.console, env, tmp_path)
        webhook = pool.submit(ep.webhook, env, tmp_path, [case])
        assert explained.result()[STOREFRONT] == console.result()[STOREFRONT] == shown
        assert webhook.result()[STOREFRONT] == ep.Said("", "not-patched", frozenset())
