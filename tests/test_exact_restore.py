"""Putting an old version back (undo, restore) writes the bytes it had: a person's switch to CRLF is undone too."""

from __future__ import annotations

from pathlib import Path

import pytest

import memfs

PERSON = "Alice Person <alice@example.org>"


@pytest.mark.parametrize(
    "save",
    [
        lambda b: b.replace(b"\n", b"\r\n").replace(b"tea", b"green tea"),  # an editor switched to CRLF
        lambda b: b.replace(b"\n", b"\r\n"),  # only the line endings changed
        lambda b: b.replace(b"\n", b"\r\n", 3),  # mixed endings
    ],
    ids=["crlf-and-words", "crlf-only", "mixed"],
)
def test_undo_of_a_persons_save_brings_back_the_bytes_not_only_the_words(tmp_path: Path, save: object) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, person=PERSON, durable=False) as vault:
        memory = vault.memories("users/alice").add("Alice likes tea.\nAnd cake.\n", title="Tea")
        file = vault.root / memory.path
        before = file.read_bytes()
        file.write_bytes(save(before))  # type: ignore[operator]
        assert vault.commit() is not None
        vault.undo(author="alice@example.org")
        assert file.read_bytes() == before
        assert vault.history.status() == []


def test_restore_of_an_old_version_writes_its_bytes(tmp_path: Path) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, person=PERSON, durable=False) as vault:
        store = vault.memories("users/alice")
        memory = store.add("Alice likes tea.\nAnd cake.\n", title="Tea")
        file = vault.root / memory.path
        first, sha = file.read_bytes(), vault.history.head()
        file.write_bytes(first.replace(b"\n", b"\r\n").replace(b"cake", b"pie"))
        vault.commit()
        store.restore(memory.id or "", sha or "")
        assert file.read_bytes() == first
        assert vault.history.status() == []
