"""The one gate for paths and namespaces that come from outside.

Every path handed to memfs by a caller (API, CLI, later the agent tools) passes through
:func:`clean_relpath` before it is joined to the vault folder. The rules are strict on
purpose: a name that is awkward on any platform a vault may be cloned to is refused
rather than silently rewritten.
"""

from __future__ import annotations

import re
import unicodedata

from .errors import PathError

MAX_PATH_BYTES = 1024
MAX_COMPONENT_BYTES = 255
MAX_DEPTH = 16

_WINDOWS_RESERVED = {
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(1, 10)),
    *(f"lpt{i}" for i in range(1, 10)),
}
_SUPERSCRIPTS = str.maketrans("¹²³", "123")  # COM¹ is as reserved as COM1
#: ``:`` is allowed: notes are named ``Kyoto Trip: March.md`` on macOS and Linux, where git and every
#: editor take it (a Windows checkout cannot hold such a file; the name is the person's to choose).
_FORBIDDEN_CHARS = set('\\<>"|?*%')
_FORBIDDEN_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
_SLUG_DROP = re.compile(r"[^a-z0-9]+")


def clean_relpath(path: str, *, what: str = "path") -> str:
    """Validate a relative POSIX path and return it unchanged.

    Args:
        path: A path relative to some root, with ``/`` separators.
        what: What the path is, for the error message ("path", "namespace").

    Raises:
        PathError: The path is empty, absolute, escapes with ``..``, names a hidden or
            reserved component, carries control or format characters, is not NFC, or
            is too long or too deep.
    """
    if not isinstance(path, str):
        raise PathError(f"{what} must be a string, got {type(path).__name__}")
    if not path:
        raise PathError(f"{what} is empty")
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise PathError(f"{what} is longer than {MAX_PATH_BYTES} bytes")
    if path.startswith("/"):
        raise PathError(f"{what} {path!r} must be relative, not absolute")
    if unicodedata.normalize("NFC", path) != path:
        raise PathError(f"{what} {path!r} is not in Unicode NFC form; normalise it first")
    parts = path.split("/")
    if len(parts) > MAX_DEPTH:
        raise PathError(f"{what} {path!r} is deeper than {MAX_DEPTH} levels")
    for part in parts:
        _check_component(part, path, what)
    return path


def is_plain(path: str) -> bool:
    """True for a relative path whose every component is a name: none empty, ``.`` or ``..``.

    The rule every path from outside meets before it is joined to a folder: :func:`clean_relpath`
    words it for a caller, the file-system gate (``_fs.open_folder``) and the engine (a journal's
    or a sync's paths) ask it. It holds for the paths memfs writes itself, which
    :func:`clean_relpath` may refuse (a person's file named ``100%.md``).
    """
    return bool(path) and all(part not in ("", ".", "..") for part in path.split("/"))


def _check_component(part: str, path: str, what: str) -> None:
    if part == "":
        raise PathError(f"{what} {path!r} has an empty component ('//' or a trailing '/')")
    if part in (".", ".."):
        raise PathError(f"{what} {path!r} contains a {part!r} component, which is not allowed")
    if part.startswith("."):
        raise PathError(f"{what} {path!r}: hidden names such as {part!r} are reserved")
    for ch in part:
        cat = unicodedata.category(ch)
        if cat in _FORBIDDEN_CATEGORIES or ch in _FORBIDDEN_CHARS:
            raise PathError(f"{what} {path!r} contains the forbidden character {ch!r}")
    if part.endswith((" ", ".")):
        raise PathError(f"{what} {path!r}: a name may not end with a space or a dot")
    if part.split(".", 1)[0].lower().translate(_SUPERSCRIPTS) in _WINDOWS_RESERVED:
        raise PathError(f"{what} {path!r}: {part!r} is a reserved device name on Windows")
    try:
        size = len(part.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise PathError(f"{what} {path!r} is not valid Unicode text") from exc
    if size > MAX_COMPONENT_BYTES:
        raise PathError(f"{what} {path!r} has a component longer than {MAX_COMPONENT_BYTES} bytes")


def clean_namespace(namespace: str) -> str:
    """Validate a namespace such as ``users/alice``; surrounding slashes are dropped."""
    if not isinstance(namespace, str):
        raise PathError(f"namespace must be a string, got {type(namespace).__name__}")
    stripped = namespace.strip("/")
    clean_relpath(stripped, what="namespace")
    if stripped.endswith(".md"):
        raise PathError(f"namespace {namespace!r} looks like a file; namespaces are folders")
    return stripped


def clean_memory_path(path: str) -> str:
    """Validate the path of a memory file (relative to a namespace or to ``memories/``)."""
    clean_relpath(path)
    if not path.endswith(".md"):
        raise PathError(f"memory path {path!r} must end in '.md'")
    return path


def keepable_name(path: str) -> tuple[str, str | None]:
    """The nearest name to ``path`` that :func:`clean_relpath` accepts, and why it differs (None if not).

    A person's note keeps its own name wherever it can: only the components that break a rule
    change, and only as much as they must (NFC form; a forbidden character becomes ``-``; a
    trailing space or dot goes; a reserved or overlong name becomes its slug). Case, spaces,
    accents and emoji are kept, so the folders of one import never split into case twins.
    The result may still be refused as a whole (too deep, too long): callers check it.
    """
    composed = unicodedata.normalize("NFC", path)
    reasons = [] if composed == path else ["its name was not in Unicode NFC form"]
    parts = []
    for part in composed.split("/"):
        fixed = "".join("-" if _forbidden(ch) else ch for ch in part).rstrip(" .") or "-"
        if fixed != part:
            reasons.append(f"{part!r} holds characters a memory's name may not: {_shown_bad(part)}")
        try:
            _check_component(fixed, composed, "name")
        except PathError as exc:
            stem, dot, ext = fixed.rpartition(".")
            fixed = slugify(stem) + dot + ext if stem and ext.isalnum() else slugify(fixed)
            reasons.append(str(exc))
        parts.append(fixed)
    return "/".join(parts), "; ".join(reasons) or None


def _forbidden(ch: str) -> bool:
    return ch in _FORBIDDEN_CHARS or unicodedata.category(ch) in _FORBIDDEN_CATEGORIES


def _shown_bad(part: str) -> str:
    bad = sorted({ch for ch in part if _forbidden(ch)})
    shown = " ".join(repr(ch) for ch in bad)
    ending = "a trailing space or dot" if part.rstrip(" .") != part else ""
    return ", ".join(x for x in (shown, ending) if x)


def slugify(text: str, *, max_length: int = 60) -> str:
    """Turn a title into a file-name slug: ``"Window seats!"`` becomes ``"window-seats"``.

    Latin letters lose their accents (``"Café"``: ``cafe``); a title mostly in another script
    keeps its letters (``"我喜欢靠窗的座位"``, ``"москва-зимой"``) rather than become ``memory``.
    """
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = _SLUG_DROP.sub("-", folded.lower()).strip("-")
    letters = sum(1 for c in text if unicodedata.category(c)[0] in "LN")
    if letters and sum(c.isalnum() for c in slug) * 2 < letters:  # most letters are not Latin: keep them
        lowered = unicodedata.normalize("NFC", text.lower())
        slug = "-".join("".join(c if unicodedata.category(c)[0] in "LMN" else " " for c in lowered).split())
        max_length = min(max_length, 40)
    if len(slug) > max_length:
        slug = slug[:max_length].rsplit("-", 1)[0] or slug[:max_length]
    slug = slug.strip("-") or "memory"
    if slug in _WINDOWS_RESERVED:
        slug += "-memory"
    return slug


def split_virtual(path: str, *, root: str = "/memories") -> str:
    """Map a tool path under the virtual ``root`` to a relative path ("" for the root itself).

    ``/memories/notes/a.md`` gives ``notes/a.md``. The prefix must match whole segments and
    case (``/memoriesX``, ``/MEMORIES`` and ``memories/a.md`` are refused); one trailing slash
    is allowed on folders; everything after the root passes :func:`clean_relpath`.
    """
    if not isinstance(path, str):
        raise PathError(f"path must be a string, got {type(path).__name__}")
    if path in (root, root + "/"):
        return ""
    if not path.startswith(root + "/"):
        shown = path if len(path) <= 200 else path[:200] + "…"
        raise PathError(f"Path must start with {root}, got: {shown!r}")
    rest = path[len(root) + 1 :]
    if rest.endswith("/"):
        rest = rest[:-1]
    return clean_relpath(rest)
