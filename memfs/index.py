"""The search index: Whoosh, kept as a function of the files.

This is the only module that imports :mod:`whoosh`. The index lives under ``.memfs/index``
and is never the truth: it stores, per file, the ``(mtime_ns, size, sha256)`` it was built
from, so :meth:`SearchIndex.sync` brings it up to date from file stats alone, reading only
the files that changed. A missing, corrupt or outdated index is rebuilt from the files.

The index cannot hurt the process that reads it. Whoosh pickles its schema, its segment list
and its stored fields, so an index folder someone else wrote (a vault copied or synced with its
``.memfs/``) could run code when opened. memfs therefore reads no index file it cannot vouch
for: after each commit it writes ``memfs-index.json`` into the folder, naming every file of the
index with its size and sha256, signed with an HMAC key kept outside the vault (in the user's
state folder, see :func:`index_key`). A file is handed to Whoosh only after its bytes match the
signed list, and an index without a valid list is rebuilt from the files, unread. Files are read
into memory rather than mapped, so a segment truncated under a running process cannot kill it
with SIGBUS; the same list tells a long-lived reader when the index on disk is no longer the one
it opened (a random id per index, and Whoosh's generation within it).

A long sync (the first index of a big transcript, a rebuild) is built without the vault lock in
a private index beside this one (:meth:`SearchIndex.stage`), and published under the lock
(:meth:`SearchIndex.publish`): its segments join the index in one commit, or its folder replaces
the index, after whatever changed meanwhile is redone. So writers never wait for one.

Speed comes from three choices, measured in docs/benchmarks.md: one analyzer pass in plain
Python (a regex, a stop list of ~170 English words, possessives folded, a cached Snowball
stemmer) instead of Whoosh's chain of generators; no term positions; and queries that are a
flat OR of the question's content words, dropping words so common they cannot change the
ranking. Messages are indexed with their neighbours' words and scored straight from the
postings (:meth:`SearchIndex._rank`), memories too: each segment's postings are decoded once into
numpy arrays (:class:`_Postings`), so a question of words found in most documents costs a few
array operations per term rather than Python per posting.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import shutil
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
from whoosh import fields, formats, qparser, query, scoring
from whoosh.analysis import Analyzer, Token
from whoosh.codec.whoosh3 import W3Codec, W3FieldWriter, W3Segment
from whoosh.filedb.filestore import FileStorage
from whoosh.filedb.structfile import BufferFile
from whoosh.index import TOC, FileIndex
from whoosh.lang.snowball.english import EnglishStemmer
from whoosh.matching import FilterMatcher
from whoosh.reading import SegmentReader
from whoosh.system import pack_uint
from whoosh.util.numeric import byte_to_length
from whoosh.writing import MERGE_SMALL

from . import _fs, indexed, transcript
from .dates import date_words, iso, written_date
from .documents import MAX_FRONT_MATTER_BYTES, Document, body_of, load_bytes, normalize_time, timestamp
from .errors import DocumentError, FileTooLargeError, LinkError, QueryTooLongError, SearchIndexError, ValidityError
from .freshness import ChangeFinder, Stat, file_stat, walk
from .items import text_of
from .layout import CONTENT_DIRS, in_namespace, is_transcript, split_memory_path
from .lifecycle import CURRENT, Validity, check, validity
from .links import key_of, link_keys
from .notes import aliases_of, normalize_tag, note_tags, tag_terms
from .semantic import VectorStore, z_scores

log = logging.getLogger(__name__)

SCHEMA_VERSION = "9"  # 4: message fields; 5: ``ns`` holds exact namespace prefixes (an ID field); 6: lifecycle;
# 7: message terms indexed with their weights, neighbours weighed by the message's length;
# 8: a memory's ``description`` (Claude Code, Obsidian) searched with its body;
# 9: accents folded, CJK text in character pairs; a note's inline #tags and aliases (``tag``: each tag and
# the tags it nests under; ``aliases``) and the link table (``namekey``, ``linkkey``, ``haslinks``: memfs.links)
MAX_INDEXED_BYTES = 4 * 1024 * 1024  # a memory file larger than this is neither read nor indexed
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024  # a transcript larger than this is neither read nor indexed
MAX_INDEXED_ENTRIES = 5_000  # message search covers the last this many entries of a transcript
MAX_QUERY_CHARS = 4096  # a longer query is refused (QueryTooLongError)
MAX_QUERY_TERMS = 32  # the first this many distinct content words of a query are searched
SNIPPET_SCAN_CHARS = 16_384  # a snippet is taken from this much of a body at most ...
SNIPPET_MAX_MATCHES = 64  # ... and from its first this many matched words
COMMON_TERM_SHARE = 0.2  # a term in more than this share of documents is dropped ...
PRUNE_FROM_DOCS = 2000  # ... once the index is at least this large
PARALLEL_FROM_DOCS = 2000  # a fresh build this large uses two indexing processes
STAGE_FROM_BYTES = 1024 * 1024  # an update reading this much is built outside the vault lock ...
STAGE_FROM_FILES = 200  # ... and so is one of this many files
CACHE_FROM_POSTINGS = 64  # a term's decoded postings in one segment are kept when at least this many ...
MAX_CACHED_POSTINGS = 8_000_000  # ... up to this many in all (8 bytes each), the least recently used dropped
ASIDE_KEPT_SECONDS = 3600  # an aside folder this old was left by a killed process: removed
_SYNTAX = re.compile(r"\b(?:AND|OR|NOT|ANDNOT|ANDMAYBE)\b|[():\"+\-]")
_WORD = re.compile(r"\w+(?:['’]\w+)*")
#: A longer word is not indexed: nobody searches for it, and Whoosh's Porter stemmer takes seconds
#: over a word of megabytes (a pasted blob in a message). Lucene's default token limit, too.
MAX_WORD_CHARS = 255
_NON_SPACE = re.compile(r"\S+")
STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can can't cannot could couldn't did didn't do
    does doesn't doing don't down during each few for from further get got had hadn't has
    hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his
    how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's me more
    most mustn't my myself no nor not now of off on once only or other ought our ours
    ourselves out over own really same shan't she she'd she'll she's should shouldn't so some
    such than that that's the their theirs them themselves then there there's these they
    they'd they'll they're they've this those through to too under until up very was wasn't
    we we'd we'll we're we've were weren't what what's when when's where where's which while
    who who's whom why why's will with won't would wouldn't you you'd you'll you're you've
    your yours yourself yourselves""".split()
)


_SNOWBALL = EnglishStemmer()


def stem(word: str) -> str:
    """The index term of one lowercase word.

    A possessive is the name it belongs to ("audrey's" → "audrey"), and words are stemmed with
    Snowball's English (Porter2) stemmer, which unlike Porter's keeps "try", "tried" and
    "trying" together.
    """
    word = word.replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    return str(_SNOWBALL.stem(word))


# Chinese (Han), Japanese (kana), Korean (Hangul): scripts written without spaces between words,
# which the analyzer cuts into overlapping character pairs.
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f\uff66-\uff9f"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_RUNS = re.compile(f"[{_CJK_CHARS}]+|[^{_CJK_CHARS}]+")


class _Folding(dict[int, str]):
    """``str.translate`` table folding a character to its base letters in lower case, built as met."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if _CJK.match(char):
            folded = char  # NFKD would take Hangul syllables apart
        else:
            parts = unicodedata.normalize("NFKD", char)
            folded = "".join(c for c in parts if not unicodedata.combining(c)).casefold() or char
        self[code] = folded
        return folded


_FOLDING = _Folding()


def fold(text: str) -> str:
    """``text`` with accents and other marks taken off and case folded (``Café Crème`` -> ``cafe creme``)."""
    return text.translate(_FOLDING)


class _ContentAnalyzer(Analyzer):  # type: ignore[misc]
    """Lowercase words; stop words and words over MAX_WORD_CHARS dropped; possessives folded; Snowball stems."""

    def __init__(self) -> None:
        self._stems: dict[str, str] = {}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __getstate__(self) -> dict[str, Any]:
        return {}  # the schema is pickled into the index: keep the stem cache out of it

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._stems = {}

    def stems(self, text: str) -> Iterator[str]:
        """The index terms of ``text``, in order.

        Any language: accents and case are folded the same way for what is indexed and what is
        asked (``Tomás`` and ``TOMAS`` are ``tomas``; see :func:`fold`), and a run of Chinese,
        Japanese or Korean characters, written without spaces, gives its overlapping character
        pairs (``喜欢喝绿茶``: ``喜欢 欢喝 喝绿 绿茶``), so ``绿茶`` finds it. English text (ASCII)
        takes the path it always took.
        """
        cache = self._stems
        for word in _WORD.findall(text.lower() if text.isascii() else fold(text)):
            if not word.isascii() and _CJK.search(word):
                yield from self._mixed(word)
                continue
            if word in STOP_WORDS or len(word) > MAX_WORD_CHARS:
                continue
            stemmed = cache.get(word)
            if stemmed is None:
                stemmed = cache[word] = stem(word)
            yield stemmed

    def _mixed(self, word: str) -> Iterator[str]:
        """The terms of a word holding CJK characters: their pairs, and the other runs' stems."""
        for run in _CJK_RUNS.findall(word):
            if _CJK.match(run):
                if len(run) == 1:
                    yield run
                else:
                    yield from (run[i : i + 2] for i in range(len(run) - 1))
            elif run not in STOP_WORDS and len(run) <= MAX_WORD_CHARS:
                yield stem(run)

    def __call__(
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize: bool = True,
        mode: str = "",
        **kwargs: Any,
    ) -> Iterator[Token]:
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        for pos, text in enumerate(self.stems(value), start_pos):
            token.text, token.stopped, token.boost = text, False, 1.0
            if positions:
                token.pos = pos
            yield token


ANALYZER = _ContentAnalyzer()

# A message is indexed with the words of the messages around it, weaker, because a question
# often repeats the words of the turn before its answer ("How long have you been doing yoga?" /
# "Three years now"): its own words weigh 1, its neighbours' 1/2, those two away 1/4. That is a
# rule for short turns. A long message says what it is about by itself, and a long neighbour
# would swamp a short one (a user's line between two assistant replies of a page each), so a
# neighbour's weight also falls with the message's own length (whole up to CONTEXT_FULL_TERMS
# terms, nothing from CONTEXT_ALONE_TERMS on) and no neighbour brings more words than the message
# has (at least CONTEXT_FULL_TERMS): see _context_share. docs/benchmarks.md has the measurements.
CONTEXT_WEIGHTS = (1.0, 0.5, 0.25)
CONTEXT_FULL_TERMS = 32  # a message of at most this many terms takes its neighbours' words whole ...
CONTEXT_ALONE_TERMS = 64  # ... and one of this many stands alone (in between, linearly less)
DATE_WEIGHT = 0.25  # the words of the session's date ("8 May 2023") weigh like a turn two away
# Whoosh keeps a field's length as a whole number of occurrences: weights are indexed x4 (so a
# length rounds finely) and K1 of the ``message`` field is scaled by as much, which ranks exactly
# as the weights above do.
WEIGHT_SCALE = 4
# A question that names someone is mostly answered by what that person said ("What did Ada
# research?" by Ada's "I'm looking into adoption agencies"), and a name is a weak term when its
# owner speaks half the turns, so a message whose speaker the question names scores this much more
# (a share of its score). Measured on LoCoMo, tuned leave-one-conversation-out (docs/benchmarks.md).
SPEAKER_BONUS = 0.4
# A question in the first person ("What is my homework accuracy?", "When did I move?") is the
# user asking about what they said, and what they said is in their own messages, while the
# assistant's replies repeat their words at length; so the user's messages score this much more
# (a share of their score) for such a question. No LoCoMo question is in the first person.
# Tuned on part of BEAM and measured on another part (docs/benchmarks.md).
USER_BONUS = 0.7
FIRST_PERSON = frozenset("i me my mine myself i'm i've i'd i'll".split())
K1 = 1.2


class _Weighting(scoring.BM25F):  # type: ignore[misc]
    """Whoosh's BM25F, with K1 of the ``message`` field scaled to its repeated terms."""

    def scorer(self, searcher: Any, fieldname: str, text: Any, qf: int = 1) -> Any:
        if fieldname != "message":
            return super().scorer(searcher, fieldname, text, qf=qf)
        return scoring.BM25FScorer(
            searcher, fieldname, text, self._field_B.get(fieldname, self.B), self.K1 * WEIGHT_SCALE, qf=qf
        )


WEIGHTING = _Weighting(K1=K1)


class _WeightedFrequencies(formats.Frequency):  # type: ignore[misc]
    """Whoosh's term frequencies, given as ``(term, weight)`` pairs already counted.

    A message's terms come weighted (its own, its neighbours', its date's; see
    :func:`_message_terms`), so they are handed to Whoosh once per distinct term with their
    weight, rather than as a token stream repeated by weight, which Whoosh would walk token by
    token. A term's frequency (what Whoosh adds up as the field's length) is its weight rounded.
    """

    def word_values(self, value: Any, analyzer: Any, **kwargs: Any) -> Iterator[tuple[str, int, float, bytes]]:
        boost = self.field_boost
        for term, weight in value:
            frequency = max(1, round(weight))
            yield term, frequency, weight * boost, pack_uint(frequency)


class _WeightedText(fields.TEXT):  # type: ignore[misc]
    """The ``message`` field: analysed like any text when queried, indexed from weighted terms."""

    def __init__(self) -> None:
        super().__init__(analyzer=ANALYZER, phrase=False)
        self.format = _WeightedFrequencies()


#: The text fields of a memory a query's words are looked for in (its tags are matched whole).
NOTE_FIELDS = ("title", "aliases", "body")
MESSAGE_FIELDS = ("message", "speaker")


def _schema() -> fields.Schema:
    return fields.Schema(
        path=fields.ID(unique=True, stored=True),
        kind=fields.ID(stored=True),
        ns=fields.ID(),  # the namespace and each of its ancestors, each one whole term (see _with_terms)
        namespace=fields.STORED(),
        id=fields.ID(stored=True),
        title=fields.TEXT(analyzer=ANALYZER, stored=True, phrase=False, field_boost=2.0),
        body=fields.TEXT(analyzer=ANALYZER, phrase=False),
        tags=fields.KEYWORD(lowercase=True, commas=True, scorable=True, stored=True, field_boost=1.5),
        tag=fields.KEYWORD(commas=True),  # each tag and every tag it nests under, casefolded: for filters
        aliases=fields.TEXT(analyzer=ANALYZER, phrase=False, field_boost=2.0),  # searched like the title
        namekey=fields.ID(),  # the link table (memfs.links): the key a memory's links find it by ...
        linkkey=fields.KEYWORD(commas=True),  # ... the keys of the files its links name ...
        haslinks=fields.ID(),  # ... and "1" when it has any
        type=fields.ID(stored=True),
        created=fields.ID(stored=True),
        updated=fields.ID(stored=True),
        stat=fields.STORED(),
        error=fields.STORED(),
        session=fields.ID(stored=True),
        session_id=fields.STORED(),
        message=_WeightedText(),  # a message's words and its neighbours', weighted (see _message_terms)
        speaker=fields.TEXT(analyzer=ANALYZER, phrase=False),  # who said a message, when known
        date=fields.STORED(),  # a message's session date, as its transcript writes it
        day=fields.ID(stored=True),  # the same as an ISO date, for since/until
        position=fields.STORED(),
        role=fields.ID(stored=True),
        time=fields.ID(stored=True),
        item=fields.STORED(),
        checkpoints=fields.STORED(),
        # ``superseded`` or ``timed`` (a validity that depends on the present), so a search can set
        # aside what is not current by reading only those documents (see SearchIndex._not_current);
        # ``unreadable`` too for validity keys memfs would refuse to write (doctor reports them)
        lifecycle=fields.KEYWORD(),
        validity_error=fields.STORED(),
        validity=fields.STORED(),  # (start, end, superseded_by, supersedes, expires) of lifecycle.Validity
    )


INDEX_NAME = "MAIN"
MANIFEST = "memfs-index.json"
MAX_MANIFEST_BYTES = 1024 * 1024
KEY_BYTES = 32


def state_home() -> Path:
    """The user's state folder: ``$XDG_STATE_HOME``, else ``~/.local/state``."""
    base = os.environ.get("XDG_STATE_HOME", "")
    return Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"


_keys: dict[str, bytes] = {}
_keys_lock = threading.Lock()


def index_key() -> bytes:
    """The key that signs the indexes this user's memfs builds (``<state home>/memfs/index-key``).

    It lives outside every vault, so an index copied in with a vault cannot carry a valid
    signature. Created on first use (0600); a key file owned by someone else or readable by
    others is replaced. If no key can be stored, a key for this process alone is used (with a
    warning): every index is then rebuilt once per process, which is slow but safe.
    """
    try:
        path = state_home() / "memfs" / "index-key"
    except RuntimeError:  # no home folder to be found
        path = Path("/nonexistent/memfs/index-key")
    with _keys_lock:
        key = _keys.get(str(path))
        if key is None:
            key = _keys[str(path)] = _load_key(path)
        return key


def _load_key(path: Path) -> bytes:
    replace = False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            st = os.fstat(fd)
            data = os.read(fd, KEY_BYTES + 1)
        finally:
            os.close(fd)
        if st.st_uid == os.geteuid() and not st.st_mode & 0o077 and len(data) == KEY_BYTES:
            return data
        log.warning("replacing the index key %s: it is not a private %d-byte file of this user", path, KEY_BYTES)
        replace = True
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("cannot read the index key %s (%s); making a new one", path, exc)
        replace = True
    key = secrets.token_bytes(KEY_BYTES)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, key)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            if replace:
                os.replace(tmp, path)
            else:
                os.link(tmp, path)  # never over a key another process made meanwhile
        except FileExistsError:
            return _load_key(path)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("cannot store an index key at %s (%s); indexes will be rebuilt by every process", path, exc)
    return key


def _seal(body: dict[str, Any], key: bytes) -> bytes:
    payload = json.dumps(body, sort_keys=True, separators=(",", ":"))
    mac = hmac.new(key, payload.encode("utf-8"), hashlib.sha256).hexdigest()
    return json.dumps({"index": body, "hmac": mac}, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _unseal(data: bytes, key: bytes) -> dict[str, Any]:
    """The body of a signed manifest, or SearchIndexError saying why it is not one memfs wrote."""
    try:
        outer = json.loads(data.decode("utf-8"))
        body, mac = outer["index"], outer["hmac"]
        payload = json.dumps(body, sort_keys=True, separators=(",", ":"))
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
        raise SearchIndexError(f"its {MANIFEST} is unreadable ({type(exc).__name__})") from None
    expected = hmac.new(key, payload.encode("utf-8"), hashlib.sha256).hexdigest()
    if not isinstance(mac, str) or not hmac.compare_digest(mac, expected):
        raise SearchIndexError("it was not built by memfs for this user (a .memfs/ copied or synced from elsewhere?)")
    if not isinstance(body, dict) or not isinstance(body.get("id"), str) or not isinstance(body.get("files"), dict):
        raise SearchIndexError(f"its {MANIFEST} is malformed")
    if body.get("schema") != SCHEMA_VERSION:
        raise SearchIndexError("its schema is outdated")
    checked: dict[str, Any] = body
    return checked


def _read_fd(fd: int, size: int) -> bytes:
    # One read for any file under 1 GiB: joining chunks copies a segment of tens of MB once more
    chunks = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 30))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


class _Codec(W3Codec):  # type: ignore[misc]
    """Whoosh's codec, except that a new segment's name comes from the OS, not from :mod:`random`.

    Whoosh names segments with ``random.choice``: a program that seeds :mod:`random` (for
    reproducible runs; Hypothesis does it before every example) would name its next segment
    like an earlier run did, and Whoosh's commit then fails on the name clash (the index was
    rebuilt from the files each time). The segment keeps a plain codec, so the pickled segment
    list names only Whoosh's classes.
    """

    def new_segment(self, storage: Any, indexname: str) -> Any:
        return W3Segment(W3Codec(), indexname, segid="".join(secrets.choice(_SEGMENT_CHARS) for _ in range(16)))

    def field_writer(self, storage: Any, segment: Any) -> Any:
        return _FieldWriter(self, storage, segment)


class _FieldWriter(W3FieldWriter):  # type: ignore[misc]
    """Whoosh's postings writer, reading each document's field lengths once rather than once per posting.

    Whoosh looks a document's length up for every posting it writes (to bound each block's
    scores), through a column reader: a fifth of the time of indexing long messages.
    """

    def add_postings(self, schema: Any, lengths: Any, items: Any) -> None:
        super().add_postings(schema, _Lengths(lengths) if lengths else lengths, items)


class _Lengths:
    """A segment's field lengths, each field's read into a list the first time it is asked for."""

    def __init__(self, lengths: Any) -> None:
        self._lengths = lengths
        self._fields: dict[str, list[int]] = {}

    def doc_field_length(self, docnum: int, fieldname: str, default: int = 0) -> int:
        column = self._fields.get(fieldname)
        if column is None:
            read = self._lengths.doc_field_length
            column = self._fields[fieldname] = [read(doc, fieldname) for doc in range(self._lengths.doc_count_all())]
        return column[docnum] if docnum < len(column) else default


_SEGMENT_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"  # what Whoosh's own segment names use


class _Storage(FileStorage):  # type: ignore[misc]
    """Whoosh's file storage, reading only files memfs vouches for, into memory (never mmap).

    ``trusted`` names the files of the signed manifest with their size and sha256; files this
    object created itself (a writer's work in progress) are known by their inode. Listing
    shows Whoosh nothing else, so a planted table of contents is never even opened.
    """

    supports_mmap = False

    def __init__(self, path: str) -> None:
        super().__init__(path, supports_mmap=False)
        self.trusted: dict[str, tuple[int, str]] = {}
        self.own: dict[str, int] = {}
        self.cache: dict[tuple[str, str], bytes] = {}

    def list(self) -> list[str]:
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        return [n for n in names if n in self.trusted or n in self.own]

    def create_file(self, name: str, excl: bool = False, mode: str = "wb", **kwargs: Any) -> Any:
        f = super().create_file(name, excl, mode, **kwargs)
        os.fchmod(f.fileno(), 0o600)  # Whoosh creates files as the umask allows; the index is the owner's alone
        self.own[name] = os.fstat(f.fileno()).st_ino
        return f

    def lock(self, name: str) -> Any:
        path = self._fpath(name)
        with contextlib.suppress(FileExistsError):  # Whoosh would make its lock file as the umask allows
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        return super().lock(name)

    def rename_file(self, oldname: str, newname: str, safe: bool = False) -> None:
        super().rename_file(oldname, newname, safe)
        if oldname in self.own:
            self.own[newname] = self.own.pop(oldname)

    def delete_file(self, name: str) -> None:
        super().delete_file(name)
        self.own.pop(name, None)

    def temp_storage(self, name: str | None = None) -> Any:
        # a writer's scratch files, which only it writes and reads back
        return FileStorage(
            os.path.join(self.folder, name or f"{secrets.token_hex(8)}.tmp"), supports_mmap=False
        ).create()

    def open_file(self, name: str, **kwargs: Any) -> Any:
        entry = self.trusted.get(name)
        if entry is not None:
            if (name, entry[1]) not in self.cache:
                self.cache[name, entry[1]] = self.checked(name)
            return BufferFile(self.cache[name, entry[1]], name=name)
        data, inode = self.read(name)
        if self.own.get(name) != inode:
            raise SearchIndexError(f"index file {name} was not written by memfs; not reading it")
        return BufferFile(data, name=name)

    def checked(self, name: str) -> bytes:
        """The bytes of a file of the signed list, once they match it (not kept: see :meth:`open_file`)."""
        size, digest = self.trusted[name]
        data, _ = self.read(name, size)
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            raise SearchIndexError(f"index file {name} is not the one memfs wrote (damaged or replaced)")
        return data

    def read(self, name: str, size: int | None = None) -> tuple[bytes, int]:
        """The bytes and inode of a file of the folder (a link is refused); none read unless it has ``size`` bytes."""
        fd = os.open(self._fpath(name), os.O_RDONLY | os.O_NOFOLLOW)
        try:
            st = os.fstat(fd)
            if size is not None and st.st_size != size:
                raise SearchIndexError(f"index file {name} is not the one memfs wrote ({st.st_size} bytes, not {size})")
            return _read_fd(fd, st.st_size), st.st_ino
        finally:
            os.close(fd)


@dataclass(frozen=True)
class Hit:
    """One search result.

    Attributes:
        path: The file's path relative to the vault (``memories/users/alice/x.md``).
        title: The memory's title.
        score: How well it answers the query; higher is better. The BM25F score of its words, or, in
            a search by meaning, that fused with the model's similarity (z-scores over the memories
            searched: 0 is average, and a hit may score below it).
        snippet: A short passage of the body with matched words in ``**bold**``.
        id: The memory's ``id`` (None for files without one).
        namespace: The namespace the memory belongs to.
        type: The memory's ``type``, if any.
        tags: The memory's tags.
        updated: When the memory last changed (ISO 8601, UTC).
        state: ``current``, ``superseded``, ``expired`` or ``future`` when searched
            (:mod:`memfs.lifecycle`); only ``current`` unless history was asked for.
        validity: What the memory's validity keys say (its dates, what replaced it).
        similarity: In a search by meaning, the cosine similarity of the memory and the query by
            the embedding model (comparable across queries of one model); None otherwise, or when
            the memory has not been embedded yet.
        linked_from: For a note brought along by ``follow_links``: the hit that links to it (its
            score is then 0 and it has no snippet); None for a hit of the query itself.
    """

    path: str
    title: str
    score: float
    snippet: str = ""
    id: str | None = None
    namespace: str = ""
    type: str | None = None
    tags: tuple[str, ...] = ()
    updated: str | None = None
    state: str = CURRENT
    validity: Validity = field(default_factory=Validity)
    similarity: float | None = None
    linked_from: str | None = None


@dataclass(frozen=True)
class Dense:
    """What a hybrid search compares besides words: the query's vector and the memories' (:mod:`memfs.semantic`).

    Attributes:
        vector: The query's unit vector.
        vectors: The memories' vectors, by the sha256 of their files.
        weight: The model's share of the fused score (default: :data:`memfs.semantic.SEMANTIC_WEIGHT`).
    """

    vector: Any
    vectors: VectorStore
    weight: float


@dataclass(frozen=True)
class MessageHit:
    """A message found by search.

    Attributes:
        session_id: The session's id, as given to ``vault.session()``.
        session: The transcript's path relative to the vault (``sessions/trip.md``).
        position: The message's 1-based position in its session.
        role: ``user``, ``assistant``, ``function_call``, ...
        score: The BM25 score; higher is better.
        snippet: A passage of the message with matched words in ``**bold**``.
        item: The stored item itself (with its own ``id`` if it had one).
        time: When the message was appended (ISO 8601), if recorded.
        date: When the conversation took place, as its transcript's front matter says (``date``,
            else ``created``): what a question asking "when" needs.
        day: The same as an ISO date (``2023-05-08``) when it reads as one.
    """

    session_id: str
    session: str
    position: int
    role: str
    score: float
    snippet: str
    item: dict[str, Any]
    time: str | None = None
    date: str | None = None
    day: str | None = None


@dataclass(frozen=True)
class Problem:
    """A file the index skipped, and why."""

    path: str
    reason: str


@dataclass
class SyncReport:
    """What a :meth:`SearchIndex.sync` changed."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    embedded: int = 0  # memories given a vector (a reindex with an embedding model)

    @property
    def changed(self) -> int:
        """How many index entries changed."""
        return len(self.added) + len(self.updated) + len(self.removed)

    def merged(self, later: SyncReport) -> SyncReport:
        """This report followed by ``later`` (of a pass that came after it), each path listed once."""
        out = SyncReport()
        for name in ("added", "updated", "removed"):
            setattr(out, name, list(dict.fromkeys(getattr(self, name) + getattr(later, name))))
        out.problems = list(dict.fromkeys(self.problems + later.problems))
        return out


@dataclass
class Staged:
    """Index work done without the vault lock, waiting for :meth:`SearchIndex.publish` under it.

    ``aside`` is a private index in a folder of its own next to the real one. ``fresh``: it holds
    every file and replaces the index; otherwise it holds the files ``paths`` named (None: any
    file) whose indexing reads a lot, and its segments join the index.
    """

    aside: SearchIndex
    fresh: bool
    paths: list[str] | None
    report: SyncReport
    built: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # the aside's known(), read without the lock
    as_built: set[str] = field(default_factory=set)  # set by publish: the files published as they were built

    def discard(self) -> None:
        """Drop the aside index and its folder."""
        self.aside.close()
        shutil.rmtree(self.aside.folder, ignore_errors=True)


Progress = Callable[[int, int], None]
_T = TypeVar("_T")


@dataclass(frozen=True)
class Found(Generic[_T]):
    """What one query of the index found, and which of those files changed since they were indexed.

    The hits of a ``stale`` file are left out of ``hits`` (:meth:`SearchIndex.path_of` aside): the
    caller indexes those files again and asks again (:class:`memfs.catalog.Catalog`), so a
    changed file is ranked by what it says now and a deleted one is never returned.
    """

    hits: list[_T]
    stale: list[str] = field(default_factory=list)


class _Postings:
    """Decoded postings and field lengths of the open index's segments, as arrays, for :meth:`SearchIndex._rank`.

    Walking postings through Whoosh costs about a microsecond of Python per posting, and a
    query of common words (the names of a vault about a few people) reads most documents' postings
    for each of its terms. A segment never changes once written (a deletion is only a mark beside
    it), so what was decoded from it stays true for as long as the segment exists: a term's
    document numbers and frequencies, and each document's field lengths. Scoring is then a few
    array operations per term whatever the number of postings. Entries are per segment, so a
    write (which adds a small segment, marks deletions, sometimes merges small segments) leaves
    the big segments' entries in place. Deleted documents are masked at query time.
    """

    def __init__(self) -> None:
        self._postings: dict[tuple[str, str, str], tuple[Any, Any]] = {}  # in use order, oldest first
        self._lengths: dict[tuple[str, str], Any] = {}
        self._size = 0  # postings held in ``_postings``

    def keep_only(self, segments: set[str]) -> None:
        """Forget what was decoded from segments not in ``segments`` (merged away, or another index)."""
        for gone in [key for key in self._postings if key[0] not in segments]:
            self._size -= len(self._postings.pop(gone)[0])
        for old in [key for key in self._lengths if key[0] not in segments]:
            del self._lengths[old]

    def postings(self, reader: Any, name: str, term: str) -> tuple[Any, Any]:
        """One segment's postings of ``(name, term)``: its document numbers and frequencies, deletions included."""
        key = (reader.segment().segment_id(), name, term)
        found = self._postings.pop(key, None)
        if found is None:
            found = _decode(reader, name, term)
            if len(found[0]) < CACHE_FROM_POSTINGS:
                return found
            self._size += len(found[0])
            while self._size > MAX_CACHED_POSTINGS and self._postings:
                self._size -= len(self._postings.pop(next(iter(self._postings)))[0])
        self._postings[key] = found  # now the most recently used
        return found

    def lengths(self, reader: Any, name: str) -> Any:
        """Each document's length in field ``name`` in one segment (as Whoosh stores it: approximated in a byte)."""
        key = (reader.segment().segment_id(), name)
        found = self._lengths.get(key)
        if found is None:
            found = self._lengths[key] = _LENGTHS[_length_bytes(reader, name, reader.doc_count_all())]
        return found


_LENGTHS = np.array([byte_to_length(b) if b else 0 for b in range(256)], dtype=np.float64)  # Whoosh's length byte


def _length_bytes(reader: Any, name: str, count: int) -> Any:
    """The length byte of each of a segment's ``count`` documents in field ``name`` (0 for none), as an array.

    Whoosh keeps them in a column file of one byte per document, up to the last document that
    has the field; reading the file whole replaces a Python call per document.
    """
    filename = W3Codec.column_filename(reader.segment(), f"_{name}_len")  # whoosh3's name for the lengths column
    data = b""
    if reader.storage().file_exists(filename):
        with contextlib.closing(reader.storage().open_file(filename)) as handle:
            data = handle.read()
    found = np.zeros(count, dtype=np.uint8)
    found[: len(data)] = np.frombuffer(data, dtype=np.uint8)[:count]
    return found


def _decode(reader: Any, name: str, term: str) -> tuple[Any, Any]:
    """The document numbers and frequencies of ``(name, term)`` in one segment, deleted documents included.

    Read a block of postings at a time from Whoosh's W3 leaf matcher (the codec of every memfs
    index), not a Python call per posting.
    """
    matcher = reader.postings(name, term)
    if isinstance(matcher, FilterMatcher):  # the segment's deletions: masked at query time instead
        matcher = matcher.child
    ids: list[Any] = []
    weights: list[Any] = []
    while matcher.is_active():
        matcher._read_ids()
        matcher._read_weights()
        ids.append(np.asarray(matcher._ids, dtype=np.int32))
        weights.append(np.asarray(matcher._weights, dtype=np.float32))
        matcher._next_block()
    if not ids:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
    return np.concatenate(ids), np.concatenate(weights)


class SearchIndex:
    """A Whoosh index over the Markdown files below ``root``'s content folders.

    Writers (:meth:`sync`, :meth:`clear`, :meth:`publish`) must hold the vault lock; readers
    need not, nor does :meth:`stage`, which builds a long job aside for :meth:`publish`. One
    object may be used from several threads.
    """

    CONTENT_DIRS = CONTENT_DIRS

    def __init__(self, root: Path, folder: Path, *, lock_timeout: float = 30.0) -> None:
        self.root = root
        self.folder = folder
        self.lock_timeout = lock_timeout
        self.changes = ChangeFinder(root, CONTENT_DIRS)
        self.problem = ""  # why the index on disk was last found unusable
        self._real_root = os.path.realpath(root)
        self._lock = threading.RLock()  # Whoosh's readers are not thread-safe without mmap
        self._ix: Any = None
        self._storage: _Storage | None = None
        self._manifest: bytes | None = None  # the signed list the open index was verified against
        self._id = ""
        self._searcher: Any = None
        self._transcript_stats: dict[str, tuple[int, int] | None] = {}
        self._validities: _Validities | None = None  # of the open searcher: see _not_current
        self._decoded = _Postings()  # what _rank decoded from the open index's segments
        self._live: tuple[Any, Any] = (None, None)  # a searcher, and per document of it: not deleted
        self._users: tuple[Any, Any] = (None, None)  # a searcher, and per document of it: a user's message
        self._known_all: tuple[bytes | None, dict[str, tuple[Any, ...]]] | None = None  # known() of one manifest
        self._lists: dict[str, indexed.SegmentFiles] = {}  # what each segment indexed, by segment id
        self._segment_digests: dict[str, list[str]] = {}  # per segment: each document's file sha256 (see _digests)
        self._rows_cache: dict[str, tuple[Any, int, Any]] = {}  # per segment: (vectors, their count, rows)
        self._unlisted: set[str] = set()  # segments whose list file is missing or unusable: written by the next sync
        self._differ_memo: tuple[Any, bytes | None, list[str]] | None = None  # (a walk, a manifest, what differs)
        self._open()

    # -- lifecycle -------------------------------------------------------------

    def _open(self) -> None:
        if self.refresh():
            return
        if self.folder.exists():
            log.warning("search index at %s is unusable (%s); rebuilding it from the files", self.folder, self.problem)
        self._create()

    def refresh(self) -> bool:
        """Make sure the index open here is the one on disk; False if there is none memfs can use.

        Cheap when nothing changed (one small file read and compared): called before every
        search. When another process committed or rebuilt the index, the new one is verified
        and opened. False when the folder is gone or its files are not the ones memfs signed
        (``problem`` says why); the caller rebuilds, holding the vault lock.
        """
        with self._lock:
            try:
                with open(self.folder / MANIFEST, "rb") as handle:
                    data = handle.read(MAX_MANIFEST_BYTES + 1)
            except FileNotFoundError:
                self.problem = "it is missing" if not self.folder.exists() else "it is incomplete"
                return False
            except OSError as exc:
                self.problem = f"{type(exc).__name__}: {exc}"
                return False
            if data == self._manifest:
                return True
            try:
                if len(data) > MAX_MANIFEST_BYTES:
                    raise SearchIndexError(f"its {MANIFEST} is too large")
                self._adopt(data, _unseal(data, index_key()))
            except Exception as exc:  # Whoosh raises many types on damage; the files are the truth
                self.problem = str(exc) if isinstance(exc, SearchIndexError) else f"{type(exc).__name__}: {exc}"
                self._release()
                return False
            return True

    def _adopt(self, data: bytes, body: dict[str, Any]) -> None:
        """Open the index a verified manifest describes, reading (and checking) what is not cached."""
        storage = _Storage(str(self.folder))
        files = body["files"]
        storage.trusted = {str(n): (int(v[0]), str(v[1])) for n, v in files.items()}
        if self._storage is not None:  # segment files never change: keep what was read
            cache = self._storage.cache
            storage.cache = {k: v for k, v in cache.items() if storage.trusted.get(k[0], (0, ""))[1] == k[1]}
        ix = FileIndex(storage, schema=_schema(), indexname=INDEX_NAME)  # the schema is never unpickled
        searcher = ix.searcher(weighting=WEIGHTING)  # reads every segment now, so damage shows here
        self._release()
        self._ix, self._storage, self._searcher, self._manifest = ix, storage, searcher, data
        current = {seg.segment_id() for r, _ in searcher.reader().leaf_readers() if (seg := r.segment())}
        self._decoded.keep_only(current)
        self._lists = {sid: listed for sid, listed in self._lists.items() if sid in current}
        self._segment_digests = {sid: d for sid, d in self._segment_digests.items() if sid in current}
        self._rows_cache = {sid: rows for sid, rows in self._rows_cache.items() if sid in current}
        self._unlisted &= current
        if body["id"] != self._id:
            self._id = body["id"]
            self.changes.forget()  # another index: what was checked against the old one counts no more

    def _release(self) -> None:
        searcher, self._searcher = self._searcher, None
        self._ix, self._manifest = None, None
        self._transcript_stats = {}
        self._validities = None
        self._live = (None, None)
        self._users = (None, None)
        with contextlib.suppress(Exception):  # closing a damaged index must not fail
            if searcher is not None:
                searcher.close()

    def _create(self) -> None:
        """A new empty index in place of whatever is there, with a new id."""
        with self._lock:
            self._release()
            tmp = self.folder.with_name(self.folder.name + ".new")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True, mode=0o700)
            storage = _Storage(str(tmp))
            FileIndex.create(storage, _schema(), INDEX_NAME)
            self._id = secrets.token_hex(16)
            self._write_manifest(storage, {})
            shutil.rmtree(self.folder, ignore_errors=True)
            os.replace(tmp, self.folder)
            self._storage = None
            self.changes.forget()
            if not self.refresh():
                raise SearchIndexError(f"the new search index at {self.folder} cannot be opened: {self.problem}")

    def _write_manifest(self, storage: _Storage, previous: dict[str, tuple[int, str]]) -> bytes:
        """Sign the files of the newest table of contents (run by the writer, after its commit)."""
        toc = TOC.read(storage, INDEX_NAME, schema=_schema())
        segments = {seg.segment_id(): seg for seg in toc.segments}
        present = set(os.listdir(storage.folder))
        names = [
            n
            for n in present
            if not n.endswith(indexed.SUFFIX)
            and (n == f"_{INDEX_NAME}_{toc.generation}.toc" or n.split(".", 1)[0] in segments)
        ]
        files: dict[str, tuple[int, str]] = {}
        for name in names:
            if name in previous and name not in storage.own:  # an older segment: files never change
                files[name] = previous[name]
                continue
            data, _ = storage.read(name)
            files[name] = (len(data), hashlib.sha256(data).hexdigest())
            storage.cache[name, files[name][1]] = data
        for sid, segment in segments.items():  # each segment's list of files (memfs/indexed.py)
            name = indexed.name_of(sid)
            if name in previous and name in present and sid not in self._unlisted:
                files[name] = previous[name]  # written with its segment, which never changes
            else:
                files[name] = self._write_list(storage, segment, files)
        body = {
            "schema": SCHEMA_VERSION,
            "id": self._id,
            "generation": toc.generation,
            "files": {n: list(v) for n, v in sorted(files.items())},
        }
        data = _seal(body, index_key())
        tmp = os.path.join(storage.folder, MANIFEST + ".new")
        with open(tmp, "wb", opener=lambda path, flags: os.open(path, flags, 0o600)) as handle:
            handle.write(data)
        os.replace(tmp, os.path.join(storage.folder, MANIFEST))
        return data

    def _write_list(self, storage: _Storage, segment: Any, files: dict[str, tuple[int, str]]) -> tuple[int, str]:
        """Write the list of the files ``segment`` indexed beside it; its size and sha256, to be signed.

        Read from the segment's stored fields, through a storage that checks every file against
        ``files`` (what is about to be signed), unless this process has the list already.
        """
        sid = segment.segment_id()
        listed = self._lists.get(sid)
        if listed is None or listed.doc_count != segment.doc_count_all():
            check = _Storage(storage.folder)
            check.trusted, check.cache = files, storage.cache
            reader = SegmentReader(check, _schema(), segment)
            try:
                listed = self._lists[sid] = indexed.read_from(reader)
            finally:
                reader.close()
        data = indexed.dumps(listed)
        tmp = os.path.join(storage.folder, f".{secrets.token_hex(8)}{indexed.SUFFIX}")  # no segment's name
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, os.path.join(storage.folder, indexed.name_of(sid)))  # over whatever was there, link or not
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._unlisted.discard(sid)
        return len(data), hashlib.sha256(data).hexdigest()

    def close(self) -> None:
        """Close the searcher and the index."""
        with self._lock:
            self._release()

    def clear(self) -> None:
        """Drop every entry (the next full sync rebuilds it); the caller holds the vault lock."""
        self._create()

    def doc_count(self) -> int:
        """How many files are indexed (malformed ones included)."""
        with self._lock:
            return int(self._reader().doc_count())

    def _reader(self) -> Any:
        if self._searcher is None:
            if self._ix is None and not self.refresh():
                raise SearchIndexError(f"the search index is unusable: {self.problem}")
            if self._searcher is None:
                self._searcher = self._ix.searcher(weighting=WEIGHTING)
        return self._searcher

    # -- keeping it in step with the files -------------------------------------

    def sync(
        self,
        paths: Iterable[str] | None = None,
        *,
        progress: Progress | None = None,
        known: dict[str, tuple[Any, ...]] | None = None,
        walked: dict[str, Stat] | None = None,
    ) -> SyncReport:
        """Bring the index up to date with the files (all of them, or just ``paths``).

        Only files whose ``(mtime_ns, size)`` differ from what was indexed are read. Malformed
        files are recorded as problems and kept out of search results. The caller holds the
        vault lock. A full sync also starts :attr:`changes` afresh from the files it saw.
        ``known`` is what :meth:`known` would return, when the caller has it already.

        ``walked`` is what :meth:`walk` returned just before the caller took the lock: a full
        sync then stats again only the files that walk found differing from the index (all of
        them if there are many); changes made after it are the next search's to find, since
        :attr:`changes` started from that walk.
        """
        with self._lock:
            if not self.refresh():
                raise SearchIndexError(f"the search index is unusable: {self.problem}")
            memo, self._differ_memo = self._differ_memo, None
            ours = known is None
            if known is None:
                known = self.known(None if paths is None else set(paths))
            differ = None
            if paths is None and walked is not None:
                same = ours and memo is not None and memo[0] is walked and memo[1] == self._manifest
                differ = memo[2] if same and memo is not None else _differing(walked, known)  # stage() compared them
            if paths is not None:
                on_disk = {p: st for p in paths if (st := self._stat(p))}
                gone = [p for p in known if p not in on_disk]
            elif differ is not None and len(differ) <= STAGE_FROM_FILES:  # those the walk found changed, again now
                on_disk = {p: st for p in differ if (st := self._stat(p))}
                gone = [p for p in differ if p in known and p not in on_disk]
            else:  # every file (many changed: a walk costs less than a check of each through _stat)
                on_disk = self.changes.scan()
                gone = [p for p in known if p not in on_disk]
            report = SyncReport()
            todo = [p for p, st in on_disk.items() if known.get(p, (None,))[:2] != st]
            if not todo and not gone:
                if self._unlisted:  # an index an older memfs made, or a list damaged: list its segments now
                    self._committed()
                return report
            options: dict[str, Any] = {"timeout": self.lock_timeout, "limitmb": 128}
            if not known and len(todo) >= PARALLEL_FROM_DOCS and (os.cpu_count() or 1) > 1:
                # A build from scratch: two processes index halves into two segments (measured 1.4x on
                # 2 cores). Only for fresh builds: Whoosh's multiprocess writer merges updates poorly.
                options.update(procs=2, multisegment=True)
            writer = self._ix.writer(codec=_Codec(), **options)
            try:
                for done, rel in enumerate(todo, 1):
                    self._index_file(writer, rel, on_disk[rel], known, report)
                    if progress is not None:
                        progress(done, len(todo))
                for rel in gone:
                    writer.delete_by_term("path", rel)
                    report.removed.append(rel)
                writer.commit()
            except BaseException:
                writer.cancel()
                raise
            self._committed()
            return report

    def walk(self) -> tuple[dict[str, Stat], list[str]]:
        """Stat every file now (no lock needed), for :meth:`stage` and :meth:`sync` to share.

        Returns the ``(mtime_ns, size)`` of every Markdown file under the content folders, and
        the vault paths of the temporary files of memfs's writers it passed. :attr:`changes`
        starts afresh from this walk.
        """
        found = self.changes.scan()
        return found, list(self.changes.leftovers)

    def _committed(self) -> None:
        """Sign what the writer just committed and open it."""
        assert self._storage is not None
        data = self._write_manifest(self._storage, dict(self._storage.trusted))
        self._adopt(data, _unseal(data, index_key()))

    # -- long jobs: built without the vault lock, published under it ------------

    def stage(
        self,
        paths: Iterable[str] | None = None,
        *,
        fresh: bool = False,
        progress: Progress | None = None,
        walked: dict[str, Stat] | None = None,
    ) -> Staged | None:
        """Do the expensive part of :meth:`sync` without the vault lock; :meth:`publish` finishes it.

        Reading, parsing and indexing files go into a private index in a folder beside this one,
        which no other process reads, so writers are not kept waiting meanwhile (a transcript of
        50,000 messages takes about half a minute). ``fresh`` builds a whole new index (a
        rebuild). Otherwise only the files ``paths`` names (None: every file) that are new or
        changed and must be read whole are built (a transcript whose new entries follow the
        indexed ones is left: that is quick under the lock), and None is returned when that is
        little work (under :data:`STAGE_FROM_BYTES` and :data:`STAGE_FROM_FILES`): the caller
        syncs under the lock as usual. ``walked``: what :meth:`walk` found just before, for a
        stage of every file. Needs no lock.
        """
        wanted = None if paths is None else list(paths)
        todo = None
        if not fresh:
            todo = self._heavy(wanted, walked)
            if not todo:
                return None
        folder = self.folder.with_name(f"{self.folder.name}.stage-{secrets.token_hex(8)}")
        try:
            aside = SearchIndex(self.root, folder, lock_timeout=self.lock_timeout)
        except BaseException:  # a full disk, say: leave nothing behind
            for leftover in (folder, folder.with_name(folder.name + ".new")):
                shutil.rmtree(leftover, ignore_errors=True)
            raise
        staged = Staged(aside, fresh, wanted, SyncReport())
        try:
            staged.report = aside.sync(todo, progress=progress)
            staged.built = aside.known()
        except BaseException:
            staged.discard()
            raise
        return staged

    def _heavy(self, paths: list[str] | None, walked: dict[str, Stat] | None = None) -> list[str]:
        """Those of ``paths`` (None: every file, as ``walked`` saw it) whose indexing reads them whole, if a lot."""
        if not self.refresh():
            return []  # the pass under the lock rebuilds it, and says so
        with self._lock:  # what is known, and of which index
            known, manifest = self.known(None if paths is None else set(paths)), self._manifest
            differ = _differing(walked, known) if paths is None and walked is not None else None
        if paths is not None:
            on_disk = {p: st for p in paths if (st := self._stat(p))}
        elif walked is None or differ is None:
            on_disk = dict(self.scan())
        else:  # only what differs can be work; sync() takes the same list up under the lock
            self._differ_memo = (walked, manifest, differ)
            on_disk = {p: walked[p] for p in differ if p in walked}
        heavy, size = [], 0
        for rel, st in on_disk.items():
            if known.get(rel, (None,))[:2] == st or (is_transcript(rel) and rel in known and self._resumes(rel, st[1])):
                continue
            heavy.append(rel)
            size += st[1]
        return heavy if size >= STAGE_FROM_BYTES or len(heavy) >= STAGE_FROM_FILES else []

    def _resumes(self, rel: str, size: int) -> bool:
        """True if transcript ``rel`` (``size`` bytes now) looks appended to since it was indexed.

        Judged without reading it (the file is not hashed twice): it is at least as long as when
        it was indexed. If the indexed part was rewritten after all, the sync under the lock
        reads it whole (rare: a person editing an old message while the session is appended to).
        """
        with self._lock:
            stored = dict(self._reader().document(path=rel) or {})
        ends = [int(offset) for offset in (stored.get("checkpoints") or {})]
        return bool(ends) and max(ends) <= size

    def publish(self, staged: Staged, *, progress: Progress | None = None) -> SyncReport:
        """Make what :meth:`stage` built part of the index, redoing only what changed since (holding the vault lock).

        A file whose stat is still the one it was built from is published as built; a transcript
        appended to since is published with its new entries added after the built ones; any other
        file changed since is left to the caller's :meth:`sync` (or, for a fresh build, synced
        here). Files the index already holds as built (another process published the same work)
        are left as they are. A fresh build is brought up to date with every file, then replaces
        the index folder. The aside folder is gone afterwards, whatever happens.
        """
        with self._lock:
            try:
                if staged.fresh:
                    return self._publish_fresh(staged, progress)
                return self._publish_segments(staged)
            finally:
                staged.discard()

    def _publish_fresh(self, staged: Staged, progress: Progress | None) -> SyncReport:
        aside = staged.aside
        late = aside.sync(None, progress=progress, known=staged.built)  # stats only, and what changed meanwhile
        report = staged.report.merged(late)
        staged.as_built = set(staged.built) - {*late.added, *late.updated, *late.removed}
        changes = aside.changes  # it has just looked at every file
        changes.delay = self.changes.delay
        self._lists.update(aside._lists)  # the lists of its segments, as its commits wrote them
        aside.close()
        self._release()
        old = self.folder.with_name(f"{self.folder.name}.old-{secrets.token_hex(8)}")
        with contextlib.suppress(FileNotFoundError):
            os.rename(self.folder, old)  # searches finding no index meanwhile wait for the vault lock
        os.rename(aside.folder, self.folder)
        shutil.rmtree(old, ignore_errors=True)
        self._storage = None
        if not self.refresh():
            raise SearchIndexError(f"the new search index at {self.folder} cannot be opened: {self.problem}")
        self.changes = changes
        return report

    def _publish_segments(self, staged: Staged) -> SyncReport:
        aside, built, made = staged.aside, staged.report, staged.built
        if not self.refresh():
            raise SearchIndexError(f"the search index is unusable: {self.problem}")
        before = self.known(None) if len(made) > 100 else self.known(set(made))  # known(None) is cached
        keep: list[str] = []
        resume: dict[str, tuple[tuple[int, int], bytes, dict[str, Any]]] = {}
        drop: list[str] = []
        for rel, was in made.items():
            now = self._stat(rel)
            if rel in before and tuple(before[rel][:2]) == now:  # the index has it as it is (another publish)
                drop.append(rel)
            elif now == tuple(was[:2]):
                keep.append(rel)
            elif now is not None and is_transcript(rel) and (more := self._appended(aside, rel, was)):
                resume[rel] = (now, *more)
            else:
                drop.append(rel)
        report = SyncReport()
        for rel in keep + list(resume):
            if rel not in before:
                report.added.append(rel)
            elif is_transcript(rel) or before[rel][2] != made[rel][2]:  # a touched file is not reported
                report.updated.append(rel)
        staged.as_built = set(keep)
        report.problems = [p for p in built.problems if p.path in staged.as_built]
        if not keep and not resume:
            return report
        # The new entries of a transcript that grew, after the built ones. Its last built messages
        # are indexed again (their neighbours changed): what that replaces goes from the built
        # segments, so the plan is made first and replayed into the writer.
        plans: list[_Recorder] = []
        for rel, (st, data, stored) in resume.items():
            plan = _Recorder()
            self._index_transcript(
                plan, rel, st, data, hashlib.sha256(data).hexdigest(), made[rel], plan.report, stored=stored
            )
            plans.append(plan)
            report.problems += plan.report.problems
        segments = aside._segments_without(drop, list(resume), [d for plan in plans for d in plan.deletes])
        writer = self._ix.writer(timeout=self.lock_timeout, limitmb=128)
        moved: list[str] = []
        try:
            for rel in keep + list(resume):
                writer.delete_by_term("path", rel)
                writer.delete_by_term("session", rel)
            for plan in plans:
                plan.replay(writer)
            ids = {seg.segment_id() for seg in segments}
            self._lists.update((sid, listed) for sid, listed in aside._lists.items() if sid in ids)
            for name in sorted(os.listdir(aside.folder)):
                if name.split(".", 1)[0] in ids:
                    os.rename(aside.folder / name, self.folder / name)
                    moved.append(name)
            writer.commit(mergetype=lambda w, segs: MERGE_SMALL(w, segs) + segments)
        except BaseException:
            if not writer.is_closed:
                writer.cancel()
            for name in moved:
                with contextlib.suppress(OSError):
                    os.unlink(self.folder / name)
            raise
        self._committed()
        return report

    def _appended(self, aside: SearchIndex, rel: str, was: tuple[Any, ...]) -> tuple[bytes, dict[str, Any]] | None:
        """The bytes of transcript ``rel`` and its aside entry, if it only grew since ``aside`` indexed it."""
        try:
            found = _fs.read_vault_file(self.root, rel, limit=MAX_TRANSCRIPT_BYTES)
        except (OSError, FileTooLargeError, LinkError):
            return None
        if found is None:
            return None
        data = found[0]
        with aside._lock:
            stored = dict(aside._reader().document(path=rel) or {})
        start, _ = _resume_point(data, stored)
        return (data, stored) if start == was[1] else None

    def _segments_without(
        self, drop: list[str], heads: list[str], deletes: Sequence[tuple[str, str]] = ()
    ) -> list[Any]:
        """This (aside) index's segments, less ``drop``'s documents, ``heads``' entries and ``deletes``' terms.

        ``deletes`` are ``(field, value)`` terms of documents to leave out. Deletions live in the
        segment objects the table of contents holds, so the segments can
        join another index as they are.
        """
        if drop or heads or deletes:
            writer = self._ix.writer(timeout=self.lock_timeout)
            try:
                for rel in drop:
                    writer.delete_by_term("path", rel)
                    writer.delete_by_term("session", rel)
                for rel in heads:
                    writer.delete_by_term("path", rel)
                for field, value in deletes:
                    writer.delete_by_term(field, value)
                writer.commit(merge=False)
            except BaseException:
                if not writer.is_closed:
                    writer.cancel()
                raise
            self._committed()
        assert self._storage is not None
        toc = TOC.read(self._storage, INDEX_NAME, schema=_schema())
        return [seg for seg in toc.segments if seg.doc_count() > 0]

    def sweep_asides(self, older_than: float = ASIDE_KEPT_SECONDS) -> None:
        """Remove the aside folders (builds, replaced indexes) that killed processes left (holding the vault lock)."""
        now = time.time()
        for kind in ("stage", "old"):
            for path in self.folder.parent.glob(f"{self.folder.name}.{kind}-*"):
                with contextlib.suppress(OSError):
                    if now - path.stat().st_mtime > older_than:
                        shutil.rmtree(path, ignore_errors=True)

    def outdated(self, paths: Iterable[str]) -> list[str]:
        """Those of ``paths`` whose file is not what the index holds (changed, new or gone); no lock needed."""
        paths = list(paths)
        known = self.known(set(paths))
        return [rel for rel in paths if file_stat(self.root, rel) != (known[rel][:2] if rel in known else None)]

    def _index_file(
        self, writer: Any, rel: str, st: tuple[int, int], known: dict[str, tuple[Any, ...]], report: SyncReport
    ) -> None:
        limit = MAX_TRANSCRIPT_BYTES if is_transcript(rel) else MAX_INDEXED_BYTES
        try:  # through the path gate (a link swapped in is not read); the size checked before a byte is read
            found = _fs.read_vault_file(self.root, rel, limit=limit)
        except FileTooLargeError as exc:
            self._index_too_large(writer, rel, st, exc, known, report)
            return
        except (OSError, LinkError) as exc:
            log.warning("cannot read %s: %s", rel, exc)
            return
        if found is None:  # gone (or replaced by a link) since the walk: the next sync removes it
            return
        data = found[0]
        sha = hashlib.sha256(data).hexdigest()
        if is_transcript(rel):
            self._index_transcript(writer, rel, st, data, sha, known.get(rel), report)
            return
        if known.get(rel, (None, None, None))[2] != sha:  # a touched file is not reported
            (report.updated if rel in known else report.added).append(rel)
        try:
            doc = load_bytes(data, path=rel)
        except DocumentError as exc:
            log.warning("skipping malformed file: %s", exc)
            report.problems.append(Problem(rel, exc.reason))
            writer.update_document(path=rel, kind="invalid", stat=(st[0], st[1], sha), error=exc.reason)
            return
        # add_document when the path was never indexed: update_document would search for it first
        (writer.update_document if rel in known else writer.add_document)(**self._fields(rel, doc, st, sha))

    def _index_too_large(
        self,
        writer: Any,
        rel: str,
        st: tuple[int, int],
        error: FileTooLargeError,
        known: dict[str, tuple[Any, ...]],
        report: SyncReport,
    ) -> None:
        """Record a file over its size limit as skipped, unread: masked from search, listed as a problem.

        Its stat is kept (with no content digest), so it is not looked at again until it changes.
        """
        what = "its messages are not searchable" if is_transcript(rel) else "not searchable, not committed"
        reason = (
            f"{error.size:,} bytes, larger than the {error.limit:,} bytes memfs reads; {what}: shorten or remove it"
        )
        log.warning("skipping %s: %s", rel, reason)
        if known.get(rel, (None, None, None))[2] != "":
            (report.updated if rel in known else report.added).append(rel)
        report.problems.append(Problem(rel, reason))
        if is_transcript(rel):
            writer.delete_by_term("session", rel)
        writer.update_document(path=rel, kind="invalid", stat=(st[0], st[1], ""), error=reason)

    def _index_transcript(
        self,
        writer: Any,
        rel: str,
        st: tuple[int, int],
        data: bytes,
        sha: str,
        known: tuple[Any, ...] | None,
        report: SyncReport,
        *,
        stored: dict[str, Any] | None = None,
    ) -> None:
        """Index a transcript's messages; after an append or a pop, only what changed.

        The transcript's own entry keeps digests of the file's prefix at its last entries and at
        its end. A message's document holds its neighbours' words, so a change reaches the
        messages just before it too: if the file still starts with one of the digested prefixes,
        entries are re-read from a few messages before it, the first ones for their words alone.
        Only the last :data:`MAX_INDEXED_ENTRIES` entries are indexed (a transcript of 100,000
        messages costs what one of 5,000 does); older ones leave the index as new ones come.
        ``stored`` is the transcript's entry when it is not (yet) in this index (one built aside).
        """
        if stored is None:
            stored = dict(self._reader().document(path=rel) or {}) if known else {}
        usable = sorted(
            (off, digest, n) for off, (digest, n) in (stored.get("checkpoints") or {}).items() if off <= len(data)
        )
        now = _prefix_digests(data, [off for off, _, _ in usable])
        # the marks were taken from one version of the file: those before a matching one match too
        same = max(
            (n for (_, digest, n), digest_now in zip(usable, now, strict=True) if digest == digest_now), default=None
        )
        reach = len(CONTEXT_WEIGHTS) - 1
        start, first = None, 1
        if same is not None:
            first, start = next(((n, off) for off, _, n in reversed(usable) if n <= same - 2 * reach), (1, None))
        indexed_to = int(stored.get("position") or 0)  # the last entry indexed so far
        (report.updated if known else report.added).append(rel)
        try:
            entries, problems, meta = self._transcript_entries(data, rel, start, stored)
            if start is not None and sum(e.kind == "item" and e.n < (same or 0) for e in entries) < 2 * reach:
                start, first = None, 1  # manager entries in between: too few messages read for their neighbours
            elif start is not None and entries and entries[-1].n < indexed_to and indexed_to > MAX_INDEXED_ENTRIES:
                start, first = None, 1  # a pop: older entries come back into the window, so read them again
            if start is None:
                entries, problems, meta = self._transcript_entries(data, rel, None, stored)
        except DocumentError as exc:
            report.problems.append(Problem(rel, exc.reason))
            writer.delete_by_term("session", rel)
            writer.update_document(path=rel, kind="invalid", stat=(st[0], st[1], sha), error=exc.reason)
            return
        messages = [e for e in entries if e.kind == "item"]
        context = 0 if start is None else reach  # the first messages read are only their neighbours' context
        last = entries[-1].n if entries else first - 1
        floor = last - MAX_INDEXED_ENTRIES  # entries at or below it are not indexed
        if start is None:
            writer.delete_by_term("session", rel)
        else:
            changed = messages[context].n if len(messages) > context else first
            for n in range(changed, indexed_to + 1):
                writer.delete_by_term("path", f"{rel}#{n}")
            for n in range(max(1, indexed_to - MAX_INDEXED_ENTRIES + 1), min(changed, floor + 1)):
                writer.delete_by_term("path", f"{rel}#{n}")  # out of the window now
        for problem in problems:
            report.problems.append(Problem(rel, f"byte {problem.offset}: {problem.reason}"))
        day = written_date(meta["date"])
        date_terms = list(ANALYZER.stems(date_words(day) if day else meta["date"] or ""))
        own = [Counter(ANALYZER.stems(text_of(e.item))) for e in messages]
        for i in range(context, len(messages)):
            entry = messages[i]
            if entry.n <= floor:
                continue
            role = str(entry.item.get("role") or entry.item.get("type") or "")
            writer.add_document(
                **_with_terms(
                    {
                        "path": f"{rel}#{entry.n}",
                        "kind": "message",
                        "session": rel,
                        "session_id": meta["session_id"],
                        "namespace": "",
                        "message": _message_terms(own, i, date_terms),
                        "position": entry.n,
                        "speaker": speaker_of(entry.item),
                        "role": role,
                        "time": entry.time,
                        "item": json.dumps(entry.item, ensure_ascii=False),
                        "date": meta["date"],
                        "day": day.isoformat() if day else None,
                    }
                )
            )
        marks = [(e.offset, e.n) for e in entries[-8:]] + [(len(data), last + 1)]
        digests = _prefix_digests(data, [off for off, _ in marks])
        checkpoints = {off: (digest, n) for (off, n), digest in zip(marks, digests, strict=True)}
        writer.update_document(
            path=rel,
            kind="transcript",
            stat=(st[0], st[1], sha),
            checkpoints=checkpoints,
            position=last,
            **{k: v for k, v in meta.items() if v is not None},
        )

    @staticmethod
    def _transcript_entries(
        data: bytes, rel: str, start: int | None, stored: dict[str, Any]
    ) -> tuple[list[Any], list[Any], dict[str, Any]]:
        """A transcript's entries (from ``start``, else the last :data:`MAX_INDEXED_ENTRIES`) and front-matter facts.

        Those are the session's id and date: ``date`` if the front matter has one (the day the
        conversation took place, as written), else ``created``. Read from the transcript's own
        index entry when only the end of the file is parsed.
        """
        if start is not None:
            entries, problems = transcript.parse_entries(data, start)
            return entries, problems, {"session_id": str(stored.get("session_id") or rel), "date": stored.get("date")}
        parsed = transcript.parse(data, path=rel, last=MAX_INDEXED_ENTRIES)
        written = parsed.metadata.get("date") or parsed.metadata.get("created")
        meta = {"session_id": str(parsed.metadata.get("session_id", rel)), "date": str(written) if written else None}
        return parsed.entries, parsed.problems, meta

    def _fields(self, rel: str, doc: Document, st: tuple[int, int], sha: str) -> dict[str, Any]:
        meta = doc.metadata
        namespace = split_memory_path(rel)[0]
        mtime = datetime.fromtimestamp(st[0] / 1e9, timezone.utc)
        updated = normalize_time(meta.get("updated")) or timestamp(mtime)
        tags = note_tags(meta, doc.body)
        keys = link_keys(doc.body)
        held = validity(meta)
        terms = ["superseded" if held.superseded_by is not None else "timed" if held.timed else ""]
        kept: dict[str, Any] = (
            {}
            if held.plain
            else {
                "validity": (held.start, held.end, held.superseded_by, list(held.supersedes), held.expires),
            }
        )
        try:
            check(meta)
        except ValidityError as exc:  # a person's hand edit: the memory is served, the key ignored
            terms.append("unreadable")
            kept["validity_error"] = str(exc)
        kept["lifecycle"] = " ".join(t for t in terms if t) or None
        return _with_terms(
            {
                "path": rel,
                "kind": "memory",
                "namespace": namespace,
                "id": str(meta["id"]) if meta.get("id") is not None else None,
                "title": doc.title(rel),
                "body": _searched_body(meta, doc.body),
                "tags": ",".join(tags),
                "tag": ",".join(tag_terms(tags)) or None,
                "aliases": "\n".join(aliases_of(meta)) or None,
                "namekey": key_of(rel),
                "linkkey": ",".join(keys) or None,
                "haslinks": "1" if keys else None,
                "type": str(meta["type"]) if meta.get("type") is not None else None,
                "created": normalize_time(meta.get("created")) or updated,
                "updated": updated,
                "stat": (st[0], st[1], sha),
                **kept,
            }
        )

    def scan(self) -> Iterator[tuple[str, tuple[int, int]]]:
        """Every Markdown file under the content folders, with ``(mtime_ns, size)``.

        Hidden names, memfs's temporary files and symbolic links are skipped: a link could
        point outside the vault.
        """
        return walk(self.root, self.CONTENT_DIRS)

    def _stat(self, rel: str) -> tuple[int, int] | None:
        """The stat of a vault file named from outside (the pending list), or None.

        None unless it is a regular file reached through no symbolic link.
        """
        parent = os.path.dirname(rel)
        if os.path.realpath(os.path.join(self._real_root, parent)) != os.path.join(self._real_root, parent):
            return None
        return file_stat(self.root, rel)

    def known(self, only: set[str] | None = None) -> dict[str, tuple[Any, ...]]:
        """The ``(mtime_ns, size, sha256)`` each indexed file (or each of ``only``) was built from.

        All of them come from each segment's list of files (:mod:`memfs.indexed`), less the
        documents deleted since, rather than from every file's stored fields.
        """
        with self._lock:
            reader = self._reader()
            if only is None:  # the files' own entries, not every message's; kept until the index changes
                if self._known_all is None or self._known_all[0] != self._manifest:
                    found: dict[str, tuple[Any, ...]] = {}
                    for leaf, _ in reader.reader().leaf_readers():
                        if (segment := leaf.segment()) is not None:
                            found.update(self._listed(leaf).live(segment.deleted_docs()))
                    self._known_all = (self._manifest, found)
                return dict(self._known_all[1])
            known = {}
            for rel in only:
                stored = reader.document(path=rel)
                if stored and "stat" in stored:
                    known[rel] = tuple(stored["stat"])
            return known

    def _listed(self, leaf: Any) -> indexed.SegmentFiles:
        """The files the segment of ``leaf`` (a reader of one segment) indexed: its list file, else its stored fields.

        A list that is not signed (an index an older memfs made), not the bytes signed, or not
        this segment's is never used; the segment is then noted, so the next :meth:`sync`
        writes its list.
        """
        segment = leaf.segment()
        sid, count = segment.segment_id(), int(segment.doc_count_all())
        listed = self._lists.get(sid)
        if listed is not None and listed.doc_count == count:
            return listed
        name = indexed.name_of(sid)
        assert self._storage is not None
        try:
            if name not in self._storage.trusted:
                raise LookupError("none was signed")
            listed = indexed.loads(self._storage.checked(name), sid, count)
        except (LookupError, OSError, ValueError, SearchIndexError) as exc:
            level = logging.DEBUG if isinstance(exc, LookupError) else logging.WARNING
            log.log(level, "not using the list of files of index segment %s (%s); reading its stored fields", sid, exc)
            listed = indexed.read_from(leaf)
            self._unlisted.add(sid)
        self._lists[sid] = listed
        return listed

    def problems(self) -> list[Problem]:
        """The files that were skipped: malformed, or larger than memfs reads."""
        with self._lock:
            reader = self._reader()
            return [Problem(f["path"], f.get("error", "")) for f in reader.documents(kind="invalid")]

    def validity_problems(self) -> list[Problem]:
        """Memories whose validity keys memfs cannot read (edited by hand); they are served, the keys ignored."""
        with self._lock:
            searcher = self._reader()
            docs = searcher.docs_for_query(query.Term("lifecycle", "unreadable"))
            found = [searcher.stored_fields(doc) for doc in docs]
        return sorted((Problem(f["path"], f.get("validity_error", "")) for f in found), key=lambda p: p.path)

    def partly_indexed(self) -> list[Problem]:
        """The transcripts whose older entries message search does not cover (over :data:`MAX_INDEXED_ENTRIES`)."""
        with self._lock:
            found = []
            for f in self._reader().documents(kind="transcript"):
                last = int(f.get("position") or 0)
                if last > MAX_INDEXED_ENTRIES:
                    found.append(
                        Problem(
                            f["path"],
                            f"{last:,} entries; message search covers the last "
                            f"{MAX_INDEXED_ENTRIES:,} (entries 1 to "
                            f"{last - MAX_INDEXED_ENTRIES:,} are not indexed)",
                        )
                    )
            return sorted(found, key=lambda p: p.path)

    def entries(self) -> dict[str, str]:
        """Every indexed path with the sha256 of the content it was built from."""
        with self._lock:
            return {f["path"]: f["stat"][2] for f in self._reader().all_stored_fields() if "stat" in f}

    def path_of(self, memory_id: str) -> Found[str] | None:
        """The path of the memory whose ``id`` is ``memory_id``, if indexed.

        ``stale`` names it too if its file changed since it was indexed (the caller indexes it
        again and looks once more).
        """
        with self._lock:
            stored = self._reader().document(id=memory_id)
        if not stored:
            return None
        rel = str(stored["path"])
        return Found([rel], [] if file_stat(self.root, rel) == tuple(stored["stat"][:2]) else [rel])

    def linked(self, field: str, key: str) -> list[str]:
        """The paths of the memories whose link-table ``field`` (``namekey``, ``linkkey``, ``haslinks``) holds ``key``.

        Read as the index has them: callers check each against its file (:mod:`memfs.links`).
        """
        with self._lock:
            try:
                searcher = self._reader()
                found = searcher.search(query.Term(field, key), limit=None, filter=query.Term("kind", "memory"))
                return sorted({str(hit["path"]) for hit in found})
            except Exception as exc:
                raise SearchIndexError(f"reading the link table failed ({exc.__class__.__name__}: {exc})") from exc

    # -- searching -------------------------------------------------------------

    def search(
        self,
        text: str,
        *,
        k: int = 10,
        namespace: str | None = None,
        type: str | None = None,
        tags: Sequence[str] = (),
        since: str | None = None,
        until: str | None = None,
        snippets: bool = True,
        history: bool = False,
        now: datetime | None = None,
        dense: Dense | None = None,
    ) -> Found[Hit]:
        """Rank memories for ``text`` with BM25F over title, body and tags (and by meaning, given ``dense``).

        ``text`` is read as natural language; Whoosh syntax (``AND``, ``OR``, ``NOT``,
        ``title:word``, parentheses) is honoured, and a query whose syntax is broken is
        searched as its plain words. Wildcards, fuzzy terms and ranges are never expanded.

        Every hit is checked against its file (a stat): a hit whose file is gone or changed since
        it was indexed is left out, its file named in :attr:`Found.stale` (the catalog indexes it
        again and asks again, so it is ranked by what the file says now).

        A query may be up to :data:`MAX_QUERY_CHARS` characters (QueryTooLongError beyond); its
        first :data:`MAX_QUERY_TERMS` distinct content words are searched, and its Whoosh syntax
        is honoured only in queries of at most three times as many words.
        ``namespace`` is an exact path prefix: a hit is a memory of that namespace or of a folder
        below it, found through whole-term filters and checked again against its path.

        Only memories current at ``now`` (the clock by default) are ranked: superseded, expired
        and future ones are set aside before the top ``k`` are chosen, so ``k`` current hits come
        back when there are that many (see :meth:`_not_current`). ``history=True`` ranks them all,
        each hit saying its ``state`` and ``validity``.

        With ``dense`` (the query's vector and the memories'), a query of plain words is ranked
        by its words and its meaning fused (:meth:`_hybrid`), and finds memories that share no
        word with it; a query with Whoosh syntax (AND, NOT, fields) is ranked by its words alone.
        """
        check_query(text)
        if k <= 0:
            return Found([])
        filters = [query.Term("kind", "memory")]
        if namespace:
            namespace = namespace.strip("/")
            filters.append(query.Term("ns", namespace))
        if type:
            filters.append(query.Term("type", type))
        filters += [query.Term("tag", normalize_tag(t)) for t in tags]
        if since or until:
            filters.append(query.TermRange("updated", normalize_time(since), normalize_time(until)))
        others = query.Or([query.Term("kind", kind) for kind in ("invalid", "message", "transcript")])
        found: list[tuple[dict[str, Any], float]] = []
        similar: dict[str, float | None] = {}
        with self._lock:
            try:
                searcher = self._reader()
                hidden, hidden_paths = (set(), []) if history else self._not_current(searcher, now)
                parsed = self._parse(text, ("title", "aliases", "body", "tags")) if _syntax(text) else None
                pairs = _or_pairs(parsed)
                if dense is not None and (pairs is not None or parsed is None):
                    ranked = self._hybrid(searcher, pairs or self._plain(text, searcher), k, filters[1:], hidden, dense)
                    found = [(stored, score) for stored, score, _ in ranked]
                    similar = {stored["path"]: near for stored, _, near in ranked}
                elif pairs is not None:  # a flat OR: Whoosh's ranking, scored from the postings
                    found = self._rank(searcher, pairs, k, filters[1:], hidden)
                elif parsed is not None:
                    aside = [query.Term("path", p) for p in hidden_paths]
                    if not history:
                        aside.append(query.Term("lifecycle", "superseded"))
                    mask = query.Or([others, *aside])
                    results = searcher.search(
                        parsed, limit=k, mask=mask, filter=query.And(filters) if len(filters) > 1 else None
                    )
                    found = [(r.fields(), r.score) for r in results]
                else:
                    pairs = self._plain(text, searcher)
                    if not pairs:
                        return Found([])
                    found = self._rank(searcher, pairs, k, filters[1:], hidden)
            except Exception as exc:
                raise SearchIndexError(f"search failed ({exc.__class__.__name__}: {exc})") from exc
        if namespace:  # whatever the index returned, nothing from outside the scope
            found = [(s, score) for s, score in found if _in_scope(s, namespace)]
        stale = {s["path"] for s, _ in found if file_stat(self.root, s["path"]) != tuple(s["stat"][:2])}
        if stale:
            found = [(s, score) for s, score in found if s["path"] not in stale]
        stems = set(ANALYZER.stems(text))
        hits = [self._hit(stored, score, stems if snippets else None, now) for stored, score in found]
        hits = [replace(hit, similarity=similar.get(hit.path)) for hit in hits] if similar else hits
        return Found(hits, sorted(stale))

    def document_frequencies(self, text: str, *, namespaces: Sequence[str] = ()) -> tuple[int, dict[str, int]]:
        """How common ``text``'s terms are among the indexed memories: how many memories there are, and hold each.

        The terms are those a search looks for (stems, stop words left out, the first
        :data:`MAX_QUERY_TERMS`, in order); a memory holds a term in its title or its body.
        ``namespaces`` (exact prefixes, as in :meth:`search`) counts only the memories of those
        namespaces and the folders below them; none counts every memory. Deleted memories never count.
        """
        check_query(text)
        terms = list(dict.fromkeys(ANALYZER.stems(text)))[:MAX_QUERY_TERMS]
        with self._lock:
            try:
                searcher = self._reader()
                leaves = [(leaf.reader(), offset) for leaf, offset in searcher.leaf_searchers()]
                counted = self._live_docs(searcher, leaves) & self._holding(searcher, leaves, [("kind", "memory")])
                if namespaces:
                    counted &= self._holding(searcher, leaves, [("ns", ns.strip("/")) for ns in namespaces])
                held = {
                    t: int(np.count_nonzero(counted & self._holding(searcher, leaves, [("title", t), ("body", t)])))
                    for t in terms
                }
                return int(np.count_nonzero(counted)), held
            except Exception as exc:
                raise SearchIndexError(f"counting terms failed ({exc.__class__.__name__}: {exc})") from exc

    def _holding(self, searcher: Any, leaves: list[tuple[Any, int]], pairs: list[tuple[str, str]]) -> Any:
        """Per document of ``searcher``: True if it holds any of the ``(field, term)`` pairs, deleted ones too."""
        found = np.zeros(searcher.doc_count_all(), dtype=bool)
        for leaf, offset in leaves:
            for name, term in pairs:
                if (name, term) in leaf:
                    found[self._decoded.postings(leaf, name, term)[0] + offset] = True
        return found

    def _not_current(self, searcher: Any, now: datetime | None) -> tuple[set[int], list[str]]:
        """The documents not current at ``now``, and the paths of those set aside by their dates.

        Every ``superseded`` document is, and a ``timed`` one when its dates say so now (their
        paths are for a query Whoosh runs, whose mask needs terms).

        Only documents with validity keys are read (most memories have none), once per searcher
        (a stored-field read costs about 0.1 ms: read per search, they were most of its cost), and
        the dates are judged at the moment of the search, never at indexing: a memory that expired
        since it was indexed is set aside all the same.
        """
        if self._validities is None:
            superseded = set(searcher.docs_for_query(query.Term("lifecycle", "superseded")))
            timed = []
            for doc in searcher.docs_for_query(query.Term("lifecycle", "timed")):
                stored = searcher.stored_fields(doc)
                timed.append((doc, _validity(stored), stored["path"]))
            self._validities = (superseded, timed)
        superseded, timed = self._validities
        moment = iso(now or datetime.now(timezone.utc))
        hidden, paths = set(superseded), []
        for doc, held, path in timed:
            if held.state_at(moment) != CURRENT:
                hidden.add(doc)
                paths.append(path)
        return hidden, paths

    def search_messages(
        self,
        text: str,
        *,
        k: int = 10,
        session: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> Found[MessageHit]:
        """Rank conversation messages for ``text`` (all sessions, or one transcript path).

        A message is found by its own words and, weaker, by those of the two messages either
        side of it and of its session's date. ``since`` and ``until`` are ISO days
        (``2023-05-08``), compared with the session's date. Hits are checked against their
        transcript as :meth:`search` checks memories, and the query is bounded as there.
        """
        check_query(text)
        if k <= 0:
            return Found([])
        filters = [query.Term("kind", "message")] + ([query.Term("session", session)] if session else [])
        if since or until:
            filters.append(query.TermRange("day", since, until))
        with self._lock:
            try:
                searcher = self._reader()
                parsed = self._parse(text, MESSAGE_FIELDS) if _syntax(text) else None
                pairs = _or_pairs(parsed)
                if pairs is not None:  # a flat OR: Whoosh's ranking, scored from the postings
                    found = self._rank(searcher, pairs, k, filters[1:])
                elif parsed is not None:
                    found = [(r.fields(), r.score) for r in searcher.search(parsed, limit=k, filter=query.And(filters))]
                else:
                    terms = self._terms(text, searcher, "message")
                    pairs = [(f, t) for t in terms for f in MESSAGE_FIELDS]
                    found = self._rank(searcher, pairs, k, filters[1:], asked_by_user=first_person(text))
                if session:  # whatever the index returned, nothing from another transcript
                    found = [(s, score) for s, score in found if s.get("session") == session]
                indexed = {s["session"]: self._transcript_stat(s["session"]) for s, _ in found}
            except Exception as exc:
                raise SearchIndexError(f"search failed ({exc.__class__.__name__}: {exc})") from exc
        stale = {rel for rel, st in indexed.items() if st is None or file_stat(self.root, rel) != st}
        if stale:
            found = [(s, score) for s, score in found if s["session"] not in stale]
        stems = set(ANALYZER.stems(text))
        hits = []
        for stored, score in found:
            item = json.loads(stored["item"])
            hits.append(
                MessageHit(
                    stored.get("session_id") or stored["session"],
                    stored["session"],
                    stored["position"],
                    stored.get("role", ""),
                    round(float(score), 4),
                    make_snippet(text_of(item), stems),
                    item,
                    stored.get("time"),
                    stored.get("date"),
                    stored.get("day"),
                )
            )
        return Found(hits, sorted(stale))

    def _rank(
        self,
        searcher: Any,
        pairs: list[tuple[str, str]],
        k: int,
        filters: list[Any],
        hidden: set[int] | None = None,
        *,
        asked_by_user: bool = False,
    ) -> list[tuple[dict[str, Any], float]]:
        """The top ``k`` documents for an OR of ``(field, term)`` pairs by BM25F, scored straight from the postings.

        The same scores and order as Whoosh's search of ``Or([Term(field, term), ...])`` under
        :data:`WEIGHTING` (tested against it), at a fraction of the cost: Whoosh's matcher tree
        spends several microseconds of Python per posting, here each term of each segment is a
        few array operations over postings decoded once (:class:`_Postings`). Only memories have
        ``title``, ``body`` and ``tags``, and only messages ``message`` and ``speaker``, so no
        filter by kind is needed; ``filters`` are Whoosh queries every hit must match, and no
        document of ``hidden`` is returned. A message whose ``speaker`` the query names scores
        :data:`SPEAKER_BONUS` more, and with ``asked_by_user`` a user's message :data:`USER_BONUS`
        more (Whoosh's own search, for queries with syntax, has neither rule).
        """
        leaves = [(leaf.reader(), offset) for leaf, offset in searcher.leaf_searchers()]
        scores, matched = self._scores(searcher, leaves, pairs)
        if asked_by_user and USER_BONUS:
            scores[self._user_docs(searcher)] *= 1 + USER_BONUS
        matched &= self._allowed(searcher, leaves, filters, hidden)
        best = _top(np.flatnonzero(matched), scores, k)
        return [(searcher.stored_fields(int(doc)), float(scores[doc])) for doc in best]

    def _scores(self, searcher: Any, leaves: list[tuple[Any, int]], pairs: list[tuple[str, str]]) -> tuple[Any, Any]:
        """BM25F of every document of ``searcher`` for an OR of ``(field, term)`` pairs, and which hold any of them."""
        reader = searcher.reader()
        total = reader.doc_count_all()
        scores = np.zeros(total)
        matched = np.zeros(total, dtype=bool)
        named = None  # messages said by someone the query names
        for name, term in dict.fromkeys(pairs):
            if (name, term) not in reader:
                continue
            k1 = WEIGHTING.K1 * (WEIGHT_SCALE if name == "message" else 1)
            b = WEIGHTING._field_B.get(name, WEIGHTING.B)
            avgfl = searcher.avg_field_length(name) or 1
            idf = searcher.idf(name, term)
            for leaf, offset in leaves:
                if (name, term) not in leaf:
                    continue
                docs, weights = self._decoded.postings(leaf, name, term)
                length = self._decoded.lengths(leaf, name)[docs]
                tf = weights.astype(np.float64)  # Whoosh keeps weights as 32-bit floats, and scores in 64 bits
                docs = docs + offset
                scores[docs] += idf * (tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * length / avgfl))
                matched[docs] = True
                if name == "speaker":
                    named = np.zeros(total, dtype=bool) if named is None else named
                    named[docs] = True
        if named is not None:
            scores[named] *= 1 + SPEAKER_BONUS
        return scores, matched

    def _allowed(
        self, searcher: Any, leaves: list[tuple[Any, int]], filters: list[Any], hidden: set[int] | None
    ) -> Any:
        """Per document of ``searcher``: live, not in ``hidden`` (not current: _not_current), matching ``filters``."""
        allowed = self._live_docs(searcher, leaves).copy()
        if hidden:
            allowed[np.fromiter(hidden, np.int64, len(hidden))] = False
        for f in filters:
            holds = np.zeros(len(allowed), dtype=bool)
            holds[np.fromiter(searcher.docs_for_query(f), np.int64)] = True
            allowed &= holds
        return allowed

    def _hybrid(
        self, searcher: Any, pairs: list[tuple[str, str]], k: int, filters: list[Any], hidden: set[int], dense: Dense
    ) -> list[tuple[dict[str, Any], float, float | None]]:
        """The top ``k`` memories by BM25F and the query's cosine similarity, fused (see :class:`Dense`).

        Every memory the filters allow is a candidate, whether or not it holds a word of the
        query. Each part is z-scored over those candidates (BM25F's scale depends on the query
        and the vault, a cosine's on the model; their spread over the same memories says how far
        above the rest a memory stands), then mixed ``(1 - w) * z(bm25f) + w * z(cosine)``. A
        memory with no vector yet (written since the last embedding) counts as average by meaning.
        Returned: the memories that hold a word of the query or are at least as similar as the average.
        """
        leaves = [(leaf.reader(), offset) for leaf, offset in searcher.leaf_searchers()]
        scores, matched = self._scores(searcher, leaves, pairs)
        allowed = self._allowed(searcher, leaves, filters, hidden)
        allowed &= self._holding(searcher, leaves, [("kind", "memory")])
        docs = np.flatnonzero(allowed)
        rows = self._vector_rows(leaves, dense.vectors)[docs]
        has = rows >= 0
        similarity = np.full(len(docs), np.nan)
        if has.any():
            similarity[has] = dense.vectors.matrix[rows[has]] @ dense.vector
        by_meaning = np.zeros(len(docs))
        by_meaning[has] = z_scores(similarity[has])
        fused = np.full(searcher.doc_count_all(), -np.inf)
        fused[docs] = (1 - dense.weight) * z_scores(scores[docs]) + dense.weight * by_meaning
        shown = docs[matched[docs] | (has & (by_meaning >= 0))]
        best = _top(shown, fused, k)
        near = similarity[np.searchsorted(docs, best)]  # docs are in order: each hit's place among them
        return [
            (searcher.stored_fields(int(doc)), float(fused[doc]), None if np.isnan(sim) else float(sim))
            for doc, sim in zip(best, near, strict=True)
        ]

    def _vector_rows(self, leaves: list[tuple[Any, int]], vectors: VectorStore) -> Any:
        """Per document: the row of its file's vector in ``vectors``, or -1 (none yet, or not a file's document)."""
        parts = []
        for leaf, _ in leaves:
            segment = leaf.segment()
            if segment is None:  # an empty reader: no documents
                parts.append(np.full(leaf.doc_count_all(), -1, np.int64))
                continue
            sid = segment.segment_id()
            cached = self._rows_cache.get(sid)
            if cached is None or cached[0] is not vectors or cached[1] != len(vectors):
                cached = (vectors, len(vectors), vectors.rows_of(self._digests(leaf)))
                self._rows_cache[sid] = cached
            parts.append(cached[2])
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def _digests(self, leaf: Any) -> list[str]:
        """Per document of one segment: the sha256 of the memory file it indexed, or "" (messages, other files)."""
        segment = leaf.segment()
        sid = segment.segment_id()
        if sid not in self._segment_digests:
            listed = self._listed(leaf)
            digests = [""] * int(segment.doc_count_all())
            for docnum, digest in zip(listed.docnums, listed.digests, strict=True):
                digests[docnum] = digest
            self._segment_digests[sid] = digests
        return self._segment_digests[sid]

    def memory_digests(self) -> set[str]:
        """The sha256 of every file the index holds now (what vectors are kept for)."""
        return {str(stat[2]) for stat in self.known(None).values()}

    def unembedded(self, vectors: VectorStore) -> list[tuple[str, str]]:
        """The live memories whose file content has no vector in ``vectors`` yet: (vault path, sha256) each."""
        with self._lock:
            try:
                searcher = self._reader()
                leaves = [(leaf.reader(), offset) for leaf, offset in searcher.leaf_searchers()]
                memories = self._live_docs(searcher, leaves) & self._holding(searcher, leaves, [("kind", "memory")])
                missing = np.flatnonzero(memories & (self._vector_rows(leaves, vectors) < 0))
                if not len(missing):
                    return []
                found = []
                for leaf, offset in leaves:
                    if leaf.segment() is None:
                        continue
                    listed = self._listed(leaf)
                    local = set(
                        (missing[(missing >= offset) & (missing < offset + leaf.doc_count_all())] - offset).tolist()
                    )
                    found += [
                        (p, d)
                        for n, p, d in zip(listed.docnums, listed.paths, listed.digests, strict=True)
                        if n in local
                    ]
                return sorted(set(found))
            except Exception as exc:
                raise SearchIndexError(f"listing memories to embed failed ({exc.__class__.__name__}: {exc})") from exc

    def _live_docs(self, searcher: Any, leaves: list[tuple[Any, int]]) -> Any:
        """Per document of ``searcher``: True unless deleted (made once per searcher)."""
        if self._live[0] is not searcher:
            live = np.ones(searcher.doc_count_all(), dtype=bool)
            for leaf, offset in leaves:
                if leaf.has_deletions():
                    live[np.fromiter(leaf.deleted_docs_set, np.int64) + offset] = False
            self._live = (searcher, live)
        return self._live[1]

    def _user_docs(self, searcher: Any) -> Any:
        """Per document of ``searcher``: True for a message whose role is ``user`` (made once per searcher)."""
        if self._users[0] is not searcher:
            users = np.zeros(searcher.doc_count_all(), dtype=bool)
            users[np.fromiter(searcher.docs_for_query(query.Term("role", "user")), np.int64)] = True
            self._users = (searcher, users)
        return self._users[1]

    def _transcript_stat(self, rel: str) -> tuple[int, int] | None:
        """The ``(mtime_ns, size)`` a transcript was indexed at (cached until the searcher changes)."""
        if rel not in self._transcript_stats:
            stored = self._reader().document(path=rel)
            st = stored.get("stat") if stored else None
            self._transcript_stats[rel] = (int(st[0]), int(st[1])) if st else None
        return self._transcript_stats[rel]

    def _plain(self, text: str, searcher: Any) -> list[tuple[str, str]]:
        """The ``(field, term)`` pairs a query of plain words looks for in memories (none: no content word)."""
        terms = self._terms(text, searcher, "body")
        if not terms:
            return []
        words = _WORD.findall(text.lower())[:MAX_QUERY_TERMS]
        return [(f, t) for t in terms for f in NOTE_FIELDS] + [("tags", w) for w in words]

    @staticmethod
    def _terms(text: str, searcher: Any, field: str) -> list[str]:
        """The query's terms, less those in so many documents of ``field`` that they cannot change the ranking."""
        terms = list(dict.fromkeys(ANALYZER.stems(text)))[:MAX_QUERY_TERMS]
        total = searcher.doc_count()
        if total >= PRUNE_FROM_DOCS and len(terms) > 1:
            rare = [t for t in terms if searcher.doc_frequency(field, t) < COMMON_TERM_SHARE * total]
            terms = rare or terms
        return terms

    def _parse(self, text: str, fields: tuple[str, ...]) -> Any:
        parser = qparser.MultifieldParser(list(fields), self._ix.schema, group=qparser.OrGroup)
        for plugin in (
            qparser.WildcardPlugin,
            qparser.FuzzyTermPlugin,
            qparser.RangePlugin,
            qparser.PhrasePlugin,
            qparser.BoostPlugin,
        ):
            parser.remove_plugin_class(plugin)
        try:
            parsed = parser.parse(text)
        except Exception as exc:  # a broken query is searched as plain words
            log.debug("query %r did not parse (%s); searching its words", text, exc)
            return None
        leaves = list(parsed.leaves()) if parsed is not None else []
        if not leaves or len(leaves) > 3 * MAX_QUERY_TERMS:
            return None
        if not all(type(leaf) is query.Term for leaf in leaves):
            return None
        return parsed

    def _hit(self, stored: dict[str, Any], score: float, stems: set[str] | None, now: datetime | None = None) -> Hit:
        snippet = make_snippet(self._body_start(stored["path"]), stems) if stems is not None else ""
        held = _validity(stored)
        return Hit(
            path=stored["path"],
            title=stored.get("title", ""),
            score=round(float(score), 4),
            snippet=snippet,
            id=stored.get("id"),
            namespace=stored.get("namespace", ""),
            type=stored.get("type"),
            tags=tuple(t for t in stored.get("tags", "").split(",") if t),
            updated=stored.get("updated"),
            state=held.state(now),
            validity=held,
        )

    def _body_start(self, rel: str) -> str:
        """The start of a memory's body, as much as a snippet looks at: only the file's head is read."""
        try:
            head = _fs.read_vault_head(self.root, rel, MAX_FRONT_MATTER_BYTES + 4 * SNIPPET_SCAN_CHARS + 16)
        except (OSError, LinkError):  # through the path gate: a link is not read
            return ""
        return body_of(head.decode("utf-8", "ignore")) if head else ""  # valid when indexed: not parsed again


def _differing(walked: dict[str, Stat], known: dict[str, tuple[Any, ...]]) -> list[str]:
    """The files ``walked`` saw with another ``(mtime_ns, size)`` than ``known``, then those of ``known`` it missed."""
    get = known.get
    return [p for p, (mtime, size) in walked.items() if (k := get(p)) is None or k[1] != size or k[0] != mtime] + [
        p for p in known if p not in walked
    ]


def _top(found: Any, scores: Any, k: int) -> Any:
    """The ``k`` documents of ``found`` with the highest ``scores``, best first; ties in index order."""
    if len(found) > k:  # all that score at least the k-th best, so ties are broken as below
        found = found[scores[found] >= np.partition(scores[found], len(found) - k)[len(found) - k]]
    return found[np.lexsort((found, -scores[found]))][:k]


def _or_pairs(parsed: Any) -> list[tuple[str, str]] | None:
    """The ``(field, term)`` pairs of a parsed query that is only an OR of terms, for :meth:`SearchIndex._rank`.

    None for anything else (AND, NOT, a boost): Whoosh's own search runs those.
    """
    if parsed is None:
        return None
    stack, pairs = [parsed], []
    while stack:
        node = stack.pop()
        if type(node) is query.Or and node.boost == 1:
            stack.extend(reversed(node.subqueries))
        elif type(node) is query.Term and node.boost == 1:
            pairs.append((node.fieldname, node.text))
        else:
            return None
    return pairs


def _syntax(text: str) -> bool:
    """True for a query Whoosh's parser reads: with syntax, and at most 3 x MAX_QUERY_TERMS words (it is slow)."""
    return bool(_SYNTAX.search(text)) and len(_NON_SPACE.findall(text)) <= 3 * MAX_QUERY_TERMS


def check_query(text: Any) -> str:
    """``text`` if it is a query memfs searches; TypeError or QueryTooLongError (which never quotes it) if not."""
    if not isinstance(text, str):
        raise TypeError(f"query must be a string, got {text.__class__.__name__}")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryTooLongError(
            f"the query is {len(text):,} characters; memfs searches queries of up to "
            f"{MAX_QUERY_CHARS:,} (the first {MAX_QUERY_TERMS} distinct words count): "
            "search with fewer words"
        )
    return text


def _prefix_digests(data: bytes, offsets: Sequence[int]) -> list[str]:
    """The sha256 of ``data[:offset]`` for each of ``offsets`` (ascending), in one pass over ``data``."""
    digest, view, done, out = hashlib.sha256(), memoryview(data), 0, []
    for offset in offsets:
        digest.update(view[done:offset])
        done = offset
        out.append(digest.copy().hexdigest())
    return out


class _Recorder:
    """Stands in for a Whoosh writer: keeps the deletions and documents of one transcript's indexing, to replay."""

    def __init__(self) -> None:
        self.report = SyncReport()
        self.deletes: list[tuple[str, str]] = []
        self.documents: list[tuple[bool, dict[str, Any]]] = []  # (an update, the fields)

    def delete_by_term(self, name: str, value: str) -> None:
        self.deletes.append((name, value))

    def add_document(self, **fields_: Any) -> None:
        self.documents.append((False, fields_))

    def update_document(self, **fields_: Any) -> None:
        self.documents.append((True, fields_))

    def replay(self, writer: Any) -> None:
        """Do it all in ``writer``: the deletions, then the documents in order."""
        for name, value in self.deletes:
            writer.delete_by_term(name, value)
        for update, fields_ in self.documents:
            (writer.update_document if update else writer.add_document)(**fields_)


def _resume_point(data: bytes, stored: dict[str, Any]) -> tuple[int | None, int]:
    """Where indexing a transcript can start: the furthest checkpoint of ``stored`` that ``data`` still starts with.

    Returns ``(offset, position of the entry there)``, or ``(None, 1)``: the whole file is read.
    """
    checkpoints = stored.get("checkpoints") or {}
    usable = sorted((off, digest, n) for off, (digest, n) in checkpoints.items() if off <= len(data))
    found: tuple[int | None, int] = (None, 1)
    for (offset, digest, n), now in zip(usable, _prefix_digests(data, [u[0] for u in usable]), strict=True):
        if now == digest:
            found = (offset, n)
    return found


def _in_scope(stored: dict[str, Any], namespace: str) -> bool:
    """True when an indexed memory's path and namespace both lie in ``namespace`` (exact prefixes)."""
    path, own = str(stored.get("path", "")), str(stored.get("namespace", ""))
    return (
        in_namespace(path, namespace)
        and split_memory_path(path)[0] == own
        and (own == namespace or own.startswith(namespace + "/"))
    )


#: The documents of a searcher that are superseded, and those whose dates decide (doc, validity, path).
_Validities = tuple[set[int], list[tuple[int, Validity, str]]]


def _validity(stored: dict[str, Any]) -> Validity:
    """The validity a document stored (see ``SearchIndex._fields``); none for a memory without keys."""
    kept = stored.get("validity")
    if not kept:
        return Validity()
    start, end, superseded_by, supersedes, expires = kept
    return Validity(start, end, superseded_by, tuple(supersedes), bool(expires))


def _with_terms(fields_: dict[str, Any]) -> dict[str, Any]:
    """Fill in the unstored ``ns`` terms and drop empty values before indexing."""
    fields_["ns"] = namespace_terms(fields_.get("namespace") or "") or None
    return {k: v for k, v in fields_.items() if v is not None}


_LABEL = re.compile(r"\s*([A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}):\s")
# A label is a few words at the very start, so only this many characters are looked at: a longer
# "label" is no one's name, and past them a long first word costs the match a step per character
# (a third of a second for a 16 MiB message).
_LABEL_REACH = 200


def speaker_of(item: dict[str, Any]) -> str | None:
    """Who said a message: the item's ``name``, else a chat log's leading label ("Alice: ...")."""
    name = item.get("name")
    if isinstance(name, str) and name.strip():
        return name
    match = _LABEL.match(text_of(item), 0, _LABEL_REACH)
    return match[1] if match else None


def first_person(text: str) -> bool:
    """Whether a question is in the first person ("my", "I'm"): the user asking about themselves."""
    return any(word.replace("’", "'") in FIRST_PERSON for word in _WORD.findall(text.lower()))


def _message_terms(own: list[Counter[str]], i: int, date_terms: list[str]) -> list[tuple[str, float]] | None:
    """The terms of message ``i`` with their weights: its own words, its neighbours' and its date's.

    Weights are those of :data:`CONTEXT_WEIGHTS` times :func:`_context_share` for neighbours,
    :data:`DATE_WEIGHT` for the date's words, all times :data:`WEIGHT_SCALE`. A message with no
    words of its own gets none: it could only be found by its neighbours'.
    """
    if not own[i]:
        return None
    length = own[i].total()
    weights: dict[str, float] = {term: count * CONTEXT_WEIGHTS[0] for term, count in own[i].items()}
    for distance, weight in enumerate(CONTEXT_WEIGHTS[1:], 1):
        for j in (i - distance, i + distance):
            share = weight * _context_share(length, own[j].total()) if 0 <= j < len(own) and own[j] else 0.0
            if share > 0:
                for term, count in own[j].items():
                    weights[term] = weights.get(term, 0.0) + count * share
    if DATE_WEIGHT > 0:
        for term in date_terms:
            weights[term] = weights.get(term, 0.0) + DATE_WEIGHT
    return [(term, weight * WEIGHT_SCALE) for term, weight in weights.items()]


def _context_share(own: int, other: int) -> float:
    """How much of a neighbour's words (``other`` terms) a message of ``own`` terms takes, from 0 to 1.

    Whole for a short message beside a neighbour no longer than :data:`CONTEXT_FULL_TERMS`
    (or than itself); less as the message grows, nothing from :data:`CONTEXT_ALONE_TERMS`
    terms on; and a longer neighbour's words are scaled down to that many, so what a message
    takes from a neighbour never outweighs what it says itself.
    """
    if own >= CONTEXT_ALONE_TERMS or other <= 0:
        return 0.0
    fade = 1.0
    if own > CONTEXT_FULL_TERMS:
        fade = (CONTEXT_ALONE_TERMS - own) / (CONTEXT_ALONE_TERMS - CONTEXT_FULL_TERMS)
    return fade * min(1.0, max(own, CONTEXT_FULL_TERMS) / other)


def namespace_terms(namespace: str) -> list[str]:
    """The ``ns`` terms of a memory in ``namespace``: the namespace and each of its ancestors, whole.

    ``x users/alice`` gives ``["x users", "x users/alice"]``. Whoosh indexes a list given to a field
    as exactly these terms, one per item, without running any tokeniser over them, so a filter on
    ``users/alice`` matches a memory only if its namespace is ``users/alice`` or lies below it:
    no space, punctuation, case or Unicode in a folder name can make a namespace match another.
    """
    parts = namespace.split("/") if namespace else []
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _searched_body(meta: Mapping[str, Any], body: str) -> str:
    """The words searched as a memory's body: its ``description`` and the body.

    Claude Code's memory files and many Obsidian notes keep a one-line summary there.
    """
    description = meta.get("description")
    return f"{description}\n{body}" if isinstance(description, str) and description.strip() else body


def make_snippet(body: str, stems: set[str], *, width: int = 200) -> str:
    """The passage of ``body`` (about ``width`` characters) richest in ``stems``, words in bold.

    Bounded whatever the body: only its first :data:`SNIPPET_SCAN_CHARS` characters are looked
    at, the scan stops once :data:`SNIPPET_MAX_MATCHES` words matched (and the window after the
    last of them is read), each word is stemmed once, and the window richest in matches is found
    in one pass over the matches (two pointers), so the cost is linear in what was scanned.
    """
    scanned = body[:SNIPPET_SCAN_CHARS]
    words: list[str] = []
    ends: list[int] = []  # where each word ends, counted in the one-space-joined text
    matched: list[int] = []
    length = 0
    stopped = False  # words were left unscanned
    for found in _NON_SPACE.finditer(scanned):
        if len(matched) >= SNIPPET_MAX_MATCHES and length > ends[matched[-1]] + width:
            stopped = True
            break
        word = found.group()
        if len(word) > width:  # one huge "word" is shown cut, never whole
            word = word[:width] + "…"
        if not stems.isdisjoint(_token_stems(word)):
            matched.append(len(words))
        length += len(word) + (1 if words else 0)
        words.append(word)
        ends.append(length)
    if not words:
        return ""
    start = _best_window(words, ends, matched, width)
    pieces: list[str] = []
    used = 0
    hits = set(matched)
    for i in range(start, len(words)):
        if used + len(words[i]) > width and pieces:
            break
        pieces.append(_bold(words[i]) if i in hits else words[i])
        used += len(words[i]) + 1
    more = start + len(pieces) < len(words) or stopped or _NON_SPACE.search(body, len(scanned)) is not None
    return ("… " if start > 0 else "") + " ".join(pieces) + (" …" if more else "")


_TOKEN_STEMS: dict[str, tuple[str, ...]] = {}
MAX_CACHED_TOKENS = 50_000  # the cache is emptied when it holds this many (a snippet's words are at most ~200 chars)


def _token_stems(word: str) -> tuple[str, ...]:
    """The index terms of one white-space separated word, cached: snippets meet the same words again and again."""
    found = _TOKEN_STEMS.get(word)
    if found is None:
        if len(_TOKEN_STEMS) >= MAX_CACHED_TOKENS:
            _TOKEN_STEMS.clear()
        found = _TOKEN_STEMS[word] = tuple(ANALYZER.stems(word))
    return found


def _best_window(words: list[str], ends: list[int], matched: list[int], width: int) -> int:
    """The word a snippet starts at: a few words before the match that begins the richest window."""
    if not matched:
        return 0
    best, best_count, j = matched[0], 0, 0
    for a, i in enumerate(matched):  # matches in [i, j) fit in ``width`` characters from word i
        begin = ends[i] - len(words[i])
        j = max(j, a)
        while j < len(matched) and ends[matched[j]] <= begin + width:
            j += 1
        if j - a > best_count:
            best, best_count = i, j - a
    return max(0, best - 3)


def _bold(word: str) -> str:
    match = re.fullmatch(r"(\W*)(.*?)(\W*)", word)
    assert match is not None
    lead, core, trail = match.groups()
    return f"{lead}**{core}**{trail}" if core else word
