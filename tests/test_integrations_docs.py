"""The quick starts of docs/integrations.md run as written, offline, each where its SDK is installed."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest

PAGE = (Path(__file__).resolve().parents[1] / "docs" / "integrations.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE, re.S)
#: the extra a block names in its first line, and the module its SDK installs
SDKS = {"strands": "strands", "agents": "agents", "anthropic": "anthropic", "mcp": "mcp",
        "langgraph": "langgraph", "adk": "google.adk", "pydantic-ai": "pydantic_ai",
        "llama-index": "llama_index.core"}  # fmt: skip


def _extra(block: str) -> str:
    found = re.match(r"# pip install 'memfs-vault\[([\w-]+)\]'", block)
    assert found, f"a quick start starts with the line that installs its extra: {block[:80]!r}"
    return found.group(1)


def test_every_framework_in_the_table_has_a_quick_start() -> None:
    assert {_extra(b) for b in BLOCKS} <= set(SDKS)
    rows = [line for line in PAGE.splitlines() if line.startswith("| ") and "`[" in line]
    named = {re.search(r"`\[([\w-]+)\]`", row).group(1) for row in rows}  # type: ignore[union-attr]
    assert {_extra(b) for b in BLOCKS} <= named


@pytest.mark.parametrize("block", BLOCKS, ids=[_extra(b) for b in BLOCKS])
def test_quick_start_runs(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = SDKS[_extra(block)]
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"{module} is not installed")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # tempfile.mkdtemp() in the examples: this test's folder
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "quickstart"}
    exec(compile(block, "docs/integrations.md", "exec"), namespace)  # noqa: S102
    for value in namespace.values():  # the examples open vaults and leave them to the process's end
        close = getattr(value, "close", None)
        if type(value).__name__ == "Vault" and callable(close):
            close()
    assert os.listdir(tmp_path)
