"""Git history for a vault: log, show, diff, status, what changed, and the doors to commits and remotes.

This is the only module that imports :mod:`git` (GitPython), and only to find the repository
holding a vault (or make one); every command runs through :mod:`memfs.gitrun`, in the safe
environment of :mod:`memfs.gitenv`. Commits are written by :class:`memfs.commits.Commits`
and a sync's fetches and pushes go through :class:`memfs.gitremote.Remotes`; :class:`GitHistory`
holds both and answers the questions a vault asks of its history.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import git

from . import gitrun
from ._fs import read_vault_file
from .commits import DEFAULT_AGENT as DEFAULT_AGENT
from .commits import DEFAULT_PERSON as DEFAULT_PERSON
from .commits import Commits, to_lf
from .commits import Identity as Identity
from .commits import configured_identity as configured_identity
from .credentials import hide_url_credentials
from .errors import HistoryError, MemfsError, RevisionNotFoundError, ShallowHistoryError
from .gitenv import (
    PRIVATE_REPOSITORY,
    GitEnvironment,
    check_git_version,
    check_ownership,
    fixed_overrides,
    make_git_private,
)
from .gitremote import Remotes
from .gitstore import GITLINK_MODE, TREE_MODE, GitIndex, ObjectReader, ObjectWriter, askable, parse_header

log = logging.getLogger(__name__)

_TRAILER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*): (.*)$")
_FEW_PATHS = 16  # changed(): up to this many paths are compared with HEAD by memfs before asking git
_FAST_COMPARE_BYTES = 8 << 20  # ...each read whole for that only up to this size

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
        self._commits = Commits(
            self._git, self._env, prefix=self.prefix, git_dir=Path(self.repo.git_dir), state_dir=state_dir
        )
        self.remote = Remotes(self._git)  # a sync's fetches and pushes

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
        """Stop memfs's own git processes and let go of the repository."""
        self._commits.close()
        self.repo.close()

    @property
    def git_dir(self) -> Path:
        """The repository's ``.git`` folder."""
        return Path(self.repo.git_dir)

    @property
    def git_index(self) -> GitIndex:
        """Git's own index, which every commit keeps in step (:class:`~memfs.gitstore.GitIndex`)."""
        return self._commits.git_index

    # -- the state a person left the repository in -------------------------------------

    def operation_in_progress(self) -> tuple[str, str] | None:
        """The git operation a person started here and has not finished, or None (see :class:`Commits`)."""
        return self._commits.operation_in_progress()

    def check_can_commit(self) -> None:
        """Raise RepositoryStateError while a merge, rebase, cherry-pick, revert or bisect is in progress."""
        self._commits.check_can_commit()

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
        return to_lf(data) if self._commits.converts_crlf() else data

    def converts_line_endings(self) -> bool:
        """Whether git may change line endings between a commit and the files (``core.autocrlf``, attributes).

        When it does not, the bytes of a commit are the file's bytes, and putting an old version
        back (undo, restore) writes exactly them.
        """
        return (
            self._commits.converts_crlf()
            or (self.top / ".gitattributes").exists()
            or (Path(self.repo.common_dir) / "info" / "attributes").exists()
        )

    def configured_identity(self) -> Identity | None:
        """The ``user.name`` and ``user.email`` git would use here now (repository, then global), if both are set.

        Read afresh on every call, so a ``git config user.name`` run while a vault is open counts
        from the next commit on.
        """
        return configured_identity(self.vault_root)

    # -- committing (memfs.commits) -----------------------------------------------

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
        """Commit exactly ``contents`` (vault path -> bytes, None: removed); see :meth:`Commits.commit`."""
        return self._commits.commit(
            contents,
            message,
            author=author,
            committer=committer,
            trailers=trailers,
            durable=durable,
            merge=merge,
            base=base,
            also=also,
        )

    def index_as_at_head(self, rels: Iterable[str]) -> None:
        """Put ``rels`` (vault paths) in git's index as HEAD has them; never raises."""
        self._commits.index_as_at_head(rels)

    def head(self) -> str | None:
        """The commit HEAD names, or None in a repository with no commit yet."""
        return self._commits.head()

    def head_and_tree(self) -> tuple[str | None, str | None]:
        """HEAD's commit and tree, read together by one git command; (None, None) before the first commit."""
        return self._commits.head_and_tree()

    def head_guess(self) -> tuple[str | None, str | None]:
        """HEAD and its tree as this process's last commit left them, else as git says now (never trusted)."""
        return self._commits.head_guess()

    def bytes_at(self, path: str, rev: str | None) -> bytes | None:
        """The bytes of ``path`` (vault-relative) at ``rev``; None if it did not exist there (or no rev)."""
        if rev is None:
            return None
        try:
            return self.show(path, rev)
        except RevisionNotFoundError:
            return None

    def is_ancestor(self, ancestor: str | None, descendant: str | None) -> bool:
        """True when ``ancestor`` is ``descendant`` or in its history (None, no commit, is in every one)."""
        return self._commits.is_ancestor(ancestor, descendant)

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
        if self._commits.head_and_tree()[0] is None:
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
        for chunk in gitrun.chunks(targets):
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
            _, root = self._commits.head_and_tree()
            paths = [p for p in paths if not self._as_at_head(p, root)]
            if not paths:
                return []
        if len(paths) > gitrun.CHUNK:
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
        entry = self._commits.entry_at(root, self.prefix + rel)
        try:
            read = read_vault_file(self.vault_root, rel, limit=_FAST_COMPARE_BYTES)
        except (OSError, MemfsError):  # a link on the way, too large, unreadable
            return False
        if read is None:
            return entry is None and not os.path.lexists(self.vault_root / rel)
        data, mode = read
        if entry is None or entry[0] != b"100644" or mode & 0o111 or self._commits.object_format not in ("", "sha1"):
            return False
        if self._commits.converts_crlf():
            data = to_lf(data)
        digest = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
        digest.update(data)
        return digest.hexdigest() == entry[1]

    # -- remotes (memfs.gitremote) ----------------------------------------------------

    @staticmethod
    def clone(url: str, folder: Path) -> None:
        """``git clone url folder`` (no hooks run, no checkout filters); SyncError if it fails."""
        Remotes.clone(url, folder)

    def remotes(self) -> list[str]:
        """The names of the configured remotes."""
        return self.remote.names()

    def remote_url(self, remote: str) -> str:
        """The URL ``remote`` fetches from (``git remote get-url``); empty if it has none."""
        return self.remote.url(remote)

    # -- more of the history ------------------------------------------------------------

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
        found = self._commits.lookup(f"{rev}^{{tree}}")
        tree = found[0] if found is not None and found[1] == "tree" else None
        entry = self._commits.entry_at(tree, self.prefix + rel) if tree is not None else None
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
        return self._commits.object_format

    def common_dir(self) -> Path:
        """The git folder shared by every worktree (``.git``, or the main one's for a linked worktree)."""
        return (self.top / self._git("rev-parse", "--git-common-dir").strip()).resolve()

    def object_reader(self) -> ObjectReader:
        """Raw objects through one ``git cat-file --batch``; use it in a ``with`` block."""
        return ObjectReader(self.top, self._env.overrides())

    def forget_private_index(self, drop: re.Pattern[str] | None = None) -> None:
        """After history was rewritten: what commits kept starts again from HEAD (see :class:`Commits`)."""
        self._commits.forget_private_index(drop)

    def object_writer(self, *, dry: bool = False) -> ObjectWriter:
        """Something that stores raw objects in one pack (``dry``: only computes their ids)."""
        return ObjectWriter(self.top, self.object_format(), dry=dry, env=self._env.overrides())


def _is_ignored(top: Path, path: Path) -> bool:
    """True if git in the repository at ``top`` ignores ``path``."""
    return gitrun.run(["check-ignore", "-q", str(path)], cwd=top, overrides=fixed_overrides()).returncode == 0


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
