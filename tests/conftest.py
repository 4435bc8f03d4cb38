"""Fixtures shared by the suite: an isolated home and git config, a vault, a store."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import memfs


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's home folder or git identity (CI has none either)."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))  # where the index key lives
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
                "EMAIL", "MEMFS_VAULT", "MEMFS_AUTHOR", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not leaked, f"test leaked threads: {leaked}"


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[memfs.Vault]:
    with memfs.Vault.open(tmp_path / "vault", create=True, durable=False) as v:
        yield v


@pytest.fixture
def store(vault: memfs.Vault) -> memfs.MemoryStore:
    return vault.memories("users/alice")
