"""Example counts per hypothesis profile: the full count in `ci`, a twentieth (at least 10) in `dev`."""

from __future__ import annotations

import os


def examples(full: int) -> int:
    """`full` examples under HYPOTHESIS_PROFILE=ci, about 5 % of them (at least 10) otherwise."""
    if os.environ.get("HYPOTHESIS_PROFILE", "dev") == "ci":
        return full
    return max(10, full // 20)
