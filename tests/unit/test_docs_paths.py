"""Every repository file the docs name exists, so a move or rename cannot leave a page pointing nowhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOP = "podsizer|recommender|webhook|updater|console|certs|tests|bench|scripts|charts|manifests|docs|tools"
PATH = re.compile(rf"(?<![\w./-])((?:{TOP})/[\w./*{{}},-]*\.(?:py|md|sh|yaml|toml|csv|json))\b")
ELSEWHERE = frozenset({"manifests/crds/*-crd.yaml"})
"""Paths the docs name in another repository (the Argo Rollouts module scripts/build_tools.py copies)."""
PAGES = tuple(sorted([ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("bench/**/*.md")]))


def named_paths(text: str) -> list[str]:
    """The repository paths in `text`, `a/test_{x,y}.py` expanded to both files."""
    found: list[str] = []
    for match in PATH.finditer(text):
        path = match.group(1)
        braces = re.search(r"\{([^{}]*)\}", path)
        if braces is None:
            found.append(path)
            continue
        head, tail = path[: braces.start()], path[braces.end() :]
        found.extend(head + part + tail for part in braces.group(1).split(","))
    return found


def test_named_paths_finds_plain_and_brace_paths() -> None:
    text = "see `recommender/model/raw.py` and tests/unit/x/test_{a,b}.py, not podsizer/podsizer:latest"
    expected = ["recommender/model/raw.py", "tests/unit/x/test_a.py", "tests/unit/x/test_b.py"]
    assert named_paths(text) == expected


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_a_page_names_exists(page: Path) -> None:
    named = [p for p in named_paths(page.read_text()) if p not in ELSEWHERE]
    missing = [p for p in named if not any(ROOT.glob(p))]
    assert missing == [], f"{page.relative_to(ROOT)} names files that do not exist: {missing}"
