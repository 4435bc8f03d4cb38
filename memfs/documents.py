"""Memory files: Markdown with YAML front matter, read and written with an exact round trip.

A file is an optional byte-order mark, an optional front-matter block fenced by ``---``
lines, and a body. :func:`loads` keeps every byte of the original: writing back a document
that was only read gives the same text, and changing one key rewrites only that key's lines,
so other keys keep their order, formatting and comments. python-frontmatter is not used
because it sorts keys, strips the body and silently drops front matter that is not a
mapping (see docs/architecture.md).

YAML is parsed with a safe loader (the C one when PyYAML has it) that refuses aliases
(billion-laughs bombs), tags for Python objects, binary and sets, duplicate keys and deep
nesting, and that keeps dates and ``yes``/``no`` as the strings they were written as.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import PurePosixPath
from typing import Any

import yaml

from .errors import DocumentError
from .layout import one_line

MAX_FRONT_MATTER_BYTES = 64 * 1024
MAX_FRONT_MATTER_DEPTH = 20

_BOM = "\ufeff"
_FENCE = re.compile(r"---[ \t]*(\r?\n|$)")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|$)", re.MULTILINE)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_BOOL_TAG = "tag:yaml.org,2002:bool"

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _without(resolvers: dict[str, list[Any]], tags: set[str]) -> dict[str, list[Any]]:
    return {k: [(tag, rx) for tag, rx in v if tag not in tags] for k, v in resolvers.items()}


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe loader: dates stay strings, only true/false are booleans, no duplicate keys."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key is not a plain value", key_node.start_mark
                ) from None
            if duplicate:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


_INT_TAG = "tag:yaml.org,2002:int"
_Loader.yaml_implicit_resolvers = _without(_BaseLoader.yaml_implicit_resolvers, {_TIMESTAMP_TAG, _BOOL_TAG, _INT_TAG})
_Loader.add_implicit_resolver(_BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
# YAML 1.2 integers: `12:30` (YAML 1.1 sexagesimal, 750) and `0755` (octal) stay strings.
_Loader.add_implicit_resolver(
    _INT_TAG, re.compile(r"^(?:[-+]?(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+)$"), list("-+0123456789")
)


def _refuse_tag(loader: Any, node: Any) -> Any:
    raise yaml.constructor.ConstructorError(
        None, None, f"the tag {node.tag!r} is not allowed in front matter", node.start_mark
    )


for _tag in ("binary", "set", "omap", "pairs", "timestamp"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)


class _Dumper(_BaseDumper):  # type: ignore[misc]
    """Safe dumper that writes ISO timestamps unquoted (the loader reads them as strings)."""


_Dumper.yaml_implicit_resolvers = _without(_BaseDumper.yaml_implicit_resolvers, {_TIMESTAMP_TAG})


class _Block(dict):  # type: ignore[type-arg]
    """The top level of a front matter: always block style, one key a line."""


_Dumper.add_representer(_Block, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data, False))


@dataclass(frozen=True)
class Document:
    r"""A parsed memory file.

    Attributes:
        metadata: The front matter as a plain dict (empty when there is none).
        body: Everything after the front matter, byte for byte.
        head: The front-matter block exactly as written, fences included ("" if none).
        bom: Whether the file started with a UTF-8 byte-order mark.
        newline: The line ending the file uses ("\n" or "\r\n").
    """

    metadata: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    head: str = ""
    bom: bool = False
    newline: str = "\n"

    @classmethod
    def new(cls, metadata: Mapping[str, Any], body: str) -> Document:
        """Build a document from metadata (kept in the given order) and a body."""
        if metadata:
            return cls(body=body).with_metadata(metadata)
        if body.startswith(_BOM) or _FENCE.match(body):
            # An empty block keeps a body that itself opens with a fence (or a BOM) a body.
            return cls(body=body, head="---\n---\n")
        return cls(body=body)

    @property
    def has_front_matter(self) -> bool:
        """True if the file has a front-matter block."""
        return bool(self.head)

    def with_metadata(self, changes: Mapping[str, Any], *, remove: Iterable[str] = ()) -> Document:
        """Return a copy with some keys set or removed, touching only their lines.

        Keys already present keep their place; new keys go at the end, in the given order.
        """
        removed = set(remove) & set(self.metadata)
        if not changes and not removed:
            return self
        metadata = {k: v for k, v in self.metadata.items() if k not in removed}
        metadata.update(changes)
        _check_plain(metadata, None)
        blocks = _key_blocks(self.head) if self.head else None
        if blocks is None:  # no front matter yet, or one that must be written anew
            text = "---\n" + (_dump_keys(metadata) if metadata else "") + "---\n"
            head = text.replace("\n", self.newline)
            return Document(metadata, self.body, head, self.bom, self.newline)
        lines: list[str] = []
        for key, block in blocks:
            if key is None or (key not in removed and key not in changes):
                lines.append(block)
            elif key in changes:
                lines.append(_dump_keys({key: changes[key]}).replace("\n", self.newline))
        present = {key for key, _ in blocks}
        added = {k: v for k, v in changes.items() if k not in present}
        if added:
            closing = lines.pop()
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += self.newline
            lines.append(_dump_keys(added).replace("\n", self.newline))
            lines.append(closing)
        return Document(metadata, self.body, "".join(lines), self.bom, self.newline)

    def with_body(self, body: str) -> Document:
        """Return a copy with another body; the front matter is kept as written."""
        return Document(self.metadata, body, self.head, self.bom, self.newline)

    def title(self, path: str | None = None) -> str:
        """The ``title`` key, else the first Markdown heading, else the file name."""
        title = self.metadata.get("title")
        if isinstance(title, str) and title.strip():
            return title.strip()
        fence = ""
        for line in self.body.splitlines():
            stripped = line.lstrip()
            marker = re.match(r"(`{3,}|~{3,})", stripped)
            if marker and (not fence or marker.group(1).startswith(fence)):
                fence = "" if fence else marker.group(1)
                continue
            match = None if fence else _HEADING.match(line)
            if match:
                return match.group(1).strip()
        return PurePosixPath(path).stem if path else ""


def loads(text: str, *, path: str | None = None) -> Document:
    """Parse the text of a memory file.

    Args:
        text: The file's text.
        path: The file's path, named in errors.

    Raises:
        DocumentError: The front matter is not valid, safe YAML or is not a mapping.
    """
    bom = text.startswith(_BOM)
    if bom:
        text = text[1:]
    first = text.split("\n", 1)[0]
    newline = "\r\n" if first.endswith("\r") else "\n"
    fences = _fences(text)
    if fences is None:
        return Document({}, text, "", bom, newline)
    opening, closing = fences
    raw = text[opening.end() : closing.start()]
    head = text[: closing.end()]
    if len(raw.encode("utf-8", "surrogatepass")) > MAX_FRONT_MATTER_BYTES:
        raise DocumentError(path, f"front matter is larger than {MAX_FRONT_MATTER_BYTES} bytes")
    metadata = _load_yaml(raw, path)
    return Document(metadata, text[closing.end() :], head, bom, newline)


def _fences(text: str) -> tuple[re.Match[str], re.Match[str]] | None:
    """The opening and closing fences of ``text``'s front matter (a BOM already removed), or None without one."""
    opening = _FENCE.match(text)
    if not opening or not opening.group(1):
        return None
    closing = _CLOSE.search(text, opening.end())
    return None if closing is None else (opening, closing)


def body_of(text: str) -> str:
    """The body :func:`loads` would give, without parsing the front matter: for snippets of indexed files."""
    text = text[1:] if text.startswith(_BOM) else text
    fences = _fences(text)
    return text if fences is None else text[fences[1].end() :]


def load_bytes(data: bytes, *, path: str | None = None) -> Document:
    """Decode and parse a memory file; invalid UTF-8 or NUL bytes are a DocumentError."""
    if b"\x00" in data:
        raise DocumentError(path, "file contains NUL bytes; it looks binary, not Markdown")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(path, f"not valid UTF-8 at byte {exc.start}") from exc
    return loads(text, path=path)


def dumps(doc: Document) -> str:
    """Render a document to text; the exact inverse of :func:`loads`."""
    return (_BOM if doc.bom else "") + doc.head + doc.body


def _load_yaml(raw: str, path: str | None) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        depth = 0
        for event in yaml.parse(raw, Loader=_BaseLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise DocumentError(path, "front matter uses YAML anchors or aliases, which memfs refuses")
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_FRONT_MATTER_DEPTH:
                    raise DocumentError(path, f"front matter is nested deeper than {MAX_FRONT_MATTER_DEPTH} levels")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        data = yaml.load(raw, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except yaml.YAMLError as exc:
        if getattr(exc, "problem", None) == "exceeded maximum nesting depth":  # libyaml's own cap (1,000)
            raise DocumentError(path, f"front matter is nested deeper than {MAX_FRONT_MATTER_DEPTH} levels") from exc
        raise DocumentError(path, f"front matter is not valid YAML: {one_line(str(exc))}") from exc
    except UnicodeError as exc:
        raise DocumentError(path, "front matter is not valid Unicode text") from exc
    if data is None and all(not line.strip() or line.lstrip().startswith("#") for line in raw.splitlines()):
        return {}  # only comments, like a template with every key commented out
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise DocumentError(path, f"front matter must be a mapping of keys to values, got {kind}")
    _check_plain(data, path)
    return data


def _check_plain(value: Any, path: str | None, *, top: bool = True) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise DocumentError(path, f"front-matter key {key!r} is not a string")
            _check_plain(item, path, top=False)
    elif isinstance(value, list):
        for item in value:
            _check_plain(item, path, top=False)
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        raise DocumentError(path, f"front-matter value of type {type(value).__name__} is not supported")


def _dump_keys(mapping: Mapping[str, Any]) -> str:
    return yaml.dump(
        _Block(mapping),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=None,
        width=4096,
    )


def _key_blocks(head: str) -> list[tuple[str | None, str]] | None:
    """Split a front-matter block into (key, text) pieces.

    A key's piece runs from its first line to the last line of its value (an inline comment
    included); fences, blank lines and full-line comments between keys have key None, so they
    survive when a neighbouring key changes. None if the block cannot be split by lines: a flow
    mapping (``{a: 1, b: 2}``) or keys sharing a line.
    """
    lines = head.splitlines(keepends=True)
    opening, body, closing = lines[0], lines[1:-1], lines[-1]
    raw = "".join(body)
    node = yaml.compose(raw, Loader=_BaseLoader) if raw.strip() else None
    pairs = node.value if node is not None else []
    starts = [k.start_mark.line for k, _ in pairs]
    shared_lines = any(b <= a for a, b in zip(starts, starts[1:], strict=False))
    if node is not None and (getattr(node, "flow_style", False) or shared_lines):
        return None
    pieces: list[tuple[str | None, str]] = [(None, opening)]
    cursor = 0
    for key_node, value_node in pairs:
        start = key_node.start_mark.line
        end_mark = value_node.end_mark
        end = end_mark.line if end_mark.column == 0 else end_mark.line + 1
        # A block value's end mark is the next key: blank and comment lines before it
        # belong between the keys, not to this one.
        while end - 1 > start and (not body[end - 1].strip() or body[end - 1].lstrip().startswith("#")):
            end -= 1
        if start > cursor:
            pieces.append((None, "".join(body[cursor:start])))
        pieces.append((key_node.value, "".join(body[start:end])))
        cursor = end
    if cursor < len(body):
        pieces.append((None, "".join(body[cursor:])))
    pieces.append((None, closing))
    return pieces


def tags_of(value: Any) -> tuple[str, ...]:
    """The tags of a ``tags`` front-matter value: a YAML list, or one comma-separated string."""
    if isinstance(value, str):
        return tuple(t.strip() for t in value.split(",") if t.strip())
    if isinstance(value, list):
        return tuple(str(t) for t in value if isinstance(t, (str, int, float)))
    return ()


def timestamp(moment: datetime | None = None) -> str:
    """A time as memfs writes it into files: ``YYYY-MM-DDTHH:MM:SSZ`` in UTC (now by default)."""
    return (moment or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def normalize_time(value: Any) -> str | None:
    """An ISO 8601 time as ``YYYY-MM-DDTHH:MM:SSZ`` in UTC; None if it is not one."""
    if value is None or value == "":
        return None
    try:
        moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return timestamp(moment)
