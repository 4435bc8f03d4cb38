"""The vault's settings file, ``memfs.toml``: read as data, checked, never run.

A vault may hold a ``memfs.toml`` at its top, committed like any file so every clone agrees. It is
parsed with :mod:`tomllib` (TOML is data: no code, no includes, no references), checked key by
key, and any key memfs does not know is an error: a misspelt ``[reveiw]`` must not silently
switch review off. Today it holds the review policy::

    [review]
    propose = ["extractor"]          # vault-wide: whose writes wait for a person's review

    [review.namespaces."users/alice"]
    propose = ["agents"]             # here, every write that is not a person's

``propose`` lists writers (a write's ``provenance``): ``agent`` (the memory tools), ``extractor``
(distilled from a conversation), ``import``, or ``agents`` for all three. A person's writes and a
sync's are never proposals. The innermost namespace listed decides for a path below it (as
:mod:`memfs.scopes` does); ``propose = []`` there turns review off for that namespace.

The file is read again when its size or modification time changes, so an edit counts from the
next write; a malformed one raises :class:`~memfs.errors.SettingsError` for every write that needs
the policy (a consent gate fails closed), while a person's own writes go on.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from ._fs import read_vault_file
from .errors import FileTooLargeError, PathError, SettingsError
from .layout import SETTINGS_FILE, in_namespace
from .paths import clean_namespace

#: The writers a review policy may name, and what ``agents`` stands for.
REVIEWABLE = ("agent", "extractor", "import")
ALL_AGENTS = "agents"
MAX_SETTINGS_BYTES = 64 * 1024


@dataclass(frozen=True)
class ReviewPolicy:
    """Whose writes become proposals, vault-wide and per namespace (the innermost namespace decides).

    Attributes:
        propose: The writers (provenance values) whose writes anywhere become proposals.
        namespaces: Per namespace, the writers whose writes there become proposals.
    """

    propose: frozenset[str] = frozenset()
    namespaces: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @property
    def off(self) -> bool:
        """True when no write anywhere becomes a proposal (the default)."""
        return not self.propose and not any(self.namespaces.values())

    def requires(self, namespace: str, writer: str | None) -> bool:
        """True when a write by ``writer`` (a provenance value; None: a person) in ``namespace`` is a proposal."""
        return self.requires_at(f"memories/{namespace}/", writer)

    def requires_at(self, path: str, writer: str | None) -> bool:
        """True when a write by ``writer`` of the vault path ``path`` is a proposal.

        Decided on the path itself, not on the store writing it: the innermost namespace listed
        that holds the path decides (a store of ``users/alice`` writing ``inbox/x.md`` follows
        ``users/alice/inbox``).
        """
        if writer not in REVIEWABLE:
            return False
        holding = [ns for ns in self.namespaces if in_namespace(path, ns)]
        if holding:
            return writer in self.namespaces[max(holding, key=len)]
        return writer in self.propose


@dataclass(frozen=True)
class Settings:
    """What ``memfs.toml`` says (all defaults when there is none)."""

    review: ReviewPolicy = field(default_factory=ReviewPolicy)


def parse(text: str, *, name: str = SETTINGS_FILE) -> Settings:
    """The settings in ``text`` (the whole of a ``memfs.toml``).

    Raises:
        SettingsError: Not TOML, an unknown table or key, or a value of the wrong kind.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{name} is not valid TOML: {exc}") from None
    _only(data, ("review",), name, "")
    review = data.get("review", {})
    if not isinstance(review, dict):
        raise SettingsError(f"{name}: [review] must be a table")
    _only(review, ("propose", "namespaces"), name, "review.")
    propose = _writers(review.get("propose", []), name, "review.propose")
    namespaces = review.get("namespaces", {})
    if not isinstance(namespaces, dict):
        raise SettingsError(f"{name}: review.namespaces must be a table of namespaces")
    per: dict[str, frozenset[str]] = {}
    for namespace, table in namespaces.items():
        where = f"review.namespaces.{namespace!r}"
        try:
            clean = clean_namespace(namespace)
        except PathError as exc:
            raise SettingsError(f"{name}: {where} is not a namespace: {exc}") from None
        if not isinstance(table, dict):
            raise SettingsError(f"{name}: {where} must be a table with a propose key")
        _only(table, ("propose",), name, where + ".")
        if "propose" not in table:
            raise SettingsError(f"{name}: {where} needs a propose key (a list; [] turns review off there)")
        per[clean] = _writers(table["propose"], name, where + ".propose")
    return Settings(ReviewPolicy(propose, per))


def _only(table: Mapping[str, Any], known: tuple[str, ...], name: str, prefix: str) -> None:
    unknown = [key for key in table if key not in known]
    if unknown:
        raise SettingsError(f"{name}: unknown key {prefix}{unknown[0]} (known here: {', '.join(known)})")


def _writers(value: Any, name: str, where: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f'{name}: {where} must be a list of writers, like ["extractor"]')
    writers: set[str] = set()
    for writer in value:
        if writer == ALL_AGENTS:
            writers.update(REVIEWABLE)
        elif writer in REVIEWABLE:
            writers.add(writer)
        else:
            raise SettingsError(f"{name}: {where} names {writer!r}; writers are {', '.join((*REVIEWABLE, ALL_AGENTS))}")
    return frozenset(writers)


_cache: dict[str, tuple[tuple[int, int, int], Settings]] = {}
_cache_lock = threading.Lock()


def load(root: Path) -> Settings:
    """The settings of the vault at ``root``: its ``memfs.toml`` (read through the path gate), or defaults.

    Read again only when the file's inode, size or modification time changed.

    Raises:
        SettingsError: The file is malformed, too large, or a symbolic link.
    """
    path = root / SETTINGS_FILE
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return Settings()
    key = (info.st_ino, info.st_size, info.st_mtime_ns)
    with _cache_lock:
        cached = _cache.get(str(path))
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        found = read_vault_file(root, SETTINGS_FILE, limit=MAX_SETTINGS_BYTES)
    except FileTooLargeError:
        raise SettingsError(
            f"{SETTINGS_FILE} is larger than {MAX_SETTINGS_BYTES} bytes; it holds a few settings"
        ) from None
    except PathError as exc:
        raise SettingsError(f"{SETTINGS_FILE}: {exc}") from None
    if found is None:
        return Settings()
    try:
        text = found[0].decode("utf-8")
    except UnicodeDecodeError:
        raise SettingsError(f"{SETTINGS_FILE} is not UTF-8 text") from None
    settings = parse(text)
    with _cache_lock:
        _cache[str(path)] = (key, settings)
    return settings
