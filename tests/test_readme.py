"""The README's examples run as written (HOME is a temporary folder in tests)."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfs.cli import cli

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


@pytest.mark.slow
def test_python_quick_start_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMFS_EMBEDDER")  # as a user runs it: with the model `make` installs (the dev extras)
    code = blocks("python")
    assert code, "README has no python example"
    for block in code:
        exec(compile(block, "README.md", "exec"), {})  # noqa: S102


def test_cli_quick_start_runs() -> None:
    home = os.environ["HOME"]
    runner = CliRunner()
    commands = [line for block in blocks("bash") for line in block.splitlines() if line.startswith("memfs ")]
    assert len(commands) >= 5
    for line in commands:
        args = [a.replace("~", home) for a in shlex.split(line, comments=True)[1:]]
        result = runner.invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, (line, result.output)
