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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

from . import lifecycle, proposals
from ._fs import PRIVATE, SHARED, make_folders
from .catalog import DEFAULT_FRESHNESS
from .changes import Changes, collect
from .dates import day_range, iso_range, time_range
from .doctor import Finding, examine
from .documents import Document, loads
from .engine import WriteEngine
from .errors import (
    AlreadyExistsError,
    ConflictError,
    DocumentError,
    InvalidArgumentError,
    MemfsError,
    MemoryNotFoundError,
    NotFoundError,
    PathError,
    ProposalError,
    VaultNotFoundError,
)
from .exchange import ImportReport, Skipped, export_lines, import_source
from .history import DEFAULT_AGENT, GitHistory, Identity, Revision
from .index import SearchIndex
from .layout import (
    ARCHIVE_DIR,
    MEMORIES_DIR,
    SESSIONS_DIR,
    is_attachment,
    is_transcript,
    label,
    name_in,
    split_memory_path,
)
from .paths import clean_memory_path, clean_namespace, clean_relpath
from .proposals import Proposal
from .purge import PurgeReport, purge
from .results import Hit, MessageHit, Problem, Progress, SyncReport
from .semantic import Embedder, check_embedder, default_embedder
from .sessions import MarkdownSession, SessionInfo, keys_id, read_info
from .settings import Settings
from .settings import load as load_settings
from .store import Memory, MemoryStore, awaits_review, linked_hits
from .sync import ConflictCopy, SyncResult, commit_removed_links, conflicts, remove_links, resolve, sync
from .usage import UsageLog
from .watch import Watcher


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


class Vault:
    """A memfs vault: Markdown memory files, their git history and their search index.

    Open one with :meth:`Vault.open`; it is a context manager that closes its index and git
    helpers on exit.
    """

    def __init__(self, engine: WriteEngine) -> None:
        self.engine = engine

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

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

    # -- what the engine knows -------------------------------------------------------

    @property
    def root(self) -> Path:
        """The vault folder."""
        return self.engine.root

    @property
    def author(self) -> Identity:
        """Who writes through this vault object (an agent, unless told otherwise)."""
        return self.engine.author

    @property
    def person(self) -> Identity:
        """Whose name edits found on disk are committed under (now: git's config is read each time)."""
        return self.engine.person

    @property
    def durable(self) -> bool:
        """Whether writes are fsynced."""
        return self.engine.durable

    @property
    def freshness(self) -> float | None:
        """How stale a search may be about files changed by hand, in seconds (default 2).

        With no watcher running, a file created, edited, deleted or renamed by hand is found by
        every search that starts this long after the change (files not looked at for this long
        are stat'ed before a search). 0 checks every file before every search; None never
        checks (memfs's own writes are always seen). A hit is checked against its file whatever
        the setting. Set it on a long-lived vault: ``vault.freshness = 0.5``.
        """
        return self.engine.catalog.freshness

    @freshness.setter
    def freshness(self, value: float | None) -> None:
        self.engine.catalog.freshness = value

    @property
    def history(self) -> GitHistory:
        """The git repository behind the vault."""
        return self.engine.history

    @property
    def index(self) -> SearchIndex:
        """The search index (derived state under ``.memfs/``)."""
        return self.engine.catalog.index

    # -- factories -----------------------------------------------------------------------

    def memories(
        self, namespace: str, *, propose: bool | None = None, writer: str | None = None, session: str | None = None
    ) -> MemoryStore:
        """The memories of one namespace, such as ``users/alice``.

        ``propose=True`` makes every write through the store a proposal a person accepts or
        rejects (``memfs review``); ``False`` never; ``None`` follows the vault's review policy
        (``memfs.toml``) for ``writer`` (``agent``, ``extractor``, ``import``; None: a person).
        ``session``: the session writing, recorded on its proposals (see :class:`MemoryStore`).
        """
        return MemoryStore(self.engine, clean_namespace(namespace), propose=propose, writer=writer, session=session)

    # -- review -----------------------------------------------------------------------------

    def settings(self) -> Settings:
        """What the vault's ``memfs.toml`` says (defaults without one); SettingsError if it is malformed."""
        return load_settings(self.root)

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

    def resolve(self, ref: str) -> tuple[MemoryStore, str]:
        """The store and vault path of a memory named vault-wide: by id, or as ``users/alice/x.md``.

        A path is not checked for existence (it may name a deleted memory); an id must exist.

        Raises:
            PathError: The path is unsafe or not a Markdown file in a namespace folder.
            MemoryNotFoundError: No memory has that id.
        """
        if isinstance(ref, str) and (ref.endswith(".md") or "/" in ref):
            rel = MEMORIES_DIR + "/" + clean_memory_path(ref.removeprefix(MEMORIES_DIR + "/"))
            namespace, _ = split_memory_path(rel)
            if not namespace:
                raise PathError(f"{ref}: memories live in a namespace folder, like users/alice/x.md")
            return self.memories(namespace), rel
        found = self.engine.catalog.path_of(ref) if isinstance(ref, str) and ref else None
        if found is None:
            raise MemoryNotFoundError(f"no memory with id {ref!r}; `memfs ls` lists what exists")
        return self.memories(split_memory_path(found)[0]), found

    def namespaces(self) -> list[str]:
        """Every folder under ``memories/`` that holds memory files, sorted."""
        found = {split_memory_path(rel)[0] for rel in self.engine.catalog.files(MEMORIES_DIR + "/")}
        return sorted(found - {""})

    def session(
        self, session_id: str | None = None, *, keys: Mapping[str, Any] | None = None, **options: Any
    ) -> MarkdownSession:
        """A conversation stored as a transcript: by id, or by context keys (same keys, same session).

        Options go to :class:`memfs.MarkdownSession` (``folder``, ``session_settings``, ``commit``,
        ``manager``).
        """
        if session_id is None:
            if not keys:
                raise InvalidArgumentError("a session needs a session_id or keys")
            session_id = keys_id(keys)
        return MarkdownSession(self.engine, session_id, keys=keys, **options)

    def sessions(self, **keys: Any) -> list[SessionInfo]:
        """Every session in the vault whose context keys include ``keys``, by path."""
        found = []
        for rel in self.engine.catalog.files():
            if is_transcript(rel):
                info = read_info(self.root, rel)
                if info is not None and all(info.keys.get(k) == v for k, v in keys.items()):
                    found.append(info)
        return found

    def watch(self, **options: Any) -> Watcher:
        """Start a watcher that picks up edits made in an editor (see :class:`memfs.watch.Watcher`).

        Use it as a context manager: ``with vault.watch(): ...`` stops it on exit.
        """
        return Watcher(self.engine, **options).start()

    # -- searching -----------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        namespace: str | None = None,
        type: str | None = None,
        tags: Iterable[str] = (),
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        history: bool = False,
        semantic: bool | None = None,
        follow_links: int = 0,
    ) -> list[Hit]:
        """Search every current memory in the vault; see :meth:`MemoryStore.search` (dates: :mod:`memfs.dates`).

        ``history=True`` finds superseded, expired and future memories too (``Hit.state`` says which).
        ``semantic``: by words and meaning when the vault has a model (None), by words alone (False).
        ``follow_links=N`` brings up to N notes the hits link to (one hop), after them.
        """
        if namespace is not None:
            namespace = clean_namespace(namespace)
        since, until = iso_range(since, until)
        hits = self.engine.catalog.search(
            query,
            k=k,
            namespace=namespace,
            type=type,
            tags=list(tags),
            since=since,
            until=until,
            history=history,
            semantic=semantic,
        )
        return hits + linked_hits(self.engine, hits, follow_links, namespace=namespace)

    @property
    def semantic(self) -> str | None:
        """The embedding model memory search ranks by meaning with (its ``model_id``), or None: by words alone."""
        vectors = self.engine.catalog.vectors
        return vectors.embedder.model_id if vectors is not None else None

    def document_frequencies(self, text: str, *, namespaces: Iterable[str] = ()) -> tuple[int, dict[str, int]]:
        """How common the words of ``text`` are among the vault's memories.

        Returns how many memories were counted, and each of ``text``'s terms (what search looks
        for: stems, stop words left out, the first 32 distinct ones, in order) with how many of
        them hold it in their title or body. ``namespaces`` counts only the memories of those
        namespaces and the folders below them; none counts them all. Injection's relevance floor
        weighs a question's words by it (a word few memories hold says more than a common one).
        """
        if isinstance(namespaces, (str, bytes)) or not isinstance(namespaces, Iterable):
            raise InvalidArgumentError(f"namespaces must be a list of namespaces, got {namespaces!r:.100}")
        return self.engine.catalog.document_frequencies(text, namespaces=[clean_namespace(ns) for ns in namespaces])

    def search_messages(
        self,
        query: str,
        *,
        k: int = 10,
        session: str | None = None,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
    ) -> list[MessageHit]:
        """Search the messages of every session (or of one transcript, by vault path).

        ``since`` and ``until`` (the syntax of :mod:`memfs.dates`) keep messages whose session
        took place within those days (``MessageHit.day``); one whose date reads as no day is left out then.
        """
        first, last = day_range(since, until)
        return self.engine.catalog.search_messages(query, k=k, session=session, since=first, until=last)

    def path_of(self, memory_id: str) -> str | None:
        """The vault path of the memory with this id, or None."""
        return self.engine.catalog.path_of(memory_id)

    # -- lifecycle: supersede, expiry, usage ---------------------------------------------------

    def supersede(self, ref: str, body: str | None = None, **options: Any) -> Memory:
        """Replace the memory ``ref`` (an id, or ``users/alice/x.md``) with a newer one, in one commit.

        The store is the memory's namespace; options are those of :meth:`MemoryStore.supersede`
        (``by=`` an existing memory of the same namespace instead of ``body``, ``at=`` when the
        old fact stopped holding). Returns the new memory.
        """
        store, rel = self.resolve(ref)
        return store.supersede(rel, body, **options)

    @property
    def usage(self) -> UsageLog:
        """What was used when (injection records it): derived state under ``.memfs/``, never committed."""
        return UsageLog(self.engine.state_dir)

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

    def problems(self) -> list[Problem]:
        """Files the index skipped as malformed."""
        return self.engine.catalog.problems()

    # -- files and transactions ---------------------------------------------------------------

    @contextlib.contextmanager
    def batch(self, message: str, *, trailers: dict[str, str] | None = None) -> Iterator[Vault]:
        """Group many writes into one commit: ``with vault.batch("import notes"): ...``.

        If the block raises, every file it wrote is put back as it was and nothing is
        committed. Batches nest: the outermost one commits.
        """
        with self.engine.batch(message, trailers=trailers):
            yield self

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """Hold the vault lock (re-entrant) for a ``with`` block."""
        return self.engine.locked()

    def read(self, path: str) -> Document:
        """Parse the vault file at ``path`` (a vault path)."""
        return self.engine.read(path)

    def read_bytes(self, path: str) -> bytes:
        """The bytes of the vault file at ``path``."""
        return self.engine.read_bytes(path)

    def write(self, path: str, content: Document | str, *, message: str, **options: Any) -> str | None:
        """Write a vault file and commit it; see :meth:`WriteEngine.write`."""
        return self.engine.write(path, content, message=message, **options)

    def delete(self, path: str, *, message: str, trailers: dict[str, str] | None = None) -> str | None:
        """Delete a vault file and commit the deletion."""
        return self.engine.delete(path, message=message, trailers=trailers)

    def move(self, src: str, dst: str, *, message: str, trailers: dict[str, str] | None = None) -> str | None:
        """Rename a vault file (never over an existing one) and commit the rename."""
        return self.engine.move(src, dst, message=message, trailers=trailers)

    def reconcile(
        self, paths: Iterable[str] | None = None, *, commit: bool = True, progress: Progress | None = None
    ) -> SyncReport:
        """Bring the index (and git, unless ``commit=False``) up to date with files changed by hand."""
        return self.engine.catalog.reconcile(paths, commit=commit, progress=progress)

    def commit(self, message: str | None = None, *, allow_secrets: Iterable[str] = ()) -> str | None:
        """Commit every edit made outside memfs and not committed yet, as the person's.

        An edit that brings in a credential is left uncommitted (``engine.held_secrets`` says
        where; ``doctor`` lists it), unless its vault path is in ``allow_secrets``.

        Returns:
            The commit id, or None when there was nothing to commit.
        """
        if message is not None and (not isinstance(message, str) or not message.strip()):
            raise InvalidArgumentError(f"a commit message must be non-empty text, got {message!r}")
        if isinstance(allow_secrets, str):
            raise InvalidArgumentError("allow_secrets must be a list of vault paths, not one string")
        with self.engine.locked():
            self.engine.catalog.reconcile(commit=False)
            return self.engine.commit_outside_edits(None, message=message, allow_secrets=allow_secrets)

    def outside_edits(self) -> list[str]:
        """The vault paths of edits made outside memfs and not committed yet."""
        return self.engine.outside_edits()

    def reindex(self, *, full: bool = False, progress: Progress | None = None) -> SyncReport:
        """Update the index from the files (``full=True``: rebuild it from scratch), and embed every memory.

        With an embedding model, every memory without a vector is embedded (``SyncReport.embedded``
        says how many), outside the vault lock; ``full=True`` also drops the vectors of contents no
        longer in the vault.
        """
        report = self.engine.catalog.reindex(full=full, progress=progress)
        report.embedded, _ = self.engine.catalog.embed(budget=None, compact=full)
        return report

    def doctor(self) -> list[Finding]:
        """Check the index against the files, git's state and malformed files."""
        return examine(self.engine)

    # -- history -----------------------------------------------------------------------------

    def log(
        self,
        path: str | None = None,
        *,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        **options: Any,
    ) -> list[Revision]:
        """Commits touching ``path`` (a vault path, followed across renames) or the vault.

        ``since`` and ``until`` take the syntax of :mod:`memfs.dates` (``2026-11-01``, ``2 days
        ago``...); other options go to :meth:`GitHistory.log` (``author``, ``limit``, ``grep``).
        """
        start, stop = time_range(since, until)
        return self.engine.history.log(path, since=_git_time(start), until=_git_time(stop), **options)

    def changes(
        self,
        since: str | datetime,
        *,
        namespace: str | None = None,
        diff: bool = False,
        limit: int = 500,
        skip_session: str | None = None,
    ) -> Changes:
        """What changed since ``since`` (a date or time in memfs's syntax, or a revision), by who changed it.

        ``namespace`` keeps the memories of that namespace (and those under it); otherwise every
        memory and transcript counts. ``diff`` adds each file's diff. ``skip_session`` leaves out
        what that session wrote. Groups, and how a commit is placed in one: :mod:`memfs.changes`.
        """
        prefix = MEMORIES_DIR + "/" + clean_namespace(namespace) + "/" if namespace else ""
        return collect(self.engine.history, since, prefix=prefix, diff=diff, limit=limit, skip_session=skip_session)

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

    def show(self, path: str, rev: str) -> bytes:
        """The bytes of ``path`` at revision ``rev``."""
        return self.engine.history.show(path, rev)

    def diff(self, path: str | None, rev_a: str, rev_b: str | None = None) -> str:
        """A unified diff from ``rev_a`` to ``rev_b`` (or to the files on disk)."""
        return self.engine.history.diff(path, rev_a, rev_b)

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


def _git_time(moment: datetime | None) -> str | None:
    # a form git reads exactly one way, whatever its approxidate makes of other text
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S +0000") if moment else None


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
