"""The `podsizer` command line (placeholder until the subcommands land)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("podsizer: no subcommands yet", file=sys.stderr)
    return 2
