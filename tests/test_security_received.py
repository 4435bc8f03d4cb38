"""A vault received from someone else runs none of the programs its repository names.

tests/received.py plants every program git can be made to run (hooks in `.git/hooks` or a
`core.hooksPath`, `core.fsmonitor`, filters named in `.git/info/attributes` and `.gitattributes`,
`diff.external`, textconv, diff and merge drivers, pager, editor, gpg, credential helper,
`core.sshCommand`, upload/receive-pack and the remote's own hooks, some of it pulled in through
`include.path`). Plain git runs them (the first test shows the plant works); memfs, through the
library, the CLI and the watcher, runs none. git's ownership check (`safe.directory`) is kept.
The planted search index (a pickle in `.memfs/index`) is covered by tests/test_index_safety.py.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import wait_for
from received import EXPECTED_BY_PLAIN_GIT, markers, plant

import memfs
from memfs.cli import cli
from memfs.gitenv import ConfigEntry, check_git_version, neutralising_config

PERSON = "Pat Person <pat@example.com>"
TOKEN = "tok-3e1f9a7c-planted"


def _git(root: Path, *args: str, input: bytes | None = None, check: bool = True) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "p",
           "GIT_COMMITTER_EMAIL": "p@x"}  # fmt: skip
    proc = subprocess.run(["git", *args], cwd=root, env=env, input=input, capture_output=True, check=False)
    assert proc.returncode == 0 or not check, proc.stderr.decode()
    return proc.stdout.decode()


def build(root: Path) -> None:
    """The sender's vault: memories in two namespaces and a session."""
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        alice = vault.memories("users/alice")
        alice.add("Alice prefers window seats.", title="Seats", path="seats.md")
        alice.add(f"Alice's old token is {TOKEN}.", title="Token", path="token.md")
        vault.memories("projects/atlas").add("Atlas uses PostgreSQL.", title="Database", path="db.md")
        vault.session("chat-1").append([{"role": "user", "content": "hello there"}])


def edit_by_hand(root: Path) -> None:
    """A person's edits waiting to be committed, so opening compares files (and git would filter them)."""
    with (root / "memories/users/alice/seats.md").open("a") as f:
        f.write("\nAlso: extra legroom.\n")
    with (root / "memories/projects/atlas/db.md").open("a") as f:
        f.write("\nVersion 16.\n")


@pytest.fixture(params=[False, True], ids=["git-hooks", "hooks-path"])
def received(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Path, Path]]:
    root = tmp_path / "sender" / "vault"
    build(root)
    plant(root, tmp_path / "markers", hooks_path=request.param)
    edit_by_hand(root)
    yield root, tmp_path / "markers"


@pytest.mark.slow
def test_plain_git_runs_what_was_planted(received: tuple[Path, Path]) -> None:
    root, ran = received  # some planted programs make git fail too: only what ran counts here
    session = next((root / "sessions").rglob("*.md"))
    session.write_text(session.read_text() + "\n")
    _git(root, "status", "--", "memories/users", "sessions", check=False)
    _git(root, "add", "-A", "--", "memories/users", "sessions", check=False)
    _git(root, "status", "--", "memories/projects", check=False)  # alone: the process filter fails git
    empty_tree = _git(root, "hash-object", "-t", "tree", "/dev/null").strip()
    _git(root, "diff", empty_tree, "HEAD", "--", ".gitignore", check=False)  # diff.external
    _git(root, "diff", "HEAD", "--", "memories/users", check=False)  # the diff driver's command
    _git(root, "diff", "--no-ext-diff", "HEAD", "--", "memories/users", check=False)  # its textconv
    _git(root, "log", "-1", check=False)
    _git(root, "update-ref", "refs/heads/other", "HEAD", check=False)
    _git(root, "fetch", "origin", check=False)
    _git(root, "push", "origin", "HEAD:refs/heads/other", check=False)
    assert set(EXPECTED_BY_PLAIN_GIT) <= set(markers(ran))


@pytest.mark.slow
def test_the_library_runs_nothing_a_received_vault_planted(received: tuple[Path, Path]) -> None:
    root, ran = received
    with memfs.Vault.open(root, person=PERSON, durable=False) as vault:  # commits the edits by hand
        assert vault.log()[0].author.name == "Pat Person"
        alice = vault.memories("users/alice")
        assert [m.path for m in alice.list()]
        assert vault.search("legroom")[0].path == "memories/users/alice/seats.md"
        assert b"window seats" in vault.show("memories/users/alice/seats.md", "HEAD~1")
        assert vault.log("memories/users/alice/seats.md")
        assert "legroom" in vault.diff(None, "HEAD~1")
        assert "legroom" in vault.diff("memories/users/alice/seats.md", "HEAD~1", "HEAD")
        memory = alice.add("Alice likes tea.", title="Tea")
        alice.update(memory.id, body="Alice likes green tea.\n")
        vault.memories("projects/atlas").add("Atlas ships in May.", title="Ship")
        vault.session("chat-1").append([{"role": "assistant", "content": "hi"}])
        assert vault.undo(author="memfs agent").subject
        (root / "memories/users/alice/seats.md").write_text("---\ntitle: Seats\n---\nAisle now.\n")
        assert vault.outside_edits() and vault.commit("by hand")
        assert all(f.severity != "error" for f in vault.doctor())
        head = vault.history.head()
        watcher = vault.watch(index_delay=0.05, commit_delay=0.2)
        try:
            (root / "memories/projects/atlas/db.md").write_text("---\ntitle: Database\n---\nPostgreSQL 17.\n")
            db = "memories/projects/atlas/db.md"
            wait_for(lambda: vault.history.head() != head and not vault.history.changed([db]))
        finally:
            watcher.stop()
        assert vault.search("postgresql")[0].path == "memories/projects/atlas/db.md"
        assert vault.sync().pushed  # fetches from and pushes to origin
        report = vault.purge(text=TOKEN, rewrite_remotes=True)  # fetches from and pushes to origin
        assert report.changed and report.remotes[0].rewritten, report
    # The remote is a folder here, a repository of its own: git runs its hooks on a push into it
    # (docs/security.md says so). Nothing of the received repository itself runs.
    assert [m for m in markers(ran) if not m.startswith("remote-hook-")] == []


@pytest.mark.slow
def test_the_cli_runs_nothing_a_received_vault_planted(received: tuple[Path, Path]) -> None:
    root, ran = received

    def memfs_(*args: str) -> str:
        result = CliRunner().invoke(cli, [*args, "--vault", str(root)], env={"MEMFS_AUTHOR": PERSON})
        assert result.exit_code == 0, (args, result.output)
        return result.output

    def state() -> tuple[str | None, list[str]]:  # read through memfs: plain git would run the plant
        with memfs.Vault.open(root, commit_edits=False) as vault:
            return vault.history.head(), vault.history.status()

    head, status = state()
    assert status
    for command in (["ls"], ["search", "legroom"], ["show", "users/alice/seats.md"], ["log"],
                    ["log", "users/alice/seats.md"], ["diff", "HEAD~1"], ["sessions"], ["session", "chat-1"],
                    ["doctor"], ["search", "--messages", "hello"]):  # fmt: skip
        memfs_(*command)
    assert state() == (head, status), "a read-only command committed"
    memfs_("commit", "-m", "my edits")
    memfs_("add", "-n", "users/alice", "--title", "Pen", "Alice writes with a fountain pen.")
    memfs_("mv", "users/alice/pen.md", "fountain-pen.md")
    memfs_("undo", "--by", "Pat Person")
    memfs_("rm", "users/alice/token.md")
    memfs_("restore", "users/alice/token.md", "--to", "HEAD~1")
    memfs_("reindex")
    memfs_("purge", "--dry-run", "--text", TOKEN)
    memfs_("conflicts")
    assert state()[0] != head
    assert markers(ran) == [], markers(ran)
    memfs_("sync")  # pushes into origin, a repository of its own: only its hooks may run
    assert [m for m in markers(ran) if not m.startswith("remote-hook-")] == []


@pytest.mark.slow
def test_what_is_planted_while_a_vault_is_open_runs_nothing_either(tmp_path: Path) -> None:
    """The settings are worked out again when a config file changes (here: a new include and drivers)."""
    root = tmp_path / "sender" / "vault"
    build(root)
    with memfs.Vault.open(root, person=PERSON, durable=False) as vault:
        alice = vault.memories("users/alice")
        alice.add("Before the plant.", title="Before")
        plant(root, tmp_path / "markers")
        edit_by_hand(root)
        assert vault.commit("by hand")
        alice.add("After the plant.", title="After")
        assert "legroom" in vault.diff(None, "HEAD~2")
    assert markers(tmp_path / "markers") == []


def test_settings_reach_remotes_through_the_persons_config_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repository's credential helper and ssh command are dropped; the person's global ones still work."""
    ran = tmp_path / "markers"
    ran.mkdir()
    person_helper = tmp_path / "person-helper.sh"
    person_helper.write_text(f"#!/bin/sh\n: > {ran}/person-helper\necho username=pat\necho password=secret\n")
    person_ssh = tmp_path / "person-ssh.sh"
    person_ssh.write_text(f"#!/bin/sh\n: > {ran}/person-ssh\nexit 1\n")
    for script in (person_helper, person_ssh):
        script.chmod(0o755)
    global_config = Path(os.environ["GIT_CONFIG_GLOBAL"])
    global_config.write_text(f"[credential]\n\thelper = {person_helper}\n[core]\n\tsshCommand = {person_ssh}\n")
    root = tmp_path / "vault"
    with memfs.Vault.open(root, create=True, durable=False):
        pass
    planted = (("credential.helper", "repo-helper"), ("credential.https://example.com.helper", "repo-url-helper"),
               ("core.sshCommand", "repo-ssh"))  # fmt: skip
    for key, name in planted:
        script = tmp_path / f"{name}.sh"
        script.write_text(f"#!/bin/sh\n: > {ran}/{name}\n")
        script.chmod(0o755)
        _git(root, "config", "--add", key, str(script))
    with memfs.Vault.open(root, durable=False) as vault:
        answer = vault.history.plumbing("credential", "fill", input="protocol=https\nhost=example.com\n\n")
        assert "password=secret" in answer
        vault.history.plumbing("ls-remote", "ssh://git@example.invalid/x.git", check=False)
    assert sorted(p.name for p in ran.iterdir()) == ["person-helper", "person-ssh"]


def test_a_received_protocol_policy_cannot_allow_ext_commands() -> None:
    def entry(scope: str, key: str, value: str) -> ConfigEntry:
        return ConfigEntry(scope, "file:x", key, value)

    settings = dict(neutralising_config([entry("local", "protocol.allow", "always"),
                                         entry("local", "protocol.ext.allow", "always")], {}))  # fmt: skip
    assert settings["protocol.ext.allow"] == "never"
    assert settings["protocol.allow"] == "user"
    kept = dict(neutralising_config([entry("global", "protocol.ext.allow", "always"),
                                     entry("local", "protocol.ext.allow", "always")], {}))  # fmt: skip
    assert kept["protocol.ext.allow"] == "always"  # the person's own choice


def test_an_ext_url_from_a_received_config_runs_nothing(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    root = tmp_path / "vault"
    with memfs.Vault.open(root, create=True, durable=False):
        pass
    _git(root, "config", "protocol.ext.allow", "always")
    _git(root, "config", "protocol.allow", "always")
    _git(root, "config", "remote.evil.url", f"ext::sh -c touch% {ran}")
    with memfs.Vault.open(root, durable=False) as vault:
        vault.history.plumbing("fetch", "evil", check=False)
    _git(root, "fetch", "evil", check=False)  # plain git obeys the repository
    assert ran.exists()
    ran.unlink()
    with memfs.Vault.open(root, durable=False) as vault:
        vault.history.plumbing("ls-remote", "evil", check=False)
    assert not ran.exists()


# -- git's ownership check -----------------------------------------------------------


def test_a_repository_git_would_call_another_users_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git's own test switch makes it treat the repository as another user's; safe.directory still counts."""
    root = tmp_path / "vault"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.memories("users/alice").add("Alice likes tea.", title="Tea")
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    with pytest.raises(memfs.UnsafeRepositoryError, match="safe.directory") as caught:
        memfs.Vault.open(root)
    assert Path(caught.value.path).resolve() == root.resolve()
    result = CliRunner().invoke(cli, ["ls", "--vault", str(root)])
    assert result.exit_code == 1 and "git config --global --add safe.directory" in result.output
    _git(tmp_path, "config", "--global", "--add", "safe.directory", str(root.resolve()))
    with memfs.Vault.open(root) as vault:
        assert vault.search("tea")


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder another user owns needs root (chown)")
def test_a_vault_another_user_owns_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.memories("users/alice").add("Alice likes tea.", title="Tea")
    for here, dirs, files in os.walk(root):
        for name in [here, *(os.path.join(here, n) for n in dirs + files)]:
            os.lchown(name, 65534, 65534)
    with pytest.raises(memfs.UnsafeRepositoryError, match="belongs to another user"):
        memfs.Vault.open(root)
    _git(tmp_path, "config", "--global", "--add", "safe.directory", str(root.resolve()))
    with memfs.Vault.open(root, commit_edits=False) as vault:
        assert vault.search("tea")


def test_a_git_too_old_to_take_the_settings_is_refused() -> None:
    check_git_version((2, 31, 0))
    check_git_version((3, 0))
    with pytest.raises(memfs.HistoryError, match="needs git 2.31 or newer .found 2.30.9."):
        check_git_version((2, 30, 9))
