"""One path gate (issue 18, failure 3): no symbolic link inside a vault is ever followed.

With ``memories/users/alice/linkdir -> /elsewhere``, memfs once read a file outside the vault
(``MemoryStore.get``, ``memfs show``), wrote outside it (update, add, move), and a rollback
rewrote the outside file with mode 0644. Here links are planted at every depth (a namespace
folder, a folder inside one, a deeper folder, a file, a link to a file inside the vault, dangling
links) and every entry point is tried through each: the store, the CLI, the tools, restore, undo,
the watcher's commits, crash recovery, and a link swapped in between a check and the open. Each
gets a clear error, no byte outside the vault is read into memfs or written, and a rollback
puts back the old bytes and the old mode.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import UNEXPECTED, wait_for

import memfs
from memfs import _fs
from memfs.cli import cli
from memfs.errors import LinkError, MemfsError
from memfs.tools import MemoryTools

NS = "users/alice"
SECRET = b"---\ntitle: outside\n---\nthe secret outside the vault\n"

# every planted link, as a name inside users/alice (or a namespace that is itself a link)
LINKED_NAMES = ["linkdir/secret.md", "pin.md", "alias.md", "ghost.md", "ghostdir/secret.md", "a/b/secret.md"]
LINKED_NAMESPACES = ["users/carol", "team"]


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder`` (links not followed) with its bytes and mode."""
    found = {}
    for path in sorted(folder.rglob("*")):
        st = path.lstat()
        if stat.S_ISREG(st.st_mode):
            found[path.relative_to(folder).as_posix()] = (path.read_bytes(), stat.S_IMODE(st.st_mode))
    return found


def head_tree(vault: memfs.Vault) -> str:
    return subprocess.run(["git", "ls-tree", "-r", "HEAD"], cwd=vault.root, capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


class Planted:
    """A vault with links planted at every depth, and a folder outside it holding a secret (0600)."""

    def __init__(self, root: Path) -> None:
        self.outside = root / "outside"
        self.outside.mkdir()
        (self.outside / "secret.md").write_bytes(SECRET)
        os.chmod(self.outside / "secret.md", 0o600)
        self.vault = memfs.Vault.open(root / "vault", create=True, durable=False)
        alice, bob = self.vault.memories(NS), self.vault.memories("users/bob")
        alice.add("Alice's own note.", title="real")
        alice.add("A private note.", path="private.md")
        bob.add("Bob's note.", title="bob")
        folder = self.vault.root / "memories" / NS
        (folder / "linkdir").symlink_to(self.outside)
        (folder / "pin.md").symlink_to(self.outside / "secret.md")
        (folder / "alias.md").symlink_to("../bob/bob.md")  # a link to a file inside the vault
        (folder / "ghost.md").symlink_to(self.outside / "none.md")
        (folder / "ghostdir").symlink_to(self.outside / "nodir")
        (folder / "a").mkdir()
        (folder / "a" / "b").symlink_to(self.outside)
        (self.vault.root / "memories/users/carol").symlink_to(self.outside)
        (self.vault.root / "memories/team").symlink_to(self.outside)
        self.head = self.vault.history.head()
        self.before = snapshot(self.outside)

    @property
    def alice(self) -> memfs.MemoryStore:
        return self.vault.memories(NS)

    def unchanged(self) -> None:
        """Nothing outside changed, nothing new was committed, and no link is in git."""
        assert snapshot(self.outside) == self.before
        assert sorted(os.listdir(self.outside)) == ["secret.md"]
        assert self.vault.history.head() == self.head
        tree = head_tree(self.vault)
        assert "120000" not in tree and "secret" not in tree  # no link (git mode 120000), nothing from outside


@pytest.fixture
def planted(tmp_path: Path) -> Any:
    p = Planted(tmp_path)
    yield p
    p.vault.close()


def refused(call: Callable[[], object]) -> MemfsError:
    with pytest.raises(MemfsError) as info:
        call()
    return info.value


# -- the store -------------------------------------------------------------------------------


def test_the_store_refuses_every_planted_link(planted: Planted) -> None:
    alice = planted.alice
    ops: list[tuple[str, Callable[[str], object]]] = [
        ("get", alice.get),
        ("update", lambda n: alice.update(n, body="pwned\n")),
        ("delete", alice.delete),
        ("move away", lambda n: alice.move(n, "moved.md")),
        ("add at", lambda n: alice.add("pwned", path=n.replace("secret", "new"))),
        ("move onto", lambda n: alice.move("real.md", n.replace("secret", "moved"))),
        ("history", alice.history),
    ]
    for name in LINKED_NAMES:
        for what, op in ops:
            if what == "history":  # reads git, never the file: allowed, and shows nothing from outside
                assert op(name) == []
                continue
            error = refused(lambda op=op, name=name: op(name))
            assert isinstance(error, (LinkError, memfs.AlreadyExistsError)), (what, name, error)
            assert "secret outside" not in str(error)
            planted.unchanged()
    for ns in LINKED_NAMESPACES:
        store = planted.vault.memories(ns)
        for op2 in (lambda s=store: s.get("secret.md"), lambda s=store: s.add("pwned", title="x"),
                    lambda s=store: s.update("secret.md", body="x\n"),
                    lambda s=store: s.delete("secret.md")):  # fmt: skip
            assert isinstance(refused(op2), LinkError)
            planted.unchanged()
    assert isinstance(refused(lambda: planted.vault.read_bytes("memories/users/alice/linkdir/secret.md")), LinkError)
    assert [h.path for h in planted.vault.search("secret outside")] == []


def test_a_link_to_a_file_inside_the_vault_is_refused_too(planted: Planted) -> None:
    error = refused(lambda: planted.alice.update("alias.md", body="through the alias\n"))
    assert isinstance(error, LinkError) and "symbolic link" in str(error)
    assert b"through the alias" not in (planted.vault.root / "memories/users/bob/bob.md").read_bytes()
    planted.unchanged()


def test_restore_and_undo_do_not_write_through_a_folder_swapped_for_a_link(planted: Planted) -> None:
    alice = planted.alice
    memory = alice.add("Kept in a folder.", path="gone/x.md")
    revision = alice.history(memory.id)[0].sha
    alice.delete("gone/x.md")
    (planted.vault.root / "memories/users/alice/gone").symlink_to(planted.outside)
    planted.head = planted.vault.history.head()
    assert isinstance(refused(lambda: alice.restore("gone/x.md", revision)), LinkError)
    planted.unchanged()
    os.unlink(planted.vault.root / "memories/users/alice/gone")

    alice.add("Undo me.", path="later/y.md")  # the newest change by the agent
    folder = planted.vault.root / "memories/users/alice/later"
    (planted.outside / "y.md").write_bytes((folder / "y.md").read_bytes())
    planted.before = snapshot(planted.outside)
    os.rename(folder, planted.vault.root / "moved-away")
    folder.symlink_to(planted.outside)
    planted.head = planted.vault.history.head()
    assert isinstance(refused(lambda: planted.vault.undo(author="memfs agent")), (LinkError, memfs.ConflictError))
    assert snapshot(planted.outside) == planted.before
    assert planted.vault.history.head() == planted.head


# -- the tools and the CLI ------------------------------------------------------------------


def test_the_tools_refuse_every_planted_link(planted: Planted) -> None:
    tools = MemoryTools(planted.vault, NS)
    for name in LINKED_NAMES:
        path = f"/memories/{name}"
        for call in ({"command": "view", "path": path},
                     {"command": "create", "path": path.replace("secret", "new"), "file_text": "pwned\n"},
                     {"command": "str_replace", "path": path, "old_str": "secret", "new_str": "pwned"},
                     {"command": "insert", "path": path, "insert_line": 0, "insert_text": "pwned"},
                     {"command": "delete", "path": path},
                     {"command": "rename", "old_path": path, "new_path": "/memories/moved.md"},
                     {"command": "rename", "old_path": "/memories/real.md", "new_path": path.replace("secret", "m")},
                     {"command": "history", "path": path}):  # fmt: skip
            result = tools.call(call)
            assert result.is_error, (call, result.text)
            assert UNEXPECTED not in result.text and "secret outside" not in result.text
            assert str(planted.outside) not in result.text
            planted.unchanged()
    listing = tools.run("view", path="/memories")
    assert "linkdir" not in listing and "pin.md" not in listing and "secret" not in listing


def test_the_cli_refuses_every_planted_link(planted: Planted) -> None:
    planted.vault.close()
    runner = CliRunner()
    for name in [*LINKED_NAMES, "../carol/secret.md", "../../team/secret.md"]:
        label = os.path.normpath(f"{NS}/{name}")
        for args in (["show", label], ["rm", label], ["mv", label, "moved.md"],
                     ["mv", "users/alice/real.md", label.replace("secret", "m")]):  # fmt: skip
            result = runner.invoke(cli, [*args, "--vault", str(planted.vault.root)])
            assert result.exit_code != 0, (args, result.output)
            assert "the secret outside" not in result.output
            assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
            planted.unchanged()


# -- commits of people's edits, the watcher, recovery ------------------------------------------


def test_edits_through_links_are_never_committed(planted: Planted) -> None:
    planted.vault.commit()
    planted.vault.reconcile()
    planted.vault.engine.commit_outside_edits(
        ["memories/users/alice/linkdir/secret.md", "memories/users/alice/pin.md", "memories/team/secret.md"]
    )
    planted.unchanged()


def test_the_watcher_commits_a_person_s_edit_but_never_a_link(planted: Planted) -> None:
    vault = planted.vault
    with vault.watch(index_delay=0.05, commit_delay=0.1):
        (vault.root / "memories/users/alice/linked-later.md").symlink_to(planted.outside / "secret.md")
        (vault.root / "memories/users/alice/real.md").write_text("---\ntitle: real\n---\nEdited by hand.\n")
        wait_for(lambda: vault.history.head() != planted.head)
    tree = head_tree(vault)
    assert "real.md" in tree and "linked-later" not in tree and "120000" not in tree
    assert snapshot(planted.outside) == planted.before


def test_recovery_never_puts_bytes_back_through_a_link(tmp_path: Path) -> None:
    planted = Planted(tmp_path)
    root, head = planted.vault.root, planted.head
    planted.vault.close()
    rel = "memories/users/alice/linkdir/secret.md"  # a journal naming a file that is now behind a link
    journal = [{"base": head}, {"path": rel, "original": base64.b64encode(b"old\n").decode(),
                                "new": hashlib.sha256(SECRET).hexdigest(), "mode": 0o644}]  # fmt: skip
    (root / ".memfs/journal").write_text("".join(json.dumps(r) + "\n" for r in journal))
    with memfs.Vault.open(root, durable=False):
        pass
    assert snapshot(planted.outside) == planted.before


# -- rollbacks keep the mode ---------------------------------------------------------------------


@pytest.mark.parametrize("op", ["update", "delete", "move"])
def test_a_rollback_puts_back_the_old_bytes_and_mode(vault: memfs.Vault, op: str) -> None:
    alice = vault.memories(NS)
    memory = alice.add("Private words.", title="private")
    path = vault.root / memory.path
    os.chmod(path, 0o600)
    before = path.read_bytes()
    head = vault.history.head()
    act = {"update": lambda: alice.update(memory.id, body="new words\n"), "delete": lambda: alice.delete(memory.id),
           "move": lambda: alice.move(memory.id, "elsewhere.md")}[op]  # fmt: skip
    with _fs.faults(_fs.FaultPlan(at=1, only="git")), pytest.raises(OSError):
        act()
    assert path.read_bytes() == before
    assert stat.S_IMODE(path.lstat().st_mode) == 0o600
    assert not (vault.root / "memories/users/alice/elsewhere.md").exists()
    assert vault.history.head() == head


def test_recovery_puts_back_the_old_bytes_and_mode(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        memory = vault.memories(NS).add("Private words.", title="private")
        head = vault.history.head()
    path = root / memory.path
    os.chmod(path, 0o640)
    before = path.read_bytes()
    landed = b"---\ntitle: private\n---\nhalf-done write\n"  # a killed writer's bytes, not committed
    path.write_bytes(landed)
    os.chmod(path, 0o644)
    journal = [{"base": head}, {"path": memory.path, "original": base64.b64encode(before).decode(),
                                "new": hashlib.sha256(landed).hexdigest(), "mode": 0o640}]  # fmt: skip
    (root / ".memfs/journal").write_text("".join(json.dumps(r) + "\n" for r in journal))
    with memfs.Vault.open(root, durable=False) as vault:
        assert vault.history.head() == head
    assert path.read_bytes() == before and stat.S_IMODE(path.lstat().st_mode) == 0o640


# -- a link swapped in between a check and the open ----------------------------------------------


class _SwapAt(list[str]):
    """The fault seam's list of operations seen, swapping a folder for a link at the first ``op``."""

    def __init__(self, op: str, swap: Callable[[], None]) -> None:
        super().__init__()
        self.op, self.swap, self.done = op, swap, False

    def append(self, name: str) -> None:
        if not self.done and name.startswith(self.op):
            self.done = True
            self.swap()
        super().append(name)


@pytest.mark.parametrize("command", ["delete", "str_replace"])
def test_a_folder_swapped_for_a_link_after_the_tools_checked_it_is_refused(tmp_path: Path, command: str) -> None:
    """The tools look for links first; the folder is swapped after that look, before memfs opens it.

    A person's uncommitted edit of the file makes memfs commit it first (a git operation between
    the tools' check and the write): the swap happens there, at the fault seam.
    """
    planted = Planted(tmp_path)
    vault = planted.vault
    vault.memories(NS).add("Notes with a secret word.", path="notes/x.md")
    folder = vault.root / "memories/users/alice/notes"
    (folder / "x.md").write_text("---\ntitle: x\n---\nNotes with a secret word, edited by hand.\n")
    (planted.outside / "x.md").write_bytes(SECRET)
    planted.before = snapshot(planted.outside)

    def swap() -> None:
        os.rename(folder, vault.root / "memories/users/alice/notes-real")
        folder.symlink_to(planted.outside)

    plan = _fs.FaultPlan(at=10**9, only="git")
    plan.seen = _SwapAt("git", swap)
    tools = MemoryTools(vault, NS)
    call = {"command": command, "path": "/memories/notes/x.md"}
    if command == "str_replace":
        call.update(old_str="secret word", new_str="pwned")
    with _fs.faults(plan):
        result = tools.call(call)
    assert plan.seen.done
    assert result.is_error and "symbolic link" in result.text and UNEXPECTED not in result.text
    assert snapshot(planted.outside) == planted.before
    moved = (vault.root / "memories/users/alice/notes-real/x.md").read_text()
    assert "edited by hand" in moved and "pwned" not in moved
    vault.close()


# -- sessions and purge ------------------------------------------------------------------------


def test_a_sessions_folder_that_is_a_link_is_neither_read_nor_written(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    with memfs.Vault.open(tmp_path / "v", create=True, durable=False) as vault:
        vault.session("chat").append([{"role": "user", "content": "hello"}])
        transcript = (vault.root / "sessions/chat.md").read_bytes()
        os.rename(vault.root / "sessions", tmp_path / "sessions-real")
        (outside / "chat.md").write_bytes(transcript)
        (vault.root / "sessions").symlink_to(outside)
        before = snapshot(outside)
        chat = vault.session("chat")
        for call in (lambda: chat.items(), lambda: chat.append([{"role": "user", "content": "pwned"}]),
                     lambda: chat.clear(), lambda: vault.read_bytes("sessions/chat.md")):  # fmt: skip
            assert isinstance(refused(call), LinkError)
        assert vault.search_messages("hello") == []
    result = CliRunner().invoke(cli, ["session", "chat", "--raw", "--vault", str(tmp_path / "v")])
    assert result.exit_code != 0 and "hello" not in result.output
    assert snapshot(outside) == before


def test_purge_leaves_files_behind_links_alone(planted: Planted) -> None:
    planted.alice.add("The token is tok_0123456789abcdef.", title="token")
    (planted.outside / "copy.md").write_text("outside copy of tok_0123456789abcdef\n")
    before = snapshot(planted.outside)
    planted.vault.purge(text="tok_0123456789abcdef")
    assert snapshot(planted.outside) == before
    assert "tok_0123456789abcdef" not in (planted.vault.root / "memories/users/alice/token.md").read_text()
