"""Scopes: the namespaces a caller may read, and those it may also write.

A :class:`Scope` is one grant: a namespace (with every folder below it) and whether the holder may
change it. :class:`~memfs.longterm.LongTermMemory`, the memory tools (and the MCP server, when it
comes) are given a list of them and ask this module two questions about any vault path: is it in
one of my scopes (else it is neither shown nor injected), and may I write it.

A writable scope may also be granted for proposing only (``propose=True``): the holder's writes
there become proposals a person accepts or rejects (:mod:`memfs.proposals`), never facts.

Both answers compare whole path components, never words: ``users/alice`` holds
``memories/users/alice/x.md`` and ``memories/users/alice/travel/y.md``, but not
``memories/users/alice2/x.md`` nor ``memories/x users/alice/x.md``. Where scopes nest
(``users/alice`` writable, ``users/alice/shared`` read-only), the innermost one decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .errors import InvalidArgumentError, ReadOnlyError
from .layout import in_namespace, label
from .paths import clean_namespace


@dataclass(frozen=True)
class Scope:
    """A namespace granted to a caller, and whether it may write there.

    Args:
        namespace: The namespace (``users/alice``), with every folder below it.
        writable: True: read and write. False: read only. None: the default of whoever takes the
            list (:class:`~memfs.longterm.LongTermMemory`: writable for its first store only;
            :class:`~memfs.tools.MemoryTools`: writable).
        propose: True: writes here become proposals waiting for a person's review (the holder
            may propose, not decide). False: the vault's review policy (``memfs.toml``) decides.
    """

    namespace: str
    writable: bool | None = None
    propose: bool = False

    def holds(self, path: str) -> bool:
        """True when the vault path lies in this scope's namespace or a folder below it."""
        return in_namespace(path, self.namespace)


def granted(stores: Iterable[str | Scope], *, first: bool, others: bool) -> tuple[Scope, ...]:
    """The scopes of ``stores`` (namespaces or :class:`Scope` values), checked, each with a decided grant.

    A plain string, or a Scope whose ``writable`` is None, is writable as ``first`` says for the
    first store and as ``others`` says for the rest.

    Raises:
        InvalidArgumentError: No store, one string instead of a list, or a value that is neither.
        PathError: A namespace that is not a clean namespace.
    """
    if isinstance(stores, str):
        raise InvalidArgumentError("stores must be a list of namespaces, not one string")
    given = [s if isinstance(s, Scope) else Scope(s) if isinstance(s, str) else s for s in stores]
    if not given:
        raise InvalidArgumentError("at least one namespace is needed")
    scopes = []
    for n, scope in enumerate(given):
        if (
            not isinstance(scope, Scope)
            or not isinstance(scope.namespace, str)
            or scope.writable not in (None, True, False)
            or scope.propose not in (True, False)
        ):
            raise InvalidArgumentError(f"a store is a namespace or a Scope(namespace, writable=bool), got {scope!r}")
        default = first if n == 0 else others
        writable = default if scope.writable is None else scope.writable
        scopes.append(Scope(clean_namespace(scope.namespace), writable, scope.propose))
    return tuple(scopes)


def scope_of(scopes: Sequence[Scope], path: str) -> Scope | None:
    """The innermost of ``scopes`` that holds the vault path ``path`` (None: it is outside them all)."""
    holding = [s for s in scopes if s.holds(path)]
    return max(holding, key=lambda s: len(s.namespace)) if holding else None


def readable(scopes: Sequence[Scope], path: str) -> bool:
    """True when the vault path lies in one of ``scopes``."""
    return scope_of(scopes, path) is not None


def check_writable(scopes: Sequence[Scope], path: str) -> None:
    """Nothing if ``scopes`` grant writing ``path``; else ReadOnlyError saying why, in a sentence.

    The innermost scope holding the path decides; a path in none of them is not writable either.
    """
    scope = scope_of(scopes, path)
    if scope is None:
        raise ReadOnlyError(f"{label(path)} is outside the namespaces granted here")
    if not scope.writable:
        raise ReadOnlyError(f"{label(path)} is in {scope.namespace}, which is granted read-only here")


def proposes(scopes: Sequence[Scope], path: str) -> bool:
    """True when the innermost of ``scopes`` holding the vault path grants proposing only there."""
    scope = scope_of(scopes, path)
    return scope is not None and scope.propose
