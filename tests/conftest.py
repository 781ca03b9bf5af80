"""Hypothesis profiles: `dev` (the default, fast) for local runs, `ci` (full, 10,000 fuzz reviews) in .ci/run.

Select one with HYPOTHESIS_PROFILE=dev|ci; tests size their own example counts with `examples(n)`.

The real node (`realnode` tests, tests/controlplane/node/fixtures.py): a session that selected any starts it
before its first test, in the background, and runs those tests last, so the minutes of scraping they need
pass while the other tests run.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# One control plane per session for every suite that asks (e2e, browser): fixtures defined here are shared.
from tests.controlplane.fixtures import (
    admin_client,
    control_plane,
    kwok_nodes,
    make_kwok_nodes,
    podsizer_crds,
)
from tests.controlplane.node.fixtures import node_parts_ready, real_node, real_node_session
from tests.controlplane.rollouts import argo_rollouts, argo_rollouts_build
from tests.support.watch import stop

__all__ = [
    "admin_client",
    "argo_rollouts",
    "argo_rollouts_build",
    "control_plane",
    "kwok_nodes",
    "make_kwok_nodes",
    "podsizer_crds",
    "real_node",
    "real_node_session",
    "stop",
]
REALNODE = "realnode"


def _realnode_order(item: pytest.Item) -> int:
    """0: not a realnode test; 1: a realnode test; 2: one sizing from history (`realnode(history=True)`)."""
    marker = item.get_closest_marker(REALNODE)
    return 0 if marker is None else 2 if marker.kwargs.get("history") else 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The realnode tests run last, those sizing from history after the others (each group in collection
    order): the history accrues meanwhile."""
    items.sort(key=_realnode_order)  # stable


@pytest.fixture(scope="session", autouse=True)
def _realnode_started_early(request: pytest.FixtureRequest) -> None:
    """Starts the real node before the first test when the session runs realnode tests and could start it
    (without its parts nothing happens here: the realnode tests skip or fail with the reason)."""
    if any(i.get_closest_marker(REALNODE) for i in request.session.items) and node_parts_ready():
        request.getfixturevalue("real_node_session")


PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")
if PROFILE not in ("dev", "ci"):
    raise RuntimeError(f"HYPOTHESIS_PROFILE: expected dev or ci, got {PROFILE!r}")
settings.register_profile("ci", max_examples=200, deadline=None, database=None)
settings.register_profile("dev", max_examples=30, deadline=None, database=None)
settings.load_profile(PROFILE)
