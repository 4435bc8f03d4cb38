"""The one public door: `memfs.__all__` names every type the API returns, and no internals."""

import ast
import importlib
import inspect
import re
import typing
from pathlib import Path

import pytest

import memfs

# The classes a user is handed, whose public methods and properties make the API.
MAIN = (
    memfs.Vault,
    memfs.MemoryStore,
    memfs.Memory,
    memfs.MemoryTools,
    memfs.LongTermMemory,
    memfs.MarkdownSession,
    memfs.Changes,
    memfs.ConversationManager,
    memfs.SlidingWindowConversationManager,
    memfs.SummarizingConversationManager,
    memfs.TokenWindowConversationManager,
    memfs.NullConversationManager,
    memfs.MessageWindow,
    memfs.Proposal,
    memfs.Settings,
    memfs.ImportReport,
)

# Names in return annotations that are not memfs's types: builtins, typing, pathlib.
FOREIGN = {"Any", "None", "Path", "Iterator", "Callable", "AbstractContextManager", "Item"}
# The layers below and what their maintenance calls return (`Vault.reindex`'s `SyncReport`,
# `Vault.problems`'s `Problem`): kept off the public list on purpose, named from their module.
BELOW = {"GitHistory", "SearchIndex", "SyncReport", "Problem"}
# What memfs uses inside: importable from their modules, never from `memfs`.
INTERNALS = {
    "WriteEngine": "memfs.engine",
    "SyncReport": "memfs.results",
    "Problem": "memfs.results",
}


def _returned_names(cls: type) -> set[str]:
    names = set()
    for name, member in inspect.getmembers(cls):
        if name.startswith("_"):
            continue
        function = member.fget if isinstance(member, property) else member
        annotation = getattr(function, "__annotations__", {}).get("return")
        if annotation is None:
            continue
        for word in re.findall(r"[A-Za-z_][\w.]*", str(annotation)):
            word = word.rsplit(".", 1)[-1]
            if word[:1].isupper():
                names.add(word)
    return names


def test_every_name_in_all_is_importable() -> None:
    for name in memfs.__all__:
        assert getattr(importlib.import_module("memfs"), name) is not None, name
    namespace: dict[str, object] = {}
    exec("from memfs import *", namespace)
    assert set(memfs.__all__) <= set(namespace)


@pytest.mark.parametrize("cls", MAIN, ids=lambda cls: cls.__name__)
def test_every_type_a_public_method_returns_is_exported(cls: type) -> None:
    returned = _returned_names(cls) - FOREIGN - BELOW
    assert returned - set(memfs.__all__) == set()


def test_the_types_the_issue_named_are_exported() -> None:
    assert {"Pruned", "Validity", "Resolved", "Skipped", "Watcher"} <= set(memfs.__all__)
    assert typing.get_type_hints(memfs.Vault.prune)["return"] == list[memfs.Pruned]
    assert typing.get_type_hints(memfs.Memory.validity.fget)["return"] is memfs.Validity


@pytest.mark.parametrize("name", sorted(INTERNALS))
def test_internals_are_not_exported_but_stay_importable_from_their_module(name: str) -> None:
    assert name not in memfs.__all__
    assert not hasattr(memfs, name)
    assert getattr(importlib.import_module(INTERNALS[name]), name) is not None


def test_memory_files_are_written_through_the_store_only() -> None:
    # `MemoryStore` is the one way to write a memory: the vault has no raw write, delete or move.
    for name in ("write", "delete", "move"):
        assert not hasattr(memfs.Vault, name), name
    assert {"add", "update", "delete", "move", "write_text"} <= set(vars(memfs.MemoryStore))


def _defined_types(tree: ast.Module) -> list[str]:
    names = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if isinstance(node.value, ast.Name) and node.value.id == "Any":
                continue  # a stand-in for a class defined elsewhere, named as it is there
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return [name for name in names if name[:1].isupper() and not name.isupper()]


def test_one_name_per_meaning() -> None:
    # Three `Stat`s, two `Finding`s and two `Change`s once meant different things: a type's name
    # is defined in one module only.
    where: dict[str, list[str]] = {}
    for path in sorted(Path(memfs.__file__).parent.rglob("*.py")):
        for name in _defined_types(ast.parse(path.read_text(encoding="utf-8"))):
            where.setdefault(name, []).append(path.name)
    assert {name: files for name, files in where.items() if len(files) > 1} == {}
    from memfs import changes, credentials, doctor, engine, freshness, indexed

    assert memfs.Change is changes.Change and memfs.Finding is doctor.Finding
    assert (engine.OwnStat, freshness.FileStamp, indexed.IndexedStamp) == (
        tuple[int, int, int],
        tuple[int, int],
        tuple[typing.Any, ...],
    )
    assert credentials.find_secrets("no secret here") == [] and engine.Transaction.__name__ == "Transaction"
    assert not hasattr(credentials, "Finding") and not hasattr(engine, "Change")
