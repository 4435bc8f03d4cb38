"""The first hour of a new user (issue 28): the examples work as written, the CLI does what people expect."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import memfs
from memfs.cli import cli


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def run(*args: str, code: int = 0, stdin: str | None = None) -> str:
    result = CliRunner().invoke(cli, list(args), input=stdin)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output


def error_line(*args: str, code: int = 1) -> str:
    out = run(*args, code=code)
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1, out
    return lines[0]


# -- 1. two vaults on one machine sync as the README says -------------------------------------


@pytest.mark.parametrize("as_url", [False, True])
def test_a_vault_cloned_from_a_folder_syncs_both_ways(tmp_path: Path, as_url: bool) -> None:
    home, laptop = tmp_path / "agent-memory", tmp_path / "laptop-memory"
    run("init", str(home))
    run("add", "--vault", str(home), "-n", "users/alice", "Alice likes tea.")
    run("clone", home.as_uri() if as_url else str(home), str(laptop))
    for round_ in range(2):  # the second round: both sides wrote meanwhile
        run("add", "--vault", str(laptop), "-n", "users/alice", f"Alice packs snack number {round_}.")
        if round_:
            run("add", "--vault", str(home), "-n", "users/alice", "Alice flies from Porto.")
        assert "pushed" in run("sync", "--vault", str(laptop))
        # the first vault has the laptop's memory in its files and its history, and finds it
        assert git(home, "status", "--porcelain") == ""
        assert f"snack number {round_}" in run("search", "--vault", str(home), "snack")
    assert "Porto" in run("search", "--vault", str(laptop), "Porto")


def test_a_push_git_refuses_is_a_sentence_with_the_fix(tmp_path: Path) -> None:
    home, laptop = tmp_path / "agent-memory", tmp_path / "laptop-memory"
    run("init", str(home))
    run("add", "--vault", str(home), "-n", "users/alice", "--title", "Tea", "Alice likes tea.")
    run("clone", str(home), str(laptop))
    (home / "memories/users/alice/tea.md").write_text("---\ntitle: Tea\n---\nAlice likes green tea.\n")
    run("add", "--vault", str(laptop), "-n", "users/alice", "Alice likes cake.")
    line = error_line("sync", "--vault", str(laptop))
    assert "holds edits not committed yet" in line and f"memfs commit --vault {home}" in line
    assert "remote:" not in line and "refusing" not in line
    run("commit", "--vault", str(home))
    assert "pushed" in run("sync", "--vault", str(laptop))


def test_a_remote_that_is_no_repository_is_said_so(tmp_path: Path) -> None:
    home, laptop = tmp_path / "agent-memory", tmp_path / "laptop-memory"
    run("init", str(home))
    run("clone", str(home), str(laptop))
    git(laptop, "remote", "set-url", "origin", str(tmp_path / "gone"))
    line = error_line("sync", "--vault", str(laptop))
    assert "is not a git repository" in line and "git remote" in line


def test_a_push_to_a_local_vault_runs_none_of_its_hooks(tmp_path: Path) -> None:
    home, laptop = tmp_path / "agent-memory", tmp_path / "laptop-memory"
    run("init", str(home))
    run("clone", str(home), str(laptop))
    ran = tmp_path / "hook-ran"
    for hook in ("pre-receive", "post-receive", "push-to-checkout", "update"):
        script = home / ".git/hooks" / hook
        script.write_text(f"#!/bin/sh\ntouch {ran}\n")
        script.chmod(0o755)
    run("add", "--vault", str(laptop), "-n", "notes", "pushed without hooks")
    assert "pushed" in run("sync", "--vault", str(laptop))
    assert not ran.exists()


# -- 2. export then import gives the same bytes ------------------------------------------------


def superseding_vault(root: Path) -> None:
    run("init", str(root))
    run("add", "--vault", str(root), "-n", "users/alice", "--title", "Home", "Alice lives in Paris.")
    run("add", "--vault", str(root), "-n", "users/alice", "--title", "Seat", "Alice likes window seats.")
    run("supersede", "--vault", str(root), "users/alice/home.md", "Alice lives in Berlin.")
    run("add", "--vault", str(root), "-n", "shared", "--title", "Office", "The office is in Lisbon.")
    run("supersede", "--vault", str(root), "shared/office.md", "The office moved to Porto.")


@pytest.mark.parametrize("how", [["--accept"], []])
def test_export_import_round_trips_supersedes_and_times(tmp_path: Path, how: list[str]) -> None:
    superseding_vault(tmp_path / "a")
    first = tmp_path / "x.jsonl"
    run("export", "--vault", str(tmp_path / "a"), str(first))
    run("init", str(tmp_path / "b"))
    run("import", "--vault", str(tmp_path / "b"), str(first), *how)
    if not how:  # proposals first, accepted by a person: nothing is stamped again
        run("accept", "--vault", str(tmp_path / "b"), "--all")
    again = tmp_path / "y.jsonl"
    run("export", "--vault", str(tmp_path / "b"), str(again))
    assert again.read_bytes() == first.read_bytes()
    with memfs.Vault.open(tmp_path / "b", commit_edits=False) as vault:
        assert [h.path for h in vault.search("lives Paris Berlin")] == ["memories/users/alice/home-2.md"]  # current only


def test_a_mem0_import_keeps_both_times(tmp_path: Path) -> None:
    source = tmp_path / "mem0.json"
    source.write_text(json.dumps({"results": [
        {"id": "a1", "memory": "Likes tea", "created_at": "2024-01-02T03:04:05Z", "updated_at": "2024-05-06T07:08:09Z"},
        {"id": "a2", "memory": "Hates queues", "created_at": "2024-02-02T00:00:00+02:00",
         "updated_at": "2024-03-03T10:00:00+00:00"},
    ]}))  # fmt: skip
    run("init", str(tmp_path / "v"))
    run("import", "--vault", str(tmp_path / "v"), "-n", "users/al", str(source), "--accept")
    with memfs.Vault.open(tmp_path / "v", commit_edits=False) as vault:
        got = {m.title: (m.created, m.updated) for m in vault.memories("users/al").list()}
    assert got["Likes tea"] == ("2024-01-02T03:04:05Z", "2024-05-06T07:08:09Z")
    assert got["Hates queues"][1] == "2024-03-03T10:00:00Z"


# -- 3. Claude Code's folder: the index is no memory, descriptions are searched, and a way back ----


def claude_folder(folder: Path) -> None:
    folder.mkdir()
    (folder / "MEMORY.md").write_text(
        "# Memory index\n\n- [User role](user_role.md) — a data scientist\n"
        "- [Testing](feedback_testing.md) — real databases in tests\n"
    )
    (folder / "user_role.md").write_text(
        "---\nname: User role\ndescription: a data scientist working on observability\ntype: user\n---\n"
        "Works mostly in Python.\n"
    )
    (folder / "feedback_testing.md").write_text(
        "---\nname: Testing\ndescription: integration tests hit a real database, never mocks\ntype: feedback\n---\n"
        "Burned by a mocked migration last quarter.\n"
    )


def test_claude_codes_index_is_not_imported_and_descriptions_are_searched(tmp_path: Path) -> None:
    claude_folder(tmp_path / "cc")
    run("init", str(tmp_path / "v"))
    out = run("import", "--vault", str(tmp_path / "v"), "-n", "me", str(tmp_path / "cc"), "--accept")
    assert "skipped MEMORY.md: the folder's index" in out
    with memfs.Vault.open(tmp_path / "v", commit_edits=False) as vault:
        assert sorted(m.name for m in vault.memories("me").list()) == ["feedback_testing.md", "user_role.md"]
        assert [h.title for h in vault.search("observability")] == ["User role"]  # only in the description
        assert [h.title for h in vault.search("mocks")] == ["Testing"]


def test_a_memory_md_with_notes_of_its_own_is_imported(tmp_path: Path) -> None:
    claude_folder(tmp_path / "cc")
    (tmp_path / "cc/MEMORY.md").write_text("- [User role](user_role.md) — a data scientist\n\nAlways answer in French.\n")
    run("init", str(tmp_path / "v"))
    run("import", "--vault", str(tmp_path / "v"), "-n", "me", str(tmp_path / "cc"), "--accept")
    assert (tmp_path / "v/memories/me/MEMORY.md").exists()  # a line that is not an index entry: kept


def test_export_to_claude_code_and_claude_md_and_back(tmp_path: Path) -> None:
    superseding_vault(tmp_path / "a")
    folder = tmp_path / "claude-memory"
    run("export", "--vault", str(tmp_path / "a"), "-n", "users/alice", "--format", "claude-code", str(folder))
    assert sorted(p.name for p in folder.iterdir()) == ["MEMORY.md", "home-2.md", "seat.md"]
    index = (folder / "MEMORY.md").read_text()
    assert "- [Home](home-2.md) — Alice lives in Berlin." in index and "Paris" not in index  # current only
    assert (folder / "seat.md").read_text().startswith("---\nname: Seat\ndescription: Alice likes window seats.\n")
    run("init", str(tmp_path / "b"))
    run("import", "--vault", str(tmp_path / "b"), "-n", "me", str(folder), "--accept")
    with memfs.Vault.open(tmp_path / "b", commit_edits=False) as vault:
        assert sorted(m.title for m in vault.memories("me").list()) == ["Home", "Seat"]
    claude = tmp_path / "CLAUDE.md"
    run("export", "--vault", str(tmp_path / "a"), "--format", "claude-md", str(claude))
    text = claude.read_text()
    assert "## Office\n\nThe office moved to Porto." in text and "Lisbon" not in text
    # never over what is there: a person's CLAUDE.md, a memory folder that holds files
    assert "exists" in error_line("export", "--vault", str(tmp_path / "a"), "--format", "claude-md", str(claude))
    assert "not an empty folder" in error_line("export", "--vault", str(tmp_path / "a"), "--format",
                                               "claude-code", str(folder))  # fmt: skip
    assert claude.read_text() == text


@pytest.mark.parametrize("fmt", ["jsonl", "claude-md", "claude-code"])
def test_export_into_a_missing_folder_is_an_error_and_makes_none(tmp_path: Path, fmt: str) -> None:
    run("init", str(tmp_path / "v"))
    target = tmp_path / "no" / "such" / "out"
    line = error_line("export", "--vault", str(tmp_path / "v"), "--format", fmt, str(target))
    assert f"{target.parent} does not exist" in line
    assert not (tmp_path / "no").exists()
    assert os.listdir(tmp_path) == ["v"]
