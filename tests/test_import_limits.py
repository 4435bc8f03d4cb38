"""Imports that are too large, too deep or never end: refused at once with one line, nothing written."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import memfs
from memfs import sources
from memfs.cli import cli
from memfs.errors import ImportSourceError
from memfs.sources import MAX_ITEMS, MAX_NESTING


def nested(depth: int) -> object:
    value: object = "leaf"
    for n in range(depth):
        value = {"k": value} if n % 2 else [value]
    return value


def deep_json(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def make_deep_folders(root: Path, depth: int) -> None:
    """``root/d/d/.../d`` ``depth`` folders deep with a note at the bottom, made one folder at a time."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = below
        note = os.open("bottom.md", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)
        os.write(note, b"# Bottom\nToo deep.\n")
        os.close(note)
    finally:
        os.close(fd)


def remove_deep_folders(root: Path) -> None:
    """Take ``root/d/d/...`` apart from the bottom (shutil.rmtree recurses, as the import once did)."""
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    while "d" in os.listdir(fds[-1]):
        fds.append(os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
    os.unlink("bottom.md", dir_fd=fds[-1])
    while len(fds) > 1:
        os.close(fds.pop())
        os.rmdir("d", dir_fd=fds[-1])
    os.close(fds[0])


def cli_import(vault: memfs.Vault, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["import", "--vault", str(vault.root), *args])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "content",
    [
        json.dumps([{"id": str(n)} for n in range(MAX_ITEMS + 1)]),  # mem0 records none of which has a text
        json.dumps({"results": [{"memory": f"fact {n}"} for n in range(MAX_ITEMS + 1)]}),
        "\n".join(json.dumps({"memory": f"fact {n}"}) for n in range(MAX_ITEMS + 1)) + "\n",
    ],
    ids=["list-without-texts", "results", "json-lines"],
)
def test_a_source_holding_more_than_an_import_takes_is_refused_as_soon_as_it_is_parsed(
    vault: memfs.Vault, tmp_path: Path, content: str
) -> None:
    source = tmp_path / "mem0.json"
    source.write_text(content)
    head = vault.history.head()
    with pytest.raises(ImportSourceError) as refused:
        vault.import_from(source, namespace="users/alice", format="mem0", accept=True)
    assert f"more than the {MAX_ITEMS:,} memories one import takes" in str(refused.value)
    assert vault.history.head() == head and not list((vault.root / "proposals").rglob("*.md"))


@pytest.mark.parametrize("depth", [100_000, 2_000])
def test_json_nested_past_what_a_parser_reads_is_one_line_not_a_traceback(
    vault: memfs.Vault, tmp_path: Path, depth: int
) -> None:
    source = tmp_path / "deep.json"
    source.write_text(deep_json(depth))
    code, out = cli_import(vault, str(source), "-n", "users/alice", "--format", "mem0")
    assert code == 1 and out.count("\n") == 1 and "too deep" in out and "Traceback" not in out, out[:500]
    lines = tmp_path / "deep.jsonl"  # JSON Lines: that line is skipped, the others imported
    lines.write_text(json.dumps({"memory": "Alice likes tea."}) + "\n" + deep_json(depth) + "\n")
    report = vault.import_from(lines, namespace="users/alice", format="mem0", accept=True)
    assert [i.source for i in report.imported] == ["deep.jsonl line 1"]
    assert [s.source for s in report.skipped] == ["deep.jsonl line 2"] and "too deep" in report.skipped[0].reason


@pytest.mark.parametrize("depth", [600, MAX_NESTING])
def test_metadata_nested_deep_skips_its_record_and_imports_the_others(
    vault: memfs.Vault, tmp_path: Path, depth: int
) -> None:
    source = tmp_path / "mem0.json"
    source.write_text(json.dumps([{"memory": "Alice likes tea.", "metadata": {"ok": 1}},
                                  {"memory": "Deep one.", "metadata": {"x": nested(depth)}}]))  # fmt: skip
    report = vault.import_from(source, namespace="users/alice", format="mem0", accept=True)
    assert [i.source for i in report.imported] == ["mem0.json item 1"]
    assert report.skipped[0].source == "mem0.json item 2" and "deeper than" in report.skipped[0].reason
    memfs_lines = tmp_path / "export.jsonl"  # memfs's own records: a deep front matter
    memfs_lines.write_text(json.dumps({"namespace": "users/bob", "body": "Bob.\n", "front_matter": nested(depth)}))
    report = vault.import_from(memfs_lines, accept=True)
    assert not report.imported and "deeper than" in report.skipped[0].reason


@pytest.mark.parametrize("depth", [1_500, MAX_NESTING + 1])
def test_folders_nested_thousands_deep_are_walked_without_recursion(
    vault: memfs.Vault, tmp_path: Path, depth: int
) -> None:
    root = tmp_path / "notes"
    (root / "top.md").parent.mkdir(parents=True)
    (root / "top.md").write_text("# Top\nAlice likes tea.\n")
    make_deep_folders(root, depth)
    try:
        code, out = cli_import(vault, str(root), "-n", "users/alice", "--format", "markdown", "--accept")
    finally:
        remove_deep_folders(root)
    assert code == 0, out[-500:]
    assert "imported 1 memories" in out and f"deeper than {MAX_NESTING} levels" in out
    assert "Traceback" not in out and "RecursionError" not in out


def _import_into(done: list[tuple[int, str]], vault: memfs.Vault, *args: str) -> None:
    done.append(cli_import(vault, *args))


def test_a_fifo_as_the_import_source_is_refused_at_once(vault: memfs.Vault, tmp_path: Path) -> None:
    for name, fmt in (("pipe.json", "auto"), ("pipe", "mem0"), ("notes.md", "agents-md")):
        fifo = tmp_path / name
        os.mkfifo(fifo)
        done: list[tuple[int, str]] = []
        worker = threading.Thread(target=_import_into, args=(done, vault, str(fifo), "-n", "x/y", "--format", fmt))
        worker.start()
        worker.join(30)
        if worker.is_alive():  # unblock the reader so the test ends, then fail
            with open(fifo, "wb"):
                pass
            worker.join()
            pytest.fail(f"importing the FIFO {name} blocked")
        code, out = done[0]
        assert code == 1 and "not a regular file or a folder" in out and out.count("\n") == 1, out


def test_a_fifo_inside_an_imported_folder_is_skipped(vault: memfs.Vault, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "tea.md").write_text("# Tea\nAlice likes tea.\n")
    os.mkfifo(root / "pipe.md")
    report = vault.import_from(root, namespace="users/alice", format="markdown", accept=True)
    assert [i.source for i in report.imported] == ["tea.md"]
    assert [(s.source, s.reason) for s in report.skipped] == [("pipe.md", "not a regular file")]


def test_a_folder_holding_more_files_than_an_import_takes_is_refused_while_walked(
    vault: memfs.Vault, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    for n in range(MAX_ITEMS + 1):  # attachments, none of them a note: skipped ones count too
        (root / f"a{n}.png").write_bytes(b"")
    with pytest.raises(ImportSourceError, match=f"more than the {MAX_ITEMS:,} memories one import takes"):
        vault.import_from(root, namespace="users/alice", format="markdown", accept=True)


class Endless(io.RawIOBase):
    """Standard input that never ends (`yes | memfs import -`): counts what was read from it."""

    def __init__(self) -> None:
        self.taken = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        buffer[:] = b"x" * len(buffer)
        self.taken += len(buffer)
        return len(buffer)


def test_standard_input_is_read_only_up_to_what_an_import_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "MAX_SOURCE_BYTES", 4096)
    endless = Endless()
    with pytest.raises(ImportSourceError, match="standard input holds more than an import reads"):
        sources.read_stdin(io.BufferedReader(endless))
    assert endless.taken <= 4096 + 1 + io.DEFAULT_BUFFER_SIZE


@pytest.mark.parametrize("size", [5000, 70_000])
def test_an_import_from_standard_input_past_the_limit_is_refused_and_writes_nothing(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    monkeypatch.setattr(sources, "MAX_SOURCE_BYTES", 4096)
    record = json.dumps({"namespace": "me", "body": "y" * size}) + "\n"
    result = CliRunner().invoke(cli, ["import", "--accept", "-", "--vault", str(vault_dir)], input=record)
    assert result.exit_code != 0 and "standard input holds more than an import reads (4,096 bytes)" in result.output
    with memfs.Vault.open(vault_dir) as vault:
        assert vault.namespaces() == []
        with pytest.raises(ImportSourceError, match="more than an import reads"):  # the library's door too
            vault.import_from("-", text="é" * 3000, accept=True)  # 3,000 characters, 6,000 bytes: bytes count
