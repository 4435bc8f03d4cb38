from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memfs.cli import cli

DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def vault_dir(tmp_path: Path, runner: CliRunner) -> Path:
    path = tmp_path / "v"
    assert runner.invoke(cli, ["init", str(path)]).exit_code == 0
    return path


def run(runner: CliRunner, vault_dir: Path, *args: str, code: int = 0, stdin: str | None = None) -> str:
    result = runner.invoke(cli, [*args, "--vault", str(vault_dir)], input=stdin)
    assert result.exit_code == code, result.output
    return result.output


def add(runner: CliRunner, vault_dir: Path, title: str, body: str, *extra: str) -> None:
    run(runner, vault_dir, "add", "--namespace", "users/alice", "--title", title, *extra, body)


def test_add_search_show_ls(runner: CliRunner, vault_dir: Path) -> None:
    add(runner, vault_dir, "Window seats", "Alice prefers window seats.", "--tag", "travel", "--type", "preference")
    out = run(runner, vault_dir, "search", "seat preference")
    assert "Window seats" in out and "memories/users/alice/window-seats.md" in out
    hits = json.loads(run(runner, vault_dir, "search", "seat", "--json"))
    assert hits[0]["title"] == "Window seats" and hits[0]["snippet"]
    assert "Alice prefers window seats." in run(runner, vault_dir, "show", "users/alice/window-seats.md")
    assert "Alice prefers" in run(runner, vault_dir, "show", hits[0]["id"])
    listed = json.loads(run(runner, vault_dir, "ls", "--json"))
    assert [m["path"] for m in listed] == ["memories/users/alice/window-seats.md"]
    assert "window-seats.md" in run(runner, vault_dir, "ls", "users/alice")
    assert json.loads(run(runner, vault_dir, "ls", "--json", "--type", "fact")) == []


def test_add_if_similar(runner: CliRunner, vault_dir: Path) -> None:
    add(runner, vault_dir, "Seats", "I prefer window seats.")
    out = run(runner, vault_dir, "add", "-n", "users/alice", "--if-similar", "update",
              "I really prefer window seats on flights.")  # fmt: skip
    assert out.startswith("updated memories/users/alice/seats.md") and "already said much the same" in out
    assert "on flights" in (vault_dir / "memories/users/alice/seats.md").read_text()
    out = run(runner, vault_dir, "add", "-n", "users/alice", "--if-similar", "raise", "I prefer window seats.",
              code=1)  # fmt: skip
    assert "Error: users/alice/seats.md already says this ('Seats'); update that memory instead" in out
    out = run(runner, vault_dir, "add", "-n", "users/alice", "--if-similar", "keep", "I prefer aisle seats.")
    assert out.startswith("added memories/users/alice/")
    assert "'merge' is not one of" in run(runner, vault_dir, "add", "-n", "users/alice", "--if-similar", "merge", "x",
                                   code=2)  # fmt: skip
    assert len(list((vault_dir / "memories/users/alice").glob("*.md"))) == 2


def test_add_reads_stdin(runner: CliRunner, vault_dir: Path) -> None:
    run(runner, vault_dir, "add", "--namespace", "notes", "--title", "From stdin", stdin="piped text\n")
    assert "piped text" in run(runner, vault_dir, "show", "notes/from-stdin.md")


def test_log_diff_restore(runner: CliRunner, vault_dir: Path) -> None:
    add(runner, vault_dir, "Doc", "first version")
    path = vault_dir / "memories/users/alice/doc.md"
    first = json.loads(run(runner, vault_dir, "log", "users/alice/doc.md", "--json"))[0]["sha"]
    path.write_text(path.read_text().replace("first version", "second version"))
    run(runner, vault_dir, "reindex")  # commits the hand edit
    log = json.loads(run(runner, vault_dir, "log", "users/alice/doc.md", "--json"))
    assert [e["subject"].split(":")[0] for e in log] == ["edit", "memory"]
    assert "+second version" in run(runner, vault_dir, "diff", first, "--path", "users/alice/doc.md")
    run(runner, vault_dir, "restore", "users/alice/doc.md", "--to", first)
    assert "first version" in path.read_text()
    assert "restore: users/alice/doc.md" in run(runner, vault_dir, "log")
    assert len(json.loads(run(runner, vault_dir, "log", "--json", "--limit", "2"))) == 2


def test_mv_rm_and_restore_deleted(runner: CliRunner, vault_dir: Path) -> None:
    add(runner, vault_dir, "Old name", "content")
    run(runner, vault_dir, "mv", "users/alice/old-name.md", "new-name.md")
    assert (vault_dir / "memories/users/alice/new-name.md").exists()
    rev = json.loads(run(runner, vault_dir, "log", "--json"))[0]["sha"]
    run(runner, vault_dir, "rm", "users/alice/new-name.md")
    assert not (vault_dir / "memories/users/alice/new-name.md").exists()
    run(runner, vault_dir, "restore", "users/alice/new-name.md", "--to", rev)
    assert (vault_dir / "memories/users/alice/new-name.md").exists()


def test_reindex_full_and_doctor(runner: CliRunner, vault_dir: Path) -> None:
    add(runner, vault_dir, "A", "alpha")
    assert "1 added" in run(runner, vault_dir, "reindex", "--full")
    assert "all current" in run(runner, vault_dir, "doctor")
    (vault_dir / "memories/users/alice/bad.md").write_text("---\n[broken\n---\n")
    out = run(runner, vault_dir, "doctor", code=1)
    assert "bad.md" in out and "error" in out


def test_vault_from_environment(runner: CliRunner, vault_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMFS_VAULT", str(vault_dir))
    result = runner.invoke(cli, ["add", "--namespace", "n", "--title", "Env", "from env"])
    assert result.exit_code == 0, result.output
    assert runner.invoke(cli, ["ls"]).output.count("env.md") == 1


def test_vault_from_current_folder(runner: CliRunner, vault_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(vault_dir)
    assert runner.invoke(cli, ["add", "--namespace", "n", "heron"]).exit_code == 0
    assert "heron" in runner.invoke(cli, ["search", "heron"]).output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "x", "--vault", "/nonexistent/vault"], "not a memfs vault"),
        (["add", "--namespace", "../up", "x"], "namespace"),
        (["add", "--namespace", "n", "--tag", "a,b", "x"], "comma"),
        (["add", "--namespace", "n", ""], "empty"),
        (["show", "users/alice/missing.md"], "no file"),
        (["show", "mem_NOPE"], "no memory with id"),
        (["show", "../../etc/passwd.md"], "'..'"),
        (["show", "users/alice/x.txt"], ".md"),
        (["restore", "users/alice/missing.md", "--to", "nope"], "no revision"),
        (["restore", "users/alice/missing.md", "--to", "HEAD"], "did not exist"),
        (["log", "--limit", "0"], None),
        (["log", "-n", "5"], "--limit 5"),
        (["session", "chat", "-n", "2"], "--limit 2"),
        (["rm", "mem_NOPE"], "no memory with id"),
        (["mv", "users/alice/missing.md", "b.md"], "no memory"),
        (["diff", "nope"], "no revision"),
        (["search", "x", "-k", "0"], None),
    ],
)
def test_errors_are_one_line_without_traceback(runner: CliRunner, vault_dir: Path, args: list[str],
                                               message: str | None) -> None:  # fmt: skip
    if "--vault" not in args:
        args = [*args, "--vault", str(vault_dir)]
    result = runner.invoke(cli, args)
    assert result.exit_code != 0
    assert result.output.strip(), "a failing command says why"  # (CliRunner never prints a traceback itself)
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    if message:
        assert message in result.output
        assert len([line for line in result.output.splitlines() if line.strip()]) == 1, result.output


def test_every_command_has_help_and_is_documented(runner: CliRunner) -> None:
    docs = DOCS.read_text()
    assert isinstance(cli, click.Group)
    for name, command in cli.commands.items():
        assert command.help and command.help.strip(), name
        result = runner.invoke(cli, [name, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output
        assert re.search(rf"^## `memfs {name}\b", docs, re.M), f"docs/cli.md does not document {name}"


def test_undo_and_log_filters(runner: CliRunner, vault_dir: Path) -> None:
    import memfs

    with memfs.Vault.open(vault_dir) as vault:
        tools = memfs.MemoryTools(vault, "users/alice", session="chat-7")
        tools.run("create", path="/memories/a.md", file_text="apple\n")
        tools.run("str_replace", path="/memories/a.md", old_str="apple", new_str="apricot")
    add(runner, vault_dir, "Other", "not in the session")
    session_log = json.loads(run(runner, vault_dir, "log", "--session", "chat-7", "--json"))
    assert [e["trailers"]["Memfs-Tool"] for e in session_log] == ["str_replace", "create"]
    # the CLI's add is the person's who typed it; the two tool writes are the agent's
    assert len(json.loads(run(runner, vault_dir, "log", "--agent", "memfs agent", "--json"))) == 2
    assert json.loads(run(runner, vault_dir, "log", "--session", "nope", "--json")) == []
    assert "undid" in run(runner, vault_dir, "undo", "--session", "chat-7")
    assert "apple" in (vault_dir / "memories/users/alice/a.md").read_text()
    assert "undid" in run(runner, vault_dir, "undo", "--session", "chat-7")
    assert not (vault_dir / "memories/users/alice/a.md").exists()
    assert "no change by session" in run(runner, vault_dir, "undo", "--session", "chat-7", code=1)
    assert run(runner, vault_dir, "undo", code=2)


def test_undo_refuses_when_the_file_changed_since(runner: CliRunner, vault_dir: Path) -> None:
    add(runner, vault_dir, "Doc", "v1")
    path = vault_dir / "memories/users/alice/doc.md"
    path.write_text(path.read_text().replace("v1", "v2 by hand"))
    run(runner, vault_dir, "reindex", "--author", "Bob <bob@example.com>")
    out = run(runner, vault_dir, "undo", "--by", "person", code=1)
    assert "changed after" in out and "restore" in out
    assert "v2 by hand" in path.read_text()


def test_sessions_session_and_message_search(runner: CliRunner, vault_dir: Path) -> None:
    import memfs

    with memfs.Vault.open(vault_dir) as vault:
        chat = vault.session("trip/42", keys={"user_id": "alice"})
        chat.append([{"role": "user", "content": "Book me a ryokan in Kyoto"},
                     {"role": "assistant", "content": "Two options near Gion."}])  # fmt: skip
        vault.session("other").append([{"role": "user", "content": "hello"}])
    listed = json.loads(run(runner, vault_dir, "sessions", "--json"))
    assert {s["session_id"] for s in listed} == {"trip/42", "other"}
    alice = json.loads(run(runner, vault_dir, "sessions", "--json", "--key", "user_id=alice"))
    assert [s["session_id"] for s in alice] == ["trip/42"]
    shown = run(runner, vault_dir, "session", "trip/42")
    assert "ryokan in Kyoto" in shown and "Gion" in shown
    assert "memfs: transcript/1" in run(runner, vault_dir, "session", "trip/42", "--raw")
    assert "Gion" in run(runner, vault_dir, "session", "trip/42", "--limit", "1")
    with memfs.Vault.open(vault_dir) as vault:  # two sessions held on known days, a year apart
        vault.session("may", metadata={"date": "8 May, 2023"}).append([{"role": "user", "content": "lantern festival"}])
        vault.session("june", metadata={"date": "2024-06-01"}).append([{"role": "user", "content": "lantern shop"}])

    def sessions_found(*dates: str) -> list[str]:
        found = json.loads(run(runner, vault_dir, "search", "--messages", "lantern", "--json", *dates))
        return sorted(hit["session_id"] for hit in found)

    assert sessions_found() == ["june", "may"]
    assert sessions_found("--since", "2024-01-01") == ["june"]
    assert sessions_found("--until", "2023-05-08") == ["may"]  # a day: to its end
    assert sessions_found("--since", "2023-05-09", "--until", "2024-05-31") == []
    assert "is after --until" in run(runner, vault_dir, "search", "--messages", "x", "--since", "2024-01-02",
                                     "--until", "2024-01-01", code=2)  # fmt: skip
    hits = json.loads(run(runner, vault_dir, "search", "--messages", "kyoto ryokan", "--json"))
    assert hits[0]["position"] == 1 and hits[0]["item"]["content"] == "Book me a ryokan in Kyoto"
    assert "no matches" in run(runner, vault_dir, "search", "kyoto", "--session", "other")
    assert "no session" in run(runner, vault_dir, "session", "nope", code=1)
    assert run(runner, vault_dir, "sessions", "--key", "novalue", code=2)
