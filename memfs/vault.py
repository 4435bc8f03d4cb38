"""The vault's front door: open a folder, get its memories and sessions, search, review, undo.

:class:`Vault` is what users hold. It opens (or creates) the folder and its git repository,
hands out the objects that work on it (a namespace's :class:`~memfs.store.MemoryStore`, a
:class:`~memfs.sessions.MarkdownSession`, a :class:`~memfs.watch.Watcher`), searches, and walks
history (log, diff, undo). Every change to the files goes through the
:class:`~memfs.engine.WriteEngine` below it, which those objects share.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from . import lifecycle, proposals
from ._fs import PRIVATE, SHARED, make_folders
from .catalog import DEFAULT_FRESHNESS
from .documents import loads
from .engine import WriteEngine
from .errors import (
    AlreadyExistsError,
    ConflictError,
    DocumentError,
    InvalidArgumentError,
    MemfsError,
    MemoryNotFoundError,
    NotFoundError,
    ProposalError,
    VaultNotFoundError,
)
from .exchange import ImportReport, export_lines, import_source
from .history import DEFAULT_AGENT, GitHistory, Identity, Revision
from .layout import (
    ARCHIVE_DIR,
    MEMORIES_DIR,
    SESSIONS_DIR,
    is_attachment,
    label,
    name_in,
    split_memory_path,
)
from .paths import clean_memory_path, clean_namespace, clean_relpath
from .proposals import Proposal
from .purge import PurgeReport, purge
from .results import Progress
from .semantic import Embedder, check_embedder, default_embedder
from .sources import Skipped
from .store import Memory, awaits_review
from .sync import ConflictCopy, SyncResult, commit_removed_links, conflicts, remove_links, resolve, sync
from .vaultbase import VaultBase


@dataclass(frozen=True)
class Pruned:
    """A memory ``memfs prune`` archives (or would, in a dry run).

    Attributes:
        path: Its vault path now (``memories/users/alice/x.md``).
        archived: Where it goes (``archive/users/alice/x.md``).
        ended: When it stopped holding (ISO 8601 UTC: its ``expires`` or ``valid_until``).
        last_used: When injection last used it (from ``.memfs/used``), or None if never recorded.
    """

    path: str
    archived: str
    ended: str
    last_used: str | None = None


class Vault(VaultBase):
    """A memfs vault: Markdown memory files, their git history and their search index.

    Open one with :meth:`Vault.open`; it is a context manager that closes its index and git
    helpers on exit.
    """

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        author: str | Identity | None = None,
        person: str | Identity | None = None,
        create: bool = False,
        lock_timeout: float = 30.0,
        durable: bool = True,
        reconcile: bool = True,
        commit_edits: bool = True,
        freshness: float | None = DEFAULT_FRESHNESS,
        shared: bool | None = None,
        embedder: Embedder | str | None = "auto",
    ) -> Vault:
        """Open the vault at ``path`` (with ``create=True``: make one there if there is none).

        A vault inside a larger git repository (say ``project/.memory``) commits into that
        repository, touching only the vault's own paths.

        Args:
            path: The vault folder; ``~`` is expanded.
            author: Who writes through this object: ``"Name <email>"`` or an Identity.
                Defaults to ``memfs agent <agent@memfs.invalid>``.
            person: Who edits the files by hand, for commits of changes found on disk.
                Defaults to the git ``user.name``/``user.email`` configured (repository, then
                global) when each such commit is made.
            create: Create the vault (the folder, ``memories/``, a git repository) when there is
                none. Without it, a folder that is missing or holds no vault raises
                VaultNotFoundError, so a mistyped path never starts an empty memory.
            lock_timeout: Seconds to wait for the vault lock before raising LockTimeoutError.
            durable: fsync files and folders on every write (turn off only for throwaway vaults).
            reconcile: Bring the index up to date with files changed by hand.
            commit_edits: Also commit those changes, and complete the vault's layout (a vault
                made by an earlier memfs). False opens without changing the folder or its history
                (the index under ``.memfs/`` aside): what read-only commands do.
            freshness: Seconds within which a search finds files changed by hand (without a watcher);
                0 checks every file before every search, None never (see :attr:`freshness`).
            shared: Files and folders are private to their owner (0600, 0700) unless the vault is
                shared with a group: True shares it from now on (files 0660, folders 2770, git's
                ``core.sharedRepository=group``), False makes it private from now on, None keeps
                what the vault says. Never wider than the umask; ``.memfs/`` stays 0700; files
                that exist keep their modes (docs/security.md, "Permissions").
            embedder: The model memory search ranks by meaning with (:mod:`memfs.semantic`):
                ``"auto"`` takes the bundled e5 model when ``memfs-vault[semantic]`` is installed
                (and ``MEMFS_EMBEDDER`` is not ``none``), an :class:`~memfs.semantic.Embedder`
                that one, None none (search by words alone).

        Raises:
            VaultNotFoundError: No vault at ``path`` and ``create`` is False.
        """
        root = Path(path).expanduser()
        hint = f"create one with `memfs init {root}` (or Vault.open(..., create=True))"
        if not root.exists():
            if not create:
                raise VaultNotFoundError(f"{root} is not a memfs vault: the folder does not exist; {hint}")
            make_folders(root, SHARED if shared else PRIVATE)
        if not root.is_dir():
            raise VaultNotFoundError(f"{root} is a file, not a vault folder")
        if not create and not (root / MEMORIES_DIR).is_dir():
            raise VaultNotFoundError(f"{root} is not a memfs vault (no {MEMORIES_DIR}/ folder); {hint}")
        engine = WriteEngine(
            root.resolve(),
            author=_identity(author) or DEFAULT_AGENT,
            person=_identity(person),
            lock_timeout=lock_timeout,
            durable=durable,
            setup=create or commit_edits,
            freshness=freshness,
            shared=shared,
            embedder=default_embedder() if embedder == "auto" else _embedder(embedder),
        )
        if reconcile:
            try:
                engine.catalog.reconcile(commit=commit_edits)
            except BaseException:
                engine.close()
                raise
        return cls(engine)

    def __enter__(self) -> Vault:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Index what is pending, then release the index and git helper processes."""
        self.engine.close()

    # -- review -----------------------------------------------------------------------------

    def proposals(self, *, session: str | None = None, namespace: str | None = None) -> list[Proposal]:
        """The changes waiting for a person's review, oldest first (all, or a session's, or a namespace's)."""
        if namespace is not None:
            namespace = clean_namespace(namespace)
        return proposals.pending(self.engine, session=session, namespace=namespace)

    def broken_proposals(self) -> list[ProposalError]:
        """Proposal files that cannot be used as they are (hand-edited into something memfs refuses)."""
        return proposals.scan(self.engine)[1]

    def proposal_diff(self, proposal: Proposal) -> str:
        """A unified diff of what accepting ``proposal`` would change, against the files as they are."""
        return proposals.diff(self.engine, proposal)

    def proposal_origin(self, proposal: Proposal) -> str:
        """Where ``proposal`` really came from: ``proposed here``, ``arrived by sync``, or neither.

        Its ``proposed_by`` and ``session`` are what its file says; only a proposal memfs wrote in
        this vault is known to be theirs (:func:`memfs.proposals.origin`).
        """
        return proposals.origin(self.engine, proposal)

    def proposal_notes(self, proposal: Proposal) -> list[str]:
        """What a person should know before accepting ``proposal`` (stale, or held by a ``review`` marker)."""
        notes = []
        if proposals.stale(self.engine, proposal):
            notes.append("the memory changed since this was proposed: accepting it is refused; reject it")
        try:
            held = proposal.text is not None and awaits_review(loads(proposal.text).metadata)
        except DocumentError:
            notes.append("the proposed text has malformed front matter: accepting it is refused")
            held = False
        if held:
            notes.append(
                "it carries a review marker (an instruction): once accepted it is still not injected "
                "until you clear that marker"
            )
        return notes

    def accept(
        self,
        refs: Iterable[str] = (),
        *,
        every: bool = False,
        session: str | None = None,
        namespace: str | None = None,
        progress: Progress | None = None,
    ) -> list[Proposal]:
        """Make proposals facts, in one commit (``memfs undo`` reverts it), with the rest of their groups.

        Each memory is written as proposed (its text checked as any write's, credentials redacted)
        and the proposal files go, all in one commit by this vault's author (the CLI: the person).

        Args:
            refs: Proposal ids (or proposal file paths) from :meth:`proposals`.
            every: All proposals instead (within ``session`` and ``namespace`` when given).
            session: With ``every``: only what was proposed in this session.
            namespace: With ``every``: only proposals for memories in this namespace (and below).
            progress: Called with (proposals done, proposals chosen) after each one.

        Raises:
            ConflictError: A memory changed since it was proposed; nothing was accepted. Reject
                that proposal (or edit it and its base) and accept again.
            ProposalError: A named proposal file is malformed or names an unsafe change.
            MemoryNotFoundError: A ref names no proposal.
        """
        with self.engine.locked():
            chosen = self._chosen(refs, every, session, namespace)
            if not chosen:
                return []
            for proposal in chosen:  # every refusal before anything is committed
                self._check(proposal)
            # a person's hand edit of a proposal is committed as theirs before memfs removes the file
            self.engine.commit_edits_first([p.file for p in chosen])
            arriving = {i for p in chosen if (i := _proposed_id(p)) is not None}
            with self.engine.batch(f"review: accept {_count(chosen)}", trailers={"Memfs-Op": "accept"}):
                for done, proposal in enumerate(chosen, 1):
                    self._apply(proposal, arriving)
                    self.engine.delete(proposal.file, message=f"accepted {proposal.id}")
                    if progress is not None:
                        progress(done, len(chosen))
            return chosen

    def reject(
        self,
        refs: Iterable[str] = (),
        *,
        every: bool = False,
        session: str | None = None,
        namespace: str | None = None,
        progress: Progress | None = None,
    ) -> list[Proposal]:
        """Drop proposals (with the rest of their groups) in one commit; no memory changes.

        ``memfs undo`` brings them back. Arguments as for :meth:`accept`.

        Raises:
            ProposalError: A named proposal file is malformed (delete it by hand or with git).
            MemoryNotFoundError: A ref names no proposal.
        """
        with self.engine.locked():
            chosen = self._chosen(refs, every, session, namespace)
            if not chosen:
                return []
            self.engine.commit_edits_first([p.file for p in chosen])  # a person's edit of one stays in history
            with self.engine.batch(f"review: reject {_count(chosen)}", trailers={"Memfs-Op": "reject"}):
                for done, proposal in enumerate(chosen, 1):
                    self.engine.delete(proposal.file, message=f"rejected {proposal.id}")
                    if progress is not None:
                        progress(done, len(chosen))
            return chosen

    def _chosen(self, refs: Iterable[str], every: bool, session: str | None, namespace: str | None) -> list[Proposal]:
        if isinstance(refs, str):
            raise InvalidArgumentError("refs must be a list of proposal ids, not one string")
        if namespace is not None:
            namespace = clean_namespace(namespace)
        return proposals.select(self.engine, refs, every=every, session=session, namespace=namespace)

    def _check(self, proposal: Proposal) -> None:
        """ConflictError if the memory changed since ``proposal`` was made; ContentError if its text is unfit."""
        if proposals.stale(self.engine, proposal):
            raise ConflictError(
                f"{label(proposal.path)} changed since {proposal.id} was proposed; accepting it "
                f"would lose that change. Reject it (`memfs reject {proposal.id}`), or "
                "edit the memory by hand."
            )
        if proposal.action == "write":
            creating = proposals.current(self.engine, proposal.path) is None
            self.memories(proposal.namespace).stamp(proposal.text or "", creating=creating)

    def _apply(self, proposal: Proposal, arriving: set[str]) -> None:
        """Carry out one proposal through the store of its namespace (every rule of a write), as a fact.

        A proposed memory that carries its stamps (``id``, ``created``, ``updated``: it was
        stamped when proposed, or an import put it back as exported) is written as proposed, so
        accepting it does not move ``updated`` and an export imported and accepted reads back
        byte for byte. ``arriving``: the ids the accept writes, which validity keys may name.
        """
        self._check(proposal)
        store = self.memories(proposal.namespace, propose=False)
        name = name_in(proposal.path, proposal.namespace)
        trailers = {"Memfs-Proposal": proposal.id}
        if proposal.action == "write":
            current = proposals.current(self.engine, proposal.path)
            store.write_text(
                name,
                proposal.text or "",
                create=current is None,
                expect=current,
                trailers=trailers,
                as_written=_stamped(proposal.text),
                arriving=arriving,
            )
        elif proposal.action == "delete":
            store.delete_file(name, trailers=trailers)
        else:
            assert proposal.to is not None
            into = self.memories(split_memory_path(proposal.to)[0], propose=False)
            store.move_file(name, name_in(proposal.to, into.namespace), into=into, trailers=trailers)

    # -- lifecycle: supersede, expiry, usage ---------------------------------------------------

    def supersede(self, ref: str, body: str | None = None, **options: Any) -> Memory:
        """Replace the memory ``ref`` (an id, or ``users/alice/x.md``) with a newer one, in one commit.

        The store is the memory's namespace; options are those of :meth:`MemoryStore.supersede`
        (``by=`` an existing memory of the same namespace instead of ``body``, ``at=`` when the
        old fact stopped holding). Returns the new memory.
        """
        store, rel = self.resolve(ref)
        return store.supersede(rel, body, **options)

    def prune(self, *, apply: bool = False, now: datetime | None = None, namespace: str | None = None) -> list[Pruned]:
        """The memories that expired, moved to ``archive/`` in one commit when ``apply`` is True.

        A memory has expired when its ``expires`` or ``valid_until`` lies before ``now`` (see
        :mod:`memfs.lifecycle`); superseded ones stay where they are (they are the history of a
        current fact, and the chain stays searchable with ``history``). An archived memory keeps
        its bytes and its name under ``archive/<namespace>/``: out of the index, so never searched
        or injected, still in the folder and in git, and ``undo`` puts it back in one step.

        Without ``apply`` nothing changes (a dry run): the list says what would move.
        """
        prefix = MEMORIES_DIR + "/" + (clean_namespace(namespace) + "/" if namespace else "")
        usage = self.usage.read()
        with self.engine.locked():
            plan: list[Pruned] = []
            for rel in self.engine.catalog.files(prefix):
                try:
                    doc = self.engine.read(rel)
                except (MemfsError, OSError):
                    continue  # malformed or too large: `memfs doctor` reports it
                held = lifecycle.validity(doc.metadata)
                if held.state(now) != lifecycle.EXPIRED:
                    continue
                memory_id = doc.metadata.get("id")
                used = usage.get(str(memory_id)) if memory_id is not None else None
                plan.append(
                    Pruned(
                        rel,
                        self._archive_path(rel, {p.archived for p in plan}),
                        held.end or "",
                        used.last if used else None,
                    )
                )
            if apply and plan:
                what = label(plan[0].path) if len(plan) == 1 else f"{len(plan)} expired memories"
                message = f"prune: archive {what}"
                with self.engine.batch(message, trailers={"Memfs-Op": "prune"}):
                    for item in plan:
                        self.engine.commit_edits_first([item.path])
                        self.engine.move(item.path, item.archived, message=f"archive {label(item.path)} (expired)")
        return plan

    def _archive_path(self, rel: str, taken: set[str]) -> str:
        """Where ``rel`` goes in ``archive/``: the same name, numbered if an earlier prune left one there."""
        inner = rel[len(MEMORIES_DIR) + 1 :]
        stem, dot, suffix = inner.rpartition(".")
        for n in range(1, 10_000):
            candidate = f"{ARCHIVE_DIR}/{inner}" if n == 1 else f"{ARCHIVE_DIR}/{stem}-{n}{dot}{suffix}"
            if candidate not in taken and not os.path.lexists(self.root / candidate):
                return candidate
        raise AlreadyExistsError(f"too many archived memories named {inner}")

    # -- files and transactions ---------------------------------------------------------------

    @contextlib.contextmanager
    def batch(self, message: str, *, trailers: dict[str, str] | None = None) -> Iterator[Vault]:
        """Group many writes into one commit: ``with vault.batch("import notes"): ...``.

        If the block raises, every file it wrote is put back as it was and nothing is
        committed. Batches nest: the outermost one commits.
        """
        with self.engine.batch(message, trailers=trailers):
            yield self

    # -- history -----------------------------------------------------------------------------

    def export(
        self, namespace: str | None = None, *, progress: Progress | None = None
    ) -> tuple[list[str], list[Skipped]]:
        """Every memory (or ``namespace``'s) as JSON Lines that :meth:`import_from` reads back exactly.

        Returns the lines and the files that could not be read (see :func:`memfs.exchange.export_lines`);
        ``progress`` is called with (files done, files in all) after each file.
        """
        return export_lines(self, namespace, progress=progress)

    def import_from(self, source: str | os.PathLike[str], **options: Any) -> ImportReport:
        """Import memories from a folder or file in one commit (see :func:`memfs.exchange.import_source`)."""
        return import_source(self, source, **options)

    def restore(self, path: str, rev: str, *, trailers: dict[str, str] | None = None) -> str | None:
        """Put ``path`` back as it was at ``rev``, as a new commit (works for deleted files)."""
        return self.engine.restore(path, rev, trailers=trailers)

    def purge(
        self, path: str | None = None, *, text: str | None = None, rewrite_remotes: bool = False, dry_run: bool = False
    ) -> PurgeReport:
        """Remove a file's content, or a text, from every commit of the vault's history.

        The one deliberate exception to "memfs never rewrites history" (see docs/security.md):
        unlike ``delete``, nothing of it can be restored afterwards. Every ref is rewritten
        (branches, tags, the stash), reflogs expire, unreachable objects are pruned, the search
        index is rebuilt, and the hashes of what went are committed in ``.memfs-tombstones``.
        Nothing is pushed unless ``rewrite_remotes``; the report names the remotes that still
        hold the old history.

        Args:
            path: A memory (``users/alice/x.md``, its vault path, or its id) or a transcript's
                vault path (``sessions/...``): every version of it, across renames, goes.
            text: A text to replace by ``[PURGED]`` in every file version, file name and commit
                message where it appears (at least 4 characters).
            rewrite_remotes: Fetch every branch and tag of each remote, rewrite them too and
                force-push them (each with a lease on the id it had).
            dry_run: Change nothing; report the commits that would change.

        Raises:
            PurgeError: A merge, rebase... in progress, linked worktrees, or a shallow clone.
            NotFoundError: The path is in neither the history nor the folder.
        """
        rel = None
        if path is not None:
            if isinstance(path, str) and (path.startswith(SESSIONS_DIR + "/") or is_attachment(path)):
                rel = clean_relpath(path)
            else:
                rel = self.resolve(path)[1]
        return purge(self.engine, rel, text=text, rewrite_remotes=rewrite_remotes, dry_run=dry_run)

    # -- sync through a git remote ---------------------------------------------------

    @classmethod
    def clone(cls, url: str, path: str | os.PathLike[str], **options: Any) -> Vault:
        """Start a vault from a git remote: clone ``url`` into the new folder ``path`` and open it.

        The remote is the clone's ``origin``; credentials are git's business (its credential
        helpers and ssh agent). ``options`` are :meth:`open`'s.

        Raises:
            SyncError: The clone failed (no such remote, no access, the folder is not empty).
        """
        root = Path(path).expanduser()
        GitHistory.clone(url, root)
        removed = remove_links(root)  # before anything opens them: a remote's links name this machine's files
        vault = cls.open(root, create=True, **options)
        if removed:
            commit_removed_links(vault.engine, removed, "clone")
        return vault

    def sync(self, remote: str = "origin", branch: str | None = None) -> SyncResult:
        """Fetch ``branch`` of ``remote``, join it with this vault's history by meaning, push.

        Memories merge key by key and line by line, transcripts as a union of their entries; a
        true conflict keeps this vault's version and the other side's as a conflict copy
        (:meth:`conflicts`). Never force-pushes; goes round again (a few times) when the remote
        moved meanwhile. See :mod:`memfs.sync`.

        Raises:
            SyncError: No such remote, a detached HEAD, the remote unreachable or still moving.
            RepositoryStateError: A merge, rebase... is in progress in this repository.
        """
        return sync(self.engine, remote, branch)

    def conflicts(self) -> list[ConflictCopy]:
        """The conflict copies syncs kept (each names the file it is a version of)."""
        return conflicts(self.engine)

    def resolve_conflict(self, path: str, keep: str | bytes, *, copy: str | None = None) -> str | None:
        """Settle a sync conflict: keep ``"local"``, ``"remote"`` or given bytes; the copies go (one commit)."""
        rel = clean_relpath(path) if isinstance(path, str) and path.startswith(SESSIONS_DIR + "/") else None
        if rel is None:
            rel = (
                clean_relpath(path)
                if isinstance(path, str) and path.startswith(MEMORIES_DIR + "/")
                else clean_memory_path(path)
                if isinstance(path, str)
                else path
            )
        if not isinstance(rel, str):
            raise InvalidArgumentError(f"path must be a vault path, got {path!r}")
        if not rel.startswith((MEMORIES_DIR + "/", SESSIONS_DIR + "/")):
            rel = f"{MEMORIES_DIR}/{rel}"
        return resolve(self.engine, rel, keep, copy=copy)

    def undo(self, *, author: str | None = None, session: str | None = None) -> Revision:
        """Revert the newest change made by ``author`` (name or email) or in ``session``, as a new commit.

        Every file that change touched is put back as it was before it. If a file changed again
        since, nothing is undone: ConflictError says which, and ``restore`` is the tool for it.
        A file is compared with git's copy as git compares them (``core.autocrlf``, ``eol``
        attributes). The boundary commit of a shallow clone cannot be undone (ShallowHistoryError):
        what it changed is not in the repository.

        Returns:
            The revision that was undone.
        """
        if author is None and session is None:
            raise InvalidArgumentError("undo needs an author or a session to pick the change to revert")
        engine, history = self.engine, self.engine.history
        with engine.locked():
            undone: set[str] = set()
            target = None
            for rev in history.log(None, limit=500):
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
            for status, rel in history.files_changed(target.sha):
                at_target = None if status == "D" else history.show(rel, target.sha)
                try:  # bounded: a file grown past what memfs reads says so (FileTooLargeError)
                    current: bytes | None = engine.read_bytes(rel)
                except MemoryNotFoundError:
                    current = None
                before = None if status == "A" else history.show(rel, target.sha + "~1")
                if current == before and current != at_target:  # already as before (a sync never took it)
                    continue
                if current != at_target and not history.matches_worktree(rel, target.sha):  # autocrlf...
                    raise ConflictError(
                        f"{label(rel)} changed after {target.short}; undo would lose that "
                        f"change. Use `memfs restore {label(rel)} --to REV` instead."
                    )
                restore[rel] = before
            exact = not history.converts_line_endings()  # the bytes as they were, unless git converts them
            with engine.batch(
                f"undo: {target.subject} ({target.short})", trailers={"Memfs-Op": "undo", "Memfs-Undoes": target.sha}
            ):
                for rel, data in restore.items():
                    if data is None:
                        engine.delete(rel, message=f"undo: delete {label(rel)}")
                    else:
                        engine.write(rel, data.decode("utf-8"), message=f"undo: restore {label(rel)}", exact=exact)
            return target


def _count(chosen: list[Proposal]) -> str:
    return "1 proposal" if len(chosen) == 1 else f"{len(chosen)} proposals"


def _matches(rev: Revision, author: str | None, session: str | None) -> bool:
    if rev.trailers.get("Memfs-Op") in ("init", "undo", "purge"):  # a purge is not undone
        return False
    if author is not None and author.lower() not in f"{rev.author.name} <{rev.author.email}>".lower():
        return False
    return session is None or rev.trailers.get("Memfs-Session") == session


def _embedder(embedder: Any) -> Embedder | None:
    """``embedder`` checked (None stays None); a string other than ``"auto"`` is refused."""
    if embedder is None:
        return None
    if isinstance(embedder, str):
        raise InvalidArgumentError(f"embedder must be 'auto', None or an Embedder, got {embedder!r}")
    return check_embedder(embedder)


def _identity(value: str | Identity | None) -> Identity | None:
    if value is None or isinstance(value, Identity):
        return value
    if isinstance(value, str):
        return Identity.parse(value)
    raise InvalidArgumentError(f"an identity must be 'Name <email>' or an Identity, got {type(value).__name__}")


def _proposed_id(proposal: Proposal) -> str | None:
    """The ``id`` a write proposal gives its memory, if it names one."""
    if proposal.action != "write" or not proposal.text:
        return None
    try:
        found = loads(proposal.text).metadata.get("id")
    except DocumentError:
        return None
    return str(found) if found else None


def _stamped(text: str | None) -> bool:
    """Whether a proposed memory's front matter already has its ``id``, ``created`` and ``updated``."""
    if not text:
        return False
    try:
        meta = loads(text).metadata
    except DocumentError:
        return False
    return all(meta.get(key) for key in ("id", "created", "updated"))
