"""The vault: a folder of Markdown files kept consistent with its search index and git.

Every write takes the vault lock (threads and processes), writes the file atomically,
records the path as pending for the index, and commits it. The index catches up with
pending paths before the next search in any process, so a write never pays for a Whoosh
commit and a search always sees every write that returned before it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from . import _fs
from .documents import Document, dumps, load_bytes
from .errors import (
    AlreadyExistsError,
    ConflictError,
    ContentError,
    DocumentError,
    GitLockError,
    MemoryNotFound,
    NotFoundError,
    RevisionNotFound,
    SearchIndexError,
)
from .history import DEFAULT_AGENT, GitHistory, Identity, Revision
from .index import MAX_INDEXED_BYTES, Hit, MessageHit, Problem, Progress, SearchIndex, SyncReport
from .paths import clean_memory_path, clean_namespace

if TYPE_CHECKING:
    from .sessions import MarkdownSession, SessionInfo
    from .store import MemoryStore
    from .watch import Watcher

log = logging.getLogger(__name__)

STATE_DIR = ".memfs"
MEMORIES_DIR = "memories"
MAX_CONTENT_BYTES = 1024 * 1024
_GITIGNORE_LINES = (".memfs/", _fs.TEMP_PREFIX + "*")


@dataclass(frozen=True)
class Finding:
    """One thing ``doctor`` found: its severity (``ok``, ``warning``, ``error``) and what."""

    severity: str
    check: str
    message: str


@dataclass
class _Batch:
    message: str
    paths: set[str] = field(default_factory=set)
    lines: list[str] = field(default_factory=list)
    trailers: dict[str, str] = field(default_factory=dict)
    originals: dict[str, bytes | None] = field(default_factory=dict)
    sha: str | None = None


class Vault:
    """A memfs vault: Markdown memory files, their git history and their search index.

    Open one with :meth:`Vault.open`; it is a context manager that closes its index and git
    helpers on exit.
    """

    def __init__(self, root: Path, *, author: Identity, person: Identity | None,
                 lock_timeout: float, durable: bool) -> None:  # fmt: skip
        self.root = root
        self.author = author
        self.durable = durable
        self.state_dir = root / STATE_DIR
        self.state_dir.mkdir(exist_ok=True)
        self._lock = _fs.VaultLock(self.state_dir / "lock", timeout=lock_timeout)
        self._pending_file = self.state_dir / "pending"
        self._batch: _Batch | None = None
        with self._lock.hold():
            self.history = GitHistory(root, self.state_dir, lock_timeout=lock_timeout)
            self.person = person or self._person_from_git()
            self._ensure_layout()
            self.index = SearchIndex(root, self.state_dir / "index", lock_timeout=lock_timeout)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        author: str | Identity | None = None,
        person: str | Identity | None = None,
        create: bool = True,
        lock_timeout: float = 30.0,
        durable: bool = True,
        reconcile: bool = True,
    ) -> Vault:
        """Open the vault at ``path``, creating the folder and its git repository if needed.

        A vault inside a larger git repository (say ``project/.memory``) commits into that
        repository, touching only the vault's own paths.

        Args:
            path: The vault folder; ``~`` is expanded.
            author: Who writes through this object: ``"Name <email>"`` or an Identity.
                Defaults to ``memfs agent <agent@memfs.invalid>``.
            person: Who edits the files by hand, for commits of changes found on disk.
                Defaults to the repository's git ``user.name``/``user.email``.
            create: Create the folder when missing; otherwise a missing folder is an error.
            lock_timeout: Seconds to wait for the vault lock before raising LockTimeout.
            durable: fsync files and folders on every write (turn off only for throwaway vaults).
            reconcile: Bring the index (and git) up to date with files changed by hand.
        """
        root = Path(path).expanduser()
        if not root.exists():
            if not create:
                raise NotFoundError(f"no vault at {root}; create it with `memfs init {root}`")
            root.mkdir(parents=True)
        if not root.is_dir():
            raise NotFoundError(f"{root} is a file, not a vault folder")
        vault = cls(
            root.resolve(), author=_identity(author) or DEFAULT_AGENT, person=_identity(person),
            lock_timeout=lock_timeout, durable=durable,
        )  # fmt: skip
        if reconcile:
            try:
                vault.reconcile()
            except BaseException:
                vault.close()
                raise
        return vault

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        self.close()

    def close(self) -> None:
        """Index what is pending, then release the index and git helper processes."""
        try:
            self.flush_index()
        except Exception as exc:  # best effort: the next open catches up from file stats
            log.warning("could not update the search index on close: %s", exc)
        self.index.close()
        self.history.close()

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

    def watch(self, **options: Any) -> Watcher:
        """Start a watcher that picks up edits made in an editor (see :class:`memfs.watch.Watcher`).

        Use it as a context manager: ``with vault.watch(): ...`` stops it on exit.
        """
        from .watch import Watcher

        return Watcher(self, **options).start()

    def session(self, session_id: str | None = None, *, keys: Mapping[str, Any] | None = None,
                **options: Any) -> MarkdownSession:  # fmt: skip
        """A conversation stored as a transcript: by id, or by context keys (same keys, same session).

        Options go to :class:`memfs.MarkdownSession` (``folder``, ``session_settings``, ``commit``).
        """
        from .sessions import MarkdownSession, keys_id

        if session_id is None:
            if not keys:
                raise ValueError("a session needs a session_id or keys")
            session_id = keys_id(keys)
        return MarkdownSession(self, session_id, keys=keys, **options)

    def sessions(self, **keys: Any) -> list[SessionInfo]:
        """Every session in the vault whose context keys include ``keys``, by path."""
        from .sessions import SESSIONS_DIR, read_info

        found = []
        for rel, _ in self.index.scan():
            if rel.startswith(SESSIONS_DIR + "/"):
                info = read_info(self.root, rel)
                if info is not None and all(info.keys.get(k) == v for k, v in keys.items()):
                    found.append(info)
        return sorted(found, key=lambda i: i.path)

    def search_messages(self, query: str, *, k: int = 10, session: str | None = None) -> list[MessageHit]:
        """Search the messages of every session (or of one transcript path)."""
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise ValueError(f"k must be a non-negative integer, got {k!r}")
        self.flush_index()
        return self.index.search_messages(query, k=k, session=session)

    def memories(self, namespace: str) -> MemoryStore:
        """The memories of one namespace, such as ``users/alice``."""
        from .store import MemoryStore

        return MemoryStore(self, clean_namespace(namespace))

    # -- setup -----------------------------------------------------------------

    def _ensure_layout(self) -> None:
        (self.root / MEMORIES_DIR).mkdir(exist_ok=True)
        ignore = self.root / ".gitignore"
        text = ignore.read_text("utf-8") if ignore.exists() else ""
        missing = [line for line in _GITIGNORE_LINES if line not in text.splitlines()]
        if missing:
            sep = "" if not text or text.endswith("\n") else "\n"
            text += sep + "".join(f"{line}\n" for line in missing)
            _fs.atomic_write(ignore, text.encode(), durable=self.durable)
            self.history.commit([".gitignore"], "vault: init", author=self.author,
                                trailers={"Memfs-Op": "init"})  # fmt: skip

    def _person_from_git(self) -> Identity:
        try:
            reader = self.history.repo.config_reader()
            name = reader.get_value("user", "name", "")
            email = reader.get_value("user", "email", "")
        except Exception:  # no config, unreadable config: fall back, never fail
            name = email = ""
        if name and email:
            return Identity(str(name), str(email))
        return Identity("person", "person@memfs.invalid")

    # -- locking and batches ---------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the vault lock (re-entrant) for a ``with`` block."""
        with self._lock.hold():
            yield

    @contextlib.contextmanager
    def batch(self, message: str, *, trailers: dict[str, str] | None = None) -> Iterator[Vault]:
        """Group many writes into one commit.

        If the block raises, every file it wrote is put back as it was and nothing is
        committed. Batches nest: the outermost one commits.
        """
        with self._change(message, trailers, summary=True):
            yield self

    @contextlib.contextmanager
    def _change(self, message: str, trailers: dict[str, str] | None, *,
                summary: bool = False) -> Iterator[_Batch]:  # fmt: skip
        """One commit's worth of changes: committed on success, rolled back on any error."""
        with self._lock.hold():
            if self._batch is not None:  # part of an enclosing batch
                yield self._batch
                if not summary:
                    self._batch.lines.append(message)
                for key, value in (trailers or {}).items():
                    self._batch.trailers.setdefault(key, value)
                return
            batch = self._batch = _Batch(message, trailers=dict(trailers or {}))
            try:
                yield batch
                body = batch.message
                if summary and batch.lines:
                    body += "\n\n" + "\n".join(f"- {line}" for line in batch.lines)
                batch.sha = self._commit_now(batch.paths, body, batch.trailers)
            except BaseException:
                self._roll_back(batch)
                raise
            finally:
                self._batch = None

    def _roll_back(self, batch: _Batch) -> None:
        for rel, original in batch.originals.items():
            target = self.root / rel
            if original is None:
                target.unlink(missing_ok=True)
            else:
                _fs.atomic_write(target, original, durable=self.durable)
        self._mark_pending(batch.originals)

    # -- writing ---------------------------------------------------------------

    def read_bytes(self, rel: str) -> bytes:
        """The bytes of a vault file (``rel`` relative to the vault); MemoryNotFound if absent."""
        target = self._existing(rel)
        return target.read_bytes()

    def read(self, rel: str) -> Document:
        """Parse a vault file."""
        return load_bytes(self.read_bytes(rel), path=rel)

    def write(
        self,
        rel: str,
        content: Document | str,
        *,
        message: str,
        trailers: dict[str, str] | None = None,
        create: bool | None = None,
        expect: bytes | None = None,
    ) -> str | None:
        """Write a file atomically, mark it for the index and commit it.

        Args:
            rel: The path relative to the vault (already validated by the caller).
            content: A Document or the full text of the file.
            message: The commit message (or the batch line).
            trailers: Extra commit trailers.
            create: True: the file must not exist yet. False: it must exist. None: either.
            expect: The bytes the caller last read; if the file now differs, ConflictError.

        Returns:
            The commit id, or None inside a batch or when nothing changed.
        """
        text = dumps(content) if isinstance(content, Document) else content
        data = _check_content(text)
        with self._change(message, trailers) as change:
            target = self.root / rel
            original = target.read_bytes() if target.is_file() else None
            if create is True and (original is not None or target.exists()):
                raise AlreadyExistsError(f"{rel} already exists")
            if create is False and original is None:
                raise MemoryNotFound(f"no file at {rel}")
            if expect is not None and original != expect:
                raise ConflictError(f"{rel} changed since it was read; read it again and retry")
            self._remember(change, rel, original)
            _fs.atomic_write(target, data, durable=self.durable)
            self._mark_pending([rel])
        return change.sha

    def delete(self, rel: str, *, message: str, trailers: dict[str, str] | None = None) -> str | None:
        """Delete a vault file and commit the deletion."""
        with self._change(message, trailers) as change:
            target = self._existing(rel)
            self._remember(change, rel, target.read_bytes())
            target.unlink()
            if self.durable:
                _fs.fsync_dir(target.parent)
            self._prune_empty_dirs(target.parent)
            self._mark_pending([rel])
        return change.sha

    def move(self, src: str, dst: str, *, message: str, trailers: dict[str, str] | None = None) -> str | None:
        """Rename a vault file (never over an existing one) and commit the rename."""
        with self._change(message, trailers) as change:
            source = self._existing(src)
            target = self.root / dst
            if target.exists() or target.is_symlink():
                raise AlreadyExistsError(f"cannot move {src} to {dst}: {dst} already exists")
            target.parent.mkdir(parents=True, exist_ok=True)
            self._remember(change, src, source.read_bytes())
            self._remember(change, dst, None)
            os.link(source, target)  # link + unlink: never overwrites, unlike rename
            source.unlink()
            if self.durable:
                _fs.fsync_dir(target.parent)
                _fs.fsync_dir(source.parent)
            self._prune_empty_dirs(source.parent)
            self._mark_pending([src, dst])
        return change.sha

    def _existing(self, rel: str) -> Path:
        target = self.root / rel
        if target.is_symlink() or not target.is_file():
            raise MemoryNotFound(f"no file at {rel}")
        return target

    @staticmethod
    def _remember(change: _Batch, rel: str, original: bytes | None) -> None:
        change.paths.add(rel)
        change.originals.setdefault(rel, original)

    def _prune_empty_dirs(self, folder: Path) -> None:
        stop = self.root / MEMORIES_DIR
        while folder != stop and stop in folder.parents:
            try:
                folder.rmdir()
            except OSError:
                return
            folder = folder.parent

    def _commit_now(self, paths: Iterable[str], message: str, trailers: dict[str, str] | None,
                    *, author: Identity | None = None) -> str | None:  # fmt: skip
        return self.history.commit(paths, message, author=author or self.author,
                                   committer=self.author, trailers=trailers)  # fmt: skip

    # -- the index ---------------------------------------------------------------

    def _mark_pending(self, paths: Iterable[str]) -> None:
        lines = "".join(f"{p}\n" for p in paths)
        fd = os.open(self._pending_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, lines.encode("utf-8"))
        finally:
            os.close(fd)

    def flush_index(self) -> SyncReport:
        """Index every file written since the last search (by any process)."""
        try:
            if os.stat(self._pending_file).st_size == 0:
                return SyncReport()
        except FileNotFoundError:
            return SyncReport()
        with self._lock.hold():
            try:
                pending = self._pending_file.read_text("utf-8").splitlines()
            except FileNotFoundError:
                return SyncReport()
            report = self._sync_index(sorted(set(filter(None, pending))))
            with open(self._pending_file, "r+b") as handle:
                handle.truncate(0)
            return report

    def _sync_index(self, paths: Iterable[str] | None = None, progress: Progress | None = None) -> SyncReport:
        try:
            return self.index.sync(paths, progress=progress)
        except Exception as exc:  # the index is derived: rebuild it rather than fail a write
            if isinstance(exc, (KeyboardInterrupt, GitLockError)):
                raise
            log.warning("search index failed to update (%s); rebuilding it from the files", exc)
            self.index.clear()
            return self.index.sync(None, progress=progress)

    def reconcile(self, paths: Iterable[str] | None = None, *, commit: bool = True,
                  progress: Progress | None = None) -> SyncReport:  # fmt: skip
        """Bring the index up to date with the files (all, or ``paths``), reading only changed ones.

        Files that changed on disk outside memfs (a person's editor, ``cp``, a crash between
        write and commit) are committed with the person's identity unless ``commit`` is False.
        """
        with self._lock.hold():
            if paths is None:
                _fs.sweep_temp_files(self.root / MEMORIES_DIR)
            report = self._sync_index(None if paths is None else sorted(set(paths)), progress)
            if paths is None:
                with contextlib.suppress(FileNotFoundError):
                    self._pending_file.write_bytes(b"")
            if commit:
                self.commit_outside_edits(report.added + report.updated + report.removed)
            return report

    def commit_outside_edits(self, paths: Iterable[str]) -> str | None:
        """Commit those of ``paths`` that differ from the last commit, as the person's edit.

        Files over the indexing size limit are left uncommitted (a stray 50 MB paste should not
        enter the history); ``doctor`` reports them.
        """
        with self._lock.hold():
            candidates = sorted(set(paths))
            changed = self.history.changed(candidates) if candidates else []
            too_big = [p for p in changed if _size(self.root / p) > MAX_INDEXED_BYTES]
            for rel in too_big:
                log.warning("not committing %s: larger than %d bytes", rel, MAX_INDEXED_BYTES)
            changed = [p for p in changed if p not in too_big]
            if not changed:
                return None
            if len(changed) == 1:
                message = f"edit: {changed[0]} (changed outside memfs)"
            else:
                message = f"edit: {len(changed)} files changed outside memfs"
            return self._commit_now(changed, message, {"Memfs-Op": "reconcile"}, author=self.person)

    def reindex(self, *, full: bool = False, progress: Progress | None = None) -> SyncReport:
        """Update the index from the files; ``full=True`` rebuilds it from scratch."""
        with self._lock.hold():
            if full:
                self.index.clear()
            return self.reconcile(progress=progress)

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        namespace: str | None = None,
        type: str | None = None,
        tags: Iterable[str] = (),
        since: str | None = None,
        until: str | None = None,
    ) -> list[Hit]:
        """Search every memory in the vault; see :meth:`MemoryStore.search`."""
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise ValueError(f"k must be a non-negative integer, got {k!r}")
        if namespace is not None:
            namespace = clean_namespace(namespace)
        self.flush_index()
        options: dict[str, Any] = {"k": k, "namespace": namespace, "type": type, "tags": list(tags),
                                   "since": since, "until": until}  # fmt: skip
        try:
            return self.index.search(query, **options)
        except SearchIndexError as exc:
            log.warning("%s; rebuilding the search index from the files", exc)
            self.reindex(full=True)
            return self.index.search(query, **options)

    def path_of(self, memory_id: str) -> str | None:
        """The vault-relative path of the memory with this id, or None."""
        self.flush_index()
        for attempt in range(2):
            rel = self.index.path_of(memory_id)
            if rel is not None:
                try:
                    if str(self.read(rel).metadata.get("id")) == memory_id:
                        return rel
                except (MemoryNotFound, DocumentError):
                    pass
            if attempt == 0:
                self.reconcile()  # the file changed by hand since it was indexed
        return None

    def problems(self) -> list[Problem]:
        """Files the index skipped as malformed."""
        self.flush_index()
        return self.index.problems()

    # -- history -----------------------------------------------------------------

    def log(self, path: str | None = None, **kwargs: Any) -> list[Revision]:
        """Commits touching ``path`` (vault-relative, followed across renames) or the vault."""
        return self.history.log(path, **kwargs)

    def show(self, path: str, rev: str) -> bytes:
        """The bytes of ``path`` at revision ``rev``."""
        return self.history.show(path, rev)

    def diff(self, path: str | None, rev_a: str, rev_b: str | None = None) -> str:
        """A unified diff from ``rev_a`` to ``rev_b`` (or to the files on disk)."""
        return self.history.diff(path, rev_a, rev_b)

    def restore(self, path: str, rev: str, *, trailers: dict[str, str] | None = None) -> str | None:
        """Put ``path`` back as it was at ``rev``, as a new commit (works for deleted files)."""
        data = self._content_at(path, rev)
        short = self.history.resolve(rev)[:10]
        text = data.decode("utf-8")
        return self.write(path, text, message=f"restore: {label(path)} to {short}",
                          trailers={"Memfs-Op": "restore", **(trailers or {})})  # fmt: skip

    def undo(self, *, author: str | None = None, session: str | None = None) -> Revision:
        """Revert the newest change made by ``author`` (name or email) or in ``session``, as a new commit.

        Every file that change touched is put back as it was before it. If a file changed again
        since, nothing is undone: ConflictError says which, and ``restore`` is the tool for it.

        Returns:
            The revision that was undone.
        """
        if author is None and session is None:
            raise ValueError("undo needs an author or a session to pick the change to revert")
        with self._lock.hold():
            undone: set[str] = set()
            target = None
            for rev in self.history.log(None, limit=500):
                undone.add(rev.trailers.get("Memfs-Undoes", ""))
                if rev.sha not in undone and _matches(rev, author, session):
                    target = rev
                    break
            if target is None:
                who = " and ".join(
                    x for x in (author and f"author {author!r}", session and f"session {session!r}") if x
                )
                raise NotFoundError(f"no change by {who} to undo")
            restore: dict[str, bytes | None] = {}
            for status, rel in self.history.files_changed(target.sha):
                at_target = None if status == "D" else self.history.show(rel, target.sha)
                current = (self.root / rel).read_bytes() if (self.root / rel).is_file() else None
                if current != at_target:
                    raise ConflictError(f"{label(rel)} changed after {target.short}; undo would lose that "
                                        f"change. Use `memfs restore {label(rel)} --to REV` instead.")  # fmt: skip
                restore[rel] = None if status == "A" else self.history.show(rel, target.sha + "~1")
            with self.batch(f"undo: {target.subject} ({target.short})",
                            trailers={"Memfs-Op": "undo", "Memfs-Undoes": target.sha}):  # fmt: skip
                for rel, data in restore.items():
                    if data is None:
                        self.delete(rel, message=f"undo: delete {label(rel)}")
                    else:
                        self.write(rel, data.decode("utf-8"), message=f"undo: restore {label(rel)}")
            return target

    def _content_at(self, path: str, rev: str) -> bytes:
        with contextlib.suppress(RevisionNotFound):
            return self.history.show(path, rev)
        self.history.resolve(rev)  # a bad revision is reported as such
        for earlier in self.history.log(path):
            for candidate in (earlier.path, earlier.old_path):
                if candidate and candidate != path:
                    with contextlib.suppress(RevisionNotFound):
                        return self.history.show(candidate, rev)
        raise RevisionNotFound(f"{path} did not exist at {rev}")

    # -- health ------------------------------------------------------------------

    def doctor(self) -> list[Finding]:
        """Check the index against the files, git's state and malformed files."""
        findings: list[Finding] = []
        with self._lock.hold():
            self.flush_index()
            on_disk = dict(self.index.scan())
            indexed = self.index.entries()
            missing = sorted(set(on_disk) - set(indexed))
            ghosts = sorted(set(indexed) - set(on_disk))
            stale = sorted(p for p in set(on_disk) & set(indexed)
                           if self.index._known({p}).get(p, (None, None))[:2] != on_disk[p])  # fmt: skip
            if missing or ghosts or stale:
                findings.append(Finding("warning", "index",
                    f"index out of step: {len(missing)} unindexed, {len(ghosts)} removed, {len(stale)} "
                    "changed files; run `memfs reindex`"))  # fmt: skip
            else:
                findings.append(Finding("ok", "index", f"{len(indexed)} files indexed, all current"))
            for problem in self.index.problems():
                findings.append(Finding("error", "file", f"{problem.path}: {problem.reason}"))
            lock = Path(self.history.repo.git_dir) / "index.lock"
            if lock.exists():
                age = time.time() - lock.stat().st_mtime
                findings.append(Finding("warning", "git",
                    f"{lock} exists ({age:.0f} s old); if no git command is running, remove it"))  # fmt: skip
            dirty = self.history.status()
            if dirty:
                findings.append(Finding("warning", "git",
                    f"{len(dirty)} uncommitted changes (first: {dirty[0].strip()}); run `memfs reindex` "
                    "to commit edits made outside memfs"))  # fmt: skip
            else:
                findings.append(Finding("ok", "git", "working tree matches the last commit"))
            leftovers = list((self.root / MEMORIES_DIR).rglob(_fs.TEMP_PREFIX + "*"))
            if leftovers:
                findings.append(Finding("warning", "files",
                    f"{len(leftovers)} temporary files left by an interrupted write"))  # fmt: skip
        return findings

    # -- paths ---------------------------------------------------------------------

    @staticmethod
    def memory_path(namespace: str, path: str) -> str:
        """The vault-relative path of a memory given its namespace-relative path."""
        return f"{MEMORIES_DIR}/{namespace}/{clean_memory_path(path)}"


def label(rel: str) -> str:
    """A vault path as commit messages show it: ``users/alice/x.md`` for a memory."""
    return rel.removeprefix(MEMORIES_DIR + "/")


def _matches(rev: Revision, author: str | None, session: str | None) -> bool:
    if rev.trailers.get("Memfs-Op") in ("init", "undo"):
        return False
    if author is not None and author.lower() not in f"{rev.author.name} <{rev.author.email}>".lower():
        return False
    return session is None or rev.trailers.get("Memfs-Session") == session


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _identity(value: str | Identity | None) -> Identity | None:
    if value is None or isinstance(value, Identity):
        return value
    if isinstance(value, str):
        return Identity.parse(value)
    raise TypeError(f"an identity must be 'Name <email>' or an Identity, got {type(value).__name__}")


def _check_content(text: str) -> bytes:
    if not isinstance(text, str):
        raise ContentError(f"content must be text (str), got {type(text).__name__}")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ContentError("content is not valid Unicode text (it contains a lone surrogate)") from exc
    if len(data) > MAX_CONTENT_BYTES:
        raise ContentError(f"content is {len(data)} bytes; the limit is {MAX_CONTENT_BYTES} bytes")
    if "\x00" in text:
        raise ContentError("content contains NUL bytes; memories are Markdown text, not binary data")
    try:
        load_bytes(data)
    except DocumentError as exc:
        raise ContentError(f"content would be a malformed memory file: {exc.reason}") from exc
    return data

