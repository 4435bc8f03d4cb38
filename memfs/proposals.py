"""Proposals: changes to memory files that wait, in ``proposals/``, until a person accepts them.

When the vault's review policy (:mod:`memfs.settings`) or the caller asks for it, a
:class:`~memfs.store.MemoryStore` writes what it would have changed as a proposal instead. A
proposal is one Markdown file under ``proposals/`` (committed like everything else, so it shows in
an editor, in ``git log`` and in a sync), named after the memory it changes::

    proposals/users/alice/window-seats.prop_01JD....md

Its front matter says what accepting it does, and who asked; its body is the proposed file,
front matter and all, byte for byte (a person may edit it before accepting)::

    ---
    proposal: prop_01JD...
    group: prop_01JD...        # proposals accepted (and rejected) together: a folder move, a supersede
    op: update                 # what the proposer called it: create, update, delete, rename, ...
    action: write              # what accept does: write (the body), delete, or move (to ``to``)
    path: memories/users/alice/window-seats.md
    base: sha256:9f2c...       # the file as the proposer saw it; none: it must not exist
    proposed_by: support agent <agent@example.com>
    provenance: agent
    session: chat-42
    created: 2026-11-23T14:02:11Z
    ---
    <the whole proposed file>

The mechanism is generic over "a change to a memory file" (write, delete, move), and several
changes share a ``group`` when they must land together. ``proposals/`` is not a content folder:
the index never reads it, so nothing proposed is searched or injected as fact. Everything read
here comes from a file anyone may edit, so every key is checked (:func:`read`) and a proposal
that names a path outside ``memories/``, an unknown action or a malformed base is refused with
:class:`~memfs.errors.ProposalError`, never carried out.

**Whose proposal it is.** ``proposed_by`` and ``session`` are what the file says: a remote or a
person can write any name there. So a proposal is a session's own (its agent sees it as "your
proposal" and edits it further) only when this vault wrote it for that session: every proposal
memfs writes is noted in ``.memfs/proposed``, signed with the key that signs the search index
(kept outside every vault), over its id, session and exact bytes. :func:`origin` says where one
really came from: proposed here, arrived by sync, or neither (written by hand, or in a copy
received some other way).
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import hmac
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from . import _fs
from .credentials import redact
from .documents import Document, dumps, load_bytes, timestamp
from .engine import WriteEngine
from .errors import DocumentError, FileTooLargeError, HistoryError, MemoryNotFoundError, PathError, ProposalError
from .layout import MEMORIES_DIR, PROPOSALS_DIR, label, split_memory_path
from .paths import clean_memory_path
from .statefiles import MAX_STATE_BYTES
from .storage import index_key

#: What accepting a proposal does to its memory file.
ACTIONS = ("write", "delete", "move")
#: The value of ``base`` for a file that did not exist when it was proposed (a create).
NO_BASE = "none"
_ID = re.compile(r"prop_[0-9A-HJKMNP-TV-Z]{26}")
_BASE = re.compile(r"sha256:[0-9a-f]{64}")
#: Where a proposal came from (:func:`origin`): written by memfs in this vault, brought by a sync, or neither.
HERE, BY_SYNC, ELSEWHERE = "proposed here", "arrived by sync", "not proposed through memfs here"
_RECORD = "proposed"  # under .memfs/: {proposal id: [its file, the signature of what memfs wrote]}
_KEYS = ("proposal", "group", "op", "action", "path", "to", "base", "proposed_by", "provenance", "session", "created")


@dataclass(frozen=True)
class Proposal:
    """One proposed change to a memory file, as read from ``proposals/``.

    Attributes:
        id: ``prop_`` and a ULID.
        group: The id shared by proposals that are accepted or rejected together.
        op: What the proposer called the change (``create``, ``update``, ``delete``, ``rename``...).
        action: What accepting it does: ``write`` the text, ``delete`` the file, ``move`` it.
        path: The vault path of the memory it changes.
        to: For a move, the vault path it moves to.
        base: ``sha256:...`` of the file as the proposer saw it, or ``none`` (it must not exist).
        text: For a write, the whole proposed file.
        proposed_by: Who proposed it (``Name <email>``).
        provenance: What kind of writer proposed it (``agent``, ``extractor``, ``import``).
        session: The session it was proposed in, if any.
        created: When it was proposed.
        file: The proposal file's vault path.
    """

    id: str
    group: str
    op: str
    action: str
    path: str
    to: str | None
    base: str
    text: str | None
    proposed_by: str
    provenance: str | None
    session: str | None
    created: str
    file: str

    @property
    def namespace(self) -> str:
        """The namespace of the memory it changes."""
        return split_memory_path(self.path)[0]

    @property
    def targets(self) -> tuple[str, ...]:
        """Every vault path accepting it changes."""
        return (self.path, self.to) if self.to else (self.path,)


def digest(data: bytes | None) -> str:
    """The ``base`` value for a file's bytes (``none`` for no file)."""
    return NO_BASE if data is None else "sha256:" + hashlib.sha256(data).hexdigest()


def render(proposal: Proposal) -> str:
    """The text of a proposal file."""
    meta: dict[str, object] = {
        "proposal": proposal.id,
        "group": proposal.group,
        "op": proposal.op,
        "action": proposal.action,
        "path": proposal.path,
    }
    if proposal.to is not None:
        meta["to"] = proposal.to
    meta.update(base=proposal.base, proposed_by=proposal.proposed_by)
    for key in ("provenance", "session"):
        value = getattr(proposal, key)
        if value is not None:
            meta[key] = value
    meta["created"] = proposal.created
    return dumps(Document.new(meta, proposal.text or ""))


def file_for(path: str, proposal_id: str) -> str:
    """Where the proposal ``proposal_id`` for the memory at vault path ``path`` is kept."""
    stem = label(path).removesuffix(".md")
    return f"{PROPOSALS_DIR}/{stem}.{proposal_id}.md"


def new(
    proposal_id: str,
    *,
    group: str | None,
    op: str,
    action: str,
    path: str,
    to: str | None = None,
    base: bytes | None,
    text: str | None,
    proposed_by: str,
    provenance: str | None,
    session: str | None,
) -> Proposal:
    """A proposal not written yet (``base``: the bytes of the file the proposer saw, None for none)."""
    proposed_by = redact(proposed_by)[0]  # front matter: an author's name never carries a credential
    return Proposal(
        proposal_id,
        group or proposal_id,
        op,
        action,
        path,
        to,
        digest(base),
        text if action == "write" else None,
        proposed_by,
        provenance,
        session,
        timestamp(),
        file_for(path, proposal_id),
    )


def write(
    engine: WriteEngine,
    proposal: Proposal,
    *,
    trailers: Mapping[str, str] | None = None,
    replacing: Proposal | None = None,
) -> Proposal:
    """Write ``proposal`` to ``proposals/`` and commit it (or add it to the caller's batch).

    ``replacing``: a proposal of the same session for the same file, rewritten in place (an agent
    that edits what it proposed keeps one proposal, against the base it first saw).
    """
    if replacing is not None:
        proposal = replace(
            proposal,
            id=replacing.id,
            group=replacing.group,
            base=replacing.base,
            file=replacing.file,
            created=replacing.created,
            op=replacing.op if replacing.base == NO_BASE else proposal.op,
        )
    text = render(proposal)
    message = f"propose: {proposal.op} {label(proposal.path)}"
    keys = {**(trailers or {}), "Memfs-Op": "propose", "Memfs-Proposal": proposal.id}
    expect = engine.read_bytes(replacing.file) if replacing is not None else None
    engine.write(proposal.file, text, message=message, trailers=keys, create=replacing is None, expect=expect)
    _note(engine, proposal, engine.read_bytes(proposal.file))
    return proposal


def _signature(engine: WriteEngine, proposal_id: str, session: str | None, data: bytes) -> str:
    """What ``.memfs/proposed`` keeps for a proposal memfs wrote: a MAC over the vault, id, session and bytes."""
    payload = b"\0".join(
        [
            str(engine.root).encode("utf-8", "surrogateescape"),
            proposal_id.encode(),
            (session or "").encode("utf-8"),
            hashlib.sha256(data).digest(),
        ]
    )
    return hmac.new(index_key(), payload, hashlib.sha256).hexdigest()


def _record(engine: WriteEngine) -> dict[str, list[str]]:
    """``.memfs/proposed`` (empty when absent, unreadable or malformed: nothing is then anyone's own)."""
    try:
        raw = json.loads(_fs.read_file(engine.state_dir / _RECORD, limit=MAX_STATE_BYTES) or b"{}")
    except (ValueError, UnicodeDecodeError, OSError, FileTooLargeError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {
        k: v
        for k, v in raw.items()
        if isinstance(k, str) and isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v)
    }


def _note(engine: WriteEngine, proposal: Proposal, data: bytes) -> None:
    """Record that memfs wrote ``proposal`` (these bytes, for its session) here; entries of removed files go.

    Derived state, written without fsync: losing it only means the session no longer sees the
    proposal as its own (a person still reviews it).
    """
    record = {k: v for k, v in _record(engine).items() if os.path.lexists(engine.root / v[0])}
    record[proposal.id] = [proposal.file, _signature(engine, proposal.id, proposal.session, data)]
    folder = engine.state_dir
    with contextlib.suppress(OSError):
        _fs.make_folders(folder)
        tmp = folder / f"{_RECORD}.new"
        tmp.write_text(json.dumps(record), "utf-8")
        os.replace(tmp, folder / _RECORD)


def written_here(engine: WriteEngine, proposal: Proposal) -> bool:
    """True when memfs wrote ``proposal`` in this vault, for the session it names, exactly as it is now."""
    entry = _record(engine).get(proposal.id)
    if entry is None or entry[0] != proposal.file:
        return False
    try:
        data = engine.read_bytes(proposal.file)
    except (MemoryNotFoundError, FileTooLargeError, PathError):
        return False
    return hmac.compare_digest(entry[1], _signature(engine, proposal.id, proposal.session, data))


def origin(engine: WriteEngine, proposal: Proposal) -> str:
    """Where ``proposal`` came from, as this vault knows it: :data:`HERE`, :data:`BY_SYNC` or :data:`ELSEWHERE`.

    Not what its file says: a proposal is HERE only when memfs wrote it in this vault as it is;
    BY_SYNC when the commit that last changed its file came from a remote (a sync or a clone).
    """
    if written_here(engine, proposal):
        return HERE
    history = engine.history
    try:
        last = history.plumbing("rev-list", "-1", "HEAD", "--", proposal.file, check=False).strip()
        remote = history.plumbing("for-each-ref", "--format=%(objectname)", "refs/remotes/", check=False).split()
    except HistoryError:
        return ELSEWHERE
    if last and any(history.is_ancestor(last, tip) for tip in remote):
        return BY_SYNC
    return ELSEWHERE


def files(engine: WriteEngine) -> list[str]:
    """The vault paths of the Markdown files under ``proposals/`` (links and hidden names skipped)."""
    top = engine.root / PROPOSALS_DIR
    if not top.is_dir() or top.is_symlink():
        return []
    found = []
    for folder, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(folder, d)))
        for name in sorted(names):
            full = os.path.join(folder, name)
            if name.endswith(".md") and not name.startswith(".") and not os.path.islink(full):
                found.append(os.path.relpath(full, engine.root).replace(os.sep, "/"))
    return found


def read(engine: WriteEngine, file: str) -> Proposal:
    """The proposal in the vault file ``file``, every key checked.

    Raises:
        ProposalError: The file cannot be read or parsed, or a key is missing, unknown or unsafe
            (a path outside ``memories/``, an action memfs does not know, a malformed base).
    """
    try:
        doc = load_bytes(engine.read_bytes(file), path=file)
    except DocumentError as exc:
        raise ProposalError(file, exc.reason) from None
    except (FileTooLargeError, PathError, MemoryNotFoundError) as exc:
        raise ProposalError(file, str(exc)) from None
    meta = doc.metadata
    unknown = [key for key in meta if key not in _KEYS]
    if unknown:
        raise ProposalError(file, f"unknown key {unknown[0]!r}")
    proposal_id = _id(meta.get("proposal"), file, "proposal")
    group = _id(meta.get("group", proposal_id), file, "group")
    action = _text(meta.get("action"), file, "action")
    if action not in ACTIONS:
        raise ProposalError(file, f"action must be one of {', '.join(ACTIONS)}, not {action!r}")
    path = _memory(meta.get("path"), file, "path")
    to = _memory(meta.get("to"), file, "to") if action == "move" else None
    if action != "move" and meta.get("to") is not None:
        raise ProposalError(file, "only a move has a 'to' path")
    base = _text(meta.get("base"), file, "base")
    if base != NO_BASE and not _BASE.fullmatch(base):
        raise ProposalError(file, f"base must be 'none' or sha256:<64 hex digits>, not {base[:80]!r}")
    if action != "write" and base == NO_BASE:
        raise ProposalError(file, f"a {action} needs the base of the file it changes")
    optional = {key: _text(meta[key], file, key) for key in ("provenance", "session") if meta.get(key) is not None}
    return Proposal(
        proposal_id,
        group,
        _text(meta.get("op", action), file, "op"),
        action,
        path,
        to,
        base,
        doc.body if action == "write" else None,
        _text(meta.get("proposed_by", "unknown"), file, "proposed_by"),
        optional.get("provenance"),
        optional.get("session"),
        _text(meta.get("created", ""), file, "created"),
        file,
    )


def scan(engine: WriteEngine) -> tuple[list[Proposal], list[ProposalError]]:
    """Every proposal in the vault, oldest first, and the proposal files that cannot be used (with why)."""
    found, broken = [], []
    for file in files(engine):
        try:
            found.append(read(engine, file))
        except ProposalError as exc:
            broken.append(exc)
    return sorted(found, key=lambda p: (p.created, p.id)), broken


def pending(
    engine: WriteEngine, *, session: str | None = None, namespace: str | None = None, path: str | None = None
) -> list[Proposal]:
    """The readable proposals, oldest first: all, or those of a session, a namespace (and below), a memory."""
    return [p for p in scan(engine)[0] if _within(p, session, namespace) and (path is None or path in p.targets)]


def _within(proposal: Proposal, session: str | None, namespace: str | None, *, wholly: bool = False) -> bool:
    """Whether a proposal is of ``session`` and for ``namespace`` (and below); None: any.

    ``wholly``: every file it would change is in the namespace (a move out of it is not).
    """
    if session is not None and proposal.session != session:
        return False
    inside = [t.startswith(f"{MEMORIES_DIR}/{namespace}/") for t in (proposal.targets if wholly else [proposal.path])]
    return namespace is None or all(inside)


def own(engine: WriteEngine, session: str | None, path: str) -> Proposal | None:
    """The newest write ``session`` proposed here for the memory at ``path`` (None without a session).

    Only a proposal memfs wrote in this vault for that session counts (:func:`written_here`): one
    that merely says so (a remote's, a hand-made file) is never a session's own.
    """
    if not session:
        return None
    writes = [p for p in pending(engine, session=session, path=path) if p.action == "write" and p.path == path]
    writes = [p for p in writes if written_here(engine, p)]
    return writes[-1] if writes else None


def mine(engine: WriteEngine, session: str | None, namespace: str | None = None) -> list[Proposal]:
    """The proposals ``session`` made here (in ``namespace`` and below), oldest first; none without a session."""
    if not session:
        return []
    return [p for p in pending(engine, session=session, namespace=namespace) if written_here(engine, p)]


def current(engine: WriteEngine, path: str) -> bytes | None:
    """The bytes of the memory at ``path`` now (None: no file)."""
    try:
        return engine.read_bytes(path)
    except MemoryNotFoundError:
        return None


def stale(engine: WriteEngine, proposal: Proposal) -> bool:
    """True when the memory changed since it was proposed (accepting would overwrite that change)."""
    return digest(current(engine, proposal.path)) != proposal.base


def diff(engine: WriteEngine, proposal: Proposal) -> str:
    """A unified diff of what accepting ``proposal`` does to its memory, as the files are now."""
    before = current(engine, proposal.path)
    old = before.decode("utf-8", "replace") if before is not None else ""
    a, b = f"a/{label(proposal.path)}", f"b/{label(proposal.to or proposal.path)}"
    new_text = "" if proposal.action == "delete" else (proposal.text or "") if proposal.action == "write" else old
    if proposal.action == "move" and new_text == old:
        return f"rename {label(proposal.path)} -> {label(proposal.to or '')}\n"
    old_name = "/dev/null" if before is None else a
    new_name = "/dev/null" if proposal.action == "delete" else b
    lines = difflib.unified_diff(old.splitlines(keepends=True), new_text.splitlines(keepends=True), old_name, new_name)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def select(
    engine: WriteEngine,
    refs: Iterable[str] = (),
    *,
    every: bool = False,
    session: str | None = None,
    namespace: str | None = None,
) -> list[Proposal]:
    """The proposals named by ``refs`` (ids, or proposal file paths), with the rest of their groups.

    ``every`` takes all of them (within ``session`` and ``namespace`` when given).

    Raises:
        ProposalError: A ref names a proposal file that cannot be used.
        MemoryNotFoundError: A ref names no proposal, or nothing was named.
    """
    refs = list(refs)
    proposals, broken = scan(engine)
    if every:
        chosen = [p for p in proposals if _within(p, session, namespace)]
    else:
        if not refs:
            raise MemoryNotFoundError("name the proposals (their ids, from `memfs review`), or choose all of them")
        chosen = []
        for ref in refs:
            match = [p for p in proposals if ref in (p.id, p.file, p.file.removeprefix(PROPOSALS_DIR + "/"))]
            if not match:
                bad = [e for e in broken if ref in (e.path, e.path.removeprefix(PROPOSALS_DIR + "/"))]
                if bad:
                    raise bad[0]
                raise MemoryNotFoundError(f"no proposal {ref!r}; `memfs review` lists them")
            chosen += match
    groups = {p.group for p in chosen}
    taken = [p for p in proposals if p.group in groups]
    beyond = [p for p in taken if not _within(p, session, namespace, wholly=True)]
    if beyond:  # a group reaching past what was asked for (a hand-made or received file can claim any group)
        raise ProposalError(
            beyond[0].file,
            f"it is in the same group as a proposal chosen, but outside "
            f"{'that session' if session else 'that namespace'}; "
            "accept or reject the group by its ids",
        )
    return taken


def _text(value: object, file: str, key: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 1000:
        raise ProposalError(file, f"{key} must be a non-empty string")
    return value


def _id(value: object, file: str, key: str) -> str:
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise ProposalError(file, f"{key} must be a proposal id (prop_ and 26 letters and digits)")
    return value


def _memory(value: object, file: str, key: str) -> str:
    """A vault path under ``memories/``, in a namespace, of a Markdown file (checked as outside input)."""
    raw = _text(value, file, key)
    if not raw.startswith(MEMORIES_DIR + "/"):
        raise ProposalError(file, f"{key} must be a memory's vault path (memories/...), not {raw[:200]!r}")
    try:
        rel = f"{MEMORIES_DIR}/" + clean_memory_path(raw.removeprefix(MEMORIES_DIR + "/"))
    except PathError as exc:
        raise ProposalError(file, f"{key} is not a safe memory path: {exc}") from None
    if rel != raw or not split_memory_path(rel)[0]:
        raise ProposalError(file, f"{key} must be a memory's clean vault path in a namespace folder")
    return rel
