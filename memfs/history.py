"""Git history for a vault: commits with authors and trailers, log, show, diff.

This is the only module that imports :mod:`git` (GitPython). Commits go through git's
plumbing (``update-index``, ``write-tree``, ``commit-tree``, ``update-ref``) with an index
file of memfs's own under ``.memfs/``, so a commit costs what the changed files cost, not
what the repository costs, and it never sweeps up anything else a person staged in a larger
repository that holds the vault. Identity is always passed explicitly, so commits work on a
machine with no ``user.name`` configured and never change any git config.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import git

from .errors import GitLockError, HistoryError, RevisionNotFoundError
from .layout import one_line

log = logging.getLogger(__name__)

ZERO_SHA = "0" * 40
_LOCK_MESSAGE = re.compile(r"Unable to create '([^']+\.lock)': File exists")
_TRAILER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*): (.*)$")
_CHUNK = 500  # paths per git command line


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
        status: ``A`` added, ``M`` modified, ``D`` deleted, ``R`` renamed (file histories).
        old_path: The path before a rename.
    """

    sha: str
    author: Identity
    date: str
    subject: str
    trailers: dict[str, str] = field(default_factory=dict)
    path: str | None = None
    status: str | None = None
    old_path: str | None = None

    @property
    def short(self) -> str:
        """The abbreviated commit id."""
        return self.sha[:10]


class GitHistory:
    """The git repository behind a vault (its own, or a larger one that contains it)."""

    def __init__(self, vault_root: Path, state_dir: Path, *, lock_timeout: float = 10.0) -> None:
        self.vault_root = vault_root
        self._index_file = state_dir / "git-index"
        self._index_head_file = state_dir / "git-index.head"
        self._lagging = state_dir / "git-index.lagging"
        self._lock_timeout = lock_timeout
        self.repo = self._open_or_init(vault_root)
        top = Path(self.repo.working_tree_dir or vault_root).resolve()
        rel = vault_root.resolve().relative_to(top).as_posix()
        self.top = top
        self.prefix = "" if rel == "." else rel + "/"

    @staticmethod
    def _open_or_init(root: Path) -> git.Repo:
        try:
            repo = git.Repo(root, search_parent_directories=True)
        except git.InvalidGitRepositoryError:
            repo = None
        except git.NoSuchPathError as exc:
            raise HistoryError(f"{root}: folder does not exist") from exc
        if repo is not None and repo.working_tree_dir is not None:
            top = Path(repo.working_tree_dir).resolve()
            if top == root.resolve() or not _is_ignored(repo, root):
                return repo
            repo.close()  # an ignored folder of another repo gets a repo of its own
        try:
            return git.Repo.init(root, initial_branch="main")
        except git.GitCommandError as exc:
            raise HistoryError(f"{root}: git init failed: {_stderr(exc)}") from exc

    def close(self) -> None:
        """Stop GitPython's helper processes."""
        self.repo.close()

    @property
    def git_dir(self) -> Path:
        """The repository's ``.git`` folder."""
        return Path(self.repo.git_dir)

    def configured_identity(self) -> Identity | None:
        """The ``user.name`` and ``user.email`` git would use here (repository, then global), if both are set."""
        try:
            reader = self.repo.config_reader()
            name = reader.get_value("user", "name", "")
            email = reader.get_value("user", "email", "")
        except Exception:  # no config, unreadable config: the caller falls back, never fails
            return None
        if name and email:
            return Identity(str(name), str(email))
        return None

    # -- writing ---------------------------------------------------------------

    def commit(
        self,
        paths: Iterable[str],
        message: str,
        *,
        author: Identity,
        committer: Identity | None = None,
        trailers: dict[str, str] | None = None,
    ) -> str | None:
        """Commit the current state of ``paths`` (vault-relative; missing files are removed).

        Returns:
            The new commit id, or None when the files already match HEAD.
        """
        rel = sorted({self.prefix + p for p in paths})
        if not rel:
            return None
        full = message.rstrip() + "\n"
        if trailers:
            full += "\n" + "".join(f"{k}: {one_line(v)}\n" for k, v in trailers.items())
        env = _identity_env(author, committer or author)
        private = {"GIT_INDEX_FILE": str(self._index_file)}
        for attempt in range(3):
            head, head_tree = self._head()
            if not self._index_file.exists() or self._read_index_head() != head:
                self._git("read-tree", *([head] if head else ["--empty"]), env=private)
            for chunk in _chunks(rel):
                self._git("update-index", "--add", "--remove", "--", *chunk, env=private)
            tree = self._git("write-tree", env=private).strip()
            if tree == head_tree:
                self._write_index_head(head)
                self._sync_worktree_index(rel)
                return None
            parents = ["-p", head] if head else []
            sha = self._git("commit-tree", "--no-gpg-sign", tree, *parents, "-F", "-",
                            env=env, input=full).strip()  # fmt: skip
            try:
                self._git("update-ref", "-m", f"memfs: {message.splitlines()[0]}", "HEAD", sha,
                          head or ZERO_SHA)  # fmt: skip
            except HistoryError:
                if attempt == 2:
                    raise
                log.info("HEAD moved while committing; retrying")
                self._index_file.unlink(missing_ok=True)
                continue
            self._write_index_head(sha)
            self._sync_worktree_index(rel)
            return sha
        return None  # pragma: no cover - the loop returns or raises

    def _sync_worktree_index(self, rel: Sequence[str]) -> None:
        # Keep the person's own index in step, so `git status` stays clean after our commit.
        # If git's index is locked (a person's git command), try again after the next commit.
        try:
            behind = set(self._lagging.read_text("utf-8").splitlines())
        except FileNotFoundError:
            behind = set()
        todo = sorted(behind.union(rel) - {""})
        try:
            for chunk in _chunks(todo):
                self._git("update-index", "--add", "--remove", "--", *chunk)
        except HistoryError as exc:
            log.warning("could not refresh git's index after a commit (will retry): %s", exc)
            self._lagging.write_text("".join(f"{p}\n" for p in todo), "utf-8")
            return
        if behind:
            self._lagging.unlink(missing_ok=True)

    def _head(self) -> tuple[str | None, str | None]:
        out = self._git("rev-parse", "HEAD^{commit}", "HEAD^{tree}", check=False)
        lines = out.split()
        return (lines[0], lines[1]) if len(lines) == 2 else (None, None)

    def _read_index_head(self) -> str | None:
        try:
            return self._index_head_file.read_text().strip() or None
        except FileNotFoundError:
            return None

    def _write_index_head(self, sha: str | None) -> None:
        self._index_head_file.write_text(sha or "")

    # -- reading ---------------------------------------------------------------

    def log(
        self,
        path: str | None = None,
        *,
        follow: bool = True,
        limit: int | None = None,
        author: str | None = None,
        since: str | None = None,
        grep: str | None = None,
    ) -> list[Revision]:
        """The commits that touched ``path`` (followed across renames), or the whole vault."""
        if self._head()[0] is None:
            return []
        args = ["-c", "core.quotepath=off", "log", "--format=%x1e%H%x1f%an%x1f%ae%x1f%aI%x1f%B%x1f",
                "--name-status", "--no-renames" if path is None else "-M"]  # fmt: skip
        if path is not None and follow:
            args.append("--follow")
        if limit is not None:
            args.append(f"-n{int(limit)}")
        if author:
            args.append(f"--author={author}")
        if since:
            args.append(f"--since={since}")
        if grep:
            args.append(f"--grep={grep}")
        target = self.prefix + path if path is not None else (self.prefix or ".")
        out = self._git(*args, "--", target)
        return [rev for rec in out.split("\x1e") if rec.strip() for rev in [self._parse(rec)]]

    def _parse(self, record: str) -> Revision:
        sha, name, email, date, body, changes = record.split("\x1f", 5)
        lines = body.strip().splitlines()
        trailers = {}
        for line in reversed(lines):
            match = _TRAILER.match(line)
            if not match:
                break
            trailers[match.group(1)] = match.group(2)
        status = path = old = None
        for line in changes.strip().splitlines():
            cols = line.split("\t")
            status, path = cols[0][:1], cols[-1]
            old = cols[1] if len(cols) == 3 else None
            break
        return Revision(
            sha=sha.strip(), author=Identity(name or "?", email or "?"), date=date,
            subject=lines[0] if lines else "", trailers=dict(reversed(trailers.items())),
            path=self._unprefix(path), status=status, old_path=self._unprefix(old),
        )  # fmt: skip

    def _unprefix(self, path: str | None) -> str | None:
        if path is None:
            return None
        if path.startswith('"'):
            path = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        return path[len(self.prefix) :] if path.startswith(self.prefix) else path

    def files_changed(self, sha: str) -> list[tuple[str, str]]:
        """``(status, vault-relative path)`` for each file commit ``sha`` changed (renames split)."""
        out = self._git("-c", "core.quotepath=off", "diff-tree", "--no-commit-id", "--name-status", "-r",
                        "--no-renames", "--root", sha, "--", self.prefix or ".")  # fmt: skip
        changes = []
        for line in out.splitlines():
            status, _, path = line.partition("\t")
            rel = self._unprefix(path)
            if rel is not None:
                changes.append((status[:1], rel))
        return changes

    def resolve(self, rev: str) -> str:
        """The full commit id of ``rev`` (a sha, a prefix, ``HEAD~2``, a branch...)."""
        if not isinstance(rev, str) or not rev or rev.startswith("-") or "\x00" in rev:
            raise RevisionNotFoundError(f"{rev!r} is not a revision")
        out = self._git("rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}", check=False)
        if not out.strip():
            raise RevisionNotFoundError(f"no revision {rev!r} in this vault's history")
        return out.strip()

    def show(self, path: str, rev: str) -> bytes:
        """The bytes of ``path`` (vault-relative) at ``rev``."""
        sha = self.resolve(rev)
        try:
            data = self.repo.git.execute(
                ["git", "cat-file", "blob", f"{sha}:{self.prefix}{path}"], stdout_as_string=False,
                strip_newline_in_stdout=False,
            )
        except git.GitCommandError as exc:
            raise RevisionNotFoundError(f"{path} did not exist at {rev}") from exc
        assert isinstance(data, bytes)
        return data

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
        return self._git("-c", "core.quotepath=off", "diff", "--no-color", "-M", *revs, "--", target)

    def status(self, paths: Sequence[str] | None = None) -> list[str]:
        """``git status --porcelain`` lines for the vault (or some of its paths)."""
        targets = [self.prefix + p for p in paths] if paths is not None else [self.prefix or "."]
        lines = []
        for chunk in _chunks(targets):
            out = self._git("-c", "core.quotepath=off", "status", "--porcelain", "--no-renames",
                            "--untracked-files=all", "--", *chunk, env={"GIT_OPTIONAL_LOCKS": "0"})  # fmt: skip
            lines += [line for line in out.splitlines() if line.strip()]
        return lines

    def changed(self, paths: Sequence[str]) -> list[str]:
        """Which of ``paths`` (vault-relative) differ from the last commit."""
        return sorted({self._unprefix(line[3:]) or "" for line in self.status(paths)} - {""})

    # -- rewriting history (memfs.purge only) ------------------------------------------
    # A purge is the one place memfs rewrites history. These give it git's plumbing and the
    # object store; everything else uses the methods above.

    def plumbing(self, *args: str, input: str | None = None, env: dict[str, str] | None = None,
                 check: bool = True) -> str:  # fmt: skip
        """Run a git command in the repository and return its output (for :mod:`memfs.purge`)."""
        return self._git(*args, env=env, input=input, check=check)

    def object_format(self) -> str:
        """The repository's object format: ``sha1`` or ``sha256``."""
        return self._git("rev-parse", "--show-object-format", check=False).strip() or "sha1"

    def common_dir(self) -> Path:
        """The git folder shared by every worktree (``.git``, or the main one's for a linked worktree)."""
        return (self.top / self._git("rev-parse", "--git-common-dir").strip()).resolve()

    def object_reader(self) -> ObjectReader:
        """Raw objects through one ``git cat-file --batch``; use it in a ``with`` block."""
        return ObjectReader(self.top)

    def object_writer(self, *, dry: bool = False) -> ObjectWriter:
        """Something that stores raw objects in one pack (``dry``: only computes their ids)."""
        return ObjectWriter(self.top, self.object_format(), dry=dry)

    def forget_private_index(self, drop: re.Pattern[str] | None = None) -> None:
        """After history was rewritten: memfs's private index starts again from HEAD at the next commit.

        Repository paths git's own index lags on (noted when git's index was locked) that
        ``drop`` matches are forgotten rather than caught up at the next commit.
        """
        for leftover in (self._index_file, self._index_head_file):
            leftover.unlink(missing_ok=True)
        try:
            lagging = self._lagging.read_text("utf-8").splitlines()
        except FileNotFoundError:
            return
        kept = [p for p in lagging if p and not (drop and drop.search(p))]
        if len(kept) != len(lagging):
            self._lagging.write_text("".join(f"{p}\n" for p in kept), "utf-8")

    # -- plumbing --------------------------------------------------------------

    def _git(self, *args: str, env: dict[str, str] | None = None, input: str | None = None,
             check: bool = True) -> str:  # fmt: skip
        deadline = time.monotonic() + self._lock_timeout
        while True:
            try:
                return self._run(args, env, input)
            except git.GitCommandError as exc:
                err = _stderr(exc)
                lock = _LOCK_MESSAGE.search(err)
                if lock is None:
                    if not check:
                        return ""
                    raise HistoryError(f"git {args[0]} failed: {err}") from exc
                if self._clear_if_stale(Path(lock.group(1))):
                    continue
                if time.monotonic() > deadline:
                    raise GitLockError(
                        f"git lock file {lock.group(1)} is held. If no git command is running on "
                        f"this repository, remove that file and try again."
                    ) from exc
                time.sleep(0.05)

    def _run(self, args: Sequence[str], env: dict[str, str] | None, input: str | None) -> str:
        if input is None:
            out = self.repo.git.execute(["git", *args], env=env, with_extended_output=False)
            return str(out)
        import subprocess  # GitPython's execute takes no text for stdin

        proc = subprocess.run(
            ["git", *args], input=input.encode("utf-8"), capture_output=True,
            cwd=self.top, env={**os.environ, **(env or {})}, check=False,
        )  # fmt: skip
        if proc.returncode:
            raise git.GitCommandError(["git", *args], proc.returncode, proc.stderr)
        return proc.stdout.decode("utf-8")

    def _clear_if_stale(self, lock: Path, *, min_age: float = 10.0) -> bool:
        """Remove a git lock file left by a killed process; never one a live git holds."""
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            return True  # gone by itself: just retry
        if age < min_age or not Path("/proc").is_dir() or _live_git_in(self.top):
            return False
        log.warning("removing stale git lock %s (%.0f s old, no git process running)", lock, age)
        lock.unlink(missing_ok=True)
        return True


class ObjectReader:
    """Raw git objects through one long-running ``git cat-file --batch`` (replace refs ignored)."""

    def __init__(self, top: Path) -> None:
        import subprocess

        self._proc = subprocess.Popen(
            ["git", "cat-file", "--batch"], cwd=top, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env={**os.environ, "GIT_NO_REPLACE_OBJECTS": "1"},
        )  # fmt: skip
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._in, self._out = self._proc.stdin, self._proc.stdout

    def read(self, oid: str) -> tuple[str, bytes]:
        """``(type, raw content)`` of the object ``oid``; HistoryError if it is not in the repository."""
        self._in.write(oid.encode("ascii") + b"\n")
        self._in.flush()
        header = self._out.readline().split()
        if len(header) != 3:
            raise HistoryError(f"git object {oid} is missing from the repository")
        data = self._out.read(int(header[2]))
        self._out.read(1)  # the newline after each object
        return header[1].decode("ascii"), data

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the ``git cat-file`` process."""
        with contextlib.suppress(OSError):
            self._in.close()
        self._proc.wait()
        self._out.close()


class ObjectWriter:
    """Stores raw objects in a repository: gathered into one pack that ``git index-pack`` indexes.

    One pack instead of a loose file per object: a rewrite makes thousands of objects, and
    creating (then, at the next ``gc``, deleting) that many files costs more than the rewrite.
    Objects written are in the repository once :meth:`finish` returns.
    """

    _TYPES = {"commit": 1, "tree": 2, "blob": 3, "tag": 4}

    def __init__(self, top: Path, object_format: str, *, dry: bool = False) -> None:
        self.top = top
        self.algorithm = "sha256" if object_format == "sha256" else "sha1"
        self.dry = dry
        self.written = 0
        self._ids: set[str] = set()
        self._spool: IO[bytes] | None = None

    def __enter__(self) -> ObjectWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Drop what was not finished (nothing reaches the repository)."""
        spool, self._spool = self._spool, None
        if spool is not None:
            spool.close()

    def id_of(self, kind: str, data: bytes) -> str:
        """The id git gives an object of ``kind`` with this content."""
        import hashlib

        return hashlib.new(self.algorithm, b"%s %d\0" % (kind.encode("ascii"), len(data)) + data).hexdigest()

    def write(self, kind: str, data: bytes) -> str:
        """Add an object to the pack (unless dry) and return its id."""
        import zlib

        oid = self.id_of(kind, data)
        if self.dry or oid in self._ids:
            return oid
        if self._spool is None:
            import tempfile

            self._spool = tempfile.TemporaryFile()
        self._ids.add(oid)
        size, first = len(data), self._TYPES[kind] << 4
        header = bytearray([first | (size & 0x0F)])
        size >>= 4
        while size:
            header[-1] |= 0x80
            header.append(size & 0x7F)
            size >>= 7
        self._spool.write(bytes(header) + zlib.compress(data, 1))
        self.written += 1
        return oid

    def finish(self) -> None:
        """Index the pack into the repository (``git index-pack --stdin``); nothing to do when dry or empty."""
        import hashlib
        import struct
        import subprocess
        import tempfile

        spool, self._spool = self._spool, None
        if spool is None:
            return
        with spool, tempfile.TemporaryFile() as errors:
            spool.seek(0)
            proc = subprocess.Popen(["git", "index-pack", "--stdin"], cwd=self.top, stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=errors)  # fmt: skip
            assert proc.stdin is not None
            digest = hashlib.new(self.algorithm)
            try:
                for chunk in (b"PACK" + struct.pack(">II", 2, self.written), *iter(lambda: spool.read(1 << 20), b"")):
                    digest.update(chunk)
                    proc.stdin.write(chunk)
                proc.stdin.write(digest.digest())
                proc.stdin.close()
            except BrokenPipeError:
                pass
            if proc.wait():
                errors.seek(0)
                raise HistoryError(f"git index-pack failed: {errors.read().decode('utf-8', 'replace').strip()}")


def _is_ignored(repo: git.Repo, path: Path) -> bool:
    try:
        repo.git.check_ignore("-q", str(path))
    except git.GitCommandError:
        return False
    return True


def _live_git_in(top: Path) -> bool:
    """True if a git process is running with its working folder inside ``top``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if (entry / "comm").read_text().strip() != "git":
                continue
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if cwd == top or top in cwd.parents:
            return True
    return False


def _identity_env(author: Identity, committer: Identity) -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email,
        "GIT_COMMITTER_NAME": committer.name, "GIT_COMMITTER_EMAIL": committer.email,
    }  # fmt: skip


def _chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for i in range(0, len(items), _CHUNK):
        yield items[i : i + _CHUNK]


def _stderr(exc: git.GitCommandError) -> str:
    err = exc.stderr if isinstance(exc.stderr, str) else (exc.stderr or b"").decode("utf-8", "replace")
    return " ".join(err.replace("stderr:", "").strip(" '\n").split()) or str(exc)
