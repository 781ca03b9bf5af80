"""The README's quick local loop writes into the checkout (recommendations.json, a private key under tls/);
the repository's .gitignore keeps all of it out of `git status`."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from podsizer.cli import main

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ".venv/bin/podsizer "


def _writing_commands() -> list[list[str]]:
    """The quick loop's podsizer commands that write files: `recommend ... --write` and `certs generate`."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"Quick local loop without a cluster:\n\n```sh\n(.*?)```", readme, re.DOTALL)
    assert block, "README.md has no quick local loop"
    commands = []
    for line in block.group(1).splitlines():
        if not line.startswith(PROGRAM):
            continue
        argv = shlex.split(line.removeprefix(PROGRAM), comments=True)
        if "--write" in argv or argv[:2] == ["certs", "generate"]:
            commands.append(argv)
    assert len(commands) == 2, commands
    return commands


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_what_the_quick_loop_writes_is_ignored_by_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("PODSIZER_STORE", "PODSIZER_STORE_FILE"):
        monkeypatch.delenv(name, raising=False)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copy(ROOT / ".gitignore", tmp_path / ".gitignore")
    monkeypatch.chdir(tmp_path)
    for argv in _writing_commands():
        assert main([*argv, "--no-progress"] if argv[0] == "recommend" else argv) == 0, capsys.readouterr()
    written = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if ".git" not in p.parts}
    assert {"recommendations.json", "tls/tls.key", ".gitignore"} <= written
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], capture_output=True, text=True, check=True
    ).stdout
    assert status.splitlines() == ["?? .gitignore"], status
