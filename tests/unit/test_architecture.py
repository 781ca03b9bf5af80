"""The import contracts of DESIGN.md "Layout" hold, and a violation of each would be caught."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = "The recommender's layers import downwards only"
NO_TESTS = "The product never imports the tests"
CONSOLE_LOOP = "The console never imports the recommender's loop"
PACKAGES = ("podsizer", "recommender", "webhook", "updater", "console", "certs")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    for name in PACKAGES:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_import_contracts_hold() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("webhook/wire.py", "import recommender.runner", "webhook and certs never import recommender"),
        ("podsizer/owners.py", "import webhook.app", "The shared core imports no role"),
        ("updater/__init__.py", "import webhook.admission", "updater never imports recommender, webhook"),
        ("console/app.py", "import podsizer.cli", "Nothing imports the CLI module"),
        ("recommender/model/raw.py", "import recommender.sizing.engine", LAYERS),
        ("recommender/sizing/engine.py", "import recommender.output.report", LAYERS),
        ("recommender/input/file.py", "import recommender.incremental.source", LAYERS),
        ("recommender/checkpoints/base.py", "import recommender.input.file", LAYERS),
        ("recommender/sizing/cost.py", "import recommender.commands", "never import its composition modules"),
        ("recommender/input/file.py", "import tests.support.openmetrics", NO_TESTS),
        ("console/app.py", "import webhook.admission", "The console never imports the webhook"),
        ("console/query.py", "import certs.generate", "The console never imports the webhook"),
        ("console/app.py", "import recommender.runner", CONSOLE_LOOP),
        ("console/app.py", "import recommender.checkpoints.base", CONSOLE_LOOP),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tree_copy: Path, module: str, line: str, contract: str
) -> None:
    path = tree_copy / module
    path.write_text(path.read_text() + f"\n{line}  # injected by the test\n")
    result = _lint(tree_copy)
    assert result.returncode != 0
    broken = [row for row in result.stdout.splitlines() if "BROKEN" in row]
    assert any(contract in row for row in broken), result.stdout


def test_a_recommender_subpackage_outside_the_layers_breaks_the_layers_contract(tree_copy: Path) -> None:
    package = tree_copy / "recommender" / "unplaced"
    package.mkdir()
    (package / "__init__.py").write_text('"""A subpackage no layer names."""\n')
    result = _lint(tree_copy)
    assert result.returncode != 0
    broken = [row for row in result.stdout.splitlines() if "BROKEN" in row]
    assert any(LAYERS in row for row in broken), result.stdout
