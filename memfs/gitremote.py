"""A vault's git remotes: clone, fetch into a ref of memfs's own, accept or drop what came, push.

A sync (:mod:`memfs.sync`) fetches, joins and pushes through these. Credentials are git's
business: the person's credential helpers and ssh agent answer, memfs never asks for or keeps
any. git's refusals a person can act on become sentences with their fix (:func:`memfs.gitenv.git_refusal`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from . import gitrun
from .credentials import hide_url_credentials
from .errors import HistoryError, SyncError
from .gitenv import LOCAL_RECEIVE, fixed_overrides, git_refusal, local_folder, make_git_private
from .layout import one_line

_INCOMING = "refs/memfs/incoming/"  # where a sync's fetch waits until it is accepted


class Remotes:
    """The remotes of one repository, reached through its git runner (no state of their own)."""

    def __init__(self, git: gitrun.Git) -> None:
        self._git = git

    @staticmethod
    def clone(url: str, folder: Path) -> None:
        """``git clone url folder`` (no hooks run, no checkout filters); SyncError if it fails."""
        if not isinstance(url, str) or not url or url.startswith("-"):
            raise SyncError(f"{hide_url_credentials(str(url))!r} is not a git remote URL")
        if folder.exists() and any(folder.iterdir()):
            raise SyncError(f"{folder} exists and is not empty; clone into a new folder")
        # umask 077: what git checks out and writes is the owner's alone, as in a vault memfs made
        clone = ["clone", "--quiet", "--end-of-options", url, str(folder)]
        proc = gitrun.run(clone, cwd=None, overrides=fixed_overrides(), umask=0o077)
        if proc.returncode:
            err = gitrun.said(proc.stderr)
            raise SyncError(hide_url_credentials(f"could not clone {url}: {err}"))  # never the user or password
        make_git_private(folder / ".git")

    def names(self) -> list[str]:
        """The names of the configured remotes."""
        return self._git("remote").split()

    def fetch(self, remote: str, branch: str) -> str | None:
        """Fetch ``branch`` of ``remote`` into a ref of memfs's own; its commit id, or None if it has none.

        What comes in is held under ``refs/memfs/incoming/`` until the sync accepts it
        (:meth:`accept_fetched`) or refuses it (:meth:`drop_fetched`, which also prunes its objects).
        """
        ref = f"{_INCOMING}{remote}/{branch}"
        try:
            self._git(
                "fetch",
                "--no-tags",
                "--quiet",
                "--no-write-fetch-head",
                "--refmap=",
                "--end-of-options",
                remote,
                f"+refs/heads/{branch}:{ref}",
            )
        except HistoryError as exc:
            if "couldn't find remote ref" in str(exc):
                return None  # an empty remote, or a branch nobody pushed yet
            said = git_refusal(str(exc), self.url(remote) or remote, branch)
            if said:
                raise HistoryError(hide_url_credentials(said)) from exc
            raise
        return self._git("rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False).strip() or None

    def accept_fetched(self, remote: str, branch: str, sha: str) -> None:
        """The fetched commit is part of this vault's history now: the remote-tracking ref names it."""
        self._git("update-ref", f"refs/remotes/{remote}/{branch}", sha)
        self._git("update-ref", "-d", f"{_INCOMING}{remote}/{branch}", check=False)

    def drop_fetched(self, remote: str, branch: str) -> None:
        """Forget a fetch the sync refused: its ref goes and the objects only it reached are pruned.

        A fetch of more than ``fetch.unpackLimit`` objects arrives as a pack, which ``git prune``
        never opens: the packs are written again from what is reachable (``repack -a -d``, which
        leaves unreachable packed objects out), then the loose ones are pruned. Without this a
        refused sync from a remote that still holds purged text would keep that text here.
        """
        self._git("update-ref", "-d", f"{_INCOMING}{remote}/{branch}", check=False)
        self._git("repack", "-a", "-d", "-q", check=False)
        self._git("prune", "--expire=now", check=False)

    def url(self, remote: str) -> str:
        """The URL ``remote`` fetches from (``git remote get-url``); empty if it has none."""
        return self._git("remote", "get-url", "--end-of-options", remote, check=False).strip()

    def push(self, remote: str, branch: str, sha: str) -> bool:
        """Push ``sha`` to ``branch`` of ``remote`` (never forced); False if the remote moved meanwhile.

        A remote that is a folder on this machine (another vault, as ``memfs clone ~/a ~/b`` makes)
        has its branch checked out, which git refuses to push to: its receiving side is started
        with ``receive.denyCurrentBranch=updateInstead``, so the push also updates its files when
        they hold no uncommitted edit, and with hooks off, as every git command memfs runs.
        """
        ref = f"refs/heads/{branch}"
        url = self.url(remote)
        receive = [f"--receive-pack={LOCAL_RECEIVE}"] if local_folder(url) is not None else []
        proc = self._git.completed("push", "--porcelain", *receive, "--end-of-options", remote, f"{sha}:{ref}")
        out = proc.stdout.decode("utf-8", "replace")
        if proc.returncode:
            for line in out.splitlines():
                flag, _, rest = line.partition("\t")
                if flag == "!" and "[rejected]" in rest:  # not a fast-forward: the remote moved
                    return False
            err = proc.stderr.decode("utf-8", "replace").strip() or out.strip()
            said = git_refusal(f"{out}\n{err}", url or remote, branch)
            raise HistoryError(hide_url_credentials(said or f"git push failed: {one_line(err)}"))
        with contextlib.suppress(HistoryError):  # only bookkeeping: the push itself is done
            self._git("update-ref", f"refs/remotes/{remote}/{branch}", sha)
        return True
