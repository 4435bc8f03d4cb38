"""Small helpers several test files share: an isolated home, waiting for a condition, calling the memory
tools, git as a person and a remote to sync through, and memfs run in another process."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import memfs
from memfs.tools import MemoryTools, ToolResult

if TYPE_CHECKING:
    from memfs.vault import Vault

#: Eight facts about one person, each answering a question asked in other words (search by meaning).
ALICE_FACTS = [
    "Alice works as a nurse at Santa Maria hospital.",
    "Alice is vegetarian.",
    "Alice drives a blue Toyota Corolla.",
    "Alice lives in Porto with her two cats.",
    "Alice's sister Maria is a lawyer in Lisbon.",
    "Alice plays the cello in a community orchestra.",
    "Alice is allergic to penicillin.",
    "Alice's favourite holiday destination is Kyoto.",
]
UNEXPECTED = "failed unexpectedly"  # what a tool says when a bug, not a reason, refused a call

#: Identity and location variables of the developer's (or CI's) environment that memfs or git would read.
FOREIGN_VARS = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL",
                "MEMFS_VAULT", "MEMFS_AUTHOR", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")  # fmt: skip


def isolate(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """Point HOME, the XDG folders (the index key lives in the state one) and git's config at ``home``.

    conftest's ``isolated_env`` does it for every test; a fixture that lives longer than one test
    (scope "module" or "session") does it itself, with a ``pytest.MonkeyPatch.context()``.
    """
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in FOREIGN_VARS:
        monkeypatch.delenv(var, raising=False)
    # The suite's rankings are by words (what each test was written against); tests/test_semantic.py
    # opens its vaults with the embedding model, and unsets this where it tests the default.
    monkeypatch.setenv("MEMFS_EMBEDDER", "none")


def wait_for(condition: Callable[[], object], timeout: float = 15.0) -> None:
    """Poll ``condition`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def ok(tools: MemoryTools, command: str, **args: Any) -> str:
    """Run a tool command that must succeed; its text."""
    result = tools.call({"command": command, **args})
    assert isinstance(result, ToolResult)
    assert not result.is_error, result.text
    return result.text


def err(tools: MemoryTools, command: str, **args: Any) -> str:
    """Run a tool command that must be refused for a reason; its text."""
    result = tools.call({"command": command, **args})
    assert isinstance(result, ToolResult)
    assert result.is_error, result.text
    assert UNEXPECTED not in result.text, result.text
    return result.text


def person_env(name: str, email: str) -> dict[str, str]:
    """This process's environment with ``name <email>`` as git's author and committer: a person running git."""
    return {
        **os.environ,
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


def add_origin(vault: Vault, remote: Path) -> None:
    """Create ``remote`` as a bare git repository (branch main) and make it ``vault``'s origin."""
    subprocess.run(["git", "init", "--bare", "--quiet", "--initial-branch=main", str(remote)], check=True)
    subprocess.run(["git", "remote", "add", "origin", remote.as_uri()], cwd=vault.root, check=True)


def run_script(name: str, *args: str | Path) -> dict[str, Any]:
    """Run ``tests/<name>`` in a new Python process (a restart) with ``args``; the JSON of its last line."""
    command = [sys.executable, str(Path(__file__).parent / name), *map(str, args)]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def on_a_terminal(*args: str, columns: int | None = None) -> str:
    """What ``memfs ARGS`` shows on a terminal (a pty; ``columns`` wide, with no COLUMNS set, if given).

    The command must succeed. The pty turns ``\\n`` into ``\\r\\n``; the text is as the terminal got it.
    """
    parent, child = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(Path(memfs.__file__).parent.parent)}
    if columns is not None:
        fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        env.pop("COLUMNS", None)
    command = [sys.executable, "-c", "from memfs.cli import main; main()", *args]
    proc = subprocess.Popen(command, stdout=child, stderr=child, stdin=subprocess.DEVNULL, env=env)
    os.close(child)
    shown = read_pty(parent)
    assert proc.wait() == 0
    return shown


def read_pty(parent: int) -> str:
    """Everything a process wrote to the pty whose parent side is ``parent``, until it ended; closes it."""
    chunks = []
    while True:
        try:
            chunk = os.read(parent, 4096)
        except OSError:  # the pty closes when the process ends
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(parent)
    return b"".join(chunks).decode()


class McpHttpServer:
    """A real ``memfs mcp --transport http ARGS`` process, port chosen by the system; ``stop()`` ends it.

    ``url`` is read from the line the server announces itself with (one holding ``announce``;
    warnings may come first).
    """

    def __init__(self, *args: str, env: dict[str, str], announce: str = " at http://") -> None:
        serve = ["mcp", "--transport", "http", "--port", "0", *args]
        command = [sys.executable, "-c", "from memfs.cli import main; main()", *serve]
        self.process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        lines: list[str] = []
        while not lines or announce not in lines[-1]:
            lines.append(self.process.stderr.readline())
            assert lines[-1], "".join(lines)
        self.url = lines[-1].rsplit(" at ", 1)[1].strip()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        if self.process.stderr:
            self.process.stderr.close()


def fill(folder: Path) -> Path:
    """Fill the file system until a write fails; returns the filler file."""
    filler = folder / "filler"
    try:
        with open(filler, "wb") as handle:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
    except OSError as exc:  # full (possibly already at open, or at the close's last flush)
        assert exc.errno == errno.ENOSPC
    filler.touch(exist_ok=True)
    for size in (4096, 512, 64, 1):  # the last crumbs, so that nothing bigger fits anywhere
        try:
            while True:
                with open(folder / f"crumb-{size}-{os.urandom(4).hex()}", "wb") as crumb:
                    crumb.write(b"\0" * size)
        except OSError:
            pass
    return filler
