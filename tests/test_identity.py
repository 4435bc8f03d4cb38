"""Who a commit is by: the person's git identity read per commit, the CLI as the person, tools as the agent."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import memfs
from memfs.cli import cli

AGENT = memfs.Identity("memfs agent", "agent@memfs.invalid")
PLACEHOLDER = memfs.Identity("person", "person@memfs.invalid")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def memfs_cli(*args: str, env: dict[str, str] | None = None, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args), env=env)
    assert result.exit_code == code, result.output
    return result.output


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "v"
    memfs_cli("init", str(path))
    return path


def head_author(root: Path) -> str:
    return git(root, "log", "-1", "--format=%an <%ae>").strip()


def global_config(text: str) -> None:
    Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text(text)


def test_cli_add_commits_as_the_repository_identity(root: Path) -> None:
    git(root, "config", "user.name", "Repo Person")
    git(root, "config", "user.email", "repo@example.com")
    memfs_cli("add", "--vault", str(root), "-n", "notes", "typed by a person")
    assert head_author(root) == "Repo Person <repo@example.com>"


def test_cli_falls_back_to_the_global_identity(root: Path) -> None:
    global_config("[user]\n\tname = Global Person\n\temail = global@example.com\n")
    memfs_cli("add", "--vault", str(root), "-n", "notes", "typed by a person")
    assert head_author(root) == "Global Person <global@example.com>"


def test_cli_without_any_git_identity_commits_as_a_placeholder_and_writes_no_config(root: Path) -> None:
    memfs_cli("add", "--vault", str(root), "-n", "notes", "typed by a person")
    assert head_author(root) == str(PLACEHOLDER)
    assert not Path(os.environ["GIT_CONFIG_GLOBAL"]).exists()
    assert "[user]" not in (root / ".git" / "config").read_text()


def test_author_option_beats_the_environment_which_beats_git(root: Path) -> None:
    git(root, "config", "user.name", "Repo Person")
    git(root, "config", "user.email", "repo@example.com")
    env = {"MEMFS_AUTHOR": "Env Person <env@example.com>"}
    memfs_cli("add", "--vault", str(root), "-n", "notes", "--title", "one", "from env", env=env)
    assert head_author(root) == "Env Person <env@example.com>"
    memfs_cli("add", "--vault", str(root), "-n", "notes", "--title", "two", "--author", "Ann <ann@example.com>",
              "from the option", env=env)  # fmt: skip
    assert head_author(root) == "Ann <ann@example.com>"
    memfs_cli("add", "--vault", str(root), "-n", "notes", "--title", "three", "empty env", env={"MEMFS_AUTHOR": ""})
    assert head_author(root) == "Repo Person <repo@example.com>"


def test_every_write_command_takes_author(root: Path) -> None:
    vault_args = ["--vault", str(root)]

    def by(*args: str, who: str) -> None:
        memfs_cli(*args, *vault_args, "--author", f"{who} <{who.lower()}@example.com>")
        assert head_author(root) == f"{who} <{who.lower()}@example.com>", args

    by("add", "-n", "notes", "--title", "doc", "v1", who="Adder")
    first = git(root, "rev-parse", "HEAD").strip()
    by("mv", "notes/doc.md", "moved.md", who="Mover")
    by("rm", "notes/moved.md", who="Remover")
    by("restore", "notes/doc.md", "--to", first, who="Restorer")
    by("undo", "--by", "Restorer", who="Undoer")
    (root / "memories/notes").mkdir(exist_ok=True)
    (root / "memories/notes/by-hand.md").write_text("typed in an editor\n")
    by("commit", who="Committer")
    (root / "memories/notes/by-hand.md").write_text("typed in an editor, again\n")
    by("reindex", who="Reindexer")
    new = root.parent / "other"
    memfs_cli("init", str(new), "--author", "Founder <founder@example.com>")
    assert head_author(new) == "Founder <founder@example.com>"


@pytest.mark.parametrize("bad", ["<>", "Name <a@b> extra <c@d>", "Ann <ann@example.com", " <x@y>"])
def test_a_malformed_author_is_a_one_line_error(root: Path, bad: str) -> None:
    before = git(root, "rev-parse", "HEAD")
    result = CliRunner().invoke(cli, ["add", "--vault", str(root), "-n", "notes", "x", "--author", bad])
    assert result.exit_code == 2, result.output
    assert "--author" in result.output and "Name <email>" in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert git(root, "rev-parse", "HEAD") == before


def test_git_config_changed_after_open_is_used_by_the_next_person_commit(root: Path) -> None:
    with memfs.Vault.open(root) as vault:
        assert vault.person == PLACEHOLDER
        (root / "memories/notes").mkdir()
        (root / "memories/notes/a.md").write_text("first edit\n")
        vault.commit()
        assert vault.log()[0].author == PLACEHOLDER
        git(root, "config", "user.name", "Late Person")
        git(root, "config", "user.email", "late@example.com")
        (root / "memories/notes/a.md").write_text("second edit\n")
        vault.commit()
        assert str(vault.log()[0].author) == "Late Person <late@example.com>"
        assert vault.person == memfs.Identity("Late Person", "late@example.com")


def test_the_watcher_commits_as_the_identity_configured_at_commit_time(root: Path) -> None:
    with memfs.Vault.open(root) as vault:
        watcher = vault.watch(index_delay=0, commit_delay=0)
        try:
            git(root, "config", "user.name", "Watched Person")
            git(root, "config", "user.email", "watched@example.com")
            (root / "memories/notes").mkdir()
            (root / "memories/notes/w.md").write_text("edited while watched\n")
            watcher.note(str(root / "memories/notes/w.md"))
            watcher.flush()
        finally:
            watcher.stop()
        assert str(vault.log()[0].author) == "Watched Person <watched@example.com>"


def test_an_explicit_person_still_wins(root: Path) -> None:
    git(root, "config", "user.name", "Repo Person")
    git(root, "config", "user.email", "repo@example.com")
    with memfs.Vault.open(root, person="Given <given@example.com>") as vault:
        (root / "memories/notes").mkdir()
        (root / "memories/notes/a.md").write_text("edit\n")
        vault.commit()
        assert str(vault.log()[0].author) == "Given <given@example.com>"


def test_library_and_tool_writes_stay_the_agents(root: Path) -> None:
    git(root, "config", "user.name", "Repo Person")
    git(root, "config", "user.email", "repo@example.com")
    with memfs.Vault.open(root) as vault:
        vault.memories("notes").add("written by a program", title="lib")
        assert vault.log()[0].author == AGENT
        memfs.MemoryTools(vault, "notes").run("create", path="/memories/tool.md", file_text="by a tool\n")
        assert vault.log()[0].author == AGENT


def test_a_person_edit_is_committed_as_theirs_before_memfs_deletes_moves_or_restores_the_file(root: Path) -> None:
    with memfs.Vault.open(root, person="Pat <pat@example.com>") as vault:  # long-lived: open saw no edit
        store = vault.memories("notes")
        for name in ("gone", "moved", "restored"):
            store.add("original", title=name)
        first = vault.log()[0].sha
        for name in ("gone", "moved", "restored"):
            path = root / f"memories/notes/{name}.md"
            path.write_text(path.read_text().replace("original", f"{name}: edited by hand"))
        vault.reconcile(commit=False)  # indexed, as a read-only command or the watcher would
        store.delete("gone.md")
        store.move("moved.md", "elsewhere.md")
        vault.restore("memories/notes/restored.md", first)
        log = [(str(r.author.name), r.subject) for r in vault.log(limit=6)]
    assert log == [("memfs agent", "restore: notes/restored.md to " + first[:10]),
                   ("Pat", "edit: memories/notes/restored.md (changed outside memfs)"),
                   ("memfs agent", "memory: move notes/moved.md -> notes/elsewhere.md"),
                   ("Pat", "edit: memories/notes/moved.md (changed outside memfs)"),
                   ("memfs agent", "memory: delete notes/gone.md"),
                   ("Pat", "edit: memories/notes/gone.md (changed outside memfs)")]  # fmt: skip
    assert "gone: edited by hand" in git(root, "show", "HEAD~5:memories/notes/gone.md")
