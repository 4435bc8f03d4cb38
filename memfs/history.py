"""Git history for a vault: commits with authors and trailers, log, show, diff.

This is the only module that imports :mod:`git` (GitPython). A commit writes its blobs, the
trees on the way to them and the commit object as git objects itself (the trees it starts from
are read through one long-running ``git cat-file --batch``), moves HEAD by a compare-and-swap
through one long-running ``git update-ref --stdin``, and puts the same entries into git's own
index (patched in place when it can be, :mod:`memfs.gitstore`): no git process starts on the
way and none reads or writes an index of every file, so a commit costs what the changed files
and their folders cost, not what the repository holds, and it never sweeps up anything else a
person staged in a larger repository that holds the vault. Identity is always passed
explicitly, so commits work on a machine with no ``user.name`` configured and never change
any git config.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import git

from . import gitrun
from ._fs import checkpoint, fsync_together, read_vault_file
from .credentials import find_secrets, hide_url_credentials, redact, report
from .errors import (
    GitLockError,
    HistoryError,
    MemfsError,
    RepositoryStateError,
    RevisionNotFoundError,
    ShallowHistoryError,
    SyncError,
)
from .gitenv import (
    LOCAL_RECEIVE,
    PRIVATE_REPOSITORY,
    GitEnvironment,
    check_git_version,
    check_ownership,
    fixed_overrides,
    git_refusal,
    local_folder,
    make_git_private,
)
from .gitstore import (
    GITLINK_MODE,
    TREE_MODE,
    GitIndex,
    LooseObjects,
    ObjectReader,
    ObjectWriter,
    RefUpdates,
    Tree,
    askable,
    parse_header,
)
from .layout import one_line

log = logging.getLogger(__name__)

ZERO_SHA = "0" * 40
_TRAILER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*): (.*)$")
_CHUNK = 500  # paths per git command line
_FEW_PATHS = 16  # changed(): up to this many paths are compared with HEAD by memfs before asking git
_FAST_COMPARE_BYTES = 8 << 20  # ...each read whole for that only up to this size
_INCOMING = "refs/memfs/incoming/"  # where a sync's fetch waits until it is accepted
_TREES_KEPT = 64  # trees kept parsed by id: the folders a run of commits touches
_OLD_PRIVATE_INDEX = ("git-index", "git-index.head")  # what memfs before 2026-11-23 kept under .memfs/

# Operations a person can leave a repository in, by the file or folder git keeps in the
# (per-worktree) git folder while one runs: its name, what it is, and how to finish or abort it.
# memfs commits nothing while one is in progress: its commit would land in the middle of it
# (and, for a merge, drop the other side), and it would have to touch git's conflict state.
# A bisect counts too: HEAD is an old commit then, and `git bisect reset` leaves behind any
# commit made on it.
_OPERATIONS = (
    ("rebase-merge", "rebase", "a rebase", "finish it (git rebase --continue) or abort it (git rebase --abort)"),
    ("rebase-apply/applying", "am", "a `git am`", "finish it (git am --continue) or abort it (git am --abort)"),
    ("rebase-apply", "rebase", "a rebase", "finish it (git rebase --continue) or abort it (git rebase --abort)"),
    ("MERGE_HEAD", "merge", "a merge", "finish it (git commit) or abort it (git merge --abort)"),
    (
        "CHERRY_PICK_HEAD",
        "cherry-pick",
        "a cherry-pick",
        "finish it (git cherry-pick --continue) or abort it (git cherry-pick --abort)",
    ),
    ("REVERT_HEAD", "revert", "a revert", "finish it (git revert --continue) or abort it (git revert --abort)"),
    (
        "sequencer",
        "cherry-pick",
        "a cherry-pick or revert of several commits",
        "finish it (git cherry-pick --continue, git revert --continue) or stop it (--abort or --quit)",
    ),
    ("BISECT_LOG", "bisect", "a bisect", "end it (git bisect reset)"),
)

# Conflict markers as git writes them into a file it could not merge (default marker size 7).
_MARKER_START = re.compile(rb"^<{7}(?: |\r?$)", re.M)
_MARKER_MIDDLE = re.compile(rb"^={7}\r?$", re.M)
_MARKER_END = re.compile(rb"^>{7}(?: |\r?$)", re.M)


def has_conflict_markers(data: bytes) -> bool:
    """True if ``data`` holds an unresolved conflict as git writes one.

    That is a ``<<<<<<< `` line, then a ``=======`` line, then a ``>>>>>>> `` line; a
    ``=======`` alone is a Markdown heading underline, not a conflict.
    """
    start = _MARKER_START.search(data)
    if start is None:
        return False
    middle = _MARKER_MIDDLE.search(data, start.end())
    return middle is not None and _MARKER_END.search(data, middle.end()) is not None


def _write_state(path: Path, text: str) -> None:
    """Replace a state file under ``.memfs/`` with ``text``; a new one is the owner's alone (0600)."""
    with open(path, "w", encoding="utf-8", opener=lambda name, flags: os.open(name, flags, 0o600)) as handle:
        handle.write(text)


def _screened(
    message: str, trailers: dict[str, str] | None, author: Identity, committer: Identity | None
) -> tuple[str, dict[str, str] | None, Identity, Identity | None]:
    """A commit's words with every credential redacted: the last net under every write (each is logged).

    The callers refuse or redact before (a session id, an author, a person's message); this keeps
    a credential out of history whatever path a text took to a commit.
    """
    texts = [message, *(trailers or {}).values(), str(author), str(committer or "")]
    if not any(find_secrets(text) for text in texts):
        return message, trailers, author, committer

    def clean(text: str, where: str) -> str:
        redacted, found = redact(text)
        report(found, where=where, who=str(redact(str(author))[0]))
        return redacted

    def clean_identity(who: Identity) -> Identity:
        return Identity(clean(who.name, "a commit's author name"), clean(who.email, "a commit's author email"))

    return (
        clean(message, "a commit message"),
        None if trailers is None else {k: clean(v, f"a commit's {k} trailer") for k, v in trailers.items()},
        clean_identity(author),
        None if committer is None else clean_identity(committer),
    )


@dataclass(frozen=True)
class Identity:
    """Who a commit is by: a name and an email, as git records them."""

    name: str
    email: str

    def __post_init__(self) -> None:
        for label, value in (("name", self.name), ("email", self.email)):
            if not isinstance(value, str) or not value.strip() or any(c in value for c in "<>\n\x00"):
                raise ValueError(f"identity {label} must be a non-empty line without <, >, got {value!r}")

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"

    @classmethod
    def parse(cls, text: str) -> Identity:
        """Parse ``"Name <email>"``; a bare name gets a local placeholder email."""
        match = re.fullmatch(r"\s*(.*?)\s*<([^<>]*)>\s*", text)
        if match:
            return cls(match.group(1), match.group(2))
        slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "memfs"
        return cls(text.strip(), f"{slug}@memfs.invalid")


DEFAULT_AGENT = Identity("memfs agent", "agent@memfs.invalid")
DEFAULT_PERSON = Identity("person", "person@memfs.invalid")


def configured_identity(folder: str | os.PathLike[str]) -> Identity | None:
    """The identity git would commit with in ``folder``, or None.

    ``user.name`` and ``user.email`` from the repository's config, then the global one
    (``GIT_CONFIG_GLOBAL``, includes and all, as git reads them). None when either is missing or
    unusable; this never fails and never writes config.

    ``folder`` may not exist yet (a vault about to be created): its nearest existing parent is asked.
    """
    here = Path(folder).expanduser().absolute()
    while not here.is_dir() and here != here.parent:
        here = here.parent
    try:
        proc = gitrun.run(
            ["config", "-z", "--get-regexp", r"^user\.(name|email)$"], cwd=here, overrides=fixed_overrides(), timeout=10
        )
    except gitrun.NOT_RUN:
        return None
    found: dict[str, str] = {}
    for record in proc.stdout.decode("utf-8", "replace").split("\0"):
        key, _, value = record.partition("\n")
        if key in ("user.name", "user.email"):
            found[key] = value.strip()  # the last one wins, as in git
    try:
        return Identity(found["user.name"], found["user.email"])
    except (KeyError, ValueError):
        return None


@dataclass(frozen=True)
class Revision:
    """One commit in the history of a file or of the vault.

    Attributes:
        sha: The full commit id.
        author: Who made the change.
        date: The author date, ISO 8601.
        subject: The first line of the commit message.
        trailers: ``Memfs-*`` and other trailers of the message.
        path: The vault-relative path of the file at this revision (for file histories).
        status: ``A`` added, ``M`` modified, ``D`` deleted, ``R`` renamed (file histories);
            None at a shallow clone's boundary, where what the commit changed is unknown.
        old_path: The path before a rename.
        shallow: This commit is the boundary of a shallow clone: the history before it is not
            in the repository (``git fetch --unshallow`` fetches it).
    """

    sha: str
    author: Identity
    date: str
    subject: str
    trailers: dict[str, str] = field(default_factory=dict)
    path: str | None = None
    status: str | None = None
    old_path: str | None = None
    shallow: bool = False

    @property
    def short(self) -> str:
        """The abbreviated commit id."""
        return self.sha[:10]


class GitHistory:
    """The git repository behind a vault (its own, or a larger one that contains it)."""

    def __init__(self, vault_root: Path, state_dir: Path, *, lock_timeout: float = 10.0, shared: bool = False) -> None:
        self.vault_root = vault_root
        self._state_dir = state_dir
        self._lagging = state_dir / "git-index.lagging"
        self._trees: OrderedDict[str, Tree] = OrderedDict()
        self._reader: ObjectReader | None = None
        self._reader_pid = 0
        self._reader_lock = threading.Lock()
        self._refs: RefUpdates | None = None
        self._refs_pid = 0
        self._refs_lock = threading.Lock()
        self._last: tuple[str | None, str | None, int] = (None, None, 0)  # see _last_commit
        self._lock_timeout = lock_timeout
        self.repo = self._open_or_init(vault_root, shared)
        try:
            check_git_version(gitrun.version(fixed_overrides()))
            check_ownership(vault_root)
        except HistoryError:
            self.repo.close()
            raise
        top = Path(self.repo.working_tree_dir or vault_root).resolve()
        self._env = GitEnvironment(top, Path(self.repo.git_dir))
        self._git = gitrun.Git(top, self._env.overrides, lock_timeout)
        rel = vault_root.resolve().relative_to(top).as_posix()
        self.top = top
        self.prefix = "" if rel == "." else rel + "/"
        self._format, folder = self._object_store()
        self._objects = LooseObjects(folder, private=self._private_repository()) if folder is not None else None
        self.git_index = GitIndex(Path(self.repo.git_dir) / "index", enabled=folder is not None)
        self._oid_bytes = 32 if self._format == "sha256" else 20

    def _object_store(self) -> tuple[str, Path | None]:
        """The object format, and where memfs may write loose objects itself (a SHA-1 repository's folder)."""
        out = self._git("rev-parse", "--show-object-format", "--git-common-dir", check=False).splitlines()
        object_format, common = (out[0].strip(), out[1].strip()) if len(out) == 2 else ("", "")
        if object_format not in ("", "sha1"):
            return object_format, None
        folder = (self.top / common).resolve() / "objects" if common else None
        return "sha1", folder if folder is not None and folder.is_dir() else None

    @staticmethod
    def _open_or_init(root: Path, shared: bool = False) -> git.Repo:
        """The repository holding ``root`` (or a new one there).

        GitPython only finds the repository's folders; the commands (``check-ignore``, ``init``) run
        through :mod:`memfs.gitrun` with the fixed part of the safe settings (the repository's own
        config is not read yet).
        """
        try:
            repo = git.Repo(root, search_parent_directories=True)
        except git.InvalidGitRepositoryError:
            repo = None
        except git.NoSuchPathError as exc:
            raise HistoryError(f"{root}: folder does not exist") from exc
        if repo is not None and repo.working_tree_dir is not None:
            top = Path(repo.working_tree_dir).resolve()
            if top == root.resolve() or not _is_ignored(top, root):
                return repo
            repo.close()  # an ignored folder of another repo gets a repo of its own
        # shared: git keeps its own files group-writable too (core.sharedRepository=group)
        init = ["init", "--initial-branch=main", *(["--shared=group"] if shared else [])]
        proc = gitrun.run(init, cwd=root, overrides=fixed_overrides())
        if proc.returncode:
            raise HistoryError(f"{root}: git init failed: {gitrun.said(proc.stderr)}")
        repo = git.Repo(root)
        if not shared:
            make_git_private(Path(repo.git_dir))  # a private vault's history is as private as its files
        return repo

    def _private_repository(self) -> bool:
        """True when git's own files are private here (``core.sharedRepository=0600``, set at init and clone)."""
        return self._git("config", "--get", "core.sharedRepository", check=False).strip() == PRIVATE_REPOSITORY

    def shared(self) -> bool:
        """True if the repository is shared with a group (``core.sharedRepository`` says so).

        Git then keeps its objects group-writable, and memfs gives the vault's files and folders
        to the group too (see ``WriteEngine.modes``); world-readable values count as the group.
        """
        value = self._git("config", "--get", "core.sharedRepository", check=False).strip().lower()
        if value in ("group", "true", "1", "all", "world", "everybody", "2"):
            return True
        return value.startswith("0") and value.isdigit() and bool(int(value, 8) & 0o060)

    def share(self, shared: bool) -> None:
        """Share the repository with its group from now on, or make it private (by a person's choice).

        Sets or removes ``core.sharedRepository`` in the repository's own config, the one git
        setting memfs writes, and only when asked. Files and folders that exist keep their modes.
        """
        if shared:
            self._git("config", "core.sharedRepository", "group")
        else:
            self._git("config", "core.sharedRepository", PRIVATE_REPOSITORY)

    def close(self) -> None:
        """Stop GitPython's helper processes and memfs's own git processes."""
        with self._reader_lock:
            reader, self._reader = self._reader, None
        with self._refs_lock:
            refs, self._refs = self._refs, None
        if reader is not None and self._reader_pid == os.getpid():
            reader.close()
        if refs is not None and self._refs_pid == os.getpid():
            refs.close()
        self.repo.close()

    @property
    def git_dir(self) -> Path:
        """The repository's ``.git`` folder."""
        return Path(self.repo.git_dir)

    # -- the state a person left the repository in -------------------------------------

    def operation_in_progress(self) -> tuple[str, str] | None:
        """The git operation a person started here and has not finished, or None.

        Returns:
            ``(operation, sentence)``: ``merge``, ``rebase``, ``am``, ``cherry-pick``, ``revert``
            or ``bisect``, and what is in progress where, with how to finish or abort it.
        """
        folder = self.git_dir
        for marker, operation, what, todo in _OPERATIONS:
            if (folder / marker).exists():
                return operation, f"{what} is in progress in {self.top}; {todo}"
        return None

    def check_can_commit(self) -> None:
        """Raise RepositoryStateError while a merge, rebase, cherry-pick, revert or bisect is in progress."""
        found = self.operation_in_progress()
        if found is not None:
            raise RepositoryStateError(f"{found[1]}, then retry", found[0])

    def branch(self) -> str | None:
        """The branch HEAD is on, or None when HEAD is detached (commits go on no branch)."""
        return self._git("symbolic-ref", "-q", "--short", "HEAD", check=False).strip() or None

    def shallow_boundary(self) -> frozenset[str]:
        """The commits at the edge of a shallow clone (their parents are not in the repository)."""
        try:
            return frozenset((Path(self.repo.common_dir) / "shallow").read_text("ascii").split())
        except (OSError, UnicodeDecodeError):
            return frozenset()

    def _check_history_before(self, sha: str) -> None:
        if sha in self.shallow_boundary():
            raise ShallowHistoryError(
                f"the history before {sha[:10]} is not available: this is a shallow clone, so what "
                f"{sha[:10]} changed is unknown (`git fetch --unshallow` fetches the rest)"
            )

    def matches_worktree(self, path: str, rev: str) -> bool:
        """Whether the file ``path`` (vault-relative) on disk is what ``rev`` holds, as git compares them.

        git stores a file after its clean conversions (``core.autocrlf``, the ``text`` and ``eol``
        attributes, filters), so a CRLF file on disk can be exactly the LF blob of a commit.
        """
        blob = self._git("rev-parse", "-q", "--verify", f"{self.resolve(rev)}:{self.prefix}{path}", check=False).strip()
        file = self.vault_root / path
        if file.is_symlink() or not file.is_file():
            return not blob
        return bool(blob) and self._git("hash-object", f"--path={self.prefix}{path}", "--", str(file)).strip() == blob

    def committed_form(self, data: bytes) -> bytes:
        """The bytes git keeps for a file holding ``data``: line endings as ``core.autocrlf`` says."""
        return _to_lf(data) if self._converts_crlf() else data

    def converts_line_endings(self) -> bool:
        """Whether git may change line endings between a commit and the files (``core.autocrlf``, attributes).

        When it does not, the bytes of a commit are the file's bytes, and putting an old version
        back (undo, restore) writes exactly them.
        """
        return (
            self._converts_crlf()
            or (self.top / ".gitattributes").exists()
            or (Path(self.repo.common_dir) / "info" / "attributes").exists()
        )

    def _converts_crlf(self) -> bool:
        """True when ``core.autocrlf`` is ``true`` or ``input``: git stores text files with LF endings."""
        return (self._env.value("core.autocrlf") or "false").lower() in ("true", "input", "yes", "on", "1")

    def configured_identity(self) -> Identity | None:
        """The ``user.name`` and ``user.email`` git would use here now (repository, then global), if both are set.

        Read afresh on every call, so a ``git config user.name`` run while a vault is open counts
        from the next commit on.
        """
        return configured_identity(self.vault_root)

    # -- writing ---------------------------------------------------------------

    def commit(
        self,
        contents: Mapping[str, bytes | None],
        message: str,
        *,
        author: Identity,
        committer: Identity | None = None,
        trailers: dict[str, str] | None = None,
        durable: bool = False,
        merge: str | None = None,
        base: tuple[str | None, str | None] | None = None,
        also: Sequence[int] = (),
    ) -> str | None:
        """Commit exactly ``contents``: vault path -> the bytes to record (None: the file is removed).

        The working tree is never read: what is committed is what the caller wrote (or read), so
        a file another program changes meanwhile cannot slip into the commit, and no filter or
        hook of the repository runs. The new tree is built from HEAD's at every attempt and
        nothing but immutable objects outlives a call, so nothing of a failed commit reaches a
        later one (its objects stay unreferenced until git prunes them).

        With ``merge`` (a commit id), the commit joins that commit's history to HEAD's (a sync):
        it gets two parents, or, when HEAD is an ancestor of ``merge`` and the files are exactly
        ``merge``'s, HEAD simply moves to ``merge`` (a fast-forward, no commit of its own).

        ``base`` is HEAD and its tree as the caller read them (:meth:`head_and_tree`) when its
        change began, which spares reading them again. It is only a first guess: HEAD is moved
        by a compare-and-swap, so a stale guess costs one more attempt, never a wrong commit,
        and "nothing to commit" is answered only after HEAD is read afresh.

        With ``durable``, the new objects are fsynced together before HEAD moves, and so are the
        open files ``also`` names (a transcript's new entries, written without a sync of their
        own): one wait for the disk for the whole commit. git's own index (the staging area a
        person's ``git status`` reads) is then brought in step with the commit.

        Returns:
            The new commit id (or ``merge`` after a fast-forward), or None when the files already
            match HEAD and there is nothing to join.

        Raises:
            RepositoryStateError: A merge, rebase, cherry-pick, revert or bisect is in progress.
        """
        entries = {self.prefix + rel: data for rel, data in contents.items()}
        if not entries and merge is None:
            if also and durable:
                fsync_together(also)
            return None
        self.check_can_commit()  # never in the middle of a person's merge, rebase...
        message, trailers, author, committer = _screened(message, trailers, author, committer)
        full = message.rstrip() + "\n"
        if trailers:
            full += "\n" + "".join(f"{k}: {one_line(v)}\n" for k, v in trailers.items())
        crlf = self._converts_crlf()
        sha = ""
        try:
            blobs = {
                path: (None if data is None else self._write_object("blob", _to_lf(data) if crlf else data, grows=path))
                for path, data in sorted(entries.items())
            }
            guess = (base or self._last_commit()) if merge is None else None
            attempts = 3 if guess is None else 4  # a stale guess does not use up a retry
            for attempt in range(attempts):
                head, head_tree = guess or self._head()
                tree = self._tree_with(head_tree, blobs)
                joined = merge is not None and not self.is_ancestor(merge, head)
                if tree == head_tree and not joined:
                    if guess is not None and self._head() != guess:  # HEAD moved since the guess
                        guess = None
                        continue
                    self._last = (head, head_tree, os.getpid())
                    self._land(durable=durable, also=also)
                    self._sync_worktree_index(blobs)
                    return None
                parents = [head] if head else []
                if (
                    merge is not None
                    and (head is None or self.is_ancestor(head, merge))
                    and tree == self._git("rev-parse", f"{merge}^{{tree}}").strip()
                ):
                    sha = merge  # a fast-forward: HEAD moves to what the other side committed
                else:
                    parents += [merge] if joined and merge is not None else []
                    sha = self._commit_object(tree, parents, full, author=author, committer=committer or author)
                self._land(durable=durable, also=also)
                try:
                    self._move_head(sha, head)
                except GitLockError:
                    raise  # already waited for the lock as long as allowed: waiting again helps nobody
                except HistoryError:
                    if attempt == attempts - 1:
                        raise
                    log.info("HEAD moved while committing; retrying")
                    guess = None
                    continue
                self._last = (sha, tree, os.getpid())
                break
        finally:
            if self._objects is not None:
                self._objects.discard()  # what a failed attempt wrote and never landed
        # The commit is in: from here on nothing may fail the call, or a caller would roll back
        # files that git already has. What follows only keeps git's own index in step.
        self._sync_worktree_index(blobs)
        return sha

    def _last_commit(self) -> tuple[str | None, str | None] | None:
        """HEAD and its tree after this process's last commit: a first guess of HEAD, never trusted."""
        head, tree, pid = self._last
        return (head, tree) if head is not None and pid == os.getpid() else None

    def _write_object(self, kind: str, data: bytes, *, grows: str | None = None) -> str:
        """Store ``data`` as a git object of ``kind`` and return its id.

        A loose object memfs writes itself, made visible by :meth:`_land` (``grows``: the
        repository path of a file whose content this blob is, compressed on from its last blob);
        in a SHA-256 repository, or one memfs cannot write into, ``git hash-object`` writes it.
        """
        if self._objects is None:
            return self._git("hash-object", "-w", "--no-filters", "-t", kind, "--stdin", input=data).strip()
        return self._objects.put(kind, data, grows=grows)

    def _land(self, *, durable: bool, also: Sequence[int] = ()) -> None:
        """Make the objects written so far visible to git: fsynced together (with ``also``) if ``durable``."""
        if self._objects is not None:
            self._objects.land(durable=durable, also=tuple(also))
        elif also and durable:
            fsync_together(also)

    def _commit_object(
        self, tree: str, parents: Sequence[str], message: str, *, author: Identity, committer: Identity
    ) -> str:
        """Write the commit object of ``tree`` with ``parents``, dated now in local time; its id.

        What ``git commit-tree`` writes (the message exactly as given, UTF-8, no signature),
        without starting it.
        """
        if self._objects is None:
            args = [arg for parent in parents for arg in ("-p", parent)]
            return self._git(
                "commit-tree",
                "--no-gpg-sign",
                tree,
                *args,
                "-F",
                "-",
                env=_identity_env(author, committer),
                input=message,
            ).strip()
        checkpoint("git:commit-tree")
        stamp = _git_date(time.time())
        lines = [
            f"tree {tree}",
            *(f"parent {parent}" for parent in parents),
            f"author {author} {stamp}",
            f"committer {committer} {stamp}",
        ]
        return self._write_object("commit", ("\n".join(lines) + "\n\n" + message).encode("utf-8"))

    def _move_head(self, new: str, old: str | None) -> None:
        """HEAD's branch to ``new`` if it still names ``old``: a compare-and-swap, git's locks and reflog.

        Raises:
            HistoryError: HEAD names something else now (the caller reads it again and retries).
            GitLockError: git's lock of the ref stayed taken longer than the lock timeout.
        """
        checkpoint("git:update-ref")

        def attempt() -> gitrun.Locked | None:
            with self._refs_lock:
                overrides = self._env.overrides()
                refs = self._refs
                if refs is None or self._refs_pid != os.getpid() or not refs.alive() or refs.env != overrides:
                    if refs is not None and self._refs_pid == os.getpid():
                        refs.close()
                    refs = self._refs = RefUpdates(self.top, overrides, "memfs: commit")
                    self._refs_pid = os.getpid()
                try:
                    refs.update(new, old)
                    return None
                except HistoryError as exc:
                    self._refs = None  # git's process ended with the refusal
                    refused = exc
            stopped = gitrun.locked(str(refused), refused)
            if stopped is None:
                raise refused
            return stopped

        gitrun.wait_for_locks(attempt, top=self.top, timeout=self._lock_timeout)

    def _tree_with(self, tree: str | None, blobs: Mapping[str, str | None]) -> str:
        """The id of ``tree`` (None: empty) with ``blobs`` put in (repository path -> blob id, None: removed).

        Only the trees on the way to a changed file are read and written again, so a commit costs
        what the changed folders hold, not what the repository holds (git's own ``write-tree``
        reads and writes an index of every file). The result is what ``read-tree``, ``update-index
        --index-info`` and ``write-tree`` give: a folder left empty disappears, a file replaces a
        folder of the same name and a folder a file; removing a path that is a folder does nothing.
        """
        changes: dict[str, _Change] = {}
        for path, oid in blobs.items():
            *folders, name = path.split("/")
            node = changes
            for folder in folders:
                node = node.setdefault(folder, _Change()).below
            node.setdefault(name, _Change()).file = (oid,)
        return self._build_tree(tree, changes) or self._write_object("tree", b"")

    def _build_tree(self, tree: str | None, changes: Mapping[str, _Change]) -> str | None:
        """``tree`` with ``changes`` made to its entries; None if nothing is left in it."""
        current = self._tree(tree) if tree else Tree([], [], self._oid_bytes)
        updates: dict[bytes, tuple[bytes, str] | None] = {}
        for name, change in changes.items():
            key = name.encode("utf-8", "surrogateescape")
            entry = current.get(key)
            if change.file is not None:  # the name itself comes first in git's order, then what is below it
                if change.file[0] is not None:
                    entry = (b"100644", change.file[0])
                elif entry is not None and entry[0] != TREE_MODE:
                    entry = None
            if change.below:
                folder = entry is not None and entry[0] == TREE_MODE
                sub = self._build_tree(entry[1] if folder and entry else None, change.below)
                if sub is not None:
                    entry = (TREE_MODE, sub)  # a file added below a file's name replaces that file
                elif folder:
                    entry = None  # a folder left empty disappears
            updates[key] = entry
        result = current.changed(updates)
        if not len(result):
            return None
        oid = self._write_object("tree", result.raw)
        self._remember_tree(oid, result)
        return oid

    def _tree(self, oid: str) -> Tree:
        """The tree ``oid``, kept by id (a tree never changes)."""
        cached = self._trees.get(oid)
        if cached is None:
            kind, data = self._read_object(oid)
            if kind != "tree":
                raise HistoryError(f"git object {oid} is a {kind}, not a tree")
            cached = Tree.parse(data, self._oid_bytes)
            self._remember_tree(oid, cached)
        else:
            self._trees.move_to_end(oid)
        return cached

    def _remember_tree(self, oid: str, tree: Tree) -> None:
        self._trees[oid] = tree
        self._trees.move_to_end(oid)
        while len(self._trees) > _TREES_KEPT:
            self._trees.popitem(last=False)

    def _read_object(self, oid: str) -> tuple[str, bytes]:
        """``(type, content)`` of the object ``oid``; HistoryError if the repository lacks it."""
        found = self._lookup(oid)
        if found is None:
            raise HistoryError(f"git object {oid} is missing from the repository")
        if found[0] != oid:  # an answer to another question: never build a tree on it
            raise HistoryError(f"git answered {found[0]} when asked for {oid}")
        return found[1], found[2]

    def _lookup(self, spec: str) -> tuple[str, str, bytes] | None:
        """What ``spec`` names, through one long-running ``git cat-file --batch`` of this history's own.

        One process for the life of the vault instead of one per question; started again in a
        forked child (the parent's pipes are not its own) and once when it died.
        """
        with self._reader_lock:
            for attempt in range(2):
                if self._reader is None or self._reader_pid != os.getpid():
                    self._reader, self._reader_pid = ObjectReader(self.top, self._env.overrides()), os.getpid()
                try:
                    return self._reader.lookup(spec)
                except BaseException as exc:  # its pipe may hold half an answer: never ask it again
                    reader, self._reader = self._reader, None
                    reader.kill()
                    if not isinstance(exc, (OSError, ValueError)):
                        raise
                    if attempt:
                        raise HistoryError(f"could not read {spec} from git: {exc}") from exc
        raise AssertionError("unreachable")

    def _sync_worktree_index(self, blobs: Mapping[str, str | None]) -> None:
        """Keep the person's own index in step, so ``git status`` stays clean after a commit.

        The entries are the commit's own, never re-read from the working tree: patched into git's
        index file in place when it allows (:class:`~memfs.gitstore.GitIndex`), else through
        ``git update-index``. If git's index is locked (a person's git command, or a lock a killed
        process left), nothing waits for it: the paths are noted and caught up from HEAD after a
        later commit. Called once the commit is in, so git's or the disk's failures here never
        fail the call: git's index only lags.
        """
        try:
            behind = [p for p in self._lagging.read_text("utf-8").splitlines() if p]
        except FileNotFoundError:
            behind = []
        except OSError as exc:
            log.warning("could not read %s: %s", self._lagging, exc)
            return
        lock = self.git_index.lock
        try:
            if lock.exists() and not gitrun.clear_if_stale(lock, self.top):
                raise GitLockError(f"git's index is locked ({lock})")
            if behind:
                self._git("update-index", "-z", "--index-info", input=self._head_entries(behind))
            patched = self._as_committed(blobs) and self.git_index.patch(blobs, self._neighbours)
            if patched is None:
                raise GitLockError(f"git's index is locked ({lock})")
            if not patched:
                index_info = "".join(
                    f"0 {ZERO_SHA}\t{path}\0" if sha is None else f"100644 {sha}\t{path}\0"
                    for path, sha in blobs.items()
                )
                self._git("update-index", "-z", "--index-info", input=index_info)
        except (HistoryError, OSError) as exc:
            log.warning("could not refresh git's index after a commit (will retry): %s", exc)
            self._note_lagging([*behind, *blobs])
            return
        if behind:
            self._lagging.unlink(missing_ok=True)

    def index_as_at_head(self, rels: Iterable[str]) -> None:
        """Put ``rels`` (vault paths) in git's index as HEAD has them.

        What a commit whose process was killed before it refreshed git's index left undone. Never
        raises: on failure the paths are noted and caught up after a later commit.
        """
        paths = sorted(self.prefix + rel for rel in rels)
        if not paths:
            return
        try:
            self._git("update-index", "-z", "--index-info", input=self._head_entries(paths))
        except HistoryError as exc:
            log.warning("could not refresh git's index (will retry): %s", exc)
            try:
                noted = self._lagging.read_text("utf-8").splitlines()
            except OSError:
                noted = []
            self._note_lagging([*noted, *paths])

    def _note_lagging(self, paths: Iterable[str]) -> None:
        """Note repository ``paths`` as lagging in git's index (caught up from HEAD after a later commit)."""
        try:
            _write_state(self._lagging, "".join(f"{p}\n" for p in sorted(set(paths) - {""})))
        except OSError as exc:
            log.warning("could not note the paths git's index lags on: %s", exc)

    def _as_committed(self, blobs: Mapping[str, str | None]) -> bool:
        """Whether the last commit holds each of ``blobs`` as a file of that id (None: as no file).

        Where a name was both a file and a folder, the commit kept one of them; only git then
        knows what its index makes of the entries, so the patch is left to it.
        """
        _, root = self._last_commit() or (None, None)
        if root is None:
            return False
        for path, oid in blobs.items():
            entry = self._entry_at(root, path)
            if (None if entry is None or entry[0] == TREE_MODE else entry[1]) != oid:
                return False
        return True

    def _folder_at(self, root: str | None, folders: Sequence[str]) -> str | None:
        """The id of the tree at ``folders`` (names from the top) in tree ``root``; None if no folder is there."""
        tree = root
        for folder in folders:
            found = None if tree is None else self._tree(tree).get(folder.encode("utf-8", "surrogateescape"))
            tree = found[1] if found is not None and found[0] == TREE_MODE else None
        return tree

    def _entry_at(self, root: str | None, path: str) -> tuple[bytes, str] | None:
        """``(mode, id)`` of repository path ``path`` in tree ``root``, or None."""
        *folders, name = path.split("/")
        tree = self._folder_at(root, folders)
        return None if tree is None else self._tree(tree).get(name.encode("utf-8", "surrogateescape"))

    def _neighbours(self, path: str) -> str | None:
        """The file just before repository path ``path`` in its folder at HEAD (git's order), if a file is."""
        _, root = self._last_commit() or (None, None)
        *folders, name = path.split("/")
        oid = self._folder_at(root, folders)
        if oid is None:
            return None
        tree = self._tree(oid)
        at = tree.position(name.encode("utf-8", "surrogateescape"))
        if not at:  # not there, or the first: nothing before it in this folder
            return None
        before, mode, _ = tree.entry(at - 1)
        if mode == TREE_MODE:  # a folder: git's index has its files just before this one
            return None
        return "/".join([*folders, before.decode("utf-8", "surrogateescape")])

    def _head_entries(self, paths: Sequence[str]) -> str:
        """``--index-info`` lines putting ``paths`` (repository paths) as they are at HEAD."""
        present: dict[str, str] = {}
        for chunk in _chunks(list(paths)):
            out = self._git("ls-tree", "-z", "HEAD", "--", *chunk, check=False)
            for record in filter(None, out.split("\0")):
                meta, _, path = record.partition("\t")
                mode, kind, sha = meta.split(" ")
                if kind != "tree":  # git's index holds files only: a folder's name is no entry of it
                    present[path] = f"{mode} {sha}\t{path}\0"
        return "".join(present.get(p, f"0 {ZERO_SHA}\t{p}\0") for p in paths)

    def head(self) -> str | None:
        """The commit HEAD names, or None in a repository with no commit yet."""
        return self._head()[0]

    def head_and_tree(self) -> tuple[str | None, str | None]:
        """HEAD's commit and tree, read together by one git command; (None, None) before the first commit."""
        return self._head()

    def head_guess(self) -> tuple[str | None, str | None]:
        """HEAD and its tree as this process's last commit left them, else as git says now.

        A first guess for :meth:`commit` (``base``), never trusted: HEAD moves by compare-and-swap.
        """
        return self._last_commit() or self._head()

    def bytes_at(self, path: str, rev: str | None) -> bytes | None:
        """The bytes of ``path`` (vault-relative) at ``rev``; None if it did not exist there (or no rev)."""
        if rev is None:
            return None
        try:
            return self.show(path, rev)
        except RevisionNotFoundError:
            return None

    def _head(self) -> tuple[str | None, str | None]:
        """The commit HEAD names and its tree, or ``(None, None)`` before the first commit.

        Asked of the long-running ``git cat-file --batch``, which resolves ``HEAD`` afresh on
        every request (as ``rev-parse`` would, without starting a process).
        """
        found = self._lookup("HEAD^{commit}")
        if found is None or not found[2].startswith(b"tree "):
            return None, None
        return found[0], found[2][5 : found[2].index(b"\n")].decode("ascii")

    # -- reading ---------------------------------------------------------------

    def log(
        self,
        path: str | None = None,
        *,
        follow: bool = True,
        limit: int | None = None,
        author: str | None = None,
        since: str | None = None,
        until: str | None = None,
        grep: str | None = None,
        after: str | None = None,
        first_parent: bool = False,
    ) -> list[Revision]:
        """The commits that touched ``path`` (followed across renames), or the whole vault.

        ``after``: only commits HEAD has that revision ``after`` does not (``after..HEAD``).
        ``first_parent``: follow only the first parent of merges (a sync's merge stands for what it brought).

        ``since`` and ``until`` are handed to git as they are (the Vault turns memfs's date syntax
        into times git reads one way only).
        """
        if self._head()[0] is None:
            return []
        args = [
            "-c",
            "core.quotepath=off",
            "log",
            "--format=%x1e%H%x1f%an%x1f%ae%x1f%aI%x1f%B%x1f",
            "--name-status",
            "--no-renames" if path is None else "-M",
        ]
        if path is not None and follow:
            args.append("--follow")
        if limit is not None:
            args.append(f"-n{int(limit)}")
        if author:
            args.append(f"--author={author}")
        if since:
            args.append(f"--since={since}")
        if until:
            args.append(f"--until={until}")
        if grep:
            args.append(f"--grep={grep}")
        if first_parent:
            args.append("--first-parent")
        if after is not None:
            args.append(f"{self.resolve(after)}..HEAD")
        target = self.prefix + path if path is not None else (self.prefix or ".")
        out = self._git(*args, "--", literal(target))
        boundary = self.shallow_boundary()
        return [rev for rec in out.split("\x1e") if rec.strip() for rev in [self._parse(rec, boundary)]]

    def _parse(self, record: str, boundary: frozenset[str] = frozenset()) -> Revision:
        sha, name, email, date, body, changes = record.split("\x1f", 5)
        lines = body.strip().splitlines()
        trailers = {}
        for line in reversed(lines):
            match = _TRAILER.match(line)
            if not match:
                break
            trailers[match.group(1)] = hide_url_credentials(match.group(2))
        status = path = old = None
        for line in changes.strip().splitlines():
            cols = line.split("\t")
            status, path = cols[0][:1], cols[-1]
            old = cols[1] if len(cols) == 3 else None
            break
        shallow = sha.strip() in boundary  # git shows every file of a boundary commit as added
        return Revision(
            sha=sha.strip(),
            author=Identity(name or "?", email or "?"),
            date=date,
            subject=hide_url_credentials(lines[0]) if lines else "",
            trailers=dict(reversed(trailers.items())),
            path=self._unprefix(path),
            status=None if shallow else status,
            old_path=self._unprefix(old),
            shallow=shallow,
        )

    def _unprefix(self, path: str | None, *, quoted: bool = True) -> str | None:
        """The vault path of a repository path git printed (``quoted``: as git quotes a name on a line)."""
        if path is None:
            return None
        if quoted and path.startswith('"') and path.endswith('"') and len(path) > 1:
            path = unquote(path)
        return path[len(self.prefix) :] if path.startswith(self.prefix) else path

    def files_changed(self, sha: str) -> list[tuple[str, str]]:
        """``(status, vault-relative path)`` for each file commit ``sha`` changed (renames split).

        Raises:
            ShallowHistoryError: ``sha`` is the boundary of a shallow clone, whose parent is not in
                the repository (git would list every file as added).
        """
        self._check_history_before(sha if len(sha) == 40 else self.resolve(sha))
        out = self._git(
            "diff-tree",
            "-z",
            "--no-commit-id",
            "--name-status",
            "-r",
            "--no-renames",
            "--root",
            sha,
            "--",
            self.prefix or ".",
        )
        fields = out.split("\0")  # status, path, status, path...: a name is never quoted nor split
        changes = []
        for status, path in zip(fields[0::2], fields[1::2], strict=False):
            rel = self._unprefix(path, quoted=False)
            if rel is not None and status:
                changes.append((status[:1], rel))
        return changes

    def resolve(self, rev: str) -> str:
        """The full commit id of ``rev`` (a sha, a prefix, ``HEAD~2``, a branch...)."""
        if not isinstance(rev, str) or not rev or rev.startswith("-") or "\x00" in rev:
            raise RevisionNotFoundError(f"{rev!r} is not a revision")
        out = self._git("rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}", check=False)
        if not out.strip():
            shallow = " (this is a shallow clone: older history is not in it)" if self.shallow_boundary() else ""
            raise RevisionNotFoundError(f"no revision {rev!r} in this vault's history{shallow}")
        return out.strip()

    def show(self, path: str, rev: str) -> bytes:
        """The bytes of ``path`` (vault-relative) at ``rev``."""
        sha = self.resolve(rev)
        proc = self._git.completed("cat-file", "blob", f"{sha}:{self.prefix}{path}")
        if proc.returncode:
            raise RevisionNotFoundError(f"{path} did not exist at {rev}")
        return proc.stdout

    def show_following_renames(self, path: str, rev: str) -> bytes:
        """The bytes of ``path`` at ``rev``, also when the file had another name at ``rev``."""
        with contextlib.suppress(RevisionNotFoundError):
            return self.show(path, rev)
        self.resolve(rev)  # a bad revision is reported as such
        for earlier in self.log(path):
            for candidate in (earlier.path, earlier.old_path):
                if candidate and candidate != path:
                    with contextlib.suppress(RevisionNotFoundError):
                        return self.show(candidate, rev)
        raise RevisionNotFoundError(f"{path} did not exist at {rev}")

    def diff(self, path: str | None, rev_a: str, rev_b: str | None = None) -> str:
        """A unified diff of ``path`` (or the vault) from ``rev_a`` to ``rev_b`` (or the files)."""
        revs = [self.resolve(rev_a)] + ([self.resolve(rev_b)] if rev_b else [])
        target = self.prefix + path if path else (self.prefix or ".")
        return self._git("-c", "core.quotepath=off", "diff", "--no-color", "-M", *revs, "--", literal(target))

    def status(self, paths: Sequence[str] | None = None) -> list[str]:
        """``git status --porcelain`` lines for the vault (or some of its paths)."""
        targets = [self.prefix + p for p in paths] if paths is not None else [self.prefix or "."]
        lines = []
        for chunk in _chunks(targets):
            out = self._git(
                "-c",
                "core.quotepath=off",
                "status",
                "--porcelain",
                "--no-renames",
                "--untracked-files=all",
                "--",
                *map(literal, chunk),
                env={"GIT_OPTIONAL_LOCKS": "0"},
            )
            lines += [line for line in out.splitlines() if line.strip()]
        return lines

    def changed(self, paths: Sequence[str]) -> list[str]:
        """Which of ``paths`` (vault-relative) differ from the last commit.

        A few paths are first compared with HEAD by memfs itself (:meth:`_as_at_head`): a write's
        check for a person's edit of its file then starts no git process, where ``git status``
        reads git's whole index (30 ms at 100,000 files). Only those it cannot vouch for go to
        ``git status``. Many paths are asked as their top folders in one ``git status``: each
        status reads git's whole index, so asking 500 paths at a time would read it once per 500
        files.
        """
        if len(paths) <= _FEW_PATHS:
            _, root = self._head()
            paths = [p for p in paths if not self._as_at_head(p, root)]
            if not paths:
                return []
        if len(paths) > _CHUNK:
            wanted = set(paths)
            folders = sorted({path.split("/", 1)[0] for path in paths})
            return sorted({p for line in self.status(folders) if (p := self._unprefix(line[3:]) or "") in wanted})
        return sorted({self._unprefix(line[3:]) or "" for line in self.status(paths)} - {""})

    def _as_at_head(self, rel: str, root: str | None) -> bool:
        """True when vault file ``rel`` is certainly as tree ``root`` (HEAD's) holds it; False: ask git.

        Certain: absent from both, or a regular, non-executable file whose bytes (with git's
        line-ending conversion, as a commit stores them) make the blob HEAD names there. Anything
        else (a link, a folder, an executable bit, a file too large to read here, another object
        format) is left to ``git status``, whose word is final.
        """
        entry = self._entry_at(root, self.prefix + rel)
        try:
            read = read_vault_file(self.vault_root, rel, limit=_FAST_COMPARE_BYTES)
        except (OSError, MemfsError):  # a link on the way, too large, unreadable
            return False
        if read is None:
            return entry is None and not os.path.lexists(self.vault_root / rel)
        data, mode = read
        if entry is None or entry[0] != b"100644" or mode & 0o111 or self._format not in ("", "sha1"):
            return False
        if self._converts_crlf():
            data = _to_lf(data)
        digest = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
        digest.update(data)
        return digest.hexdigest() == entry[1]

    # -- remotes (memfs.sync) ----------------------------------------------------------
    # A sync fetches, joins and pushes through these. Credentials are git's business: the
    # person's credential helpers and ssh agent answer, memfs never asks for or keeps any.

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

    def remotes(self) -> list[str]:
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
            said = git_refusal(str(exc), self.remote_url(remote) or remote, branch)
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

    def remote_url(self, remote: str) -> str:
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
        url = self.remote_url(remote)
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

    def is_ancestor(self, ancestor: str | None, descendant: str | None) -> bool:
        """True when ``ancestor`` is ``descendant`` or in its history (None, no commit, is in every one)."""
        if ancestor is None:
            return True
        if descendant is None:
            return False
        return self._git.completed("merge-base", "--is-ancestor", ancestor, descendant).returncode == 0

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor of two commits, or None when their histories never met."""
        return self._git("merge-base", a, b, check=False).strip() or None

    def tree_changes(self, old: str | None, new: str) -> dict[str, str]:
        """Vault path -> git's file mode at ``new`` ("000000" if deleted) for each file changed since ``old``."""
        start = old or self._git("hash-object", "-t", "tree", "--stdin", input=b"").strip()  # the empty tree
        out = self._git("diff-tree", "-r", "-z", "--raw", "--no-renames", start, new, "--", self.prefix or ".")
        fields = out.split("\0")
        changes: dict[str, str] = {}
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):  # a last empty field has no pair
            if not meta.startswith(":"):
                continue
            rel = self._unprefix(path, quoted=False)
            if rel is not None:
                changes[rel] = meta[1:].split(" ")[1]
        return changes

    def first_parent(self, sha: str) -> str | None:
        """The first parent of commit ``sha`` (for a merge: the side it was made on); None for a root commit."""
        out = self._git("rev-list", "--parents", "-n1", self.resolve(sha))
        parents = out.split()[1:]
        return parents[0] if parents else None

    def tracked(self, rev: str) -> list[str]:
        """Every file of the vault at ``rev`` (vault-relative paths)."""
        out = self._git("ls-tree", "-r", "-z", "--name-only", rev, "--", self.prefix or ".")
        found = (self._unprefix(path, quoted=False) for path in out.split("\0") if path)
        return [rel for rel in found if rel is not None]

    def files_at(self, rev: str, paths: Sequence[str]) -> dict[str, bytes | None]:
        """The bytes of ``paths`` (vault-relative) at ``rev``, through one ``git cat-file --batch``."""
        found: dict[str, bytes | None] = {}
        with self.object_reader() as reader:
            for rel in paths:
                spec = f"{rev}:{self.prefix}{rel}"
                if askable(spec):
                    found[rel] = reader.blob_at(spec)
                else:
                    oid = self._blob_id_at(rev, rel)
                    found[rel] = None if oid is None else reader.read(oid)[1]
        return found

    def _blob_id_at(self, rev: str, rel: str) -> str | None:
        """The id of the file (a blob: a regular file or a link) at vault path ``rel`` in ``rev``, found tree by tree.

        For names ``git cat-file --batch`` cannot be asked about (:func:`~memfs.gitstore.askable`).
        """
        found = self._lookup(f"{rev}^{{tree}}")
        entry = self._entry_at(found[0], self.prefix + rel) if found is not None and found[1] == "tree" else None
        return entry[1] if entry is not None and entry[0] not in (TREE_MODE, GITLINK_MODE) else None

    def sizes_at(self, rev: str, paths: Sequence[str]) -> dict[str, int | None]:
        """The size in bytes of each of ``paths`` at ``rev`` (None: no such file), reading no content.

        One ``git cat-file --batch-check``: what a remote sends is measured before any of it is read.
        """
        asked: list[tuple[str, str]] = []  # (vault path, what git is asked: REV:PATH, or a blob's id)
        for rel in paths:
            spec = f"{rev}:{self.prefix}{rel}"
            oid = None if askable(spec) else self._blob_id_at(rev, rel)
            if askable(spec) or oid is not None:
                asked.append((rel, spec if oid is None else oid))
        out = self._git(
            "cat-file",
            "--batch-check",
            input="".join(f"{spec}\n" for _, spec in asked),
            env={"GIT_NO_REPLACE_OBJECTS": "1"},
        )
        answers = iter(out.encode("utf-8", "surrogateescape").split(b"\n"))  # an answer a line: no spec has a newline
        found: dict[str, int | None] = dict.fromkeys(paths)
        for rel, _ in asked:
            header = parse_header(next(answers, b""))
            found[rel] = header[2] if header is not None and header[1] == "blob" else None
        return found

    def new_blobs(self, include: str, exclude: str | None, *, limit: int | None = None) -> Iterator[bytes]:
        """The bytes of every file version in ``include``'s history that ``exclude``'s does not hold.

        An object larger than ``limit`` raises FileTooLargeError without being read into memory.
        """
        # Object ids alone, then their types: ``--objects`` prints each name as it is, so a name
        # holding a newline and an id would read as another object.
        out = self._git("rev-list", "--objects", "--no-object-names", include, *(["--not", exclude] if exclude else []))
        oids = [oid for oid in out.split() if oid]
        kinds = self._git(
            "cat-file", "--batch-check", input="".join(f"{oid}\n" for oid in oids), env={"GIT_NO_REPLACE_OBJECTS": "1"}
        )
        with self.object_reader() as reader:
            for oid, answer in zip(oids, kinds.encode("ascii", "replace").split(b"\n"), strict=False):
                header = parse_header(answer)
                if header is not None and header[1] == "blob" and header[0] == oid:
                    kind, data = reader.read(oid, limit=limit)
                    if kind == "blob":
                        yield data

    # -- rewriting history (memfs.purge only) ------------------------------------------
    # A purge is the one place memfs rewrites history. These give it git's plumbing and the
    # object store; everything else uses the methods above.

    def plumbing(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None, check: bool = True
    ) -> str:
        """Run a git command in the repository and return its output (for :mod:`memfs.purge`)."""
        return self._git(*args, env=env, input=input, check=check)

    def object_format(self) -> str:
        """The repository's object format: ``sha1`` or ``sha256`` (read once, when the history was opened)."""
        return self._format

    def common_dir(self) -> Path:
        """The git folder shared by every worktree (``.git``, or the main one's for a linked worktree)."""
        return (self.top / self._git("rev-parse", "--git-common-dir").strip()).resolve()

    def object_reader(self) -> ObjectReader:
        """Raw objects through one ``git cat-file --batch``; use it in a ``with`` block."""
        return ObjectReader(self.top, self._env.overrides())

    def object_writer(self, *, dry: bool = False) -> ObjectWriter:
        """Something that stores raw objects in one pack (``dry``: only computes their ids)."""
        return ObjectWriter(self.top, self.object_format(), dry=dry, env=self._env.overrides())

    def forget_private_index(self, drop: re.Pattern[str] | None = None) -> None:
        """After history was rewritten: memfs's private index starts again from HEAD at the next commit.

        Repository paths git's own index lags on (noted when git's index was locked) that
        ``drop`` matches are forgotten rather than caught up at the next commit.
        """
        for leftover in _OLD_PRIVATE_INDEX:
            (self._state_dir / leftover).unlink(missing_ok=True)
        self._trees.clear()
        self._last = (None, None, 0)
        if self._objects is not None:
            self._objects.growing.forget()  # it holds files' old bytes, perhaps what was purged
        try:
            lagging = self._lagging.read_text("utf-8").splitlines()
        except FileNotFoundError:
            return
        kept = [p for p in lagging if p and not (drop and drop.search(p))]
        if len(kept) != len(lagging):
            _write_state(self._lagging, "".join(f"{p}\n" for p in kept))


def _is_ignored(top: Path, path: Path) -> bool:
    """True if git in the repository at ``top`` ignores ``path``."""
    return gitrun.run(["check-ignore", "-q", str(path)], cwd=top, overrides=fixed_overrides()).returncode == 0


def _identity_env(author: Identity, committer: Identity) -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": author.name,
        "GIT_AUTHOR_EMAIL": author.email,
        "GIT_COMMITTER_NAME": committer.name,
        "GIT_COMMITTER_EMAIL": committer.email,
    }


def _git_date(when: float) -> str:
    """A time as git writes it in a commit: seconds since the epoch and the local UTC offset (``+0100``)."""
    offset = time.localtime(when).tm_gmtoff // 60
    sign = "-" if offset < 0 else "+"
    return f"{int(when)} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"


def _chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for i in range(0, len(items), _CHUNK):
        yield items[i : i + _CHUNK]


@dataclass
class _Change:
    """What a commit changes at one name of a folder: the file of that name, then what is below it."""

    file: tuple[str | None] | None = None  # (blob id,) or (None,): the file is removed; None: untouched
    below: dict[str, _Change] = field(default_factory=dict)


def _to_lf(data: bytes) -> bytes:
    """Text with CRLF line endings as LF (what core.autocrlf stores); binary data (a NUL byte) as is."""
    return data if b"\0" in data or b"\r\n" not in data else data.replace(b"\r\n", b"\n")


def literal(pathspec: str) -> str:
    """A path as a pathspec git takes literally: ``[draft] x.md`` is that file, not a pattern matching ``d x.md``."""
    return pathspec if pathspec == "." else f":(literal){pathspec}"


_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def unquote(quoted: str) -> str:
    r"""A name git printed in C-style quotes (``"a\tb \"c\".md"``, octal ``\303\251``) as the name itself.

    git quotes a name on a line (``--name-status``, ``status --porcelain``) when it holds a
    control character, a quote or a backslash (and, unless ``core.quotepath=off``, any byte past
    ASCII); the bytes between are UTF-8 or, for a name that is not, kept as surrogate escapes.
    """
    body = quoted[1:-1].encode("utf-8", "surrogateescape")
    out = bytearray()
    at = 0
    while at < len(body):
        char = body[at]
        if char != 92 or at + 1 == len(body):  # not a backslash
            out.append(char)
            at += 1
            continue
        if len(body[at + 1 : at + 4]) == 3 and not body[at + 1 : at + 4].strip(b"01234567"):
            out.append(int(body[at + 1 : at + 4], 8) & 0xFF)
            at += 4
        else:
            out.append(_C_ESCAPES.get(chr(body[at + 1]), body[at + 1]))
            at += 2
    return out.decode("utf-8", "surrogateescape")
