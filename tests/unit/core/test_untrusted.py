"""Names and values from outside (metrics labels, AdmissionReviews, store files) cannot forge a log line."""

from __future__ import annotations

import ast
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from podsizer.untrusted import MAX_SHOWN_CHARS, OneLineFormatter, one_line, shown

ROOT = Path(__file__).resolve().parents[3]
FORGED_LINE = "2026-01-01 00:00:00,000 ERROR podsizer: forged"
FORGED = f"web\n{FORGED_LINE}\r\x1b[31mred\x1b[0m\u2028\x85"


@pytest.mark.parametrize("escape", ["\n", "\r", "\x1b", "\u2028", "\x85", "\x00", "\t"])
def test_one_line_and_shown_escape_every_control_character(escape: str) -> None:
    for text in (one_line(f"a{escape}b"), shown(f"a{escape}b")):
        assert escape not in text and text.isprintable()
    assert one_line("a\nb\x1b[31m") == "a\\nb\\x1b[31m"


def test_shown_bounds_a_long_value_and_never_builds_a_huge_repr() -> None:
    assert shown("x" * 1000) == repr("x" * MAX_SHOWN_CHARS) + "... (1000 characters)"
    assert one_line("y" * 300, 200) == "y" * 200 + "... (100 more characters)"
    assert shown(10**5000) == "an integer of 16610 bits"
    assert (shown(3), shown(None), shown(b"raw"), shown(["a"])) == ("3", "None", "bytes", "list")


def test_a_formatted_record_is_one_line_whatever_its_arguments() -> None:
    record = logging.LogRecord(
        "podsizer", logging.WARNING, __file__, 1, "skipped %s: %s", (FORGED, "ok"), None
    )
    text = OneLineFormatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert text.splitlines() == [text]
    assert "\x1b" not in text and "\\x1b[31m" in text and FORGED_LINE in text
    assert record.getMessage() == f"skipped {FORGED}: ok"  # the record itself is left as it was


def test_the_recommenders_log_lines_are_one_line_each() -> None:
    code = (
        "import logging, sys; from recommender.commands import load_settings; import argparse; "
        "load_settings(argparse.Namespace()); "
        f"logging.getLogger('podsizer.store').warning('item %s skipped', {FORGED!r})"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSIZER_")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=True,
    )
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "WARNING podsizer.store: item web\\n2026-01-01" in lines[0]
    assert "\x1b" not in done.stderr


def test_every_role_configures_logging_through_the_one_formatter() -> None:
    """A role that called logging.basicConfig itself would log outside names raw again."""
    calls = []
    for package in ("podsizer", "recommender", "webhook", "updater", "console", "certs"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr in ("basicConfig", "dictConfig"):
                    calls.append(str(path.relative_to(ROOT)))
    assert calls == ["podsizer/untrusted.py"]
