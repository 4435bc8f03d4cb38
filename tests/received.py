"""A vault received from someone else, with every program its repository could make git run planted.

Each planted program only makes a marker file named after itself, so a test can tell which ran.
`plant()` plants them all; `markers()` lists those that ran. Tests of new git-using features (a
sync, for example) add their operations to tests/test_security_received.py, and anything new a
repository could make git run belongs in `plant()` and in the list of `EXPECTED_BY_PLAIN_GIT`
when plain git demonstrably runs it.

The planted Whoosh index (a pickle in `.memfs/index`) is the other half of a received vault's
threat; tests/test_index_safety.py covers it.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

HOOKS = (
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
    "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
    "pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
    "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
    "fsmonitor-watchman", "post-index-change",
)  # fmt: skip

# What plain git runs of the planted programs while doing what memfs does: the plant works.
EXPECTED_BY_PLAIN_GIT = (
    "fsmonitor", "hook-reference-transaction", "hook-post-index-change", "filter-info-clean",
    "filter-process", "filter-attr-clean", "diff-external", "diff-command", "textconv", "gpg", "uploadpack",
    "receivepack", "remote-hook-pre-receive",
)  # fmt: skip


def _program(folder: Path, markers: Path, name: str, body: str = "") -> str:
    """An executable shell script that marks ``name`` as run, then does ``body``; its quoted path."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / f"{name}.sh"
    marker = shlex.quote(str(markers / name))
    script.write_text(f"#!/bin/sh\n: > {marker}\n{body}\nexit 0\n")
    script.chmod(0o755)
    return shlex.quote(str(script))


def _git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "sender", "GIT_AUTHOR_EMAIL": "sender@example.com",
           "GIT_COMMITTER_NAME": "sender", "GIT_COMMITTER_EMAIL": "sender@example.com"}  # fmt: skip
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, input=input, capture_output=True, check=True)
    return proc.stdout.decode()


def _plant_hooks(folder: Path, programs: Path, markers: Path, prefix: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for hook in HOOKS:
        path = folder / hook
        path.write_text(f"#!/bin/sh\nexec {_program(programs, markers, prefix + hook)}\n")
        path.chmod(0o755)


def _sign_head(root: Path) -> None:
    """Give HEAD a (fake) signature, so a `git log` that shows signatures runs gpg.program."""
    raw = _git(root, "cat-file", "commit", "HEAD")
    head, _, message = raw.partition("\n\n")
    signature = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----"
    signed = _git(root, "hash-object", "-t", "commit", "-w", "--stdin",
                  input=f"{head}\n{signature}\n\n{message}".encode()).strip()  # fmt: skip
    _git(root, "update-ref", "HEAD", signed)


def plant(root: Path, markers: Path, *, hooks_path: bool = False) -> Path:
    """Plant in the repository at ``root`` every program git could be made to run; returns the remote.

    ``hooks_path``: the hooks live in a folder `core.hooksPath` names (else in `.git/hooks`).
    The repository's remote `origin` is a bare repository beside it with hooks of its own (a
    push to a path runs its receive-pack, and that runs its hooks).
    """
    markers.mkdir(parents=True, exist_ok=True)
    programs = root.parent / "planted"
    git_dir = Path(_git(root, "rev-parse", "--absolute-git-dir").strip())
    remote = root.parent / "origin.git"
    _git(root.parent, "init", "-q", "--bare", str(remote))
    _git(root, "push", "-q", str(remote), "HEAD:refs/heads/main")
    _plant_hooks(remote / "hooks", programs, markers, "remote-hook-")
    _sign_head(root)

    prog = lambda name, body="": _program(programs, markers, name, body)  # noqa: E731
    textconv = prog("textconv", 'cat "$1"')
    more = programs / "more.cfg"  # pulled in by include.path: git reads it as the repository's own
    more.write_text(
        f"[diff]\n\texternal = {prog('diff-external')}\n"
        f'[filter "evilinfo"]\n\tclean = {prog("filter-info-clean", "cat")}\n'
        f"\tsmudge = {prog('filter-info-smudge', 'cat')}\n\trequired = true\n"
        f'[filter "evilattr"]\n\tclean = {prog("filter-attr-clean", "cat")}\n'
        f"\tsmudge = {prog('filter-attr-smudge', 'cat')}\n"
        f'[filter "evilproc"]\n\tprocess = {prog("filter-process")}\n'
        f'[diff "evildiff"]\n\ttextconv = {textconv}\n\tcommand = {prog("diff-command")}\n'
        f'[merge "evilmerge"]\n\tdriver = {prog("merge-driver")}\n'
    )
    settings = {
        "core.fsmonitor": prog("fsmonitor"),
        "core.pager": prog("pager"), "pager.log": prog("pager-log"), "core.editor": prog("editor"),
        "sequence.editor": prog("sequence-editor"), "core.askPass": prog("askpass"),
        "core.sshCommand": prog("ssh-command"), "core.gitProxy": prog("git-proxy"),
        "core.alternateRefsCommand": prog("alternate-refs"), "credential.helper": prog("credential-helper"),
        "log.showSignature": "true", "gpg.program": prog("gpg"), "protocol.ext.allow": "always",
        "remote.origin.url": str(remote), "remote.origin.fetch": "+refs/heads/*:refs/remotes/origin/*",
        "remote.origin.uploadpack": prog("uploadpack", 'exec git upload-pack "$@"'),
        "remote.origin.receivepack": prog("receivepack", 'exec git receive-pack "$@"'),
        "include.path": str(more),
    }  # fmt: skip
    if hooks_path:
        settings["core.hooksPath"] = str(programs / "hooks")
        _plant_hooks(programs / "hooks", programs, markers, "hook-")
    else:
        _plant_hooks(git_dir / "hooks", programs, markers, "hook-")
    for key, value in settings.items():
        _git(root, "config", key, value)
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "attributes").write_text("memories/users/** filter=evilinfo diff=evildiff merge=evilmerge\n")
    (root / ".gitattributes").write_text(
        "memories/projects/** filter=evilproc\nsessions/** filter=evilattr diff=evildiff\n"
    )
    return remote


def markers(folder: Path) -> list[str]:
    """The planted programs that ran."""
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
