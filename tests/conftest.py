"""Hypothesis profiles: `dev` (the default, fast) for local runs, `ci` (full, 10,000 fuzz reviews) in .ci/run.

Select one with HYPOTHESIS_PROFILE=dev|ci; tests size their own example counts with `examples(n)`.
"""

from __future__ import annotations

import os

from hypothesis import settings

# One control plane per session for every suite that asks (e2e, browser): fixtures defined here are shared.
from tests.controlplane.fixtures import (
    admin_client,
    control_plane,
    kwok_nodes,
    make_kwok_nodes,
    podsizer_crds,
)
from tests.controlplane.rollouts import argo_rollouts, argo_rollouts_build

__all__ = [
    "admin_client",
    "argo_rollouts",
    "argo_rollouts_build",
    "control_plane",
    "kwok_nodes",
    "make_kwok_nodes",
    "podsizer_crds",
]

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")
if PROFILE not in ("dev", "ci"):
    raise RuntimeError(f"HYPOTHESIS_PROFILE: expected dev or ci, got {PROFILE!r}")
settings.register_profile("ci", max_examples=200, deadline=None, database=None)
settings.register_profile("dev", max_examples=30, deadline=None, database=None)
settings.load_profile(PROFILE)
