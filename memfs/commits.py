"""A vault's commits as git objects written by memfs: blobs, the trees on the way to them, the commit.

A commit writes its blobs, the trees on the way to them and the commit object as git objects
itself (the trees it starts from are read through one long-running ``git cat-file --batch``),
moves HEAD by a compare-and-swap through one long-running ``git update-ref --stdin``, and puts
the same entries into git's own index (patched in place when it can be, :mod:`memfs.gitstore`):
no git process starts on the way and none reads or writes an index of every file, so a commit
costs what the changed files and their folders cost, not what the repository holds, and it never
sweeps up anything else a person staged in a larger repository that holds the vault. Identity is
always passed explicitly, so commits work on a machine with no ``user.name`` configured and never
change any git config. :class:`Commits` owns what this needs between commits: the long-running
processes, the trees read by id, the last commit made, git's index and the paths it lags on.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import gitrun
from ._fs import checkpoint, fsync_together, write_private
from .credentials import find_secrets, redact, report
from .errors import GitLockError, HistoryError, RepositoryStateError
from .gitenv import PRIVATE_REPOSITORY, GitEnvironment, fixed_overrides
from .gitstore import TREE_MODE, ZERO_SHA, GitIndex, LooseObjects, ObjectReader, RefUpdates, Tree
from .layout import one_line

log = logging.getLogger(__name__)

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


def _screened(
    message: str, trailers: dict[str, str] | None, author: Identity, committer: Identity | None
) -> tuple[str, dict[str, str] | None, Identity, Identity | None]:
    """A commit's words with every credential redacted: the last net under every write (each is logged).

    The callers refuse or redact before (a session id, an author, a person's message); this keeps
    a credential out of history whatever path a text took to a commit.
    """
    texts = [message, *(trailers or {}).values(), str(author), str(committer or "")]
    if not find_secrets("\0".join(texts)):  # one scan: no credential's pattern matches across a NUL
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


class Commits:
    """What committing in one repository keeps: git's processes, trees by id, the last commit, git's index."""

    def __init__(self, git: gitrun.Git, env: GitEnvironment, *, prefix: str, git_dir: Path, state_dir: Path) -> None:
        self._git = git
        self._env = env
        self.top = git.top
        self.prefix = prefix
        self.git_dir = git_dir
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
        self.object_format, folder = self._object_store()
        self._objects = LooseObjects(folder, private=self._private_repository()) if folder is not None else None
        self.git_index = GitIndex(git_dir / "index", enabled=folder is not None)
        self._oid_bytes = 32 if self.object_format == "sha256" else 20

    def close(self) -> None:
        """Stop memfs's own git processes."""
        with self._reader_lock:
            reader, self._reader = self._reader, None
        with self._refs_lock:
            refs, self._refs = self._refs, None
        if reader is not None and self._reader_pid == os.getpid():
            reader.close()
        if refs is not None and self._refs_pid == os.getpid():
            refs.close()

    def _object_store(self) -> tuple[str, Path | None]:
        """The object format, and where memfs may write loose objects itself (a SHA-1 repository's folder)."""
        out = self._git("rev-parse", "--show-object-format", "--git-common-dir", check=False).splitlines()
        object_format, common = (out[0].strip(), out[1].strip()) if len(out) == 2 else ("", "")
        if object_format not in ("", "sha1"):
            return object_format, None
        folder = (self.top / common).resolve() / "objects" if common else None
        return "sha1", folder if folder is not None and folder.is_dir() else None

    def _private_repository(self) -> bool:
        """True when git's own files are private here (``core.sharedRepository=0600``, set at init and clone).

        Read from the config as it is now (a vault opened ``shared=True`` changes it after this object
        is made, and a person may): the objects a commit writes take the mode the config says.
        """
        return (self._env.value("core.sharedRepository") or "").strip() == PRIVATE_REPOSITORY

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

    def converts_crlf(self) -> bool:
        """True when ``core.autocrlf`` is ``true`` or ``input``: git stores text files with LF endings."""
        return (self._env.value("core.autocrlf") or "false").lower() in ("true", "input", "yes", "on", "1")

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
        crlf = self.converts_crlf()
        if self._objects is not None:
            self._objects.private = self._private_repository()
        sha = ""
        try:
            blobs = {
                path: (None if data is None else self._write_object("blob", to_lf(data) if crlf else data, grows=path))
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

        gitrun.wait_for_locks(attempt, top=self.top, timeout=self._git.lock_timeout)

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
        found = self.lookup(oid)
        if found is None:
            raise HistoryError(f"git object {oid} is missing from the repository")
        if found[0] != oid:  # an answer to another question: never build a tree on it
            raise HistoryError(f"git answered {found[0]} when asked for {oid}")
        return found[1], found[2]

    def lookup(self, spec: str) -> tuple[str, str, bytes] | None:
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
            write_private(self._lagging, "".join(f"{p}\n" for p in sorted(set(paths) - {""})).encode("utf-8"))
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
            entry = self.entry_at(root, path)
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

    def entry_at(self, root: str | None, path: str) -> tuple[bytes, str] | None:
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
        for chunk in gitrun.chunks(list(paths)):
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

    def _head(self) -> tuple[str | None, str | None]:
        """The commit HEAD names and its tree, or ``(None, None)`` before the first commit.

        Asked of the long-running ``git cat-file --batch``, which resolves ``HEAD`` afresh on
        every request (as ``rev-parse`` would, without starting a process).
        """
        found = self.lookup("HEAD^{commit}")
        if found is None or not found[2].startswith(b"tree "):
            return None, None
        return found[0], found[2][5 : found[2].index(b"\n")].decode("ascii")

    def is_ancestor(self, ancestor: str | None, descendant: str | None) -> bool:
        """True when ``ancestor`` is ``descendant`` or in its history (None, no commit, is in every one)."""
        if ancestor is None:
            return True
        if descendant is None:
            return False
        return self._git.completed("merge-base", "--is-ancestor", ancestor, descendant).returncode == 0

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
            write_private(self._lagging, "".join(f"{p}\n" for p in kept).encode("utf-8"))


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


@dataclass
class _Change:
    """What a commit changes at one name of a folder: the file of that name, then what is below it."""

    file: tuple[str | None] | None = None  # (blob id,) or (None,): the file is removed; None: untouched
    below: dict[str, _Change] = field(default_factory=dict)


def to_lf(data: bytes) -> bytes:
    """Text with CRLF line endings as LF (what core.autocrlf stores); binary data (a NUL byte) as is."""
    return data if b"\0" in data or b"\r\n" not in data else data.replace(b"\r\n", b"\n")
