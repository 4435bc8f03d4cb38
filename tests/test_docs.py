"""The docs tell the truth: every code block of README.md and docs/*.md runs as written, and each
command's ``--help`` has the options docs/cli.md gives it.

A block runs unless the line above its opening fence says why it does not, as an HTML comment a
reader never sees: ``<!-- not run: a fragment of the example above -->``. Blocks in ``text``,
``markdown``, ``json``, ``toml`` or with no language are shown, not run (a file's contents, a
configuration, output). ``python`` blocks run in one namespace per page, in order (a later block may
use what an earlier one made); every ``memfs ...`` line of a ``bash`` block runs through the CLI, in
a home folder of its own that holds a vault at ``~/agent-memory`` with what the pages talk about
(``users/alice/window-seats.md``, the session ``chat-42``, the agent ``support agent``).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import memfs
from memfs.cli import cli

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHOWN = {"", "text", "markdown", "json", "toml", "yaml", "console"}
FENCE = re.compile(r"^(?P<fence>`{3,})(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)
SKIP = re.compile(r"<!--\s*not run:\s*(?P<why>[^>]*?)\s*-->\s*$")


def blocks(page: Path) -> list[tuple[str, str, str | None, int]]:
    """``(language, code, why it is not run or None, line)`` for each fenced block of ``page``."""
    text = page.read_text("utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.search(before)
        line = text.count("\n", 0, match.start()) + 1
        found.append((match["lang"], match["body"], skip["why"] if skip else None, line))
    return found


def runnable(language: str) -> bool:
    return language in ("python", "bash", "sh", "shell")


def test_every_block_is_run_or_says_why_not() -> None:
    unexplained = []
    for page in PAGES:
        for language, _, why, line in blocks(page):
            if why is not None and not why.strip():
                unexplained.append(f"{page.name}:{line}: 'not run' without a reason")
            if language not in SHOWN and not runnable(language):
                unexplained.append(f"{page.name}:{line}: a {language} block neither runs nor is shown")
    assert not unexplained, unexplained


# -- the world the pages talk about -------------------------------------------------------------


def setting(home: Path) -> Path:
    """``~/agent-memory`` as the pages assume it: Alice's window seats, a session chat-42, an agent's change."""
    root = home / "agent-memory"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        alice = vault.memories("users/alice")
        alice.add("Alice prefers window seats on long flights.", title="Window seats", tags=["travel"],
                  type="preference")  # fmt: skip
        alice.add("Alice banks with Example Bank, account 12345.", title="Bank")
    with memfs.Vault.open(root, author="support agent <support@example.com>", durable=False) as vault:
        tools = memfs.MemoryTools(vault, "users/alice", session="chat-42")
        tools.run("create", path="/memories/diet.md", file_text="Alice is vegetarian.\n")
        tools.run("str_replace", path="/memories/diet.md", old_str="vegetarian", new_str="vegan")
        vault.session("chat-42").append([{"role": "user", "content": "I'm planning a trip to Kyoto."}])
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    (home / "token.txt").write_text(token + "\n")
    with memfs.Vault.open(root, durable=False) as vault:  # what security.md purges
        vault.memories("users/alice").add(f"Deploy token {token}", title="Deploy", on_secret="allow")
    return root


def test_shell_blocks_hold_only_memfs_commands_unless_not_run() -> None:
    """A shell block either runs whole (memfs commands and comments) or says why it does not."""
    others = []
    for page in PAGES:
        for language, code, why, line in blocks(page):
            if language in ("bash", "sh", "shell") and why is None:
                rest = [
                    c for c in code.replace("\\\n", " ").splitlines() if c.strip() and not c.lstrip().startswith("#")
                ]
                others += [f"{page.name}:{line}: {c}" for c in rest if not c.strip().startswith("memfs ")]
    assert not others, others


def commands_of(code: str) -> list[str]:
    """The ``memfs`` command lines of a shell block (a trailing ``\\`` joins lines)."""
    joined = code.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip().startswith("memfs ")]


def placeholders(args: list[str], root: Path) -> list[str]:
    """A page's placeholders made real: the revision and proposal ids it shows as examples."""
    with memfs.Vault.open(root, commit_edits=False) as vault:
        revisions = vault.log()
        proposals = vault.proposals()
    seats = next(r.sha for r in revisions if "window-seats" in r.subject)
    real = {"3f2a1c9e0b": seats, "prop_01JD…": proposals[0].id if proposals else "prop_none"}
    return [real.get(arg, arg) for arg in args]


SHELL_BLOCKS = [
    pytest.param(page, line, code, id=f"{page.name}:{line}")
    for page in PAGES
    for language, code, why, line in blocks(page)
    if language in ("bash", "sh", "shell") and why is None and commands_of(code)
]
PYTHON_PAGES = [
    pytest.param(page, id=page.name)
    for page in PAGES
    if any(language == "python" and why is None for language, _, why, _ in blocks(page))
]


@pytest.mark.parametrize(("page", "line", "code"), SHELL_BLOCKS)
def test_shell_blocks_run_as_written(page: Path, line: int, code: str, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    home = Path(os.environ["HOME"])
    root = setting(home)
    monkeypatch.chdir(home)
    monkeypatch.setenv("MEMFS_VAULT", str(root))  # `memfs sync` with no --vault: the vault the page means
    monkeypatch.setenv("MEMFS_AUTHOR", "Your Name <you@example.com>")  # who review.md's `undo --by` names
    runner = CliRunner()
    for command in commands_of(code):
        words = shlex.split(command, comments=True)
        stdin = None
        if "<" in words:  # `memfs purge --text - --yes < token.txt`
            at = words.index("<")
            stdin, words = (home / words[at + 1]).read_text(), words[:at]
        args = placeholders([str(home) + w[1:] if w.startswith("~") else w for w in words[1:]], root)
        if args and args[0] == "review":
            runner.invoke(cli, ["add", "--vault", str(root), "-n", "users/alice", "--propose", "Alice likes tea."])
        result = runner.invoke(cli, args, input="y\n" if stdin is None else stdin)  # a question is answered yes
        assert result.exit_code == 0, (f"{page.name}:{line}", command, result.output)


@pytest.mark.slow
@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_python_blocks_run_as_written(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each page's Python, in order, in a home of its own (its first block makes ``~/agent-memory``)."""
    monkeypatch.chdir(os.environ["HOME"])
    monkeypatch.delenv("MEMFS_EMBEDDER")  # as a reader runs them: with the model the dev extras install
    namespace: dict[str, object] = {}
    try:
        for language, code, why, line in blocks(page):
            if language == "python" and why is None:
                exec(compile(code, f"{page.name}:{line}", "exec"), namespace)  # noqa: S102
    finally:
        for value in namespace.values():  # the pages leave a vault open where a program would go on
            if isinstance(value, memfs.Vault):
                value.close()
            if isinstance(value, memfs.MemoryTools):
                value.engine.close()  # a vault opened in the call (tools.md), closed through its engine


# -- --help against docs/cli.md ------------------------------------------------------------------


def synopsis(name: str) -> str:
    docs = (ROOT / "docs" / "cli.md").read_text("utf-8")
    match = re.search(rf"^## `memfs {name}\b(?P<rest>[^`]*)`", docs, re.M)
    assert match, f"docs/cli.md has no heading for memfs {name}"
    return match["rest"]


@pytest.mark.parametrize("name", sorted(cli.commands))  # type: ignore[attr-defined]
def test_help_and_docs_give_a_command_the_same_options(name: str) -> None:
    command = cli.commands[name]  # type: ignore[attr-defined]
    heading = synopsis(name)
    given = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", heading))
    options: set[str] = set()
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden or param.name in ("vault_path", "help"):
            continue
        names = list(param.opts + param.secondary_opts)
        options.update(names)
        assert any(n in given for n in names), f"docs/cli.md's heading of memfs {name} lacks {names[0]}"
    help_text = CliRunner().invoke(cli, [name, "--help"]).output
    unknown = sorted(opt for opt in given if opt not in options and opt not in help_text)
    assert not unknown, f"docs/cli.md gives memfs {name} options it does not have: {unknown}"
