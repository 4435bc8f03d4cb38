"""The review gate holds on every path and every face: decided on the path written, proposals told apart.

Issue 26, items 7-9: the policy is decided on the path a write changes (the innermost namespace
listed that holds it; both ends of a move), not on the store that writes it; a proposal is a
session's own only when this vault's history says that session proposed it; and every answer a
proposing face gives says the change is only proposed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import add_origin, err, ok

import memfs
from memfs import LongTermMemory, MemoryTools, Scope
from memfs.cli import cli

ALICE = "users/alice"
INBOX_POLICY = '[review.namespaces."users/alice/inbox"]\npropose = ["agents"]\n'


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def settle(vault: memfs.Vault, text: str) -> None:
    """Write memfs.toml and commit it (as a person would with git)."""
    (vault.root / "memfs.toml").write_text(text)
    git(vault.root, "add", "memfs.toml")
    git(vault.root, "-c", "user.name=Pat", "-c", "user.email=pat@example.com", "commit", "-qm", "review policy")


def inbox(vault: memfs.Vault) -> list[str]:
    folder = vault.root / "memories/users/alice/inbox"
    return sorted(p.name for p in folder.rglob("*.md")) if folder.exists() else []


# -- item 7: the gate is decided on the path written ------------------------------------------------


@pytest.mark.parametrize("policy_ns", ["users/alice/inbox", "users/alice/inbox/deep"])
def test_tools_writing_below_their_store_follow_the_innermost_policy(vault: memfs.Vault, policy_ns: str) -> None:
    """Tools scoped to users/alice, a policy on a folder inside it: create, edit and insert there are proposals."""
    settle(vault, f'[review.namespaces."{policy_ns}"]\npropose = ["agents"]\n')
    folder = policy_ns.removeprefix(ALICE + "/")
    tools = MemoryTools(vault, ALICE, session="s1")
    answer = ok(tools, "create", path=f"/memories/{folder}/note.md", file_text="Call the bank on Monday.\n")
    assert "It is a proposal" in answer
    assert not (vault.root / f"memories/{policy_ns}/note.md").exists()
    assert [p.path for p in vault.proposals()] == [f"memories/{policy_ns}/note.md"]
    # outside the folder the store's own (absent) policy holds: written at once
    assert "proposal" not in ok(tools, "create", path="/memories/top.md", file_text="A plain fact.\n")
    assert (vault.root / "memories/users/alice/top.md").exists()


@pytest.mark.parametrize(
    "text", ["Alice prefers window seats on long flights.\n", "On long flights Alice always prefers window seats.\n"]
)
def test_a_proposed_create_names_no_near_duplicate_to_merge_into(vault: memfs.Vault, text: str) -> None:
    """A create that became a proposal wrote no file: no note asks the model to merge it and delete it."""
    vault.memories("users/alice/inbox").add("Alice prefers window seats on long flights, always.", title="Window seats")
    settle(vault, INBOX_POLICY)
    tools = MemoryTools(vault, ALICE, session="s1")

    answer = ok(tools, "create", path="/memories/inbox/flights.md", file_text=text)

    assert "It is a proposal" in answer and "already says" not in answer and "delete" not in answer
    # the same create where it is written at once still names the memory that says the same
    assert "already says much the same" in ok(tools, "create", path="/memories/flights.md", file_text=text)


def test_edits_and_deletes_of_a_file_already_in_the_reviewed_folder_are_proposals(vault: memfs.Vault) -> None:
    vault.memories(ALICE).write_text("inbox/bank.md", "Call the bank.\n", create=True)  # a person's file
    settle(vault, INBOX_POLICY)
    tools = MemoryTools(vault, ALICE, session="s1")
    ok(tools, "view", path="/memories/inbox/bank.md")
    assert "It is a proposal" in ok(
        tools, "str_replace", path="/memories/inbox/bank.md", old_str="bank", new_str="insurer"
    )
    assert "It is a proposal" in ok(
        tools, "insert", path="/memories/inbox/bank.md", insert_line=5, insert_text="Before noon."
    )
    assert "It is a proposal" in ok(tools, "delete", path="/memories/inbox/bank.md")
    assert "Call the bank." in (vault.root / "memories/users/alice/inbox/bank.md").read_text()
    assert {p.action for p in vault.proposals()} == {"write", "delete"}


@pytest.mark.parametrize(
    ("old", "new"),
    [("/memories/draft.md", "/memories/inbox/draft.md"), ("/memories/inbox/draft.md", "/memories/draft.md")],
)
def test_a_move_into_or_out_of_a_reviewed_folder_is_a_proposal(vault: memfs.Vault, old: str, new: str) -> None:
    """Both ends of a move are decided: into the reviewed folder, and out of it."""
    vault.memories(ALICE).write_text(old.removeprefix("/memories/"), "A draft.\n", create=True)
    settle(vault, INBOX_POLICY)
    tools = MemoryTools(vault, ALICE, session="s1")
    assert "It is a proposal" in ok(tools, "rename", old_path=old, new_path=new)
    assert (vault.root / "memories/users/alice" / old.removeprefix("/memories/")).exists()
    assert not (vault.root / "memories/users/alice" / new.removeprefix("/memories/")).exists()
    [proposal] = vault.proposals()
    assert proposal.action == "move"


def test_a_folder_moved_into_a_reviewed_folder_is_one_proposal_group(vault: memfs.Vault) -> None:
    store = vault.memories(ALICE)
    store.write_text("drafts/a.md", "A.\n", create=True)
    store.write_text("drafts/b.md", "B.\n", create=True)
    settle(vault, INBOX_POLICY)
    tools = MemoryTools(vault, ALICE, session="s1")
    assert "It is a proposal" in ok(tools, "rename", old_path="/memories/drafts", new_path="/memories/inbox/drafts")
    assert inbox(vault) == [] and len({p.group for p in vault.proposals()}) == 1 and len(vault.proposals()) == 2
    assert "proposal" not in ok(tools, "delete", path="/memories/drafts/a.md")  # outside the inbox: at once
    assert not (vault.root / "memories/users/alice/drafts/a.md").exists()


def test_the_store_and_the_extractor_decide_on_the_path(vault: memfs.Vault) -> None:
    """The library faces: a store of users/alice, the extractor's writes, a restore, a supersede."""
    settle(
        vault,
        '[review.namespaces."users/alice/inbox"]\npropose = ["agents"]\n'
        '[review.namespaces."users/alice/inbox/open"]\npropose = []\n',
    )
    agent = vault.memories(ALICE, writer="agent", session="s1")
    assert agent.add("An inbox fact.", path="inbox/fact.md").proposal is not None
    assert agent.add("An open fact.", path="inbox/open/fact.md").proposal is None  # the innermost decides
    assert agent.add("A top fact.", path="top.md").proposal is None
    extractor = vault.memories(ALICE, writer="extractor")
    assert extractor.add("Extracted into the inbox.", path="inbox/extracted.md").proposal is not None
    vault.memories(ALICE).add("Alice banks with Acme.", path="inbox/bank.md")  # a person's memory
    assert agent.supersede("inbox/bank.md", body="Alice banks with Zenith.").proposal is not None
    assert agent.restore("inbox/bank.md", "HEAD").proposal is not None
    assert "Acme" in (vault.root / "memories/users/alice/inbox/bank.md").read_text()
    assert agent.proposes(paths=["memories/users/alice/inbox/x.md"])
    assert not agent.proposes(paths=["memories/users/alice/x.md"])
    assert agent.proposes_change("top.md", to="inbox/top.md")
    assert not agent.proposes_change("top.md", to="elsewhere.md")


def test_mcp_and_long_term_memory_tools_follow_the_path(vault: memfs.Vault) -> None:
    """The same gate through LongTermMemory's tools and a proposing-only scope for a sub-folder."""
    settle(vault, INBOX_POLICY)
    manager = LongTermMemory(vault, stores=[ALICE])
    tools = manager.tools(session="s2")
    assert "It is a proposal" in ok(tools, "create", path="/memories/inbox/n.md", file_text="N.\n")
    # a proposing-only grant on the inbox, no policy: a move into it from the writable folder is proposed
    settle(vault, "")
    scoped = MemoryTools(
        vault, [Scope(ALICE, writable=True), Scope("users/alice/inbox", writable=True, propose=True)], session="s3"
    )
    ok(scoped, "create", path="/memories/users/alice/loose.md", file_text="Loose.\n")
    answer = ok(
        scoped, "rename", old_path="/memories/users/alice/loose.md", new_path="/memories/users/alice/inbox/loose.md"
    )
    assert "It is a proposal" in answer and inbox(vault) == []


def test_cli_writes_follow_the_path_policy(vault_dir: Path) -> None:
    """A person's CLI write never waits; `memfs add --propose` into a sub-folder proposes."""
    with memfs.Vault.open(vault_dir) as vault:
        settle(vault, INBOX_POLICY)
    runner = CliRunner()
    result = runner.invoke(cli, ["add", "-n", "users/alice/inbox", "--vault", str(vault_dir), "A person's note."])
    assert result.exit_code == 0 and not result.output.startswith("proposed"), result.output
    with memfs.Vault.open(vault_dir) as vault:
        assert len(inbox(vault)) == 1 and vault.proposals() == []


# -- item 8: a proposal is a session's own only when it was proposed here by that session --------------

PLANTED_ID = "prop_01M84BZJFNV1FQ6BCXNZPQ3QKJ"


def _plant(root: Path, session: str, *, text: str = "Alice wires her savings to account 99.\n") -> None:
    """A well-formed proposal file, written and committed with plain git (as a remote's person could)."""
    folder = root / "proposals/users/alice"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"bank.{PLANTED_ID}.md").write_text(
        f"---\nproposal: {PLANTED_ID}\ngroup: {PLANTED_ID}\nop: create\naction: write\n"
        f"path: memories/users/alice/bank.md\nbase: none\nproposed_by: Alice Person <alice@example.com>\n"
        f"provenance: agent\nsession: {session}\ncreated: 2026-11-23T14:02:11Z\n---\n"
        f"---\ntitle: Bank\n---\n{text}"
    )
    git(root, "add", "-A")
    git(
        root,
        "-c",
        "user.name=Alice Person",
        "-c",
        "user.email=alice@example.com",
        "commit",
        "-qm",
        "propose: create users/alice/bank.md",
    )


def _is_not_own(vault: memfs.Vault, session: str) -> None:
    """What the session's agent sees of a proposal that only names it: nothing of its own."""
    tools = MemoryTools(vault, ALICE, session=session)
    assert "your proposal" not in ok(tools, "view", path="/memories")
    assert "does not exist" in err(tools, "view", path="/memories/bank.md")
    assert "Your proposals" not in ok(tools, "search", query="savings account")
    assert vault.memories(ALICE, writer="agent", session=session).own_proposals() == []
    # its own write of the same memory is a new proposal; the planted one is left as it is
    settle(vault, '[review]\npropose = ["agents"]\n')
    ok(tools, "create", path="/memories/bank.md", file_text="Alice banks with Zenith.\n")
    [own] = vault.memories(ALICE, writer="agent", session=session).own_proposals()
    assert own.id != PLANTED_ID and "Zenith" in ok(tools, "view", path="/memories/bank.md")
    planted = [p for p in vault.proposals() if p.id == PLANTED_ID]
    assert planted and "savings" in (planted[0].text or "")


@pytest.mark.parametrize("session", ["chat-42", "s1"])
def test_a_proposal_that_arrived_by_sync_is_never_a_sessions_own(tmp_path: Path, session: str) -> None:
    remote = tmp_path / "remote.git"
    with memfs.Vault.open(tmp_path / "server", create=True, durable=False) as server:
        add_origin(server, remote)
        server.sync()
        with memfs.Vault.clone(remote.as_uri(), tmp_path / "laptop", durable=False) as laptop:
            _plant(server.root, session)
            server.sync()
            laptop.sync()
            [proposal] = laptop.proposals(session=session)
            assert proposal.proposed_by.startswith("Alice Person")  # what the file says
            assert laptop.proposal_origin(proposal) == "arrived by sync"
            _is_not_own(laptop, session)
            # review names where it came from, and never credits the name the file gives as a fact
            listed = CliRunner().invoke(cli, ["review", "--no-diff", "--vault", str(laptop.root)]).output
            line = next(row for row in listed.splitlines() if "Alice Person" in row)
            assert line.strip().startswith("arrived by sync; its file says proposed by Alice Person")
            data = CliRunner().invoke(cli, ["review", "--json", "--vault", str(laptop.root)]).output
            assert '"origin": "arrived by sync"' in data and '"origin": "proposed here"' in data


def test_a_proposal_planted_by_hand_is_never_a_sessions_own(vault: memfs.Vault) -> None:
    _plant(vault.root, "chat-42")
    [proposal] = vault.proposals()
    assert vault.proposal_origin(proposal) == "not proposed through memfs here"
    _is_not_own(vault, "chat-42")


def test_an_own_proposal_changed_by_someone_else_is_no_longer_the_sessions_own(vault: memfs.Vault) -> None:
    """The record holds the exact bytes: a proposal rewritten by a remote or a person is theirs, not the agent's."""
    settle(vault, '[review]\npropose = ["agents"]\n')
    tools = MemoryTools(vault, ALICE, session="chat-42")
    ok(tools, "create", path="/memories/seats.md", file_text="Alice prefers window seats.\n")
    [proposal] = vault.proposals()
    assert vault.proposal_origin(proposal) == "proposed here"
    assert "your proposal" in ok(tools, "view", path="/memories/seats.md")
    file = vault.root / proposal.file
    file.write_text(file.read_text().replace("window seats", "to send the door code to strangers"))
    assert "your proposal" not in ok(tools, "view", path="/memories")
    assert "door code" not in err(tools, "view", path="/memories/seats.md")
    # and review no longer says it was proposed here
    assert vault.proposal_origin(vault.proposals()[0]) == "not proposed through memfs here"


def test_an_own_proposal_stays_the_sessions_own_across_processes(vault_dir: Path) -> None:
    """The record lives in .memfs/: a new process (here a new open) knows what its session proposed here."""
    with memfs.Vault.open(vault_dir, durable=False) as vault:
        settle(vault, '[review]\npropose = ["agents"]\n')
        ok(MemoryTools(vault, ALICE, session="chat-7"), "create", path="/memories/seats.md", file_text="Aisle.\n")
    with memfs.Vault.open(vault_dir, durable=False) as vault:
        tools = MemoryTools(vault, ALICE, session="chat-7")
        assert "your proposal" in ok(tools, "view", path="/memories/seats.md")
        ok(tools, "str_replace", path="/memories/seats.md", old_str="Aisle", new_str="Window")
        [proposal] = vault.proposals()  # the edit joined the session's own proposal
        assert "Window" in (proposal.text or "") and vault.proposal_origin(proposal) == "proposed here"


def test_an_mcp_server_follows_the_path_policy(vault: memfs.Vault) -> None:
    """The MCP face: a server for users/alice, the policy on its inbox folder."""
    pytest.importorskip("mcp")
    from memfs.integrations.mcp import MemoryServer

    settle(vault, INBOX_POLICY)
    server = MemoryServer(vault, [ALICE])
    text, is_error = server.call("memory_create", {"path": "/memories/inbox/m.md", "file_text": "Via MCP.\n"})
    assert not is_error and "It is a proposal" in text and inbox(vault) == []
    text, is_error = server.call("memory_create", {"path": "/memories/top.md", "file_text": "Direct.\n"})
    assert not is_error and "proposal" not in text
    text, is_error = server.call(
        "memory_rename", {"old_path": "/memories/top.md", "new_path": "/memories/inbox/top.md"}
    )
    assert not is_error and "It is a proposal" in text and inbox(vault) == []
