"""The first hour of a new user (issue 28): the examples work as written, the CLI does what people expect."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import on_a_terminal, wait_for

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
        current = [h.path for h in vault.search("lives Paris Berlin")]
        assert current == ["memories/users/alice/home-2.md"]


def test_a_mem0_import_keeps_both_times(tmp_path: Path) -> None:
    source = tmp_path / "mem0.json"
    source.write_text(
        json.dumps(
            {
                "results": [
                    {
                        "id": "a1",
                        "memory": "Likes tea",
                        "created_at": "2024-01-02T03:04:05Z",
                        "updated_at": "2024-05-06T07:08:09Z",
                    },
                    {
                        "id": "a2",
                        "memory": "Hates queues",
                        "created_at": "2024-02-02T00:00:00+02:00",
                        "updated_at": "2024-03-03T10:00:00+00:00",
                    },
                ]
            }
        )
    )
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
    index = "- [User role](user_role.md) — a data scientist\n\nAlways answer in French.\n"
    (tmp_path / "cc/MEMORY.md").write_text(index)
    run("init", str(tmp_path / "v"))
    run("import", "--vault", str(tmp_path / "v"), "-n", "me", str(tmp_path / "cc"), "--accept")
    assert (tmp_path / "v/memories/me/MEMORY.md").exists()  # a line that is not an index entry: kept
    # and exported back beside the index, not under it: nothing the count includes is lost
    for taken in ([], ["MEMORY-notes.md"]):
        for name in taken:
            with memfs.Vault.open(tmp_path / "v") as vault:
                vault.memories("me").add("A note of that name already.", path=name)
        folder = tmp_path / f"back-{len(taken)}"
        run("export", "--vault", str(tmp_path / "v"), "-n", "me", "--format", "claude-code", str(folder))
        kept = folder / ("MEMORY-notes-2.md" if taken else "MEMORY-notes.md")
        assert "Always answer in French." in kept.read_text() and kept.name in (folder / "MEMORY.md").read_text()


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
    assert "not an empty folder" in error_line(
        "export", "--vault", str(tmp_path / "a"), "--format", "claude-code", str(folder)
    )
    assert claude.read_text() == text


@pytest.mark.parametrize("fmt", ["jsonl", "claude-md", "claude-code"])
def test_export_into_a_missing_folder_is_an_error_and_makes_none(tmp_path: Path, fmt: str) -> None:
    run("init", str(tmp_path / "v"))
    target = tmp_path / "no" / "such" / "out"
    line = error_line("export", "--vault", str(tmp_path / "v"), "--format", fmt, str(target))
    assert f"{target.parent} does not exist" in line
    assert not (tmp_path / "no").exists()
    assert os.listdir(tmp_path) == ["v"]


# -- 4. -n is --namespace everywhere; counts have their own flag ------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "v"
    run("init", str(path))
    run("add", "--vault", str(path), "-n", "users/alice", "--title", "Seat", "Alice likes window seats.")
    run("add", "--vault", str(path), "-n", "users/bob", "--title", "Seat", "Bob likes aisle seats.")
    with memfs.Vault.open(path) as vault:
        vault.session("chat").append([{"role": "user", "content": f"message {i}"} for i in range(5)])
    return path


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["search", "-n", "2", "seat"], "-k 2"),
        (["search", "-n", "10", "seat"], "-k 10"),
        (["log", "-n", "5"], "--limit 5"),
        (["ls", "7"], "no namespace '7'"),
    ],
)
def test_a_count_given_to_n_is_said_to_be_a_namespace(root: Path, args: list[str], says: str) -> None:
    line = error_line(*args, "--vault", str(root))
    assert says in line and "no namespace" in line


def test_counts_have_their_own_flag_and_n_filters_by_namespace(root: Path) -> None:
    assert len(json.loads(run("log", "--vault", str(root), "--limit", "2", "--json"))) == 2
    bob = json.loads(run("log", "--vault", str(root), "-n", "users/bob", "--json"))
    assert [r["subject"] for r in bob] == ["memory: create users/bob/seat.md"]
    assert run("session", "--vault", str(root), "chat", "--limit", "2").count("user") == 2
    line = error_line("session", "--vault", str(root), "chat", "-n", "2", code=2)
    assert "-n is --namespace" in line and "--limit 2" in line
    assert [
        h["path"] for h in json.loads(run("search", "--vault", str(root), "-n", "users/bob", "seats", "--json"))
    ] == ["memories/users/bob/seat.md"]


# -- 5. mv takes a path like the one it moves ---------------------------------------------------


@pytest.mark.parametrize(
    ("dest", "lands"),
    [
        ("users/bob/seat-of-alice.md", "users/bob/seat-of-alice.md"),  # another namespace that exists
        ("users/carol/seat.md", "users/carol/seat.md"),  # one that does not exist yet
        ("memories/users/alice/archive/seat.md", "users/alice/archive/seat.md"),  # a sub-folder, vault form
        ("window.md", "users/alice/window.md"),  # a name alone: the same folder
        ("shared/seat.md", "shared/seat.md"),  # a new top folder: a path is a path, as REF is
    ],
)
def test_mv_moves_to_the_path_given(root: Path, dest: str, lands: str) -> None:
    before = json.loads(run("ls", "--vault", str(root), "users/alice", "--json"))[0]["id"]
    assert f"moved to memories/{lands}" in run("mv", "--vault", str(root), "users/alice/seat.md", dest)
    assert (root / "memories" / lands).is_file()
    assert not (root / "memories/users/alice/users").exists() and not (root / "memories/users/alice/seat.md").exists()
    with memfs.Vault.open(root, commit_edits=False) as vault:
        assert vault.path_of(before) == f"memories/{lands}"  # the id went with it


# -- 6. add: near-duplicates are said, titles are readable in any script -----------------------


def test_adding_the_same_text_twice_is_said(root: Path) -> None:
    result = CliRunner().invoke(cli, ["add", "--vault", str(root), "-n", "users/alice", "Alice likes window seats."])
    assert result.exit_code == 0
    assert "users/alice/seat.md already says much the same" in result.stderr
    assert "memfs rm users/alice/" in result.stderr
    other = CliRunner().invoke(cli, ["add", "--vault", str(root), "-n", "users/alice", "Alice owns a red bicycle."])
    assert other.exit_code == 0 and "already says" not in other.stderr


@pytest.mark.parametrize(
    ("body", "title", "name"),
    [
        ("Alice's home airport is Porto.", "Alice's home airport is Porto", "alice-s-home-airport-is-porto.md"),
        ("我喜欢靠窗的座位。我经常坐飞机。", "我喜欢靠窗的座位", "我喜欢靠窗的座位.md"),
        ("Москва зимой очень холодная. Да.", "Москва зимой очень холодная", "москва-зимой-очень-холодная.md"),
        ("# Trip to Kyoto\n\nIn March.", "Trip to Kyoto", "trip-to-kyoto.md"),
        ("Dr. Smith is our doctor. Call him.", "Dr. Smith is our doctor", "dr-smith-is-our-doctor.md"),
    ],
)
def test_a_memory_without_a_title_is_titled_by_its_first_sentence(root: Path, body: str, title: str, name: str) -> None:
    run("add", "--vault", str(root), "-n", "notes", body)
    found = json.loads(run("ls", "--vault", str(root), "notes", "--json"))
    assert [(m["title"], m["path"]) for m in found] == [(title, f"memories/notes/{name}")]


# -- 7. the vault is found from a folder inside it ---------------------------------------------


@pytest.mark.parametrize("inside", ["memories", "memories/users", "memories/users/alice", "sessions"])
def test_commands_find_the_vault_from_a_folder_inside_it(
    root: Path, inside: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(root / inside)
    assert "users/alice/seat.md" in run("ls")
    run("add", "-n", "users/alice", "Alice is vegetarian.")
    assert (root / "memories/users/alice/alice-is-vegetarian.md").exists()
    assert not (root / inside / "memories").exists() or inside == "memories"


def test_outside_any_vault_the_error_says_how_to_make_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "plain" / "memories").mkdir(parents=True)  # a folder named memories is not a vault
    monkeypatch.chdir(tmp_path / "plain" / "memories")
    assert "memfs init" in error_line("ls")


# -- 8. errors name the real cause ---------------------------------------------------------------


@pytest.mark.parametrize("namespace", ["Users/Alice", "users/ALICE", "USERS/alice"])
def test_a_namespace_in_another_case_is_named_as_such(root: Path, namespace: str) -> None:
    line = error_line("add", "--vault", str(root), "-n", namespace, "hello there")
    assert "differs only in case" in line and "memories/users/alice" in line and "too many" not in line


@pytest.mark.parametrize("path", ["users/alice/missing.md", "users/nobody/x.md"])
def test_log_of_a_memory_that_never_was_is_an_error(root: Path, path: str) -> None:
    assert "no memory" in error_line("log", "--vault", str(root), path)


def test_log_of_a_deleted_memory_still_shows_its_history(root: Path) -> None:
    run("rm", "--vault", str(root), "users/bob/seat.md")
    assert "delete" in run("log", "--vault", str(root), "users/bob/seat.md")


@pytest.mark.parametrize(
    "args",
    [["ls", "users/carol"], ["search", "seat", "-n", "users/carol"], ["search", "seat", "--namespace", "nobody"]],
)
def test_reading_a_namespace_that_does_not_exist_is_an_error(root: Path, args: list[str]) -> None:
    line = error_line(*args, "--vault", str(root))
    assert "no namespace" in line and "users/alice" in line


def test_a_namespace_in_the_wrong_case_suggests_the_right_one(root: Path) -> None:
    assert "did you mean users/alice" in error_line("ls", "--vault", str(root), "Users/Alice")


# -- 9. said once, in one place ------------------------------------------------------------------


def test_a_held_credential_is_warned_about_once(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    (root / "memories/users/alice/seat.md").write_text(f"---\ntitle: Seat\n---\ntoken {token}\n")
    counts = []
    for args in (
        ["add", "-n", "notes", "first"],
        ["add", "-n", "notes", "second"],
        ["mv", "notes/second.md", "notes/third.md"],
    ):
        caplog.clear()
        run(*args, "--vault", str(root))
        counts.append(sum("not committing" in r.getMessage() for r in caplog.records if r.levelname == "WARNING"))
    assert counts == [1, 0, 0]
    assert "credential" in run("doctor", "--vault", str(root), code=1)  # still listed where one looks


def test_watch_sync_without_a_remote_is_an_error_at_once(root: Path) -> None:
    line = error_line("watch", "--vault", str(root), "--sync", "5")
    assert "no remote named 'origin'" in line and "git remote add" in line
    with memfs.Vault.open(root) as vault, pytest.raises(memfs.SyncError, match="no remote named 'backup'"):
        vault.watch(sync_every=5, remote="backup")


# -- 10. long operations: a summary by default, the list on request, quiet for scripts -----------


def many_notes(folder: Path, count: int) -> None:
    folder.mkdir()
    for i in range(count):
        (folder / f"note-{i:03}.md").write_text(f"Note number {i} about topic {i}.\n")


@pytest.mark.parametrize("count", [12, 25])
def test_import_and_accept_summarise_list_on_request_and_keep_quiet(root: Path, tmp_path: Path, count: int) -> None:
    many_notes(tmp_path / "notes", count)
    out = run("import", "--vault", str(root), "-n", "imported", str(tmp_path / "notes"))
    assert out.count(" -> ") == 10 and f"… and {count - 10} more memories (--list shows every one)" in out
    assert f"proposed {count} memories" in out
    out = run("accept", "--vault", str(root), "--all", "--list")
    assert out.count("accepted prop_") == count and f"accepted {count} in one commit" in out
    many_notes(tmp_path / "more", count)
    assert run("import", "--vault", str(root), "-n", "more", str(tmp_path / "more"), "--quiet") == ""
    out = run("review", "--vault", str(root), "--no-diff")
    assert out.count("proposed by") == 10 and f"… and {count - 10} more proposals" in out
    assert run("review", "--vault", str(root), "--no-diff", "--list").count("proposed by") == count
    assert run("accept", "--vault", str(root), "--all", "-q") == ""


def test_quiet_commands_print_nothing(root: Path, tmp_path: Path) -> None:
    assert run("reindex", "--vault", str(root), "--full", "--quiet") == ""
    assert run("export", "--vault", str(root), str(tmp_path / "x.jsonl"), "--quiet") == ""
    assert (tmp_path / "x.jsonl").read_text().count("\n") == 2


# -- 11. JSON for doctor and show; ls and search agree on when a memory changed -------------------


def test_doctor_and_show_print_json(root: Path) -> None:
    findings = json.loads(run("doctor", "--vault", str(root), "--json"))
    assert findings and {"severity", "check", "message"} == set(findings[0])
    shown = json.loads(run("show", "--vault", str(root), "users/alice/seat.md", "--json"))
    assert shown["title"] == "Seat" and shown["body"] == "Alice likes window seats.\n"
    assert shown["front_matter"]["id"] == shown["id"] and shown["namespace"] == "users/alice"
    assert shown["text"] == (root / "memories/users/alice/seat.md").read_text()
    (root / "memories/users/alice/broken.md").write_text("---\ntitle: [x\n---\n")
    assert json.loads(run("doctor", "--vault", str(root), "--json", code=1))


@pytest.mark.parametrize("text", ["# Typed by hand\nkumquat\n", "kumquat, no heading at all\n"])
def test_ls_and_search_agree_on_the_time_of_a_file_without_front_matter(root: Path, text: str) -> None:
    path = root / "memories/users/alice/by-hand.md"
    path.write_text(text)
    os.utime(path, (1_700_000_000, 1_700_000_000))
    listed = {m["path"]: m["updated"] for m in json.loads(run("ls", "--vault", str(root), "--json"))}
    found = json.loads(run("search", "--vault", str(root), "kumquat", "--json"))
    assert listed["memories/users/alice/by-hand.md"] == found[0]["updated"] == "2023-11-14T22:13:20Z"
    assert "2023-11-14" in run("ls", "--vault", str(root))


# -- 12. edit in $EDITOR, shell completion, ls on a narrow terminal -------------------------------


def editor(tmp_path: Path, old: str, new: str) -> str:
    """An editor command (a real program) that replaces ``old`` by ``new`` in the file it is given."""
    script = tmp_path / "editor.py"
    script.write_text(
        f"import sys, pathlib\np = pathlib.Path(sys.argv[1])\np.write_text(p.read_text().replace({old!r}, {new!r}))\n"
    )
    return f"{sys.executable} {script}"


def test_edit_opens_the_memory_and_commits_it_as_the_person(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(root, "config", "user.name", "Pat")
    git(root, "config", "user.email", "pat@example.com")
    monkeypatch.setenv("EDITOR", editor(tmp_path, "window", "aisle"))
    monkeypatch.delenv("VISUAL", raising=False)
    assert "edited users/alice/seat.md, committed as Pat" in run("edit", "--vault", str(root), "users/alice/seat.md")
    text = (root / "memories/users/alice/seat.md").read_text()
    assert "Alice likes aisle seats." in text
    assert git(root, "log", "-1", "--format=%an|%s") == "Pat|memory: update users/alice/seat.md\n"
    assert git(root, "status", "--porcelain") == ""
    memory_id = json.loads(run("show", "--vault", str(root), "users/alice/seat.md", "--json"))["id"]
    monkeypatch.setenv("EDITOR", editor(tmp_path, "aisle", "middle"))
    run("edit", "--vault", str(root), memory_id)  # by id too
    assert "middle seats" in (root / "memories/users/alice/seat.md").read_text()


@pytest.mark.parametrize(("old", "new", "says"), [
    ("title: Seat", "title: [Seat", "front matter"),
    ("Alice likes", "token ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 Alice likes", "credential"),
])  # fmt: skip
def test_an_edit_memfs_refuses_changes_nothing_and_keeps_the_text(
    root: Path, tmp_path: Path, old: str, new: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = (root / "memories/users/alice/seat.md").read_bytes()
    monkeypatch.setenv("EDITOR", editor(tmp_path, old, new))
    line = error_line("edit", "--vault", str(root), "users/alice/seat.md")
    assert says in line and "unchanged" in line
    kept = Path(line.split("kept in ")[1].split(" (fix")[0])
    assert new in kept.read_text()  # what was typed is not lost
    assert (root / "memories/users/alice/seat.md").read_bytes() == before
    monkeypatch.setenv("EDITOR", "true")  # saved nothing
    assert "no change" in run("edit", "--vault", str(root), "users/alice/seat.md")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_complete_commands(shell: str) -> None:
    assert "_MEMFS_COMPLETE" in run("completion", shell)
    done = CliRunner().invoke(
        cli,
        [],
        prog_name="memfs",
        env={
            "_MEMFS_COMPLETE": f"{shell}_complete",
            "COMP_WORDS": "memfs sea",
            "COMP_CWORD": "sea" if shell == "fish" else "1",
        },  # fish passes the word, the others its place
    )
    assert "search" in done.output and "export" not in done.output


@pytest.mark.parametrize("columns", [40, 60])
def test_ls_fits_a_narrow_terminal_without_cutting_paths(root: Path, columns: int) -> None:
    run(
        "add",
        "--vault",
        str(root),
        "-n",
        "users/alice",
        "--title",
        "A rather long title for a narrow screen",
        "--tag",
        "travel",
        "--tag",
        "flights",
        "Alice flies to Lisbon every spring for work.",
    )
    lines = re.sub(r"\x1b\[[0-9;]*m", "", on_a_terminal("ls", "--vault", str(root), columns=columns)).splitlines()
    assert "users/alice/a-rather-long-title-for-a-narrow-screen.md" in lines  # a path whole, on its own line
    assert any("travel, flights" in line for line in lines)
    assert all(len(line) <= columns for line in lines if not line.startswith("users/"))


@pytest.mark.parametrize("fmt", ["jsonl", "claude-md"])
def test_exporting_a_namespace_that_does_not_exist_is_an_error(root: Path, fmt: str) -> None:
    line = error_line("export", "--vault", str(root), "-n", "users/carol", "--format", fmt, "-")
    assert "no namespace 'users/carol'" in line


def test_watch_prints_each_problem_once(root: Path, tmp_path: Path) -> None:
    out, err = tmp_path / "out", tmp_path / "err"
    env = {**os.environ, "PYTHONPATH": str(Path(memfs.__file__).parent.parent)}
    command = [sys.executable, "-c", "from memfs.cli import main; main()", "watch", "--vault", str(root),
               "--commit-delay", "0.2"]  # fmt: skip
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env)
        try:
            wait_for(lambda: "watching" in out.read_text())
            (root / "memories/users/alice/broken.md").write_text("---\ntitle: [x\n---\nbody\n")
            wait_for(lambda: "broken.md" in out.read_text())
            (root / "memories/users/alice/fine.md").write_text("A later edit, reported after the problem.\n")
            wait_for(lambda: "committed" in out.read_text() and "fine.md" in out.read_text())
            (root / "memories/users/alice/keys.md").write_text("The deploy token is ghp_" + "a1B2" * 9 + "\n")
            wait_for(lambda: "keys.md" in out.read_text())
        finally:
            proc.send_signal(signal.SIGTERM)  # stops it cleanly; SIGINT may be ignored where the suite runs
            proc.wait(timeout=60)
    said = out.read_text() + err.read_text()
    assert said.count("not valid YAML") == 1, said  # the report's problem line, and no log line beside it
    # a held edit too, whichever module holds it back: one report line, no log line
    assert said.count("held      memories/users/alice/keys.md") == 1 and "not committing" not in said, said


@pytest.mark.parametrize("args", [["changes", "--since", "yesterday", "-n", "5"], ["prune", "-n", "users/carol"]])
def test_changes_and_prune_refuse_a_namespace_that_is_not_there(root: Path, args: list[str]) -> None:
    assert "no namespace" in error_line(*args, "--vault", str(root))


def test_a_mem0_record_with_only_updated_at_is_not_created_after_it(tmp_path: Path) -> None:
    source = tmp_path / "mem0.jsonl"
    source.write_text(json.dumps({"id": "z", "memory": "Prefers trains", "updated_at": "2024-05-06T07:08:09Z"}) + "\n")
    run("init", str(tmp_path / "v"))
    run("import", "--vault", str(tmp_path / "v"), "-n", "me", str(source), "--format", "mem0", "--accept")
    with memfs.Vault.open(tmp_path / "v", commit_edits=False) as vault:
        memory = vault.memories("me").list()[0]
    assert memory.created == memory.updated == "2024-05-06T07:08:09Z"


@pytest.mark.parametrize(
    "index",
    [
        "* [User role](./user_role.md)\n* [Testing](feedback_testing.md#why)\n",
        "# Index\n\n1. [User role](user_role.md) - role\n2. [Testing](<feedback_testing.md>) - tests\n",
    ],
)
def test_other_index_layouts_are_the_index_too(tmp_path: Path, index: str) -> None:
    claude_folder(tmp_path / "cc")
    (tmp_path / "cc/MEMORY.md").write_text(index)
    run("init", str(tmp_path / "v"))
    out = run("import", "--vault", str(tmp_path / "v"), "-n", "me", str(tmp_path / "cc"), "--accept")
    assert "skipped MEMORY.md" in out and not (tmp_path / "v/memories/me/MEMORY.md").exists()


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_watch_stops_cleanly_on_ctrl_c_or_sigterm_even_started_in_the_background(root: Path, tmp_path: Path,
                                                                                  number: int) -> None:  # fmt: skip
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(Path(memfs.__file__).parent.parent)}
    command = [sys.executable, "-c", "from memfs.cli import main; main()", "watch", "--vault", str(root)]

    def as_a_background_job() -> None:  # what `cmd &` does in a script: SIGINT ignored
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    with out.open("wb") as stdout:
        proc = subprocess.Popen(command, stdout=stdout, stderr=subprocess.DEVNULL, env=env,
                                preexec_fn=as_a_background_job)  # fmt: skip
        try:
            wait_for(lambda: "watching" in out.read_text())
            proc.send_signal(number)
            assert proc.wait(timeout=60) == 0
        finally:
            proc.kill()
