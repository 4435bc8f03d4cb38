"""git's object store and refs, spoken to directly: what a commit writes, and the processes it keeps.

:mod:`memfs.commits` commits by writing git objects itself instead of running ``git add`` and
``git commit``; this module holds the parts of that which know git's formats, so that a commit
reads as what it does rather than how bytes are laid out:

- :class:`LooseObjects` writes a commit's new objects as loose objects and makes them durable
  together: every file is written first, then all of them are fsynced at once (the disk is waited
  for about once instead of once per object), and only then linked under their names, so git never
  sees half an object and HEAD never names one a crash could lose.
- :class:`GrowingBlobs` compresses a file that grows at its end (a transcript) incrementally: a
  loose object is one zlib stream of a ``blob <size>`` header and the bytes, and deflate lets a stream be
  cut into blocks, so the bytes already compressed for the last commit are kept and only the new
  end is compressed. A turn of a 10,000-message session compresses a few hundred bytes instead of
  3 MB; the object git reads is an ordinary zlib stream.
- :class:`RefUpdates` moves HEAD through one long-running ``git update-ref --stdin`` (a
  compare-and-swap per commit, git's own locking and reflog) instead of a process per commit.
- :class:`ObjectReader` and :class:`ObjectWriter` read objects through one ``git cat-file --batch``
  and write many objects as one pack (a purge's rewrite).
- :class:`Tree` is the one codec of git's tree objects (mode, name, NUL, id, in git's order): a
  commit changes trees through it, and a purge's rewrite reads and writes them through it.

Every git process here starts through :func:`memfs.gitrun.popen`, with the overrides its caller gives
(memfs's hardened environment).
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import os
import struct
import subprocess
import tempfile
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from . import gitrun
from ._fs import checkpoint, fsync_together, write_all
from .errors import FileTooLargeError, HistoryError

ZERO_SHA = "0" * 40
TREE_MODE = b"40000"  # a folder's mode in a tree object
GITLINK_MODE = b"160000"  # a submodule's entry in a tree: a commit, not a file
_LEVEL = 1  # zlib level of loose objects, as git's core.looseCompression defaults to
_ZLIB_HEADER = b"\x78\x01"  # a zlib stream at level 1 with the default window
_LAST_BLOCK = b"\x03\x00"  # an empty final deflate block (fixed Huffman codes: BFINAL, BTYPE 01, end of block)
_GROWING_FROM = 64 * 1024  # smaller files are compressed whole: too cheap to keep state for
_ADLER_BASE = 65521  # the largest prime below 2**16
_GROWING_KEPT = 8  # growing files whose compression is kept (the sessions a process writes to)
_GROWING_BYTES = 64 << 20  # and the most memory they may hold (their bytes and compressed bytes)

# git's index (version 2): an entry is its stat data (ctime and mtime as seconds and ns, dev, ino,
# mode, uid, gid, size), the blob id, flags (stage, name length), the name, NULs to a multiple of 8.
_ENTRY = struct.Struct(">10I20sH")
_NAME_AT = _ENTRY.size  # 62: where an entry's name starts
_LENGTH_MASK = 0x0FFF  # the flags' name length (0xFFF: that long or longer)
_STAGE_MASK = 0x3000
_EXTENDED = 0x4000
_FILE_MODE = 0o100644
# Extensions memfs carries over as they are (REUC: resolve-undo) or keeps true (TREE: the cache
# of tree ids, whose folders on the way to a changed file are marked invalid, as git does). The
# others are optional by git's rule (a capital first letter) and only speed git up: a patched
# index goes without them and git writes them again (EOIE/IEOT for threaded reads). An index with
# any of these is left to git: a split index, the untracked cache, fsmonitor state, a sparse index.
_KEPT = {b"TREE", b"REUC"}
_LEFT_TO_GIT = {b"link", b"UNTR", b"FSMN", b"sdir"}


class LooseObjects:
    """Loose objects written into a SHA-1 repository's ``objects/`` folder, durable together.

    Use :meth:`put` for each object of a commit, then :meth:`land` before anything names them
    (the ref update): with ``durable``, every new file is fsynced at once, then each is linked
    under its name. :meth:`discard` drops whatever was not landed (objects already landed stay
    unreferenced until git prunes them, as git's own do).
    """

    def __init__(self, folder: Path, *, private: bool = False) -> None:
        self.folder = folder
        self.growing = GrowingBlobs()
        self.private = private  # as git writes them under core.sharedRepository=0600: 0400, folders 0700
        self._waiting: dict[str, str] = {}  # id -> its temporary file, written and closed

    def put(self, kind: str, data: bytes, *, grows: str | None = None) -> str:
        """Write an object of ``kind`` (not yet visible: :meth:`land` makes it so) and return its id.

        ``grows`` names the file a blob is the new content of, when that file grows at its end
        (a transcript): its compression continues from the last blob of that file.
        """
        header = b"%s %d\0" % (kind.encode("ascii"), len(data))
        digest = hashlib.sha1(header, usedforsecurity=False)
        digest.update(data)
        oid = digest.hexdigest()
        if oid in self._waiting:
            return oid
        if len(data) >= _GROWING_FROM and (self.folder / oid[:2] / oid[2:]).exists():
            return oid  # a large object git has already (a file put back as it was): not written again
        # (a small one is written and its link refused if it exists: cheaper than asking first)
        if grows is not None and kind == "blob" and len(data) >= _GROWING_FROM:
            pieces = self.growing.stream(grows, header, data)
        else:
            pieces = [zlib.compress(header + data, _LEVEL)]
        checkpoint("git:object")
        try:
            fd, tmp = tempfile.mkstemp(dir=self.folder / oid[:2], prefix="tmp_obj_")
        except FileNotFoundError:  # the object's fan-out folder is new (or git's gc removed it empty)
            (self.folder / oid[:2]).mkdir(exist_ok=True, mode=0o700 if self.private else 0o777)
            fd, tmp = tempfile.mkstemp(dir=self.folder / oid[:2], prefix="tmp_obj_")
        try:
            try:
                for piece in pieces:
                    write_all(fd, piece)
                os.fchmod(fd, 0o400 if self.private else 0o444)
            finally:
                os.close(fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        self._waiting[oid] = tmp
        return oid

    def land(self, *, durable: bool, also: tuple[int, ...] = ()) -> None:
        """Make every object written since the last call visible to git (fsynced first if ``durable``).

        ``also``: other open files to fsync in the same wait (a transcript's new entries).
        """
        waiting, self._waiting = self._waiting, {}
        try:
            if durable:
                fds: list[int] = []
                try:
                    fds += [os.open(tmp, os.O_RDONLY | os.O_CLOEXEC) for tmp in waiting.values()]
                    fsync_together([*also, *fds])
                finally:
                    for fd in fds:
                        os.close(fd)
            for oid, tmp in waiting.items():
                with contextlib.suppress(FileExistsError):  # the same object, written by someone else
                    os.link(tmp, self.folder / oid[:2] / oid[2:])
        finally:
            _drop(waiting.values())

    def discard(self) -> None:
        """Forget the objects not landed: their temporary files are removed."""
        waiting, self._waiting = self._waiting, {}
        _drop(waiting.values())


def _drop(temporary: Iterable[str]) -> None:
    for tmp in temporary:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@dataclass
class _Growth:
    """A file's bytes compressed so far, and the compressor that continues them."""

    data: bytes = b""
    check: int = 1  # the Adler-32 of ``data`` (1 for no bytes), carried on like the compression
    body: bytearray = field(default_factory=bytearray)
    deflate: zlib._Compress = field(default_factory=lambda: zlib.compressobj(_LEVEL, zlib.DEFLATED, -15))


class GrowingBlobs:
    """Compression of files that grow at their end, continued from one blob of a file to the next.

    A loose object is the zlib stream of the header ``blob <size>`` (and a NUL) followed by the bytes. The size changes
    at every append, so the stream is built of parts: the header deflated on its own and flushed to
    a byte boundary, the bytes as deflated before (every part ends at a byte boundary: a sync
    flush), the new end deflated by the same compressor, an empty final block, and the checksum
    of everything. Deflate blocks only refer back to bytes before them, so the parts join into one
    valid stream; git inflates it like any other. A file whose start changed (a pop, a person's
    edit) is compressed again from its first byte.
    """

    def __init__(self) -> None:
        self._files: OrderedDict[str, _Growth] = OrderedDict()

    def stream(self, name: str, header: bytes, data: bytes) -> list[bytes | bytearray]:
        """The parts of the zlib stream of ``header + data``, continuing from ``name``'s last ``data``."""
        growth = self._files.pop(name, None)
        if growth is None or not data.startswith(growth.data):
            growth = _Growth()
        tail = memoryview(data)[len(growth.data) :]
        growth.body += growth.deflate.compress(tail)
        growth.body += growth.deflate.flush(zlib.Z_SYNC_FLUSH)
        growth.check = zlib.adler32(tail, growth.check)
        growth.data = data
        self._files[name] = growth
        while self._files and (len(self._files) > _GROWING_KEPT or self.held() > _GROWING_BYTES):
            self._files.popitem(last=False)  # the least recently grown first: a file over the cap alone goes too
        head = zlib.compressobj(_LEVEL, zlib.DEFLATED, -15)
        lead = _ZLIB_HEADER + head.compress(header) + head.flush(zlib.Z_SYNC_FLUSH)
        check = struct.pack(">I", adler32_joined(zlib.adler32(header), growth.check, len(data)))
        return [lead, growth.body, _LAST_BLOCK + check]

    def __len__(self) -> int:
        return len(self._files)

    def held(self) -> int:
        """The memory the kept compressions hold: each file's bytes and its compressed bytes."""
        return sum(len(growth.data) + len(growth.body) for growth in self._files.values())

    def forget(self) -> None:
        """Drop every kept compression (history was rewritten, or memory is wanted back)."""
        self._files.clear()


def adler32_joined(first: int, second: int, length: int) -> int:
    """The Adler-32 of two byte strings joined, from each one's checksum and the second's length.

    Adler-32 keeps two sums modulo 65521: ``a`` = 1 + the bytes, ``b`` = the running total of ``a``
    after each byte. Joined, ``a`` adds the second's bytes to the first's ``a`` (its leading 1
    counted once), and each of the second's ``length`` steps adds the first's bytes once more to ``b``.
    """
    a1, b1 = first & 0xFFFF, first >> 16
    a2, b2 = second & 0xFFFF, second >> 16
    a = (a1 + a2 - 1) % _ADLER_BASE
    b = (b1 + b2 + length * (a1 - 1)) % _ADLER_BASE
    return (b << 16) | a


class Tree:
    """A tree object's entries in git's order, kept as their serialised records.

    git orders a tree's entries by name, a folder's name as if it ended in ``/``; the records are
    kept in that order beside those keys, so a change is a search and an insert or a delete in
    two lists, and the object is the records joined: a folder of 3,000 files costs a few list
    operations per commit, not a sort and a re-serialisation of every entry.
    """

    __slots__ = ("keys", "records", "_id_bytes")

    def __init__(self, keys: list[bytes], records: list[bytes], id_bytes: int = 20) -> None:
        self.keys = keys
        self.records = records
        self._id_bytes = id_bytes

    @classmethod
    def parse(cls, data: bytes, id_bytes: int = 20) -> Tree:
        """The tree whose object content is ``data``."""
        keys, records, at = [], [], 0
        while at < len(data):
            space = data.index(b" ", at)
            nul = data.index(b"\0", space)
            end = nul + 1 + id_bytes
            name = data[space + 1 : nul]
            keys.append(name + b"/" if data[at:space] == TREE_MODE else name)
            records.append(data[at:end])
            at = end
        return cls(keys, records, id_bytes)

    @classmethod
    def of(cls, entries: Iterable[tuple[bytes, bytes, str]], id_bytes: int = 20) -> Tree:
        """The tree of ``entries`` (``(mode, name, id)``, distinct names), put in git's order."""
        keyed = ((name + b"/" if mode == TREE_MODE else name, _record(mode, name, oid)) for mode, name, oid in entries)
        ordered = sorted(keyed)  # git's order: a folder's name as if it ended in "/"
        return cls([key for key, _ in ordered], [record for _, record in ordered], id_bytes)

    def entries(self) -> list[tuple[bytes, bytes, str]]:
        """Every entry in git's order: ``(mode, name, id)``."""
        found = []
        for at in range(len(self.records)):
            name, mode, oid = self.entry(at)
            found.append((mode, name, oid))
        return found

    @property
    def raw(self) -> bytes:
        """The tree object's content."""
        return b"".join(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def position(self, name: bytes) -> int | None:
        """Where the entry ``name`` (a file or a folder) is in git's order, or None."""
        for key in (name, name + b"/"):
            at = bisect.bisect_left(self.keys, key)
            if at < len(self.keys) and self.keys[at] == key:
                return at
        return None

    def entry(self, at: int) -> tuple[bytes, bytes, str]:
        """The entry at a position: ``(name, mode, id)``."""
        record = self.records[at]
        space = record.index(b" ")
        return record[space + 1 : -self._id_bytes - 1], record[:space], record[-self._id_bytes :].hex()

    def get(self, name: bytes) -> tuple[bytes, str] | None:
        """``(mode, id)`` of the entry ``name``, or None."""
        at = self.position(name)
        return None if at is None else self.entry(at)[1:]

    def changed(self, updates: Mapping[bytes, tuple[bytes, str] | None]) -> Tree:
        """A new tree: each name of ``updates`` set to ``(mode, id)``, or removed (None)."""
        keys, records = list(self.keys), list(self.records)
        new = Tree(keys, records, self._id_bytes)
        for name, entry in updates.items():
            at = new.position(name)
            if at is not None:
                del keys[at], records[at]
            if entry is not None:
                mode, oid = entry
                key = name + b"/" if mode == TREE_MODE else name
                at = bisect.bisect_left(keys, key)
                keys.insert(at, key)
                records.insert(at, _record(mode, name, oid))
        return new


def _record(mode: bytes, name: bytes, oid: str) -> bytes:
    """A tree entry as git writes it: the mode, a space, the name, a NUL, the id's bytes."""
    return b"%s %s\0%s" % (mode, name, bytes.fromhex(oid))


class RefUpdates:
    """Compare-and-swap updates of HEAD through one long-running ``git update-ref --stdin``.

    Each update is one transaction (``start``, ``update``, ``prepare``, ``commit``): git locks the
    ref, checks its old value, writes it and its reflog, exactly as ``git update-ref HEAD new old``
    does, without starting a process. A refused update ends git's process (it reports and exits);
    the next update starts another.
    """

    def __init__(self, top: Path, env: Mapping[str, str], message: str) -> None:
        self._proc = gitrun.popen(["update-ref", "-m", message, "--stdin", "-z"], cwd=top, overrides=env)
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._in, self._out = self._proc.stdin, self._proc.stdout
        self.env = dict(env)

    def update(self, new: str, old: str | None) -> None:
        """Point HEAD's branch at ``new`` if it still names ``old`` (None: there is no commit yet).

        Raises:
            HistoryError: git refused (HEAD moved, or a lock is held: git's message says which);
                the process has ended.
        """
        ids = (new.encode("ascii"), (old or ZERO_SHA).encode("ascii"))
        ask = b"start\0update HEAD\0%s\0%s\0prepare\0commit\0" % ids
        try:
            self._in.write(ask)
            self._in.flush()
            answers = [self._out.readline() for _ in range(3)]
        except OSError:
            answers = []
        if answers != [b"start: ok\n", b"prepare: ok\n", b"commit: ok\n"]:
            raise HistoryError(f"git update-ref failed: {self._end()}")

    def alive(self) -> bool:
        """Whether git's process still runs (a refused update ends it)."""
        return self._proc.poll() is None

    def _end(self) -> str:
        """End the process and return what it said on stderr, in one line."""
        assert self._proc.stderr is not None
        said = ""
        with contextlib.suppress(OSError):
            self._in.close()
        with contextlib.suppress(OSError, ValueError):
            said = self._proc.stderr.read().decode("utf-8", "replace")
        self.close()
        # update-ref speaks of this repository's refs only: no remote URL to hide, nothing to scan
        return " ".join(said.replace("fatal:", "").split()) or "git update-ref ended"

    def close(self) -> None:
        """End the process (killed if it does not end)."""
        with contextlib.suppress(OSError):
            self._in.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for pipe in (self._out, self._proc.stderr):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()


_TYPES = (b"blob", b"tree", b"commit", b"tag")


def askable(spec: str) -> bool:
    """Whether ``git cat-file --batch`` can be asked for ``spec``: one line, no carriage return git would cut.

    A path with a newline would be two questions, and git drops a carriage return before the
    newline; such a file is found by walking its trees instead.
    """
    return "\n" not in spec and not spec.endswith("\r")


def parse_header(line: bytes) -> tuple[str, str, int] | None:
    """``(id, type, size)`` from a ``git cat-file --batch`` or ``--batch-check`` answer; None for any other answer.

    Anything but exactly an object id (hex), one of git's four types and a size (digits) is not a
    header: ``Trip plan.md missing`` has three words too.
    """
    words = line.split()
    if len(words) != 3 or words[1] not in _TYPES or not words[2].isdigit():
        return None
    oid = words[0]
    if len(oid) not in (40, 64) or oid.strip(b"0123456789abcdef"):
        return None
    return oid.decode("ascii"), words[1].decode("ascii"), int(words[2])


class ObjectReader:
    """Raw git objects through one long-running ``git cat-file --batch`` (replace refs ignored)."""

    def __init__(self, top: Path, env: Mapping[str, str]) -> None:
        overrides = {**env, "GIT_NO_REPLACE_OBJECTS": "1"}
        self._proc = gitrun.popen(["cat-file", "--batch"], cwd=top, overrides=overrides, stderr=None)
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._in, self._out = self._proc.stdin, self._proc.stdout

    def read(self, oid: str, *, limit: int | None = None) -> tuple[str, bytes]:
        """``(type, raw content)`` of the object ``oid``; HistoryError if it is not in the repository.

        An object larger than ``limit`` bytes is never held in memory: its content is passed over
        in small pieces and FileTooLargeError raised (a remote's history is someone else's input).
        """
        found = self.lookup(oid, limit=limit)
        if found is None:
            raise HistoryError(f"git object {oid} is missing from the repository")
        return found[1], found[2]

    def lookup(self, spec: str, *, limit: int | None = None) -> tuple[str, str, bytes] | None:
        """``(id, type, raw content)`` of the object ``spec`` names (an id, ``HEAD^{commit}``...), or None.

        Each request is resolved afresh, so a name like ``HEAD`` gives the commit it names now.

        Raises:
            OSError: The ``git cat-file`` process is gone.
            FileTooLargeError: The object is larger than ``limit`` (its content was skipped).
        """
        header = self._ask(spec)
        if header is None:
            return None
        data = self._content(spec, header[2], limit)
        return header[0], header[1], data

    def blob_at(self, spec: str, *, limit: int | None = None) -> bytes | None:
        """The bytes of the blob ``REV:PATH`` names; None if there is no such file (or it is not a file).

        A blob larger than ``limit`` bytes raises FileTooLargeError without being read into memory.
        """
        header = self._ask(spec)
        if header is None:
            return None
        data = self._content(spec, header[2], limit)
        return data if header[1] == "blob" else None

    def _ask(self, spec: str) -> tuple[str, str, int] | None:
        """Ask for ``spec``; ``(id, type, size)`` of the object git is about to send, or None if none is.

        git answers ``<id> <type> <size>`` or ``<spec> missing`` (``ambiguous``...), and the spec is a
        path that may hold spaces, or end in `` blob 12``: only an answer whose three words are an
        object id, a type and a size is a header. A spec git cannot be asked (:func:`askable`) names nothing.
        """
        if not askable(spec):
            return None
        self._in.write(spec.encode("utf-8", "surrogateescape") + b"\n")
        self._in.flush()
        line = self._out.readline()
        if not line:  # not "no such file": git is gone
            raise BrokenPipeError("git cat-file --batch ended")
        return parse_header(line)

    def _content(self, name: str, size: int, limit: int | None) -> bytes:
        """The ``size`` bytes of the object being sent, or FileTooLargeError past ``limit`` (bytes skipped)."""
        if limit is not None and size > limit:
            left = size + 1  # the newline after each object
            while left:
                piece = self._out.read(min(left, 1 << 20))
                if not piece:
                    raise BrokenPipeError("git cat-file --batch ended inside an object")
                left -= len(piece)
            raise FileTooLargeError(name, size, max(limit, 0))
        data = self._out.read(size)
        if len(data) != size or self._out.read(1) != b"\n":  # the newline after each object
            raise BrokenPipeError("git cat-file --batch ended inside an object")
        return data

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the ``git cat-file`` process (killed if it does not end: a forked child may hold its stdin)."""
        with contextlib.suppress(OSError):
            self._in.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
        self._out.close()

    def kill(self) -> None:
        """End the process at once, whatever it was answering."""
        with contextlib.suppress(OSError):
            self._proc.kill()
        self._proc.wait()
        for pipe in (self._in, self._out):
            with contextlib.suppress(OSError):
                pipe.close()


class ObjectWriter:
    """Stores raw objects in a repository: gathered into one pack that ``git index-pack`` indexes.

    One pack instead of a loose file per object: a rewrite makes thousands of objects, and
    creating (then, at the next ``gc``, deleting) that many files costs more than the rewrite.
    Objects written are in the repository once :meth:`finish` returns.
    """

    _TYPES = {"commit": 1, "tree": 2, "blob": 3, "tag": 4}

    def __init__(self, top: Path, object_format: str, *, env: Mapping[str, str], dry: bool = False) -> None:
        self.top = top
        self._env = dict(env)
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
        return hashlib.new(self.algorithm, b"%s %d\0" % (kind.encode("ascii"), len(data)) + data).hexdigest()

    def write(self, kind: str, data: bytes) -> str:
        """Add an object to the pack (unless dry) and return its id."""
        oid = self.id_of(kind, data)
        if self.dry or oid in self._ids:
            return oid
        if self._spool is None:
            self._spool = tempfile.TemporaryFile()
        self._ids.add(oid)
        size, first = len(data), self._TYPES[kind] << 4
        header = bytearray([first | (size & 0x0F)])
        size >>= 4
        while size:
            header[-1] |= 0x80
            header.append(size & 0x7F)
            size >>= 7
        self._spool.write(bytes(header) + zlib.compress(data, _LEVEL))
        self.written += 1
        return oid

    def finish(self) -> None:
        """Index the pack into the repository (``git index-pack --stdin``); nothing to do when dry or empty."""
        spool, self._spool = self._spool, None
        if spool is None:
            return
        with spool, tempfile.TemporaryFile() as errors:
            spool.seek(0)
            proc = gitrun.popen(
                ["index-pack", "--stdin"], cwd=self.top, overrides=self._env, stdout=subprocess.DEVNULL, stderr=errors
            )
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
                raise HistoryError(f"git index-pack failed: {gitrun.said(errors.read())}")


_Patch = tuple[list[bytes | memoryview], int, int, tuple[int, int, int]]  # see GitIndex._patched


class GitIndex:
    """git's own index (the staging area ``git status`` reads), patched in place after a commit.

    What ``git update-index --index-info`` does for the commit's files, without a git process
    that reads and rewrites every entry in C: the file is read at once, each changed entry is
    found by its name, replaced, removed or inserted after the file before it in its folder, the
    cache of tree ids is invalidated on the way to each changed file, and the result, with its
    checksum, is put in place under git's own lock (``index.lock``). Where the entries end is
    learned by walking them once and kept while the index file is the one memfs wrote.

    :meth:`patch` answers False whenever anything is not as expected (another index version, an
    extension it does not know how to keep, a conflict, a name it cannot place, the file changed
    by git while being patched): the caller then runs ``git update-index``, so the result is
    always git's. It answers None when git's lock is held.
    """

    def __init__(self, path: Path, *, enabled: bool = True) -> None:
        self.path = path
        self.lock = path.with_name(path.name + ".lock")  # git's own lock of the file
        self.enabled = enabled
        self.patched = 0  # how many patches were written, and how many were left to git
        self.left_to_git = 0
        self._spare = path.with_name("memfs-" + path.name + ".new")  # written only under the vault's lock
        self._known: tuple[tuple[int, int, int], int] | None = None  # (index file's stat, where its entries end)

    def patch(self, changes: Mapping[str, str | None], before: Callable[[str], str | None]) -> bool | None:
        """Put ``changes`` (path -> blob id, None: removed) into the index.

        ``before(path)`` names the file just before a new ``path`` in its folder (None: unknown).
        The new file is written beside the index first and git's lock is taken only to put it in
        place (a hard link, then a rename), so a process killed while writing leaves no lock that
        would stop git and the next commit until someone saw it was stale.

        Returns:
            True when patched; False when left to git (``git update-index`` should do it); None
            when git's lock is held, and nothing was done.
        """
        if not self.enabled or not changes:
            return False
        if self.lock.exists():
            return None
        try:
            patched = self._patched(changes, before)
        except (OSError, ValueError, struct.error):
            patched = None
        if patched is None:
            self.left_to_git += 1
            return False
        pieces, entries_end, mode, read = patched
        checkpoint("git:update-index")
        self._spare.unlink(missing_ok=True)  # a killed patch's: removed, never truncated (it may be git's lock too)
        fd = os.open(self._spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            for piece in pieces:
                write_all(fd, piece)
            os.fchmod(fd, mode)
        except BaseException:
            os.close(fd)
            self._spare.unlink(missing_ok=True)
            raise
        os.close(fd)
        try:
            os.link(self._spare, self.lock)
        except OSError as exc:  # held, or a file system without hard links
            self._spare.unlink(missing_ok=True)
            if isinstance(exc, FileExistsError):
                return None
            self.left_to_git += 1
            return False
        try:
            st = os.stat(self.path)
            if (st.st_ino, st.st_size, st.st_mtime_ns) != read:  # git wrote it between the read and the lock
                self._spare.unlink(missing_ok=True)
                self.left_to_git += 1
                return False
            os.replace(self._spare, self.path)
        finally:
            os.unlink(self.lock)
        st = os.stat(self.path)
        self._known = ((st.st_ino, st.st_size, st.st_mtime_ns), entries_end)
        self.patched += 1
        return True

    def _patched(self, changes: Mapping[str, str | None], before: Callable[[str], str | None]) -> _Patch | None:
        """The new index file (in pieces), where its entries end, its mode and the file read's stat.

        None: leave it to git. The stat (inode, size, mtime_ns) tells whether git wrote the file since.

        The pieces are views of the file read and the few new bytes: a 10 MB index (100,000 files)
        is read once and written once, never copied in between.
        """
        fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            data = os.read(fd, st.st_size + 1)
        finally:
            os.close(fd)
        if len(data) != st.st_size or len(data) < 32 or data[:4] != b"DIRC":
            return None
        version, count = struct.unpack_from(">II", data, 4)
        if version != 2:
            return None
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        end = self._known[1] if self._known is not None and self._known[0] == key else _entries_end(data, count)
        if end is None:
            return None
        extensions = _extensions(data, end)
        if extensions is None or any(sig in _LEFT_TO_GIT or not sig[:1].isupper() for sig, _ in extensions):
            return None
        edits: list[tuple[int, int, bytes, bytes]] = []  # (start, end, name, new bytes)
        for name, oid in sorted(changes.items()):
            raw = name.encode("utf-8", "surrogateescape")
            found = _find(data, end, raw)
            if found is not None:
                start, stop, stage = found
                if stage:
                    return None  # a conflict: git's business
                edits.append((start, stop, raw, b"" if oid is None else _entry(raw, oid)))
            elif oid is not None:
                previous = before(name)
                place = None if previous is None else _find(data, end, previous.encode("utf-8", "surrogateescape"))
                if place is None or place[2]:
                    return None
                at = place[1]
                if at < end and _name_at(data, at) <= raw:  # something git's index has sits in between
                    return None
                edits.append((at, at, raw, _entry(raw, oid)))
        edits.sort(key=lambda edit: (edit[0], edit[2]))
        view = memoryview(data)
        pieces: list[bytes | memoryview] = []
        at, added, entries = 12, 0, 12
        for start, stop, _, new in edits:
            if start < at:
                return None  # overlapping edits: cannot happen for distinct names, but never guess
            pieces += [view[at:start], new]
            entries += start - at + len(new)
            at = stop
            added += (1 if new else 0) - (1 if stop > start else 0)
        pieces.append(view[at:end])
        entries += end - at
        pieces += [
            _extension(sig, _invalidated(bytes(raw), changes) if sig == b"TREE" else raw)
            for sig, raw in extensions
            if sig in _KEPT
        ]
        pieces.insert(0, b"DIRC" + struct.pack(">II", 2, count + added))
        if data[-20:] == bytes(20):  # written without a checksum (index.skipHash): the same
            pieces.append(bytes(20))
        else:
            digest = hashlib.sha1(usedforsecurity=False)
            for piece in pieces:
                digest.update(piece)
            pieces.append(digest.digest())
        return pieces, entries, st.st_mode & 0o7777, key


def _entry(name: bytes, oid: str) -> bytes:
    """An index entry for a regular file at stage 0, with no stat data (git hashes the file when it looks)."""
    fixed = _ENTRY.pack(0, 0, 0, 0, 0, 0, _FILE_MODE, 0, 0, 0, bytes.fromhex(oid), min(len(name), _LENGTH_MASK))
    size = (_NAME_AT + len(name) + 8) & ~7  # NUL-padded to a multiple of 8, at least one NUL
    return fixed + name + bytes(size - _NAME_AT - len(name))


def _entries_end(data: bytes, count: int) -> int | None:
    """Where the ``count`` entries of a version 2 index end (None: not a well-formed one)."""
    at, limit = 12, len(data) - 20
    flags_of = struct.Struct(">H").unpack_from
    for _ in range(count):
        if at + _NAME_AT > limit:
            return None
        flags = flags_of(data, at + _NAME_AT - 2)[0]
        if flags & _EXTENDED:
            return None
        length = flags & _LENGTH_MASK
        if length == _LENGTH_MASK:
            length = data.index(b"\0", at + _NAME_AT) - at - _NAME_AT
        at += (_NAME_AT + length + 8) & ~7
    return at if at <= limit else None


def _extensions(data: bytes, end: int) -> list[tuple[bytes, memoryview]] | None:
    """The extensions between the entries and the checksum, as (signature, content); None if malformed."""
    found, at, limit, view = [], end, len(data) - 20, memoryview(data)
    while at < limit:
        if at + 8 > limit:
            return None
        sig, size = data[at : at + 4], struct.unpack_from(">I", data, at + 4)[0]
        if at + 8 + size > limit:
            return None
        found.append((sig, view[at + 8 : at + 8 + size]))
        at += 8 + size
    return found


def _extension(sig: bytes, content: bytes | memoryview) -> bytes:
    return sig + struct.pack(">I", len(content)) + bytes(content)


def _find(data: bytes, end: int, name: bytes) -> tuple[int, int, int] | None:
    """The entry named ``name`` among the entries (before ``end``): (start, end, stage), or None.

    An entry is its stat data and id (62 bytes), its flags ending in the name's length, the name and
    NULs; a match of the name is taken for an entry only if the flags before it say that length and
    the mode is a file's, so a name that is the end of a longer one is never taken for it.
    """
    needle = name + b"\0"
    at = data.find(needle, 12 + _NAME_AT, end)
    while at >= 0:
        start = at - _NAME_AT
        flags = struct.unpack_from(">H", data, at - 2)[0]
        mode = struct.unpack_from(">I", data, start + 24)[0]
        if flags & _LENGTH_MASK == min(len(name), _LENGTH_MASK) and not flags & _EXTENDED and mode >> 12 in (8, 10, 14):
            return start, start + ((_NAME_AT + len(name) + 8) & ~7), (flags & _STAGE_MASK) >> 12
        at = data.find(needle, at + 1, end)
    return None


def _name_at(data: bytes, start: int) -> bytes:
    return data[start + _NAME_AT : data.index(b"\0", start + _NAME_AT)]


def _invalidated(tree: bytes, changes: Mapping[str, str | None]) -> bytes:
    """The TREE extension with the folders on the way to each changed path marked invalid (as git does)."""
    root, _ = _tree_node(tree, 0)
    for path in changes:
        node = root
        node[1] = -1
        for folder in path.split("/")[:-1]:
            child = next((c for c in node[3] if c[0] == folder.encode("utf-8", "surrogateescape")), None)
            if child is None:
                break
            child[1] = -1
            node = child
    return _tree_bytes(root)


def _tree_node(data: bytes, at: int) -> tuple[list[Any], int]:
    """One folder of the TREE extension and those below it: [name, entry count, id, children]."""
    nul = data.index(b"\0", at)
    space = data.index(b" ", nul)
    newline = data.index(b"\n", space)
    name, count, below = data[at:nul], int(data[nul + 1 : space]), int(data[space + 1 : newline])
    at = newline + 1
    oid = None
    if count >= 0:
        oid, at = data[at : at + 20], at + 20
    children = []
    for _ in range(below):
        child, at = _tree_node(data, at)
        children.append(child)
    return [name, count, oid, children], at


def _tree_bytes(node: list[Any]) -> bytes:
    name, count, oid, children = node
    head = b"%s\0%d %d\n" % (name, count, len(children))
    return head + (oid if count >= 0 else b"") + b"".join(_tree_bytes(child) for child in children)
