"""Every git command memfs runs starts here: one executable, one environment, one wording, one wait for locks.

A command runs to its end through :func:`run`; a long-running one (``git cat-file --batch``,
``git update-ref --stdin``, ``git index-pack``) starts through :func:`popen`. Both start ``git``
as found on ``PATH``, in the person's environment with git's messages in English (memfs reads
them: a held lock, a missing remote ref, a refused push) and the caller's overrides on top (the
safe settings of :class:`memfs.gitenv.GitEnvironment`), with stdin closed unless the caller feeds
it, and the flags of :data:`FLAGS` put after the subcommand. :func:`said` is the one way git's
complaint becomes a line of an error. :class:`Git` binds this to one repository and is where a
command waits for git's lock files: :func:`wait_for_locks` is the only retry loop for them.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from ._fs import checkpoint
from .credentials import hide_url_credentials
from .errors import GitLockError, HistoryError

log = logging.getLogger(__name__)

GIT = "git"  # the executable, found on PATH
_ENGLISH = {"LANGUAGE": "C", "LC_ALL": "C"}  # git's messages as memfs reads them
_LOCK_MESSAGE = re.compile(r"Unable to create '([^']+\.lock)': File exists")
_WRITING_COMMANDS = frozenset({"read-tree", "update-index", "write-tree", "commit-tree", "update-ref", "hash-object"})
FLAGS = {  # put after the subcommand, whatever the caller passed (see memfs.gitenv's table)
    "diff": ("--no-ext-diff", "--no-textconv", "--ignore-submodules=all"),
    "log": ("--no-ext-diff", "--no-textconv", "--no-show-signature"),
    "status": ("--ignore-submodules=all",),
    "fetch": ("--upload-pack=git-upload-pack",),
    "ls-remote": ("--upload-pack=git-upload-pack",),
    "push": ("--receive-pack=git-receive-pack",),
    "clone": ("--upload-pack=git-upload-pack",),
}
CHUNK = 500  # paths per git command line
NOT_RUN = (OSError, subprocess.SubprocessError)  # git could not be started, or did not end in time
T = TypeVar("T")


def subcommand(args: Sequence[str]) -> str:
    """The git subcommand of ``args``, after any ``-c key=value`` pairs."""
    i = 0
    while i < len(args) and args[i] == "-c":
        i += 2
    return args[i] if i < len(args) else ""


def chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    """``items`` in pieces of at most :data:`CHUNK`, each as many paths as one command line takes."""
    for i in range(0, len(items), CHUNK):
        yield items[i : i + CHUNK]


def safe_args(args: Sequence[str]) -> list[str]:
    """``git`` arguments with the flags of :data:`FLAGS` put after the subcommand."""
    i = 0
    while i < len(args) and args[i] == "-c":
        i += 2
    if i >= len(args):
        return list(args)
    return [*args[: i + 1], *FLAGS.get(args[i], ()), *args[i + 1 :]]


def environment(overrides: Mapping[str, str]) -> dict[str, str]:
    """The environment of a git command: the person's, git's messages in English, then ``overrides``."""
    return {**os.environ, **_ENGLISH, **overrides}


def run(
    args: Sequence[str],
    *,
    cwd: Path | str | None,
    overrides: Mapping[str, str],
    input: bytes | None = None,
    timeout: float | None = None,
    umask: int = -1,
) -> subprocess.CompletedProcess[bytes]:
    """Run one git command to its end; its exit status and both outputs kept (no check, no retry).

    A command that writes to the repository passes the fault seam ``git:<subcommand>`` first.

    Raises:
        OSError: git could not be started.
        subprocess.TimeoutExpired: ``timeout`` passed.
    """
    command = subcommand(args)
    if command in _WRITING_COMMANDS:
        checkpoint(f"git:{command}")
    return subprocess.run(
        [GIT, *safe_args(args)],
        cwd=cwd,
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        check=False,
        env=environment(overrides),
        timeout=timeout,
        umask=umask,
    )


def popen(
    args: Sequence[str],
    *,
    cwd: Path,
    overrides: Mapping[str, str],
    stdout: int | IO[Any] | None = subprocess.PIPE,
    stderr: int | IO[Any] | None = subprocess.PIPE,
) -> subprocess.Popen[bytes]:
    """Start a long-running git command, a pipe to its stdin (``stdout``, ``stderr``: where it answers and complains).

    Raises:
        OSError: git could not be started.
    """
    return subprocess.Popen(
        [GIT, *safe_args(args)],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=stderr,
        env=environment(overrides),
    )


def said(stderr: bytes | str) -> str:
    """What git said, on one line, with a remote URL's user and password hidden (a fetch repeats the URL)."""
    text = stderr if isinstance(stderr, str) else stderr.decode("utf-8", "replace")
    return hide_url_credentials(" ".join(text.split()))


def version(overrides: Mapping[str, str]) -> tuple[int, ...]:
    """Git's version (up to four numbers, as ``git version`` prints it); () if it says none."""
    out = run(["version"], cwd=None, overrides=overrides).stdout.decode("utf-8", "replace").split(" ")
    fields = out[2].strip().split(".")[:4] if len(out) > 2 else []
    numbers: list[int] = []
    for field in fields:
        if not field.isdigit():
            break
        numbers.append(int(field))
    return tuple(numbers)


@dataclass(frozen=True)
class Locked:
    """An attempt that git's lock file ``lock`` stopped; ``refused`` is what it would raise."""

    lock: Path
    refused: BaseException


def locked(said: str, refused: BaseException) -> Locked | None:
    """The lock file git's message ``said`` complains about, or None if it is about something else."""
    found = _LOCK_MESSAGE.search(said)
    return None if found is None else Locked(Path(found.group(1)), refused)


def wait_for_locks(attempt: Callable[[], T | Locked], *, top: Path, timeout: float) -> T:
    """``attempt()``, again while a git lock file stops it: a stale lock is removed, a held one waited for.

    Raises:
        GitLockError: The lock stayed held longer than ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = attempt()
        if not isinstance(result, Locked):
            return result
        if clear_if_stale(result.lock, top):
            continue
        if time.monotonic() > deadline:
            raise GitLockError(
                f"git lock file {result.lock} is held. If no git command is running on "
                f"this repository, remove that file and try again."
            ) from result.refused
        time.sleep(0.05)


def clear_if_stale(lock: Path, top: Path, *, min_age: float = 10.0) -> bool:
    """Remove a git lock file left by a killed process; never one a live git holds."""
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return True  # gone by itself: just retry
    if age < min_age or not Path("/proc").is_dir() or _live_git_in(top):
        return False
    log.warning("removing stale git lock %s (%.0f s old, no git process running)", lock, age)
    lock.unlink(missing_ok=True)
    return True


def _live_git_in(top: Path) -> bool:
    """True if a git process that may hold a lock is running with its working folder inside ``top``.

    ``git cat-file`` only reads, and a ``git update-ref --stdin`` waiting for its next update holds
    nothing (it locks a ref only inside an update, a moment): the long-running ones every open vault
    keeps (its own and other processes') do not count.
    """
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if (entry / "comm").read_text().strip() != "git":
                continue
            args = (entry / "cmdline").read_bytes().split(b"\0")
            if args[1:2] == [b"cat-file"] or (args[1:2] == [b"update-ref"] and b"--stdin" in args):
                continue
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if cwd == top or top in cwd.parents:
            return True
    return False


class Git:
    """git commands in one repository (its top folder), each with the overrides of the moment."""

    def __init__(
        self, top: Path, overrides: Callable[[Mapping[str, str] | None], dict[str, str]], lock_timeout: float
    ) -> None:
        self.top = top
        self.overrides = overrides  # what a command gets on top of the person's environment, plus extras
        self.lock_timeout = lock_timeout

    def __call__(
        self, *args: str, env: dict[str, str] | None = None, input: str | bytes | None = None, check: bool = True
    ) -> str:
        """The output of ``git args`` (its last newline cut), once git's lock files let it run.

        Raises:
            HistoryError: git failed (with ``check``; else the output is ``""``).
            GitLockError: A git lock file stayed held longer than the lock timeout.
        """

        def attempt() -> str | Locked:
            proc = self.completed(*args, env=env, input=input)
            if not proc.returncode:
                out = proc.stdout.decode("utf-8", "surrogateescape")  # a file name may be any bytes
                return out[:-1] if out.endswith("\n") else out
            err = said(proc.stderr) or f"exit status {proc.returncode}"
            refused = HistoryError(f"git {subcommand(args)} failed: {err}")
            stopped = locked(err, refused)
            if stopped is not None:
                return stopped
            if not check:
                return ""
            raise refused

        return wait_for_locks(attempt, top=self.top, timeout=self.lock_timeout)

    def completed(
        self, *args: str, env: dict[str, str] | None = None, input: str | bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """``git args`` run to its end, its exit status and both outputs kept (no check, no retry)."""
        data = input.encode("utf-8", "surrogateescape") if isinstance(input, str) else input
        return run(args, cwd=self.top, overrides=self.overrides(env), input=data)
