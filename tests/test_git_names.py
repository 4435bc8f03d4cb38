"""Names git quotes or splits badly (spaces, tabs, quotes, newlines, non-ASCII) through every git answer memfs reads.

A person's Obsidian note ``Trip plan.md`` once broke every later ``memfs sync`` of the vault and
``memfs changes``: git's ``<name> missing`` answer was split on whitespace. These run real syncs
between clones, real ``changes``, ``undo``, ``log`` and purge over such names.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import add_origin, person_env

import memfs
from memfs.cli import cli
from memfs.history import unquote

NS = "memories/users/alice"
#: names the vault's path gate takes in from a remote
TAKEN = ["Trip plan.md", "it's 'quoted'.md", "café ünï 日本.md", "x missing.md",
         "0123456789abcdef0123456789abcdef01234567 blob 12.md", "two  spaces .md", "[draft] x.md"]  # fmt: skip
#: names it refuses (control characters), reported as skipped, never a crash
REFUSED = ["tab\there.md", "new\nline.md", "new\nx missing.md", 'say "hi".md', "back\\slash.md"]


def git(cwd: Path, *args: str) -> str:
    env = person_env("Alice Person", "alice@example.org")
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env=env).stdout


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path, Path]:
    remote = tmp_path / "remote.git"
    with memfs.Vault.open(tmp_path / "a", create=True, durable=False, author="agent-a <a@example.org>") as a:
        add_origin(a, remote)
        a.memories("users/alice").add("Alice prefers window seats.", title="Seats")
        a.sync()
    memfs.Vault.clone(remote.as_uri(), tmp_path / "b", durable=False, author="agent-b <b@example.org>").close()
    return remote, tmp_path / "a", tmp_path / "b"


def person_commits(folder: Path, names: list[str], text: str, message: str) -> str:
    """A person pulls, writes ``names`` under alice's folder with plain git, commits and pushes."""
    git(folder, "pull", "-q", "--no-rebase", "origin", "main")
    for name in names:
        (folder / NS / name).write_text(f"# {name}\n{text}\n", encoding="utf-8")
    git(folder, "add", "-A", "--", NS)
    git(folder, "commit", "-q", "-m", message)
    git(folder, "push", "-q", "origin", "HEAD:main")
    return git(folder, "rev-parse", "HEAD").strip()


def run(folder: Path, command: str, *args: str) -> str:
    result = CliRunner().invoke(cli, [command, "--vault", str(folder), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_names_git_quotes_or_splits_sync_between_clones_and_show_in_changes(clones: tuple[Path, Path, Path]) -> None:
    _, a, b = clones
    start = git(b, "rev-parse", "HEAD").strip()
    person_commits(a, TAKEN + REFUSED, "first", "notes with odd names")
    out = run(b, "sync")
    for name in TAKEN:
        assert (b / NS / name).read_text("utf-8") == f"# {name}\nfirst\n", name
    for name in REFUSED:
        assert not (b / NS / name).exists()
    assert out.count("skipped: ") == len(REFUSED) and out.count("forbidden character") == len(REFUSED)
    # every later sync works too: a second commit changes and deletes some of them
    git(a, "rm", "-q", "--", f"{NS}/{TAKEN[0]}", f"{NS}/{REFUSED[0]}")
    person_commits(a, TAKEN[1:3], "second", "edit two")
    run(b, "sync")
    assert not (b / NS / TAKEN[0]).exists()
    assert (b / NS / TAKEN[1]).read_text("utf-8").endswith("second\n")
    # the changes since the start list every name, added, changed and deleted
    with memfs.Vault.open(b, durable=False) as vault:
        found = vault.changes(start)
        seen = {(f.path, f.status) for c in found.changes for f in c.files}
        for name in TAKEN:
            assert any(p == f"{NS}/{name}" for p, _ in seen), name
        assert (f"{NS}/{TAKEN[0]}", "deleted") in seen
        with_diff = vault.changes(start, diff=True)
        assert all(f.diff is not None for c in with_diff.changes for f in c.files)
    out = run(b, "changes", "--since", start)
    assert "Trip plan.md" in out and "café" in out


def test_changes_with_odd_names_reads_each_file_by_its_whole_name(clones: tuple[Path, Path, Path]) -> None:
    _, a, _ = clones
    start = git(a, "rev-parse", "HEAD").strip()
    person_commits(a, ["Trip plan.md", "new\nline.md", "tab\there.md"], "one", "add")
    person_commits(a, ["Trip plan.md", "new\nline.md", "tab\there.md"], "two", "change")
    with memfs.Vault.open(a, durable=False) as vault:
        found = vault.changes(start, diff=True).changes
        statuses = {(f.path, f.status) for c in found for f in c.files}
        for name in ["Trip plan.md", "new\nline.md", "tab\there.md"]:
            assert (f"{NS}/{name}", "added") in statuses and (f"{NS}/{name}", "modified") in statuses, name
        diffs = "".join(f.diff or "" for c in found for f in c.files)
        assert "-one" in diffs and "+two" in diffs


def test_undo_log_and_restore_of_a_person_commit_with_odd_names(clones: tuple[Path, Path, Path]) -> None:
    _, a, _ = clones
    names = ["Trip plan.md", "new\nline.md", 'say "hi".md', "café.md"]
    person_commits(a, names, "one", "add")
    person_commits(a, names, "two", "change")
    with memfs.Vault.open(a, durable=False) as vault:
        log = vault.history.log(f"{NS}/{names[2]}")
        assert [r.path for r in log] == [f"{NS}/{names[2]}"] * 2
        assert [r.path for r in vault.history.log(f"{NS}/{names[1]}")] == [f"{NS}/{names[1]}"] * 2
        assert sorted(p for _, p in vault.history.files_changed("HEAD")) == sorted(f"{NS}/{n}" for n in names)
        undone = vault.undo(author="Alice Person")
        assert undone.subject == "change"
        for name in names:
            assert (a / NS / name).read_text("utf-8").endswith("one\n"), name


def test_purge_of_a_file_with_a_space_in_its_name(clones: tuple[Path, Path, Path]) -> None:
    _, a, _ = clones
    person_commits(a, ["Trip plan.md"], "secret plan", "add")
    with memfs.Vault.open(a, durable=False) as vault:
        vault.purge(f"{NS}/Trip plan.md")
        assert not (a / NS / "Trip plan.md").exists()
        every = git(a, "log", "--all", "--format=%H", "--name-only")
        assert "Trip plan.md" not in every


def test_a_remote_name_holding_a_newline_and_an_object_id_is_not_read_as_an_object(
    clones: tuple[Path, Path, Path],
) -> None:
    _, a, b = clones
    with memfs.Vault.open(b, durable=False) as vault:  # a purge here: every sync checks what comes in for it
        vault.memories("users/alice").add("a passing thought", title="Thought", path="thought.md")
        vault.purge("users/alice/thought.md")
        vault.sync()
    forged = "x\n" + "f" * 40 + " y.md"
    person_commits(a, [forged, "Trip plan.md"], "fine", "a forged line")
    out = run(b, "sync")
    assert (b / NS / "Trip plan.md").read_text("utf-8").endswith("fine\n")
    assert "skipped: " in out


@pytest.mark.parametrize(
    ("printed", "name"),
    [('"a\\tb.md"', "a\tb.md"), ('"new\\nline"', "new\nline"), ('"say \\"hi\\""', 'say "hi"'),
     ('"back\\\\slash"', "back\\slash"), ('"caf\\303\\251 \\"x\\""', 'café "x"'), ('"日本\\t"', "日本\t")],
)  # fmt: skip
def test_unquote_reads_every_escape_git_writes(printed: str, name: str) -> None:
    assert unquote(printed) == name


def test_a_name_that_reads_as_a_pattern_is_only_itself(clones: tuple[Path, Path, Path]) -> None:
    _, a, _ = clones
    person_commits(a, ["[draft] x.md", "d x.md", "*star*.md"], "one", "add")
    person_commits(a, ["d x.md"], "two", "change d only")
    with memfs.Vault.open(a, durable=False) as vault:
        log = vault.history.log(f"{NS}/[draft] x.md")
        assert [r.subject for r in log] == ["add"] and log[0].path == f"{NS}/[draft] x.md"
        (a / NS / "d x.md").write_text("edited by hand\n")
        assert vault.history.changed([f"{NS}/[draft] x.md"]) == []
        assert vault.history.status([f"{NS}/[draft] x.md"]) == []
        assert vault.history.diff(f"{NS}/[draft] x.md", "HEAD") == ""
