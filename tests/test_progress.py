"""Long operations say how far they are: the library's ``progress(done, total)`` callbacks, the CLI's bars.

The library calls back and never prints; the CLI draws a bar with counts on stderr, only on a
terminal, and never with --quiet or --json.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from itertools import pairwise
from pathlib import Path

import pytest
from helpers import read_pty

import memfs

ALICE = "users/alice"


class Heard:
    """A ``progress`` callback that keeps what it was told."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def __call__(self, done: int, total: int) -> None:
        self.calls.append((done, total))


def counts_up_to_the_end(calls: list[tuple[int, int]], total: int) -> None:
    """Each call is one step further, never past its total, and the last is ``total`` of ``total``."""
    assert calls, "progress was never called"
    assert [done for done, _ in calls] == list(range(1, len(calls) + 1))
    assert all(done <= of for done, of in calls)
    assert all(later <= earlier for (_, earlier), (_, later) in pairwise(calls)), "the total grew"
    assert calls[-1] == (total, total)


def notes(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True)
    for n in range(count):
        (folder / f"note-{n}.md").write_text(f"# Note {n}\n\nAlice's fact number {n}.\n")
    return folder


def proposed(vault: memfs.Vault, count: int) -> list[str]:
    proposer = vault.memories(ALICE, propose=True, session="chat-1")
    return [proposer.add(f"Alice's fact number {n}.", title=f"Fact {n}").proposal or "" for n in range(count)]


# -- the library --------------------------------------------------------------------------------------


def test_export_counts_every_memory_file(vault: memfs.Vault) -> None:
    facts = vault.memories(ALICE)
    for n in range(4):
        facts.add(f"Alice's fact number {n}.", title=f"Fact {n}")
    vault.memories("users/bob").add("Bob likes tea.", title="Tea")
    heard = Heard()
    lines, skipped = vault.export(progress=heard)
    assert len(lines) == 5 and not skipped
    counts_up_to_the_end(heard.calls, 5)
    only_bob = Heard()
    assert len(vault.export("users/bob", progress=only_bob)[0]) == 1
    assert only_bob.calls == [(1, 1)]


def test_export_counts_a_file_it_skips_too(vault: memfs.Vault) -> None:
    vault.memories(ALICE).add("Alice likes tea.", title="Tea")
    (vault.root / "memories/users/alice/broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    heard = Heard()
    lines, skipped = vault.export(progress=heard)
    assert len(lines) == 1 and [s.source for s in skipped] == ["memories/users/alice/broken.md"]
    counts_up_to_the_end(heard.calls, 2)


def test_import_counts_each_record_checked_then_each_memory_written(vault: memfs.Vault, tmp_path: Path) -> None:
    heard = Heard()
    report = vault.import_from(notes(tmp_path / "notes", 3), namespace=ALICE, progress=heard)
    assert len(report.imported) == 3 and report.proposed
    assert heard.calls == [(1, 6), (2, 6), (3, 6), (4, 6), (5, 6), (6, 6)]


def test_import_counts_skipped_records_and_a_dry_run_ends_with_the_checks(vault: memfs.Vault, tmp_path: Path) -> None:
    source = notes(tmp_path / "notes", 4)
    (source / "z-broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    dry = Heard()
    report = vault.import_from(source, namespace=ALICE, dry_run=True, progress=dry)
    assert len(report.imported) == 4 and len(report.skipped) == 1
    counts_up_to_the_end(dry.calls, 5)
    heard = Heard()
    vault.import_from(source, namespace=ALICE, accept=True, progress=heard)
    counts_up_to_the_end(heard.calls, 5 + 4)
    assert heard.calls[0] == (1, 10), "before the checks, every record counts as written too"
    again = Heard()  # everything is there already: checked, nothing to write
    report = vault.import_from(source, namespace=ALICE, accept=True, progress=again)
    assert not report.imported
    counts_up_to_the_end(again.calls, 5)


def test_import_of_json_lines_counts_its_records(vault: memfs.Vault, tmp_path: Path) -> None:
    vault.memories(ALICE).add("Alice likes tea.", title="Tea")
    vault.memories(ALICE).add("Alice flies from Porto.", title="Airport")
    export = tmp_path / "all.jsonl"
    export.write_text("".join(vault.export()[0]))
    with memfs.Vault.open(tmp_path / "other", create=True, durable=False) as other:
        heard = Heard()
        report = other.import_from(export, accept=True, progress=heard)
        assert len(report.imported) == 2
    assert heard.calls == [(1, 4), (2, 4), (3, 4), (4, 4)]


@pytest.mark.parametrize("verb", ["accept", "reject"])
def test_accept_and_reject_count_the_proposals_they_apply(vault: memfs.Vault, verb: str) -> None:
    ids = proposed(vault, 3)
    heard = Heard()
    done = getattr(vault, verb)(every=True, progress=heard)
    assert len(done) == 3 and not vault.proposals()
    counts_up_to_the_end(heard.calls, 3)
    one = Heard()
    more = proposed(vault, 2)
    getattr(vault, verb)([more[1]], progress=one)
    assert one.calls == [(1, 1)] and len(ids) == 3


def test_without_a_callback_nothing_changes(vault: memfs.Vault, tmp_path: Path) -> None:
    report = vault.import_from(notes(tmp_path / "notes", 2), namespace=ALICE)
    assert len(report.imported) == 2 and len(vault.accept(every=True)) == 2
    assert len(vault.export()[0]) == 2


# -- the CLI on a terminal ------------------------------------------------------------------------------


def on_a_terminal_stderr(*args: str, stdin: str | None = None) -> tuple[str, str]:
    """``memfs ARGS`` with stderr on a terminal (a pty, 120 columns) and stdout into a pipe: (stdout, stderr)."""
    parent, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    env = {**os.environ, "PYTHONPATH": str(Path(memfs.__file__).parent.parent), "TERM": "xterm-256color"}
    env.pop("COLUMNS", None)
    command = [sys.executable, "-c", "from memfs.cli import main; main()", *args]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=child, stdin=subprocess.PIPE, env=env)
    os.close(child)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((stdin or "").encode())
    proc.stdin.close()
    shown = read_pty(parent)
    out = proc.stdout.read().decode()
    proc.stdout.close()
    assert proc.wait() == 0, shown
    return out, shown


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        facts = vault.memories(ALICE)
        for n in range(3):
            facts.add(f"Alice's fact number {n}.", title=f"Fact {n}")
    return root


def test_cli_import_shows_its_count_on_stderr_and_quiet_shows_nothing(root: Path, tmp_path: Path) -> None:
    source = notes(tmp_path / "notes", 4)
    out, bar = on_a_terminal_stderr("import", str(source), "-n", "users/bob", "--vault", str(root))
    assert "importing" in bar and "8/8" in bar and "8/8" not in out
    assert "proposed 4 memories" in out
    out, bar = on_a_terminal_stderr("import", str(source), "-n", "users/carol", "--quiet", "--vault", str(root))
    assert out == "" and bar == ""
    out, bar = on_a_terminal_stderr("import", str(source), "-n", "users/dan", "--json", "--vault", str(root))
    assert bar == "" and len(json.loads(out)["imported"]) == 4


def test_cli_export_shows_its_count_on_stderr_and_quiet_shows_nothing(root: Path, tmp_path: Path) -> None:
    out, bar = on_a_terminal_stderr("export", "--vault", str(root))
    assert "exporting" in bar and "3/3" in bar
    assert len(out.splitlines()) == 3 and all(json.loads(line)["namespace"] == ALICE for line in out.splitlines())
    out, bar = on_a_terminal_stderr("export", str(tmp_path / "all.jsonl"), "--quiet", "--vault", str(root))
    assert out == "" and bar == "" and len((tmp_path / "all.jsonl").read_text().splitlines()) == 3


@pytest.mark.parametrize("verb", ["accept", "reject"])
def test_cli_accept_and_reject_show_their_count(root: Path, verb: str) -> None:
    with memfs.Vault.open(root, durable=False) as vault:
        proposed(vault, 4)
    out, bar = on_a_terminal_stderr(verb, "--all", "--vault", str(root))
    assert f"{verb}ing proposals" in bar and "4/4" in bar and f"{verb}ed 4 in one commit" in out
    with memfs.Vault.open(root, durable=False) as vault:
        proposed(vault, 2)
    out, bar = on_a_terminal_stderr(verb, "--all", "--quiet", "--vault", str(root))
    assert out == "" and bar == ""


def test_cli_review_shows_its_count_while_it_reads_and_none_with_json(root: Path) -> None:
    out, bar = on_a_terminal_stderr("review", "--vault", str(root))
    assert bar == "" and "nothing to review" in out
    with memfs.Vault.open(root, durable=False) as vault:
        ids = proposed(vault, 12)
    out, bar = on_a_terminal_stderr("review", "--list", "--vault", str(root))
    assert "reading proposals" in bar and "12/12" in bar and "12/12" not in out
    assert all(i in out for i in ids)
    out, bar = on_a_terminal_stderr("review", "--vault", str(root))  # the summary reads only what it shows
    assert "10/10" in bar and "… and 2 more proposals" in out
    out, bar = on_a_terminal_stderr("review", "--json", "--vault", str(root))
    assert bar == "" and len(json.loads(out)["proposals"]) == 12


def test_cli_reindex_shows_its_count_too(root: Path) -> None:
    out, bar = on_a_terminal_stderr("reindex", "--full", "--vault", str(root))
    assert "indexing" in bar and "3/3" in bar and "3 added" in out
    out, bar = on_a_terminal_stderr("reindex", "--full", "--quiet", "--vault", str(root))
    assert out == "" and bar == ""
