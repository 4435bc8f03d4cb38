"""Where things live in a vault, and the words for the three forms a path takes.

A vault holds ``memories/`` (one folder per namespace), ``sessions/`` (transcripts) and
``.memfs/`` (derived state, never committed). memfs names a file in three ways, always with
the same words:

- a **vault path** is relative to the vault folder: ``memories/users/alice/window-seats.md``
  (``Hit.path``, ``Memory.path``, ``Revision.path``, what git and the index store);
- a **name** is relative to a namespace: ``window-seats.md`` (``Memory.name``);
- a **virtual path** is what the memory tools show an agent: ``/memories/window-seats.md``
  (built in :mod:`memfs.filetools`, whose :class:`~memfs.filetools.MemoryFolder` alone knows how
  ``/memories`` maps to namespaces).

A **label** is a vault path as commit messages and people read it: ``users/alice/x.md`` for a
memory, the vault path itself for anything else.
"""

from __future__ import annotations

import unicodedata

STATE_DIR = ".memfs"
MEMORIES_DIR = "memories"
SESSIONS_DIR = "sessions"
CONTENT_DIRS = (MEMORIES_DIR, SESSIONS_DIR)
#: The hashes of what a purge removed from history, committed so a sync never brings it back.
TOMBSTONES = ".memfs-tombstones"
#: Where a sync keeps the other side's version of a file both sides changed in the same place.
CONFLICTS_DIR = "conflicts"
#: Where ``memfs prune`` moves memories that expired: kept in git and in the folder, beside
#: ``memories/`` so the index (which reads only the content folders) never serves them as facts.
ARCHIVE_DIR = "archive"
#: Where changes wait for a person's review (``memfs review``): committed, never indexed or injected.
PROPOSALS_DIR = "proposals"
#: The vault's settings, committed with it: read as data (TOML), nothing in it runs.
SETTINGS_FILE = "memfs.toml"
#: A file committed with every vault: git keeps no empty folder, and a clone needs ``memories/``.
VAULT_MARKER = f"{MEMORIES_DIR}/.gitkeep"

_LINE_BREAKING = ("Cc", "Zl", "Zp")  # control characters and line or paragraph separators


def memory_path(namespace: str, name: str = "") -> str:
    """The vault path of a memory (or, with no name, of the namespace's folder)."""
    folder = f"{MEMORIES_DIR}/{namespace}"
    return f"{folder}/{name}" if name else folder


def namespace_prefix(namespace: str) -> str:
    """The prefix every vault path of a namespace starts with (``memories/users/alice/``)."""
    return f"{MEMORIES_DIR}/{namespace}/"


def in_namespace(path: str, namespace: str) -> bool:
    """True when the vault path lies in ``namespace`` or one of its sub-folders."""
    return path.startswith(namespace_prefix(namespace))


def name_in(path: str, namespace: str) -> str:
    """The name of a vault path inside ``namespace`` (``memories/users/alice/x.md`` -> ``x.md``)."""
    prefix = namespace_prefix(namespace)
    if not path.startswith(prefix):
        raise ValueError(f"{path!r} is not in namespace {namespace!r}")
    return path[len(prefix) :]


def split_memory_path(path: str) -> tuple[str, str]:
    """A memory's vault path as (folder under ``memories/``, file name): the namespace it sits in."""
    inner = path.removeprefix(MEMORIES_DIR + "/")
    folder, _, name = inner.rpartition("/")
    return folder, name


def conflict_copy(path: str, tag: str) -> str:
    """The vault path of a conflict copy of ``path``: ``conflicts/memories/users/alice/x.TAG.md``."""
    stem, dot, suffix = path.rpartition(".")
    return f"{CONFLICTS_DIR}/{stem}.{tag}.{suffix}" if dot and "/" not in suffix else f"{CONFLICTS_DIR}/{path}.{tag}"


def conflicted_path(copy: str) -> str | None:
    """The vault path a conflict copy is a version of (the inverse of :func:`conflict_copy`), or None."""
    if not copy.startswith(CONFLICTS_DIR + "/"):
        return None
    inner = copy[len(CONFLICTS_DIR) + 1 :]
    stem, dot, suffix = inner.rpartition(".")
    base, sep, _tag = stem.rpartition(".")
    return f"{base}.{suffix}" if dot and sep and base else None


def is_memory(path: str) -> bool:
    """True for a vault path under ``memories/``."""
    return path.startswith(MEMORIES_DIR + "/")


#: The files beside the notes of a vault that memfs commits, syncs, moves and purges with them, but
#: never reads as text: images, PDFs, audio, video and Obsidian's canvases (an Obsidian vault's
#: attachments). Any other file beside the notes is left to the person.
ATTACHMENT_SUFFIXES = frozenset(
    {
        "png",
        "jpg",
        "jpeg",
        "gif",
        "webp",
        "svg",
        "bmp",
        "avif",
        "heic",
        "tif",
        "tiff",
        "ico",
        "pdf",
        "mp3",
        "wav",
        "m4a",
        "ogg",
        "flac",
        "webm",
        "mp4",
        "mov",
        "mkv",
        "canvas",
    }
)
#: The largest attachment memfs commits (a file past it stays in the folder, uncommitted; doctor names it).
MAX_ATTACHMENT_BYTES = 32 * 1024 * 1024


def is_attachment(path: str) -> bool:
    """True for a vault path under ``memories/`` with an attachment's suffix and no hidden part (``x/photo.png``)."""
    parts = path.split("/")
    suffix = parts[-1].rpartition(".")[2].lower() if "." in parts[-1] else ""
    return (
        len(parts) > 2
        and parts[0] == MEMORIES_DIR
        and suffix in ATTACHMENT_SUFFIXES
        and all(p and not p.startswith(".") for p in parts)
    )


def is_transcript(path: str) -> bool:
    """True for a vault path under ``sessions/``."""
    return path.startswith(SESSIONS_DIR + "/")


def is_content(rel: str) -> bool:
    """True for a vault path memfs indexes: a Markdown file under a content folder, no hidden part."""
    parts = rel.split("/")
    return (
        len(parts) > 1
        and parts[0] in CONTENT_DIRS
        and rel.endswith(".md")
        and all(p and not p.startswith(".") and "\\" not in p for p in parts)
    )


def label(path: str) -> str:
    """A vault path as commit messages show it: ``users/alice/x.md`` for a memory."""
    return path.removeprefix(MEMORIES_DIR + "/")


def one_line(text: str) -> str:
    """``text`` on one line: each run of white space or control characters becomes one space.

    For anything memfs renders into a line of its own (a result line for a model, a commit
    trailer, an error message) so that stored text cannot start a line of its own.
    """
    cleaned = "".join(" " if unicodedata.category(c) in _LINE_BREAKING else c for c in str(text))
    return " ".join(cleaned.split())


def has_control(text: str) -> bool:
    """True when ``text`` holds a control character or a line or paragraph separator."""
    return any(unicodedata.category(c) in _LINE_BREAKING for c in text)
