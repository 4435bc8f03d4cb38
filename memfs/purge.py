"""Purge: remove a file's content or a text from every commit of a vault's history.

memfs never rewrites history, with this one deliberate exception. ``delete`` keeps every version
in git (that is what makes ``undo`` and ``restore`` work); a purge is for what must not be kept at
all: a credential pasted into a chat, a memory someone asked to have forgotten. Under the vault
lock it:

1. **Rewrites** every commit reachable from any ref of the repository (branches, tags, the stash and
   its entries, a detached HEAD, remote-tracking refs), parents first, through git's object store:
   each commit is read with ``git cat-file --batch`` and written again with the same authors, dates
   and messages. For a path, every version of the file (followed across renames, both ways) is
   removed from the trees, and so is any other file that held exactly the same bytes. For a text,
   every occurrence (also its JSON-escaped and slug forms) is replaced by ``[PURGED]`` in files,
   file names, commit messages and trailers; transcript entries keep exact byte lengths and memory
   front matter stays valid YAML. Commits left empty are dropped; commit ids named in messages
   (``Memfs-Undoes``) are mapped to the new ones. In a vault inside a larger repository only the
   vault's paths change (every later commit still gets a new id).
2. **Moves the refs** in one ``update-ref`` transaction that checks each old value.
3. **Brings the files along**: git's index, memfs's private index and the working tree follow the
   new history (a purged file is deleted; a text is replaced, uncommitted changes included).
4. **Keeps a tombstone**: SHA-256 hashes of every purged file version and text (never the content)
   are committed in ``.memfs-tombstones``, so a later sync from a clone that still has them can
   refuse them (:func:`is_purged`).
5. **Handles remotes**: it says which configured remotes still hold the old history and pushes
   nothing, unless asked to force-push the rewritten branches and tags (``rewrite_remotes``).
6. **Forgets**: reflogs expire, unreachable objects are pruned (``git gc --prune=now``), the
   objects that held the content are checked to be gone, and the search index is rebuilt from
   the files.

Every step can be repeated: if a purge stops half-way (a git lock, a crash), running it again
finishes the job.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from . import _fs
from .engine import WriteEngine
from .errors import HistoryError, InvalidArgumentError, LinkError, NotFoundError, PurgeError
from .gitstore import ZERO_SHA, ObjectWriter
from .layout import MEMORIES_DIR, SESSIONS_DIR, STATE_DIR, TOMBSTONES, label
from .rewrite import MIN_TEXT_CHARS as MIN_TEXT_CHARS
from .rewrite import PLACEHOLDER as PLACEHOLDER
from .rewrite import PurgedCommit, _PathRule, _Rewriter, _Rule, _TextRule

_TEMP_REFS = "refs/memfs-purge/"
# Files git keeps in the (per-worktree) git folder while a person's operation is in progress.
_OPERATIONS = {
    "MERGE_HEAD": "a merge",
    "rebase-merge": "a rebase",
    "rebase-apply": "a rebase or `git am`",
    "CHERRY_PICK_HEAD": "a cherry-pick",
    "REVERT_HEAD": "a revert",
    "sequencer": "a cherry-pick or revert",
    "BISECT_LOG": "a bisect",
}


@dataclass(frozen=True)
class RemoteState:
    """What a configured remote holds after a purge.

    Attributes:
        name: The remote's name (its URL is never shown: it may hold credentials).
        stale: Its refs that still hold the old history, as far as this repository knows
            (from the remote-tracking refs, or from a fetch when rewriting remotes).
        rewritten: Its refs force-pushed with the new history.
        error: Why a fetch or push failed, if one did.
    """

    name: str
    stale: tuple[str, ...] = ()
    rewritten: tuple[str, ...] = ()
    error: str | None = None


@dataclass
class PurgeReport:
    """What a purge did (or, for a dry run, would do).

    Attributes:
        dry_run: True when nothing was changed.
        target: ``path`` or ``text``.
        purged_paths: For a path: every vault path the file had, and any other path that held
            the same bytes. For a text: empty (the names may carry the text).
        commits: Every commit whose id changes, oldest first.
        refs: Each ref that moves, with its new id (None: deleted).
        versions: How many distinct file versions (blobs) were removed or rewritten.
        files: Files of the working tree deleted or rewritten (their names after the purge).
        remotes: Every configured remote and what it still holds.
        tombstone: The commit that recorded the tombstone hashes, if one was made.
        leftovers: Ids of objects that held the content and are still in the object store after
            pruning (an alternate object store, a ``.keep`` pack, the same bytes outside the vault).
        outside: For a text in a vault inside a larger repository: the repository's own files
            (outside the vault, at the tip of a branch or tag) that hold it too; a purge leaves them.
        seconds: How long it took.
    """

    dry_run: bool
    target: Literal["path", "text"]
    purged_paths: list[str] = field(default_factory=list)
    commits: list[PurgedCommit] = field(default_factory=list)
    refs: dict[str, str | None] = field(default_factory=dict)
    versions: int = 0
    files: list[str] = field(default_factory=list)
    remotes: list[RemoteState] = field(default_factory=list)
    tombstone: str | None = None
    leftovers: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def changed(self) -> list[PurgedCommit]:
        """The commits whose content changes or that are dropped (not those only re-parented)."""
        return [c for c in self.commits if c.change != "parent"]


# -- the tombstone -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tombstones:
    """The hashes of what was purged from a vault: file versions and texts, never their content.

    ``.memfs-tombstones`` holds one entry a line: ``blob <sha256 of the file's bytes>`` or
    ``text <sha256 of the text's UTF-8 bytes> <its length in bytes>``; ``#`` starts a comment.
    """

    blobs: frozenset[str] = frozenset()
    texts: frozenset[tuple[str, int]] = frozenset()

    @classmethod
    def parse(cls, data: bytes) -> Tombstones:
        """Read the entries of a tombstone file (unknown lines are ignored)."""
        blobs, texts = set(), set()
        for line in data.decode("utf-8", "replace").splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "blob" and _is_sha256(parts[1]):
                blobs.add(parts[1])
            elif len(parts) >= 3 and parts[0] == "text" and _is_sha256(parts[1]) and parts[2].isdigit():
                texts.add((parts[1], int(parts[2])))
        return cls(frozenset(blobs), frozenset(texts))

    def render(self) -> bytes:
        """The file's bytes: a header, then the entries sorted."""
        lines = [
            "# memfs tombstones: SHA-256 hashes of what was purged from this vault's history, never the",
            "# content itself. A sync must not bring back a file version or a text listed here.",
            "# blob <sha256 of the bytes of a purged file version>",
            "# text <sha256 of a purged text's UTF-8 bytes> <its length in bytes>",
            *sorted(f"blob {h}" for h in self.blobs),
            *sorted(f"text {h} {n}" for h, n in self.texts),
        ]
        return ("\n".join(lines) + "\n").encode("utf-8")

    def __or__(self, other: Tombstones) -> Tombstones:
        return Tombstones(self.blobs | other.blobs, self.texts | other.texts)

    def holds_blob(self, data: bytes) -> bool:
        """True if these exact bytes are a purged file version."""
        return hashlib.sha256(data).hexdigest() in self.blobs

    def holds_text(self, text: str) -> bool:
        """True if ``text`` is exactly a purged text."""
        data = text.encode("utf-8")
        return (hashlib.sha256(data).hexdigest(), len(data)) in self.texts

    def find_text(self, data: bytes) -> bool:
        """True if a purged text occurs anywhere in ``data``.

        Only hashes are kept, so every window of each purged text's length is hashed: the cost
        is about one SHA-256 of a short string per byte of ``data`` (~1 s per MiB in CPython).
        """
        for length in sorted({n for _, n in self.texts}):
            wanted = {bytes.fromhex(h) for h, n in self.texts if n == length}
            view = memoryview(data)
            for start in range(len(data) - length + 1):
                if hashlib.sha256(view[start : start + length]).digest() in wanted:
                    return True
        return False

    def is_purged(self, data: bytes | str) -> bool:
        """True if ``data`` (a blob's bytes, or a text) is or contains something purged."""
        if isinstance(data, str):
            return self.holds_text(data) or self.find_text(data.encode("utf-8"))
        return self.holds_blob(data) or self.find_text(data)


def tombstones(owner: Any) -> Tombstones:
    """The tombstones of a vault (a Vault, its engine, or its folder): the file on disk and at HEAD."""
    if isinstance(owner, (str, os.PathLike)):
        root = Path(owner)
        found = Tombstones()
    else:
        engine = owner.engine if hasattr(owner, "engine") else owner
        if not isinstance(engine, WriteEngine):
            raise InvalidArgumentError(f"expected a memfs Vault or a folder, got {type(owner).__name__}")
        root = engine.root
        try:
            found = Tombstones.parse(engine.history.show(TOMBSTONES, "HEAD"))
        except NotFoundError:
            found = Tombstones()
    with contextlib.suppress(OSError):
        found = found | Tombstones.parse((root / TOMBSTONES).read_bytes())
    return found


def is_purged(owner: Any, data: bytes | str) -> bool:
    """Was ``data`` purged from this vault? For a sync deciding what it may bring back.

    Args:
        owner: A Vault, its engine, or the vault's folder.
        data: A blob's bytes (purged if they are a purged file version, or contain a purged
            text), or a text (purged if it is, or contains, a purged text).
    """
    return tombstones(owner).is_purged(data)


# -- the purge -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ref:
    name: str
    oid: str
    kind: str


def purge(
    engine: WriteEngine,
    path: str | None = None,
    *,
    text: str | None = None,
    rewrite_remotes: bool = False,
    dry_run: bool = False,
) -> PurgeReport:
    """Remove a file's content (``path``, a vault path) or a text from the vault's whole history.

    See the module's documentation for every step. The caller (``Vault.purge``) has checked the
    path; this holds the vault lock throughout.

    Raises:
        InvalidArgumentError: Neither or both of ``path`` and ``text``, or a text too short.
        NotFoundError: The path is in neither the history nor the folder.
        PurgeError: An operation in progress, linked worktrees, or a shallow clone.
    """
    if (path is None) == (text is None):
        raise InvalidArgumentError("purge takes a path or a text (one of them)")
    rule: _Rule = _PathRule(path) if path is not None else _TextRule(str(text))
    started = time.monotonic()
    with engine.locked():
        if not dry_run:
            engine.journal.recover()  # a crashed write's journal holds old bytes: finish it before rewriting
        job = _Purge(engine, rule, dry_run=dry_run, rewrite_remotes=rewrite_remotes)
        try:
            report = job.run()
        finally:
            job.drop_temporary_refs()
    report.seconds = time.monotonic() - started
    return report


class _Purge:
    def __init__(self, engine: WriteEngine, rule: _Rule, *, dry_run: bool, rewrite_remotes: bool) -> None:
        self.engine = engine
        self.history = engine.history
        self.rule = rule
        self.dry = dry_run
        self.rewrite_remotes = rewrite_remotes and not dry_run
        self.prefix = self.history.prefix
        self.report = PurgeReport(dry_run=dry_run, target=rule.kind)
        self.fetched = False

    def git(self, *args: str, input: str | None = None, check: bool = True, env: dict[str, str] | None = None) -> str:
        return self.history.plumbing(*args, input=input, check=check, env=env)

    def run(self) -> PurgeReport:
        self.check_repository()
        remotes = self.git("remote").split()
        failed = self.fetch(remotes) if self.rewrite_remotes else {}
        refs = self.refs()
        stash = self.stash()
        extra = sorted({s for s, _ in stash})  # commits only the stash's reflog names
        with self.history.object_writer(dry=self.dry) as writer:
            return self.rewrite(writer, remotes, failed, refs, stash, extra)

    def rewrite(
        self,
        writer: ObjectWriter,
        remotes: list[str],
        failed: dict[str, str],
        refs: list[_Ref],
        stash: list[tuple[str, str]],
        extra: list[str],
    ) -> PurgeReport:
        rule = self.rule
        if isinstance(rule, _PathRule):
            rule.prepare(self.history, extra, writer.id_of("blob", b""))
            if not rule.blobs and not os.path.lexists(self.engine.root / rule.rel) and not self.interrupted():
                raise NotFoundError(f"{label(rule.rel)} is in neither this vault's history nor its folder")
            self.report.purged_paths = sorted(rule.lineage | rule.elsewhere)
        with self.history.object_reader() as reader:
            rw = _Rewriter(reader, writer, rule, self.prefix)
            # Every ref (tags peeled, nested or not; refs to trees and blobs are skipped), and the stash.
            lines = self.git(
                "rev-list",
                "--all",
                "--topo-order",
                "--reverse",
                "--parents",
                "--stdin",
                input="".join(f"{c}\n" for c in extra),
                env={"GIT_NO_REPLACE_OBJECTS": "1"},
                check=False,
            )
            rw.rewrite_commits(lines.splitlines())
            moved = {r.name: new for r in refs if (new := rw.rewrite_object(r.oid, r.kind)) != r.oid}
            if isinstance(rule, _PathRule):
                for oid in rule.blobs - {rw.empty_blob}:
                    rw.purged[oid] = hashlib.sha256(rw.read(oid, "blob")).hexdigest()
            self.report.commits = rw.changes
            local = {n: v for n, v in moved.items() if not n.startswith(("refs/remotes/", _TEMP_REFS))}
            self.report.refs = dict(local)
            self.report.versions = len(rw.purged)
            tracking = self.tracking_refs(remotes, refs, moved)
            if self.dry:
                self.report.remotes = [RemoteState(r, tuple(tracking.get(r, ()))) for r in remotes]
                self.report.refs.update({name: None for names in tracking.values() for name in names})
                return self.report
            forward, backward = self.git_index_changes(rw)
            writer.finish()  # every new object is in the repository before a ref names one
            purged_hashes = set(rw.purged.values())
            stone = self.engine.root / TOMBSTONES
            before = stone.read_bytes() if stone.is_file() else None
            self.stage_tombstone(purged_hashes)  # an interrupted purge keeps what it found
            if self.engine.durable:
                os.sync()
            if forward:
                self.git("update-index", "-z", "--index-info", input=forward)
            try:
                self.update_refs(local, {r.name: r.oid for r in refs})
            except BaseException:  # nothing moved: put git's index and the tombstone back
                if backward:
                    self.git("update-index", "-z", "--index-info", input=backward, check=False)
                if before is None:
                    stone.unlink(missing_ok=True)
                else:
                    _fs.atomic_write(stone, before, durable=self.engine.durable, modes=self.engine.modes)
                raise
        self.history.forget_private_index(self.lagging_pattern())
        purged_hashes |= self.update_working_tree(writer.algorithm)
        self.stage_tombstone(purged_hashes)
        self.commit_tombstone()
        self.report.remotes = self.handle_remotes(remotes, refs, moved, tracking, failed)
        self.drop_temporary_refs()
        self.clean_git_folder({old for old, new in rw.commits.items() if new != old})
        self.forget(stash, rw)
        self.report.leftovers = self.leftovers([c.old for c in rw.changes] + list(rw.purged))
        self.report.outside = self.outside()
        self.engine.catalog.reindex(full=True)
        return self.report

    # -- before anything ---------------------------------------------------------------------

    def check_repository(self) -> None:
        git_dir = self.history.git_dir
        for marker, what in _OPERATIONS.items():
            if (git_dir / marker).exists():
                raise PurgeError(f"{what} is in progress in {self.history.top}; finish or abort it, then purge")
        if self.git("rev-parse", "--is-shallow-repository", check=False).strip() == "true":
            raise PurgeError(
                "this is a shallow clone: its history is not all here, so it cannot be rewritten whole. "
                "`git fetch --unshallow` first, or purge in a full clone"
            )
        worktrees = [
            line for line in self.git("worktree", "list", "--porcelain").splitlines() if line.startswith("worktree ")
        ]
        if len(worktrees) > 1:
            raise PurgeError(
                f"the repository has {len(worktrees) - 1} linked worktree(s), whose checkouts and indexes "
                "would keep the content; remove them (`git worktree remove`), then purge"
            )

    def refs(self) -> list[_Ref]:
        out = self.git("for-each-ref", "--format=%(refname)%00%(objectname)%00%(objecttype)%00%(symref)")
        refs = []
        for line in out.splitlines():
            name, oid, kind, symref = (line.split("\0") + ["", "", "", ""])[:4]
            if name and not symref:
                refs.append(_Ref(name, oid, kind))
        if not self.git("symbolic-ref", "-q", "HEAD", check=False).strip():
            head = self.git("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).strip()
            if head:
                refs.append(_Ref("HEAD", head, "commit"))  # a detached HEAD
        return refs

    def stash(self) -> list[tuple[str, str]]:
        """The stash's entries, newest first: ``(commit, reflog message)``."""
        out = self.git("reflog", "show", "--format=%H%x00%gs", "refs/stash", "--", check=False)
        return [(sha, msg) for line in out.splitlines() if "\0" in line for sha, msg in [line.split("\0", 1)]]

    def tracking_refs(self, remotes: list[str], refs: list[_Ref], moved: dict[str, str | None]) -> dict[str, list[str]]:
        """For each remote: its remote-tracking refs that point into the old history."""
        found: dict[str, list[str]] = {}
        for ref in refs:
            for remote in remotes:
                if ref.name.startswith(f"refs/remotes/{remote}/") and ref.name in moved:
                    found.setdefault(remote, []).append(ref.name)
        return found

    # -- remotes -------------------------------------------------------------------------------

    def fetch(self, remotes: list[str]) -> dict[str, str]:
        """Fetch every branch and tag of each remote into temporary refs, so they are rewritten too."""
        failed = {}
        for i, remote in enumerate(remotes):
            try:
                self.fetched = True
                self.git(
                    "-c",
                    "gc.auto=0",
                    "-c",
                    "maintenance.auto=false",
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--no-write-fetch-head",
                    "--no-recurse-submodules",
                    remote,
                    f"+refs/heads/*:{_TEMP_REFS}{i}/heads/*",
                    f"+refs/tags/*:{_TEMP_REFS}{i}/tags/*",
                    env={"GIT_TERMINAL_PROMPT": "0"},
                )
            except HistoryError as exc:
                failed[remote] = f"fetch failed: {exc}"
        return failed

    def handle_remotes(
        self,
        remotes: list[str],
        refs: list[_Ref],
        moved: dict[str, str | None],
        tracking: dict[str, list[str]],
        failed: dict[str, str],
    ) -> list[RemoteState]:
        """Push the new history when asked; drop the remote-tracking refs that still name the old one."""
        states = []
        updates: dict[str, str | None] = {}
        old = {r.name: r.oid for r in refs}
        for i, remote in enumerate(remotes):
            stale = list(tracking.get(remote, ()))
            pushed: dict[str, str | None] = {}
            error = failed.get(remote)
            if self.rewrite_remotes and error is None:
                pushed, error = self.push(remote, i, refs, moved)
                if error is None:
                    for target, value in pushed.items():
                        mirror = f"refs/remotes/{remote}/{target.removeprefix('refs/heads/')}"
                        if target.startswith("refs/heads/") and mirror in old:
                            updates[mirror] = value
                    stale = []
            for name in tracking.get(remote, ()):  # the content must leave this repository
                updates.setdefault(name, None)
            states.append(RemoteState(remote, tuple(stale), tuple(pushed), error))
        updates = {k: v for k, v in updates.items() if v != old.get(k)}
        self.update_refs(updates, old, check_old=False)
        self.report.refs.update(updates)
        return states

    def push(
        self, remote: str, index: int, refs: list[_Ref], moved: dict[str, str | None]
    ) -> tuple[dict[str, str | None], str | None]:
        """Force-push the rewritten versions of a remote's branches and tags, each with a lease on its old id.

        Returns:
            The remote refs pushed with their new ids (None: deleted), and an error if the push failed.
        """
        base = f"{_TEMP_REFS}{index}/"
        specs, leases = [], []
        pushed: dict[str, str | None] = {}
        for ref in refs:
            if not ref.name.startswith(base) or ref.name not in moved:
                continue
            kind, _, short = ref.name[len(base) :].partition("/")
            target = f"refs/{kind}/{short}"
            value = moved[ref.name]
            if value is not None and kind == "heads":
                local = self.git("rev-parse", "-q", "--verify", f"refs/heads/{short}^{{commit}}", check=False).strip()
                if local and (local == value or self.is_ancestor(value, local)):
                    value = local  # the local branch, with its tombstone commit
            specs.append(f"{value or ''}:{target}")
            leases.append(f"--force-with-lease={target}:{ref.oid}")
            pushed[target] = value
        if not specs:
            return {}, None
        try:
            self.git(
                "push",
                "--quiet",
                "--no-verify",
                "--porcelain",
                *leases,
                remote,
                *specs,
                env={"GIT_TERMINAL_PROMPT": "0"},
            )
        except HistoryError as exc:
            return {}, f"push failed: {exc}"
        return pushed, None

    def is_ancestor(self, older: str, newer: str) -> bool:
        return not self.git("rev-list", "-n", "1", f"{newer}..{older}", check=False).strip() and bool(
            self.git("rev-parse", "-q", "--verify", f"{older}^{{commit}}", check=False).strip()
        )

    def drop_temporary_refs(self) -> None:
        if not self.fetched:
            return
        out = self.git("for-each-ref", "--format=%(refname) %(objectname)", _TEMP_REFS, check=False)
        lines = [f"delete {name} {oid}\n" for name, oid in (line.split() for line in out.splitlines() if line)]
        if lines:
            self.git("update-ref", "--stdin", input="".join(lines), check=False)

    # -- refs, indexes, files --------------------------------------------------------------

    def update_refs(self, moves: dict[str, str | None], old: dict[str, str], *, check_old: bool = True) -> None:
        """Move refs in one transaction; with ``check_old``, none moves unless all are as read."""
        lines = []
        for name, new in sorted(moves.items()):
            before = f" {old[name]}" if check_old and name in old else ""
            lines.append(f"delete {name}{before}\n" if new is None else f"update {name} {new}{before}\n")
        if lines:
            self.git("update-ref", "--no-deref", "-m", "memfs: purge", "--stdin", input="".join(lines))

    def git_index_changes(self, rw: _Rewriter) -> tuple[str, str]:
        """``update-index --index-info`` input: entries of git's index that held what goes take the new ones.

        Returns:
            The change, and its inverse (to put the index back if the refs cannot move).
        """
        out = self.git("ls-files", "-s", "-z", "--", self.prefix or ".", check=False)
        lines, undo = [], []
        for record in filter(None, out.split("\0")):
            meta, _, repo_path = record.partition("\t")
            mode, oid, _stage = meta.split(" ")
            if not repo_path.startswith(self.prefix) or mode == "160000":
                continue
            rel = repo_path[len(self.prefix) :]
            new_oid = rw.blob(oid, rel)
            new_rel = self.rule.path(rel)
            if new_oid == oid and new_rel == rel:
                continue
            lines.append(f"0 {ZERO_SHA}\t{repo_path}\0")
            if new_oid is not None:
                lines.append(f"{mode} {new_oid}\t{self.prefix}{new_rel}\0")
                undo.append(f"0 {ZERO_SHA}\t{self.prefix}{new_rel}\0")
            undo.append(f"{mode} {oid}\t{repo_path}\0")
        return "".join(lines), "".join(undo)

    def update_working_tree(self, algorithm: str) -> set[str]:
        """Delete the purged file / replace the text in the vault's files; the hashes of what went."""
        root = self.engine.root
        own = self.engine.own_uncommitted()
        hashes: set[str] = set()
        stale_own: list[str] = []
        rule = self.rule
        for rel in _files(root):
            target = root / rel
            try:
                found = _fs.read_vault_file(root, rel, limit=None)  # through the gate: a link is left alone
            except (OSError, LinkError):
                continue
            if found is None:
                continue
            data, mode = found
            if isinstance(rule, _PathRule):
                if rel in rule.lineage or (data and _blob_id(data, algorithm) in rule.blobs):
                    hashes.add(hashlib.sha256(data).hexdigest())
                    _fs.remove_file(root, rel)
                    _prune_empty(target.parent, root)
                    self.report.files.append(rel)
                    stale_own.append(rel)
                continue
            assert isinstance(rule, _TextRule)
            new_rel, new = rule.path(rel), rule.blob(data)
            if new_rel == rel and new == data:
                continue
            if new != data:
                hashes.add(hashlib.sha256(data).hexdigest())
            if new_rel != rel:
                new_rel = _free_name(root, new_rel)
                stale_own.append(rel)
            if rel in own:
                self.engine.replace(new_rel, new)  # still memfs's own uncommitted write
            else:
                _fs.write_file(root, new_rel, new, mode=mode, durable=self.engine.durable, modes=self.engine.modes)
            if new_rel != rel:
                _fs.remove_file(root, rel)
                _prune_empty(target.parent, root)
            self.report.files.append(new_rel)
        if any(p in own for p in stale_own):
            # Names memfs recorded as its own uncommitted writes that no longer exist: there is
            # nothing to commit, and committing them makes the engine forget them.
            self.engine.commit([p for p in stale_own if p in own], "purge: forget purged files")
        return hashes

    def lagging_pattern(self) -> re.Pattern[str]:
        rule = self.rule
        if isinstance(rule, _PathRule):
            names = [self.prefix + p for p in sorted(rule.lineage | rule.elsewhere)]
            return re.compile("^(?:" + "|".join(map(re.escape, names)) + ")$")
        assert isinstance(rule, _TextRule)
        return re.compile("|".join(map(re.escape, rule.forms)))

    def interrupted(self) -> bool:
        """True if an earlier purge stopped after the refs moved: its tombstone is written, not committed."""
        return (self.engine.root / TOMBSTONES).exists() and bool(self.history.changed([TOMBSTONES]))

    def stage_tombstone(self, hashes: set[str]) -> None:
        """Add the hashes of what goes to ``.memfs-tombstones`` (no content, no names)."""
        texts: set[tuple[str, int]] = set()
        if isinstance(self.rule, _TextRule):
            texts = {(hashlib.sha256(v).hexdigest(), len(v)) for v in self.rule.variants}
        added = Tombstones(frozenset(hashes), frozenset(texts))
        target = self.engine.root / TOMBSTONES
        try:
            current = Tombstones.parse(target.read_bytes())
        except OSError:
            current = Tombstones()
        merged = current | added
        if merged != current or not target.exists():
            _fs.atomic_write(target, merged.render(), durable=self.engine.durable, modes=self.engine.modes)

    def commit_tombstone(self) -> None:
        what = "a file's content" if isinstance(self.rule, _PathRule) else "a text"
        message = (
            f"purge: remove {what} from history\n\nIts SHA-256 hashes are in {TOMBSTONES}, so a sync "
            "can refuse to bring it back; the content itself is nowhere in this repository."
        )
        self.report.tombstone = self.engine.commit([TOMBSTONES], message, {"Memfs-Op": "purge"})

    # -- forgetting ----------------------------------------------------------------------

    def clean_git_folder(self, rewritten: set[str]) -> None:
        """Files of the git folder that name old commits or carry the content."""
        git_dir, common = self.history.git_dir, self.history.common_dir()
        for name in ("ORIG_HEAD", "FETCH_HEAD", "AUTO_MERGE"):
            with contextlib.suppress(OSError):
                if set(re.findall(r"[0-9a-f]{40,64}", (git_dir / name).read_text("utf-8", "replace"))) & rewritten:
                    (git_dir / name).unlink()
        for name in ("COMMIT_EDITMSG", "SQUASH_MSG", "TAG_EDITMSG", "MERGE_MSG"):
            with contextlib.suppress(OSError):
                data = (git_dir / name).read_bytes()
                if self.rule.message(data) != data:
                    (git_dir / name).write_bytes(self.rule.message(data))
        if isinstance(self.rule, _TextRule):  # recorded conflict resolutions hold file content
            for folder, _, names in os.walk(common / "rr-cache"):
                for name in names:
                    with contextlib.suppress(OSError):
                        if self.rule.hit((Path(folder) / name).read_bytes()):
                            (Path(folder) / name).unlink()

    def forget(self, stash: list[tuple[str, str]], rw: _Rewriter) -> None:
        """Expire every reflog, put the stash's (rewritten) entries back, prune what nothing reaches."""
        self.git("reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
        if stash:
            self.git("update-ref", "-d", "refs/stash", check=False)
            for sha, message in reversed(stash):
                new = rw.commits.get(sha, sha)
                if new is not None:
                    text = self.rule.message(rw.map_ids(message.encode("utf-8"))).decode("utf-8", "replace")
                    self.git("update-ref", "--create-reflog", "-m", text, "refs/stash", new)
        self.git("-c", "gc.cruftPacks=false", "-c", "gc.auto=0", "gc", "--prune=now", "--quiet")

    def outside(self) -> list[str]:
        """For a text, in a vault inside a larger repository: files outside the vault that hold it."""
        rule = self.rule
        if not self.prefix or not isinstance(rule, _TextRule):
            return []
        tips = sorted({r.oid for r in self.refs() if r.kind in ("commit", "tag")})
        if not tips:
            return []
        # The text goes to git on stdin, never on a command line other users can read.
        out = self.git(
            "grep",
            "-l",
            "-z",
            "-F",
            "-I",
            "-f",
            "-",
            *tips,
            "--",
            ".",
            f":(exclude){self.prefix}",
            input="\n".join(rule.forms) + "\n",
            check=False,
        )
        return sorted({hit.split(":", 1)[-1] for hit in out.split("\0") if hit})

    def leftovers(self, oids: list[str]) -> list[str]:
        """Which of ``oids`` are still in the object store (all should be gone)."""
        if not oids:
            return []
        out = self.git("cat-file", "--batch-check", input="\n".join(oids) + "\n", env={"GIT_NO_REPLACE_OBJECTS": "1"})
        return [line.split()[0] for line in out.splitlines() if line and not line.endswith(" missing")]


# -- helpers ---------------------------------------------------------------------------------------


def _files(root: Path) -> list[str]:
    """Every regular file of the vault folder (vault paths), but git's and memfs's own folders."""
    found = []
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        dirs[:] = [
            d for d in dirs if d != ".git" and not (here == root and d == STATE_DIR) and not (here / d).is_symlink()
        ]
        for name in names:
            path = here / name
            if name != ".git" and not path.is_symlink() and path.is_file():
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


def _prune_empty(folder: Path, root: Path) -> None:
    keep = {root, root / MEMORIES_DIR, root / SESSIONS_DIR}
    while folder not in keep and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _free_name(root: Path, rel: str) -> str:
    if not os.path.lexists(root / rel):
        return rel
    stem, dot, ext = rel.rpartition(".") if "." in rel.rsplit("/", 1)[-1] else (rel, "", "")
    n = 2
    while os.path.lexists(root / f"{stem}-{n}{dot}{ext}"):
        n += 1
    return f"{stem}-{n}{dot}{ext}"


def _blob_id(data: bytes, algorithm: str) -> str:
    return hashlib.new(algorithm, b"blob %d\0" % len(data) + data).hexdigest()


def _is_sha256(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)
