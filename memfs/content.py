"""The one check of what memfs keeps in a file as text, and of a file's bytes shown as text.

A memory file is Markdown: UTF-8 text, no NUL byte, within a size limit, and for a memory, front
matter that parses. Every writer (``WriteEngine.write``, ``MemoryStore.stamp``, the sync's merge)
and the memory tools' reads of a file ask :func:`check_text`; only its subject (``The content``,
``The file /memories/x.md``) differs, so the rules are worded once.
"""

from __future__ import annotations

from typing import Any

from .documents import MAX_FRONT_MATTER_BYTES, Document, dumps, loads
from .errors import ContentError, DocumentError

MAX_CONTENT_BYTES = 1024 * 1024


def check_text(
    content: Any, *, limit: int | None = MAX_CONTENT_BYTES, what: str = "The content", read: bool = False
) -> tuple[str, bytes]:
    """``content`` as text and as its UTF-8 bytes, if memfs may keep it as a file; else ContentError.

    The rules, in order: text (a ``str``; with ``read``, the ``bytes`` of a file that decode as
    UTF-8), no NUL character, no lone surrogate, at most ``limit`` bytes (None: no limit, for a
    file already read within one).

    Args:
        content: The text to write, or with ``read`` the bytes of a file read.
        limit: The most bytes allowed.
        what: What the message names: ``The content``, ``The file /memories/x.md``.
        read: ``content`` is the bytes of a file.

    Raises:
        ContentError: The rule it breaks, in a sentence.
    """
    if read and isinstance(content, bytes):
        data = content
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ContentError(f"{what} is not UTF-8 text; memories are text files.") from None
    elif isinstance(content, str):
        text = content
        data = b""
    else:
        raise ContentError(f"content must be text (str), got {type(content).__name__}")
    if "\x00" in text:
        raise ContentError(f"{what} contains NUL bytes; memories are text, not binary data.")
    if not data:
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise ContentError(f"{what} is not valid Unicode text (it has a lone surrogate).") from None
    if limit is not None and len(data) > limit:
        raise ContentError(f"{what} is {len(data)} bytes; the limit for a memory file is {limit} bytes.")
    return text, data


def parse_text(text: str) -> Document:
    """The document of text :func:`check_text` passed, or ContentError: its front matter would be invalid."""
    try:
        return loads(text)
    except DocumentError as exc:
        raise ContentError(f"The front matter would be invalid: {exc.reason}.") from None


class Vouched(str):
    """Text made from a parsed document by memfs (:func:`vouched`): a write does not parse it again."""

    __slots__ = ()


def vouched(doc: Document) -> str:
    """``doc``'s text, marked as a memory whose front matter is known to parse (so the write parses once).

    ``doc`` comes from :func:`parse_text`, keys set on it by memfs. Only a front matter those keys
    bring to the size bound is parsed again (and refused as it was: DocumentError).
    """
    text = dumps(doc)
    if len(doc.head.encode("utf-8", "surrogatepass")) > MAX_FRONT_MATTER_BYTES:
        loads(text)
        return text
    return Vouched(text)


def check_content(text: Any) -> bytes:
    """The UTF-8 bytes of text memfs will store as a file (any file), or ContentError saying why not.

    The rules of :func:`check_text`, then the front matter must parse (:func:`parse_text`), unless
    the text is :class:`Vouched`: parsed already.
    """
    checked, data = check_text(text)
    if not isinstance(text, Vouched):
        parse_text(checked)
    return data
