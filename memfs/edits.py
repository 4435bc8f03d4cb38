"""People's edits: files changed outside memfs, which are committed as the person's, or held back.

A person's edit is a file under ``memories/`` or ``sessions/`` that differs from the last commit and
is not memfs's own uncommitted write (``.memfs/own``, kept by :class:`~memfs.appends.Appends`). Some
are held back: a file holding git's conflict markers, every edit while a person's merge, rebase,
cherry-pick, revert or bisect is in progress, and a file an edit gave a credential. Those are listed
in ``.memfs/held`` and looked at again by every later call; the credentials the last call held back
are in :attr:`Edits.held_secrets`. The :class:`~memfs.engine.WriteEngine` commits what
:meth:`Edits.ready` says, under the person's name.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from . import _fs
from .appends import Appends
from .credentials import find_secrets, secret_advice
from .errors import FileTooLargeError, LinkError, MemfsError
from .history import GitHistory, has_conflict_markers
from .layout import CONTENT_DIRS, is_attachment, is_content, is_transcript
from .statefiles import _stat, holding, read_limit, read_regular, read_state

log = logging.getLogger(__name__)


class Edits:
    """The edits people made to one vault's files outside memfs, and those held back (``.memfs/held``).

    Args:
        root: The vault folder.
        state_dir: Its ``.memfs/`` folder.
        history: The vault's git history (what differs from the last commit).
        lock: The vault lock (the engine's).
        appends: memfs's own transcript writes, which are not a person's edit.
        read_text: A vault file's text through the path gate, or None: ``read_text(root, rel)``.
    """

    def __init__(
        self,
        root: Path,
        state_dir: Path,
        history: GitHistory,
        lock: _fs.VaultLock,
        appends: Appends,
        *,
        read_text: Callable[[Path, str], str | None],
    ) -> None:
        self.root = root
        self.history = history
        self._lock = lock
        self.appends = appends
        self.read_text = read_text
        self._held_file = state_dir / "held"
        #: The edits the last :meth:`ready` left uncommitted for a credential: (kind, line) each.
        self.held_secrets: dict[str, list[tuple[str, int]]] = {}

    def ready(self, paths: Iterable[str] | None, allow_secrets: Iterable[str] = ()) -> list[str]:
        """Those of ``paths`` (None: every edit :meth:`outside_edits` lists) to commit now as the person's edit.

        Files memfs itself changed and has not committed yet (a session's pending messages) are
        not a person's edit, unless the file changed again since memfs wrote it; an interrupted
        append is cut off first (it is no one's edit). Links and files over the size memfs commits
        are left out with a warning; files holding git's conflict markers, every edit while a
        person's operation is in progress, and files an edit gave a credential (unless named in
        ``allow_secrets``) are held back (:meth:`_hold_back`). The caller holds the vault lock.
        """
        told = self._held_back()  # held by an earlier call: said then (and `memfs doctor` lists it)
        if paths is None:
            for rel in filter(is_transcript, self.appends.own_uncommitted()):  # an interrupted append is no one's edit
                self.appends.repair_tail(rel)
            changed = self.outside_edits()
        else:
            candidates = sorted(set(paths) | told)
            for rel in filter(is_transcript, candidates):  # an interrupted append is no one's edit
                self.appends.repair_tail(rel)
            changed = self.history.changed(candidates) if candidates else []
            own = self.appends.own_uncommitted()
            changed = [p for p in changed if p not in own or own[p] != _stat(self.root / p)]
        links = [p for p in changed if _fs.linked(self.root, p)]
        for rel in links:
            log.warning("not committing %s: a symbolic link, which memfs never follows", rel)
        changed = [p for p in changed if p not in links]
        too_big = [p for p in changed if _size(self.root / p) > read_limit(p)]
        for rel in too_big:
            log.warning(
                "not committing %s: larger than the %d bytes memfs commits of such a file", rel, read_limit(rel)
            )
        changed = [p for p in changed if p not in too_big]
        return self._hold_back(changed, set(allow_secrets), told)

    def outside_edits(self) -> list[str]:
        """People's edits not committed yet, as vault paths.

        The Markdown files under ``memories/`` and ``sessions/`` that differ from the last commit,
        less those memfs wrote itself and will commit (a session's pending messages) unless they
        changed again since.
        """
        with holding(self._lock):
            changed = [
                p
                for p in self.history.changed(list(CONTENT_DIRS))
                if (is_content(p) or is_attachment(p)) and not _fs.linked(self.root, p)
            ]
            own = self.appends.own_uncommitted()
            return [p for p in changed if p not in own or own[p] != _stat(self.root / p)]

    def _hold_back(self, changed: list[str], allow_secrets: set[str], told: set[str]) -> list[str]:
        """Those of ``changed`` (a person's edits) that may be committed now.

        A file holding git's conflict markers is never committed as a person's edit, and nothing
        is while a merge, rebase, cherry-pick, revert or bisect is in progress (memfs's commit
        would land in the middle of it and touch git's conflict state). A file the edit gave a
        credential is not committed either (git keeps every version for good; once there it takes
        a purge), unless it is in ``allow_secrets``. Those files are kept in ``.memfs/held`` and
        looked at again by every later call, so an edit made meanwhile is committed once the
        conflict, the operation or the credential is gone, even if it does not change again. ``told``:
        what ``.memfs/held`` holds now (read once by :meth:`ready`).
        """
        marked = [rel for rel in changed if self._has_conflict_markers(rel)]
        for rel in marked:
            (log.debug if rel in told else log.warning)(
                "not committing %s: it holds git's conflict markers; resolve the conflict first", rel
            )
        secret = {}
        for rel in changed:
            found = [] if rel in marked or rel in allow_secrets else self.new_secrets(rel)
            if found:
                secret[rel] = found
                (log.debug if rel in told else log.warning)("not committing %s: %s", rel, secret_advice(rel, found))
        self.held_secrets = secret
        marked += list(secret)
        ready = [rel for rel in changed if rel not in marked]
        busy = self.history.operation_in_progress()
        if busy is not None and ready:
            log.warning("not committing %d files changed outside memfs: %s", len(ready), busy[1])
        held = sorted(marked + (ready if busy is not None else []))
        if held != sorted(told):
            if held:
                tmp = self._held_file.with_name("held.new")
                _fs.write_private(tmp, "".join(f"{rel}\n" for rel in held).encode("utf-8"))
                os.replace(tmp, self._held_file)
            else:
                self._held_file.unlink(missing_ok=True)
        return [] if busy is not None else ready

    def new_secrets(self, rel: str) -> list[tuple[str, int]]:
        """The credentials the file at ``rel`` holds that its last commit does not: (kind, line).

        Line 0 stands for the file's name (a new file named after a token). A line holding
        ``memfs:allow-secret`` is skipped (the person's deliberate choice), and so is a credential
        the last commit already has (committed deliberately before, with ``allow_secrets``): only
        what an edit brings in is reported.
        """
        text = self.read_text(self.root, rel)
        named = find_secrets(rel)
        findings = [] if text is None else find_secrets(text, allow_marked=True)
        if not findings and not named:
            return []
        try:
            committed: str | None = self.history.show(rel, "HEAD").decode("utf-8", "replace")
        except MemfsError:  # a new file, or no commit yet
            committed = None
        found = [(f.kind, 0) for f in named] if committed is None else []
        text, committed = text or "", committed or ""
        return found + [(f.kind, f.line(text)) for f in findings if text[f.start : f.end] not in committed]

    def _has_conflict_markers(self, rel: str) -> bool:
        """True if the file holds git's conflict markers; False for a link or one too large (never committed)."""
        try:
            data = read_regular(self.root, rel)
        except (OSError, LinkError, FileTooLargeError):
            return False
        return data is not None and has_conflict_markers(data)

    def _held_back(self) -> set[str]:
        try:
            return set(filter(None, (read_state(self._held_file) or b"").decode("utf-8").splitlines()))
        except UnicodeDecodeError:
            return set()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
