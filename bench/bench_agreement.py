"""Prints the wall time of each entry point of the agreement test (tests/integration/agreement) over N random
workloads under one plan policy: the data file, recommend --write, explain, the console (start and its
overview API), the webhook (start and one review per workload) and the updater's pass, side by side with
the time per workload, so the CI budget of the 2,000-case run can be read off.

Run: .venv/bin/python -m bench.bench_agreement [cases] [policy]   (defaults: 500 defaults)
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from recommender.input.file import dump_dataset
from recommender.output.store import JsonFileStore
from tests.integration.agreement import entry_points as ep
from tests.integration.agreement.cases import generate
from tests.integration.agreement.test_entry_points_agree import END, POLICIES, Run, disagreements, environment

T = TypeVar("T")


def timed(rows: list[tuple[str, float]], name: str, fn: Callable[[], T]) -> T:
    t0 = time.perf_counter()
    out = fn()
    rows.append((name, time.perf_counter() - t0))
    return out


def main(cases: int, policy: str) -> None:
    logging.disable(logging.WARNING)  # the cases' invalid annotations are logged where they are read
    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="podsizer-agreement-") as tmp:
        root = Path(tmp)
        generated = timed(rows, "generate cases", lambda: generate(7, cases, END))
        timed(rows, "write data file", lambda: dump_dataset(generated.dataset(), root / "data.json"))
        JsonFileStore(root / "store.json").put_many(generated.seeded_store())
        env = environment(root, POLICIES[policy])
        shown = timed(rows, "recommend -o json --write", lambda: ep.recommend(env, root))
        explained = timed(rows, "explain (every workload)", lambda: ep.explain(env, root, sorted(shown)))
        console = timed(rows, "console: start + overview API", lambda: ep.console(env, root))
        webhook = timed(rows, "webhook: start + reviews", lambda: ep.webhook(env, root, generated.cases))
        updater = timed(rows, "updater pass", lambda: ep.updater(env, root / "store.json", generated.cases))
        size = (root / "data.json").stat().st_size
    run = Run(policy, 7, generated.cases, shown, explained, console, webhook, updater)
    differ = sum(1 for c in generated.cases if disagreements(run, c))
    print(f"{cases} workloads, policy {policy}, data file {size / 2**20:.1f} MiB, {differ} disagree")
    print(f"{'step':32} {'seconds':>8} {'ms/workload':>12}")
    for name, seconds in rows:
        print(f"{name:32} {seconds:8.2f} {1000 * seconds / cases:12.2f}")
    total = sum(s for _, s in rows)
    print(f"{'total':32} {total:8.2f} {1000 * total / cases:12.2f}")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[0]) if args else 500, args[1] if len(args) > 1 else "defaults")
