"""Writing any file of a namespace: delete, move and restore of files and folders, and proposals.

:class:`FileStore` is the part of :class:`memfs.store.MemoryStore` that changes files whatever
they hold (what file-style tools do), each change written as a fact or, when the review policy
says so, as a proposal in ``proposals/`` (:mod:`memfs.proposals`); ids of memories and proposals.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
from collections.abc import Iterator, Mapping

from . import proposals
from .credentials import describe, find_secrets
from .errors import (
    AlreadyExistsError,
    ConflictError,
    MemoryNotFoundError,
    SecretError,
)
from .layout import label, memory_path
from .links import rewrites
from .paths import clean_relpath
from .proposals import Proposal
from .reader import MemoryReader

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_id_lock = threading.Lock()
_last_id = 0  # the last id new_id made, as a number


class FileStore(MemoryReader):
    """The files of one namespace, changed; see :class:`memfs.store.MemoryStore`."""

    # -- writing any file of the namespace (what file-style tools do) --------------------

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """Make the proposals this store writes in the block one group: accepted or rejected together.

        For a change of several files that must land whole (a supersede: the old memory closed,
        the new one written). Wrap it in ``vault.batch(...)`` as well to make it one commit. Without
        proposals it changes nothing.
        """
        outer = self._group
        self._group = outer or _proposal_id()
        try:
            yield
        finally:
            self._group = outer

    def _propose_text(
        self,
        rel: str,
        text: str,
        *,
        op: str,
        create: bool,
        expect: bytes | None,
        trailers: Mapping[str, str],
        provenance: str | None,
    ) -> Proposal:
        """Propose ``text`` for ``rel``, checked against what the writer read.

        Checked as :meth:`memfs.store.MemoryStore.write_text` checks a write. The writer read its own
        proposal when its session has one for the file, else the file.
        """
        own = proposals.own(self.engine, self.session, rel)
        seen = (own.text or "").encode("utf-8") if own is not None else proposals.current(self.engine, rel)
        if create and seen is not None:
            raise AlreadyExistsError(f"{rel} already exists")
        if not create and seen is None:
            raise MemoryNotFoundError(f"no file at {rel}")
        if expect is not None and seen != expect:
            raise ConflictError(f"{rel} changed since it was read; read it again and retry")
        base = proposals.current(self.engine, rel)
        return self._propose("write", op, rel, text=text, base=base, trailers=trailers, provenance=provenance)

    def _propose(
        self,
        action: str,
        op: str,
        rel: str,
        *,
        base: bytes | None,
        trailers: Mapping[str, str],
        text: str | None = None,
        to: str | None = None,
        group: str | None = None,
        provenance: str | None = None,
    ) -> Proposal:
        """Write one change to ``rel`` as a proposal (a write replaces the session's own one for the file)."""
        proposal = proposals.new(
            _proposal_id(),
            group=group or self._group,
            op=op,
            action=action,
            path=rel,
            to=to,
            base=base,
            text=text,
            proposed_by=str(self.engine.author),
            provenance=provenance or self.writer,
            session=self.session,
        )
        replacing = proposals.own(self.engine, self.session, rel) if action == "write" else None
        keys = dict(trailers)
        if self.session:
            keys.setdefault("Memfs-Session", self.session)
        return proposals.write(self.engine, proposal, trailers=keys, replacing=replacing)

    def delete_file(self, name: str, *, trailers: Mapping[str, str] | None = None) -> None:
        """Delete any file of the namespace by name (a memory or not) and commit it."""
        rel = self._vault_path(clean_relpath(name))
        with self.engine.locked():
            self._delete_file(rel, trailers)

    def _delete_file(self, rel: str, trailers: Mapping[str, str] | None, *, group: str | None = None) -> None:
        self.engine.commit_edits_first([rel])
        keys = {"Memfs-Op": "delete", **(trailers or {})}
        if group is not None or self.proposes(self.writer, paths=[rel]):
            self._propose("delete", "delete", rel, base=self.engine.read_bytes(rel), trailers=keys, group=group)
            return
        self.engine.delete(rel, message=f"memory: delete {label(rel)}", trailers=keys)

    def delete_folder(self, name: str, *, trailers: Mapping[str, str] | None = None) -> None:
        """Delete a sub-folder of the namespace and every file in it, in one commit."""
        rel = self._vault_path(clean_relpath(name)) if name else memory_path(self.namespace)
        folder = self.engine.root / rel
        with self.engine.locked():
            files = self._files_under(rel)
            self.engine.commit_edits_first(files)
            message = f"memory: delete {label(rel)}/"
            group = _proposal_id() if self.proposes(self.writer, paths=files) else None
            with self.engine.batch(message, trailers={"Memfs-Op": "delete", **(trailers or {})}):
                for file_rel in files:
                    if group is not None:
                        self._delete_file(file_rel, trailers, group=group)
                    else:
                        self.engine.delete(file_rel, message=f"memory: delete {label(file_rel)}")
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()

    def move_file(
        self, name: str, new_name: str, *, into: FileStore | None = None, trailers: Mapping[str, str] | None = None
    ) -> None:
        """Rename any file of the namespace (never over an existing one) and commit it.

        ``into`` moves it to another namespace of the same vault (``new_name`` is then a name there).
        """
        _check_name(new_name, "redact")
        rel, dest = self._vault_path(clean_relpath(name)), (into or self)._vault_path(clean_relpath(new_name))
        with self.engine.locked():
            if dest.casefold() != rel.casefold():
                self._check_case_clash(dest)
            self._move_file(rel, dest, trailers, into=into)

    def move_folder(
        self, name: str, new_name: str, *, into: FileStore | None = None, trailers: Mapping[str, str] | None = None
    ) -> None:
        """Rename a sub-folder of the namespace with every file in it, in one commit (``into``: as move_file)."""
        _check_name(new_name, "redact")
        rel, dest = self._vault_path(clean_relpath(name)), (into or self)._vault_path(clean_relpath(new_name))
        if dest.startswith(rel + "/"):
            raise AlreadyExistsError(f"cannot move {label(rel)} into itself ({label(dest)})")
        with self.engine.locked():
            if dest.casefold() != rel.casefold():
                self._check_case_clash(dest)
            message = f"memory: move {label(rel)} -> {label(dest)}"
            files = self._files_under(rel)
            self.engine.commit_edits_first(files)
            moves = {file_rel: dest + file_rel[len(rel) :] for file_rel in files}
            proposing = any(self._proposes_move(old, new, into) for old, new in moves.items())
            group = _proposal_id() if proposing else None
            relinked = rewrites(self.engine, moves) if group is None else {}
            self.engine.commit_edits_first([old for old, _, _ in relinked.values()])
            with self.engine.batch(message, trailers={"Memfs-Op": "move", **(trailers or {})}):
                for file_rel, moved in moves.items():
                    if group is not None:
                        self._move_file(file_rel, moved, trailers, group=group, into=into)
                    else:
                        self.engine.move(file_rel, moved, message=f"memory: move {label(file_rel)}")
                self._relink(relinked)

    def restore_file(self, name: str, rev: str, *, trailers: Mapping[str, str] | None = None) -> Proposal | None:
        """Bring any file of the namespace back as it was at ``rev`` (a memory or not), as a new commit.

        Returns the proposal when this store proposes instead.
        """
        rel = self._vault_path(clean_relpath(name))
        with self.engine.locked():
            if not os.path.lexists(self.engine.root / rel):
                self._check_case_clash(rel)
            if self.proposes(self.writer, paths=[rel]):
                text = self.engine.history.show_following_renames(rel, rev).decode("utf-8")
                base = proposals.current(self.engine, rel)
                return self._propose(
                    "write", "restore", rel, text=text, base=base, trailers={"Memfs-Op": "restore", **(trailers or {})}
                )
            self.engine.restore(rel, rev, trailers=dict(trailers or {}))
            return None

    def proposes_change(self, name: str, *, to: str | None = None, into: FileStore | None = None) -> bool:
        """True when changing the file or folder ``name`` of the namespace becomes a proposal.

        ``to``: its new name when it is moved (in ``into``, another namespace's store, if given);
        both ends are decided. A folder is decided on every file in it.
        """
        rel = self._vault_path(clean_relpath(name)) if name else memory_path(self.namespace)
        files = self._files_under(rel) if (self.engine.root / rel).is_dir() else [rel]
        if to is None:
            return self.proposes(self.writer, paths=files)
        dest = (into or self)._vault_path(clean_relpath(to))
        return any(self._proposes_move(old, dest + old[len(rel) :], into) for old in files)

    def _proposes_move(self, rel: str, dest: str, into: FileStore | None) -> bool:
        """True when moving ``rel`` to ``dest`` is a proposal: either end's policy (or store) asks for one."""
        return self.proposes(self.writer, paths=[rel]) or (into or self).proposes(self.writer, paths=[dest])

    def _move_file(
        self,
        rel: str,
        dest: str,
        trailers: Mapping[str, str] | None,
        *,
        group: str | None = None,
        into: FileStore | None = None,
    ) -> Proposal | None:
        self.engine.commit_edits_first([rel])
        keys = {"Memfs-Op": "move", **(trailers or {})}
        if group is not None or self._proposes_move(rel, dest, into):
            return self._propose(
                "move", "rename", rel, to=dest, base=self.engine.read_bytes(rel), trailers=keys, group=group
            )
        message = f"memory: move {label(rel)} -> {label(dest)}"
        relinked = rewrites(self.engine, {rel: dest})
        self.engine.commit_edits_first([old for old, _, _ in relinked.values()])
        with self.engine.batch(message, trailers=keys):  # the links that led to it lead there still: one commit
            self.engine.move(rel, dest, message=message, trailers=keys)
            self._relink(relinked)
        return None

    def _relink(self, relinked: Mapping[str, tuple[str, bytes, str]]) -> None:
        """Write the notes whose links a move rewrote (:func:`memfs.links.rewrites`)."""
        for path, (_, data, text) in relinked.items():
            self.engine.write(path, text, message=f"memory: links in {label(path)}", create=False, expect=data)


def new_id() -> str:
    """A new memory id: ``mem_`` and a ULID (time-ordered, 26 Crockford base32 characters).

    Monotonic within a process, as the ULID spec allows: an id made in the same millisecond as
    the last one (or with the clock set back) is the last one plus one, so ids sort in the order
    they were made (the parts of a change proposed together are accepted in that order).
    """
    global _last_id
    with _id_lock:
        value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
        if value >> 80 <= _last_id >> 80:
            value = _last_id + 1
        _last_id = value
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(_CROCKFORD[digit])
    return "mem_" + "".join(reversed(chars))


def _proposal_id() -> str:
    """A new proposal id: ``prop_`` and a ULID, as memory ids are made."""
    return "prop_" + new_id().removeprefix("mem_")


def _check_name(name: str, on_secret: str) -> str:
    """``name`` unless it holds a credential (a name cannot be redacted: it would name another file)."""
    findings = [] if on_secret == "allow" or not isinstance(name, str) else find_secrets(name)
    if findings:
        raise SecretError(
            f"The name holds a credential ({describe(findings)}); choose a name without it.",
            tuple(f.kind for f in findings),
        )
    return name
