"""Review before it counts: memfs.toml, proposals, accept / reject / undo, on real vaults."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import add_origin, err, ok

import memfs
from memfs import LongTermMemory, MemoryTools, Scope
from memfs.cli import cli
from memfs.errors import (
    ConflictError,
    ContentError,
    InvalidArgumentError,
    MemoryNotFoundError,
    ProposalError,
    SettingsError,
)
from memfs.extract import RuleExtractor
from memfs.settings import parse

ALICE = "users/alice"
ANY_CODE = None  # doctor exits non-zero when it finds an error


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def commits(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD"))


def changed_in(root: Path, rev: str = "HEAD") -> set[str]:
    return set(git(root, "show", "--name-only", "--format=", rev).split())


def settle(vault: memfs.Vault, text: str) -> None:
    """Write memfs.toml and commit it (as a person would with git)."""
    (vault.root / "memfs.toml").write_text(text)
    git(vault.root, "add", "memfs.toml")
    git(vault.root, "-c", "user.name=Pat", "-c", "user.email=pat@example.com", "commit", "-qm", "review policy")


def proposals_on_disk(root: Path) -> list[str]:
    top = root / "proposals"
    return sorted(str(p.relative_to(root)) for p in top.rglob("*.md")) if top.exists() else []


# -- memfs.toml ---------------------------------------------------------------------------------


def test_settings_parse_policy_per_source_and_namespace() -> None:
    settings = parse('[review]\npropose = ["extractor"]\n\n[review.namespaces."users/alice"]\npropose = ["agents"]\n'
                     '\n[review.namespaces."users/alice/scratch"]\npropose = []\n')  # fmt: skip
    policy = settings.review
    assert policy.requires("users/bob", "extractor") and not policy.requires("users/bob", "agent")
    assert policy.requires("users/alice", "agent") and policy.requires("users/alice/travel", "import")
    assert not policy.requires("users/alice/scratch", "agent")  # the innermost namespace decides
    assert not policy.requires("users/alice2", "agent")  # whole components, not a prefix of words
    assert not policy.requires("users/alice", None) and not policy.requires("users/alice", "person")
    assert not policy.requires("users/alice", "sync")
    assert parse("").review.off and not policy.off


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[review\npropose = []", "not valid TOML"),
        ('[reveiw]\npropose = ["agent"]', "unknown key reveiw"),
        ('[review]\npropse = ["agent"]', "unknown key review.propse"),
        ('[review]\npropose = "agent"', "must be a list of writers"),
        ('[review]\npropose = ["robot"]', "names 'robot'"),
        ('[review.namespaces."../etc"]\npropose = []', "is not a namespace"),
        ('[review.namespaces."users/alice"]\nwho = []', "unknown key"),
        ('[review.namespaces."users/alice"]', "needs a propose key"),
        ("review = 3", "[review] must be a table"),
        ("import os\n", "not valid TOML"),
    ],
)
def test_malformed_settings_are_a_clear_error(text: str, says: str) -> None:
    with pytest.raises(SettingsError) as caught:
        parse(text)
    assert "memfs.toml" in str(caught.value) and says in str(caught.value)


def test_malformed_settings_fail_closed_for_agent_writes_only(vault: memfs.Vault) -> None:
    (vault.root / "memfs.toml").write_text('[review]\npropose = ["agent"\n')
    before = head(vault.root)
    with pytest.raises(SettingsError, match="not valid TOML"):
        vault.memories(ALICE, writer="agent").add("An agent's fact.")
    tools = MemoryTools(vault, ALICE, session="s1")
    text = err(tools, "create", path="/memories/x.md", file_text="x")
    assert "memfs.toml" in text
    assert head(vault.root) == before and not (vault.root / "memories/users/alice").exists()
    vault.memories(ALICE).add("A person's fact.", title="Mine")  # a person's write needs no policy
    with pytest.raises(SettingsError):
        vault.settings()


def test_settings_are_read_again_after_an_edit_and_never_through_a_link(vault: memfs.Vault, tmp_path: Path) -> None:
    store = vault.memories(ALICE, writer="agent")
    assert not store.proposes()
    (vault.root / "memfs.toml").write_text('[review]\npropose = ["agent"]\n')
    assert store.proposes()
    (vault.root / "memfs.toml").write_text('[review]\npropose = ["extractor"]  # now only extracted memories\n')
    assert not store.proposes() and store.proposes("extractor")
    os.unlink(vault.root / "memfs.toml")
    outside = tmp_path / "outside.toml"
    outside.write_text("[review]\npropose = []\n")
    os.symlink(outside, vault.root / "memfs.toml")
    with pytest.raises(SettingsError, match="link"):
        store.proposes()


# -- the store-level switch ---------------------------------------------------------------------


def test_every_write_becomes_a_proposal_and_nothing_counts_until_accepted(vault: memfs.Vault) -> None:
    facts = vault.memories(ALICE)
    seats = facts.add("Alice prefers window seats.", title="Window seats")
    proposer = vault.memories(ALICE, propose=True, session="chat-1")
    new = proposer.add("Alice's home airport is Porto.", title="Home airport")
    assert new.proposal is not None and not (vault.root / new.path).exists()
    changed = proposer.update(seats.id or "", body="Alice prefers aisle seats.\n")
    assert changed.proposal and "aisle" in changed.body
    assert "window" in (vault.root / seats.path).read_text()
    moved = proposer.move("window-seats.md", "travel/seats.md")
    assert moved.proposal and (vault.root / seats.path).exists()
    proposer.delete("window-seats.md")
    ops = [(p.op, p.action, p.session) for p in vault.proposals()]
    assert ops == [("create", "write", "chat-1"), ("update", "write", "chat-1"), ("rename", "move", "chat-1"),
                   ("delete", "delete", "chat-1")]  # fmt: skip
    # invisible as fact: not searched, not listed, not injected
    assert vault.search("Porto airport") == [] and [m.title for m in facts.list()] == ["Window seats"]
    memory = LongTermMemory(vault, stores=[ALICE])
    assert "Porto" not in memory.context_for([{"role": "user", "content": "Which airport is home, Porto?"}])
    assert "aisle" not in memory.context_for([{"role": "user", "content": "aisle or window seats?"}])
    # in git and in an editor: ordinary Markdown files under proposals/
    assert all(f.startswith("proposals/users/alice/") for f in proposals_on_disk(vault.root))
    assert git(vault.root, "status", "--porcelain") == ""


def test_accept_is_one_commit_and_undo_reverts_it(vault: memfs.Vault) -> None:
    root = vault.root
    proposer = vault.memories(ALICE, propose=True, session="chat-1")
    proposed = proposer.add("Alice's home airport is Porto.", title="Home airport")
    assert vault.search("Porto") == []
    before = commits(root)
    accepted = vault.accept([proposed.proposal or ""])
    assert [p.id for p in accepted] == [proposed.proposal] and commits(root) == before + 1
    assert changed_in(root) == {proposed.path, accepted[0].file}
    assert git(root, "log", "-1", "--format=%s%n%b").startswith("review: accept 1 proposal")
    assert "Memfs-Op: accept" in git(root, "log", "-1", "--format=%b")
    assert [h.path for h in vault.search("Porto")] == [proposed.path]
    assert vault.proposals() == []
    memory = vault.memories(ALICE).get(proposed.path)
    assert memory.id == proposed.id and memory.proposal is None
    undone = vault.undo(author=vault.author.name)
    assert undone.subject.startswith("review: accept") and commits(root) == before + 2
    assert vault.search("Porto") == [] and [p.id for p in vault.proposals()] == [proposed.proposal]


def test_reject_is_one_commit_changes_no_memory_and_undo_brings_the_proposals_back(vault: memfs.Vault) -> None:
    root = vault.root
    seats = vault.memories(ALICE).add("Alice prefers window seats.", title="Window seats")
    proposer = vault.memories(ALICE, propose=True, session="chat-2")
    proposer.update(seats.path, body="Alice prefers aisle seats.\n")
    proposer.add("Alice likes jazz.", title="Jazz")
    memory_before = (root / seats.path).read_bytes()
    before = commits(root)
    rejected = vault.reject(every=True)
    assert len(rejected) == 2 and commits(root) == before + 1 and vault.proposals() == []
    assert changed_in(root) == {p.file for p in rejected}
    assert (root / seats.path).read_bytes() == memory_before and proposals_on_disk(root) == []
    vault.undo(author=vault.author.name)
    assert sorted(p.id for p in vault.proposals()) == sorted(p.id for p in rejected)


def test_accept_some_takes_whole_groups_and_leaves_the_rest(vault: memfs.Vault) -> None:
    facts = vault.memories(ALICE)
    facts.add("One.", path="trip/one.md")
    facts.add("Two.", path="trip/two.md")
    proposer = vault.memories(ALICE, propose=True)
    proposer.delete_folder("trip")  # one change of two files: one group
    jazz = proposer.add("Alice likes jazz.", title="Jazz")
    first = vault.proposals()[0]
    before = commits(vault.root)
    accepted = vault.accept([first.id])
    assert {p.path for p in accepted} == {"memories/users/alice/trip/one.md", "memories/users/alice/trip/two.md"}
    assert commits(vault.root) == before + 1 and facts.list() == []
    assert [p.id for p in vault.proposals()] == [jazz.proposal]
    with pytest.raises(MemoryNotFoundError, match="no proposal"):
        vault.accept(["prop_00000000000000000000000000"])
    with pytest.raises(InvalidArgumentError):
        vault.accept(jazz.proposal or "")  # one string, not a list


def test_a_stale_proposal_is_refused_and_nothing_changes(vault: memfs.Vault) -> None:
    facts = vault.memories(ALICE)
    seats = facts.add("Alice prefers window seats.", title="Window seats")
    vault.memories(ALICE, propose=True).update(seats.path, body="Alice prefers aisle seats.\n")
    extra = vault.memories(ALICE, propose=True).add("Alice likes jazz.", title="Jazz")
    facts.update(seats.path, body="Alice prefers window seats, always.\n")  # a person changed it meanwhile
    stale = vault.proposals()[0]
    assert any("changed since" in note for note in vault.proposal_notes(stale))
    before, text = head(vault.root), (vault.root / seats.path).read_text()
    with pytest.raises(ConflictError, match="changed since"):
        vault.accept(every=True)
    assert head(vault.root) == before and (vault.root / seats.path).read_text() == text
    assert not (vault.root / extra.path).exists() and len(vault.proposals()) == 2


def test_a_batch_of_proposals_is_one_commit_and_one_undo(vault: memfs.Vault) -> None:
    """The rule for any bulk rewrite by a model: one batch, one commit, one undo."""
    facts = vault.memories(ALICE)
    for n in range(5):
        facts.add(f"Fact number {n} about Alice.", path=f"fact-{n}.md")
    proposer = vault.memories(ALICE, propose=True, session="consolidate")
    before = commits(vault.root)
    with vault.batch("consolidate: merge five facts into one"):
        proposer.add("Five facts about Alice, merged.", title="Alice facts")
        for n in range(5):
            proposer.delete(f"fact-{n}.md")
    assert commits(vault.root) == before + 1 and len(vault.proposals(session="consolidate")) == 6
    vault.accept(every=True, session="consolidate")
    assert commits(vault.root) == before + 2 and [m.title for m in facts.list()] == ["Alice facts"]
    vault.undo(author=vault.author.name)
    assert len(facts.list()) == 5 and len(vault.proposals()) == 6


# -- the policy, for agents and the extractor ---------------------------------------------------


def test_policy_for_agents_tools_see_their_own_proposals_only(vault: memfs.Vault) -> None:
    settle(vault, '[review]\npropose = ["agents"]\n')
    mine, other = MemoryTools(vault, ALICE, session="s1"), MemoryTools(vault, ALICE, session="s2")
    assert "It is a proposal" in ok(mine, "create", path="/memories/seats.md", file_text="I prefer window seats.\n")
    shown = ok(mine, "view", path="/memories/seats.md")
    assert "window seats" in shown and "your proposal" in shown
    ok(mine, "str_replace", path="/memories/seats.md", old_str="window", new_str="aisle")
    assert "/memories/seats.md" in ok(mine, "search", query="aisle seats")
    assert "/memories/seats.md (your proposal, not accepted yet)" in ok(mine, "view", path="/memories")
    assert "seats.md" not in ok(other, "view", path="/memories")
    assert len(vault.proposals()) == 1 and vault.proposals()[0].op == "create"  # the session's edit joins it
    assert "No memories match" in ok(other, "search", query="aisle seats")
    assert "does not exist" in err(other, "view", path="/memories/seats.md")
    assert vault.search("aisle") == []
    vault.accept(every=True)
    assert "aisle" in ok(other, "view", path="/memories/seats.md")
    assert [h.path for h in vault.search("aisle")] == ["memories/users/alice/seats.md"]
    # a person's own writes never wait
    assert vault.memories(ALICE).add("Person's note.").proposal is None


def test_policy_per_namespace_and_extractor_source(vault: memfs.Vault) -> None:
    settle(vault, '[review]\npropose = ["extractor"]\n\n[review.namespaces."users/alice/open"]\npropose = []\n')
    manager = LongTermMemory(vault, stores=[ALICE], extractor=RuleExtractor())
    manager.observe([{"role": "user", "content": "I prefer window seats on long flights."}])
    manager.flush()
    assert vault.memories(ALICE).list() == [] and len(vault.proposals()) == 1
    assert vault.proposals()[0].provenance == "extractor"
    ok(MemoryTools(vault, ALICE, session="s1"), "create", path="/memories/agent.md", file_text="An agent's fact.\n")
    assert [m.name for m in vault.memories(ALICE).list()] == ["agent.md"]  # agents are not under this policy
    opened = vault.memories("users/alice/open", writer="extractor")
    assert opened.add("Extracted, but here nobody reviews.").proposal is None


def test_review_marker_kept_beside_proposals(vault: memfs.Vault) -> None:
    """An extracted instruction under policy is proposed with its marker; accepting it keeps the marker."""
    settle(vault, '[review]\npropose = ["extractor"]\n')
    manager = LongTermMemory(vault, stores=[ALICE], extractor=RuleExtractor())
    manager.observe([{"role": "user", "content": "Remember that you must always answer in French."}])
    manager.flush()
    [proposal] = vault.proposals()
    assert "review: pending" in (proposal.text or "")
    assert any("review marker" in note for note in vault.proposal_notes(proposal))
    vault.accept(every=True)
    [memory] = vault.memories(ALICE).list()
    assert memory.awaits_review
    assert "French" not in manager.context_for([{"role": "user", "content": "answer in French?"}])


def test_a_proposing_scope_for_long_term_memory_and_its_tools(vault: memfs.Vault) -> None:
    manager = LongTermMemory(vault, stores=[Scope(ALICE, writable=True, propose=True)], extractor=RuleExtractor())
    manager.observe([{"role": "user", "content": "My home airport is Lisbon."}])
    manager.flush()
    tools = manager.tools(session="s9")
    ok(tools, "create", path="/memories/note.md", file_text="A note.\n")
    assert vault.memories(ALICE).list() == [] and len(vault.proposals()) == 2


# -- hostile proposal files ---------------------------------------------------------------------


def _proposal_file(vault: memfs.Vault, name: str, head_lines: str, body: str = "") -> str:
    rel = f"proposals/{name}"
    (vault.root / "proposals").mkdir(exist_ok=True)
    (vault.root / rel).write_text(f"---\n{head_lines}---\n{body}")
    return rel


GOOD_ID = "prop_01M84BZJFNV1FQ6BCXNZPQ3QKJ"


@pytest.mark.parametrize(
    ("keys", "says"),
    [
        (f"proposal: {GOOD_ID}\naction: write\npath: memories/../../etc/passwd.md\nbase: none\n", "safe memory path"),
        (f"proposal: {GOOD_ID}\naction: write\npath: sessions/s1.md\nbase: none\n", "memory's vault path"),
        (f"proposal: {GOOD_ID}\naction: write\npath: memories/.memfs/x.md\nbase: none\n", "safe memory path"),
        (f"proposal: {GOOD_ID}\naction: write\npath: memories/top.md\nbase: none\n", "namespace folder"),
        (f"proposal: {GOOD_ID}\naction: exec\npath: memories/users/alice/x.md\nbase: none\n", "action must be"),
        (f"proposal: {GOOD_ID}\naction: write\npath: memories/users/alice/x.md\nbase: md5:1\n", "base must be"),
        (f"proposal: {GOOD_ID}\naction: delete\npath: memories/users/alice/x.md\nbase: none\n", "needs the base"),
        (f"proposal: {GOOD_ID}\naction: write\npath: memories/users/alice/x.md\nbase: none\nrun: rm\n", "unknown key"),
        ("proposal: ../x\naction: write\npath: memories/users/alice/x.md\nbase: none\n", "proposal id"),
        (
            f"proposal: {GOOD_ID}\naction: move\npath: memories/users/alice/x.md\nto: /etc/x.md\nbase: sha256:"
            + "0" * 64
            + "\n",
            "memory's vault path",
        ),
        ("proposal: [unclosed\n", "YAML"),
    ],
)
def test_hostile_proposal_files_are_refused_never_carried_out(vault: memfs.Vault, keys: str, says: str) -> None:
    rel = _proposal_file(vault, "evil.md", keys, "pwned\n")
    git(vault.root, "add", "-A")
    git(vault.root, "-c", "user.name=M", "-c", "user.email=m@x", "commit", "-qm", "a hand-edited proposal")
    assert vault.proposals() == []
    [broken] = vault.broken_proposals()
    assert broken.path == rel and says.lower() in broken.reason.lower()
    before = head(vault.root)
    assert vault.accept(every=True) == []
    with pytest.raises(ProposalError):
        vault.accept(["evil.md"])
    assert head(vault.root) == before and not (vault.root / "etc").exists()


def test_hand_edited_proposal_content_is_checked_at_accept(vault: memfs.Vault, tmp_path: Path) -> None:
    proposer = vault.memories(ALICE, propose=True)
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    proposed = proposer.add("Alice's locker code is in the notes.", title="Locker")
    [proposal] = vault.proposals()
    file = vault.root / proposal.file
    file.write_text(file.read_text().replace("in the notes", f"with token {token}"))  # a person's hand edit
    vault.accept(every=True)
    stored = (vault.root / proposed.path).read_text()
    assert token not in stored and "[REDACTED" in stored  # accepted through the store's rules
    assert token not in git(vault.root, "log", "-p", "--all")  # the held-back edit never reached git
    proposer.add("Alice flies from Porto.", title="Flights")
    [edited] = vault.proposals()
    path = vault.root / edited.file
    path.write_text(path.read_text().replace("from Porto", "from Porto, mostly"))
    vault.accept(every=True)
    subjects = git(vault.root, "log", "-2", "--format=%s").splitlines()
    assert subjects[0].startswith("review: accept") and subjects[1].startswith("edit: proposals/")
    assert "mostly" in (vault.root / "memories/users/alice/flights.md").read_text()
    # a body whose front matter is broken: refused at accept, nothing changes
    proposer.add("Another.", title="Another")
    [second] = vault.proposals()
    path = vault.root / second.file
    path.write_text(path.read_text().replace("title: Another", "title: [broken"))
    before = head(vault.root)
    with pytest.raises(ContentError):
        vault.accept(every=True)
    assert head(vault.root) == before
    # a proposal file that is a symbolic link is never followed
    outside = tmp_path / "outside.md"
    outside.write_text(path.read_text())
    os.symlink(outside, vault.root / "proposals/users/alice/linked.md")
    assert all(not p.file.endswith("linked.md") for p in vault.proposals())
    assert all(not e.path.endswith("linked.md") for e in vault.broken_proposals())


# -- sync -----------------------------------------------------------------------------------------


def test_proposals_travel_by_sync_and_the_policy_does_not(tmp_path: Path) -> None:
    """Agents propose on one machine, a person reviews on another; a remote cannot turn review off."""
    remote = tmp_path / "remote.git"
    with memfs.Vault.open(tmp_path / "server", create=True, durable=False) as server:
        add_origin(server, remote)
        server.sync()
        with memfs.Vault.clone(remote.as_uri(), tmp_path / "laptop", durable=False) as laptop:
            settle(laptop, '[review]\npropose = ["agents"]\n')
            settle(server, "[review]\npropose = []\n")
            server.memories(ALICE, propose=True, session="night").add("Alice moved to Porto.", title="Home")
            server.sync()
            result = laptop.sync()
            assert any(s.startswith("memfs.toml") for s in result.skipped)
            assert laptop.memories(ALICE, writer="agent").proposes()  # the laptop's own policy holds
            assert [p.session for p in laptop.proposals()] == ["night"]
            laptop.accept(every=True)
            assert [h.title for h in laptop.search("Porto")] == ["Home"]


# -- the CLI ------------------------------------------------------------------------------------


def test_cli_review_accept_reject_undo(vault_dir: Path) -> None:
    runner = CliRunner()

    def run(*args: str, code: int | None = 0) -> str:
        result = runner.invoke(cli, [*args, "--vault", str(vault_dir)])
        assert code is ANY_CODE or result.exit_code == code, result.output
        return result.output

    with memfs.Vault.open(vault_dir, author="support agent <agent@example.com>") as vault:
        proposer = vault.memories(ALICE, propose=True, writer="agent", session="chat-7")
        proposer.add("Alice prefers window seats.", title="Window seats")
        proposer.add("Alice likes jazz.", title="Jazz")
    git(vault_dir, "config", "user.name", "Pat")
    git(vault_dir, "config", "user.email", "pat@example.com")
    listed = run("review")
    assert "create users/alice/window-seats.md" in listed and "proposed by support agent" in listed
    assert "in session chat-7" in listed and "+Alice prefers window seats." in listed
    data = json.loads(run("review", "--json"))
    ids = [p["id"] for p in data["proposals"]]
    assert len(ids) == 2 and data["proposals"][0]["diff"].startswith("--- /dev/null")
    assert "nothing" not in run("review", "--session", "chat-7", "--no-diff")
    run("accept", code=2)  # neither ids nor --all
    assert "accepted" in run("accept", ids[0])
    assert "rejected" in run("reject", "--all")
    assert "nothing to review" in run("review")
    assert git(vault_dir, "log", "-2", "--format=%an|%s").splitlines() == [
        "Pat|review: reject 1 proposal", "Pat|review: accept 1 proposal"]  # fmt: skip
    run("undo", "--by", "Pat")
    assert ids[1] in run("review")
    assert "1 proposals wait for review" in run("doctor", code=ANY_CODE)
    (vault_dir / "proposals/users/alice/junk.md").write_text("---\nproposal: nope\n---\n")
    assert "unusable" in run("review")
    assert "junk.md: proposal must be a proposal id" in run("doctor", code=ANY_CODE)
    (vault_dir / "memfs.toml").write_text("[review]\npropose = [1]\n")
    assert "memfs.toml: review.propose must be a list of writers" in run("doctor", code=ANY_CODE)


def test_cli_add_propose_writes_a_proposal(vault_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["add", "-n", ALICE, "--propose", "--vault", str(vault_dir), "Alice likes jazz."])
    assert result.exit_code == 0 and result.output.startswith("proposed memories/users/alice/"), result.output
    with memfs.Vault.open(vault_dir) as vault:
        assert vault.memories(ALICE).list() == [] and len(vault.proposals()) == 1


def test_changes_made_together_are_one_group(vault: memfs.Vault) -> None:
    """The generic shape of a supersede under review: the old memory closed, the new one written, as one."""
    old = vault.memories(ALICE).add("Alice's home airport is Lisbon.", title="Home airport")
    proposer = vault.memories(ALICE, propose=True, session="s1")
    with vault.batch("supersede: home airport"), proposer.together():
        new = proposer.add("Alice's home airport is Porto.", title="Home airport now")
        proposer.update(old.path, metadata={"superseded_by": new.id})
    first, second = vault.proposals()
    assert first.group == second.group and commits(vault.root) == 3  # init, the old memory, the proposals
    assert len(vault.accept([second.id])) == 2  # naming one takes the whole change
    assert vault.memories(ALICE).get(old.path).metadata["superseded_by"] == new.id


def test_a_supersede_under_review_is_one_group_that_lands_whole(vault: memfs.Vault) -> None:
    root = vault.root
    paris = vault.memories(ALICE).add("Alice lives in Paris.", title="Home city")
    proposer = vault.memories(ALICE, propose=True, session="chat-1")
    before = commits(root)
    berlin = proposer.supersede(paris.id or "", "Alice lives in Berlin.")
    assert berlin.proposal is not None and commits(root) == before + 1  # both proposals, one commit
    assert "superseded_by" not in (root / paris.path).read_text() and not (root / berlin.path).exists()
    assert [h.path for h in vault.search("Alice lives")] == [paris.path]  # nothing counts yet
    groups = {p.group for p in vault.proposals()}
    assert len(vault.proposals()) == 2 and len(groups) == 1
    vault.accept([berlin.proposal])  # one id accepts its whole group
    assert commits(root) == before + 2 and vault.proposals() == []
    assert [h.path for h in vault.search("Alice lives")] == [berlin.path]
    assert [h.path for h in vault.search("Alice lives", history=True)] != [berlin.path]


def test_a_near_duplicate_merged_by_an_extractor_is_proposed_under_its_policy(vault: memfs.Vault) -> None:
    seats = vault.memories(ALICE).add("I prefer window seats.", title="Seats")
    settle(vault, '[review]\npropose = ["extractor"]\n')
    merged = vault.memories(ALICE).add("I really prefer window seats on flights.", provenance="extractor",
                                       if_similar="update")  # fmt: skip
    assert merged.proposal is not None and merged.path == seats.path  # the update waits, as an add would
    assert "really" not in (vault.root / seats.path).read_text()


def test_a_proposal_claiming_another_namespaces_group_is_never_accepted_with_it(vault: memfs.Vault) -> None:
    alice = vault.memories(ALICE, propose=True).add("Alice flies from Porto.", title="Flights")
    bob = vault.memories("users/bob", propose=True).add("Bob flies from Oslo.", title="Flights")
    [claimed] = [p for p in vault.proposals() if p.id == bob.proposal]
    [real] = [p for p in vault.proposals() if p.id == alice.proposal]
    file = vault.root / claimed.file  # a received or hand-made file joins Alice's group
    text = file.read_text()
    file.write_text(text.replace(f"group: {claimed.group}", f"group: {real.group}"))
    vault.commit("a proposal file from elsewhere")
    assert {p.group for p in vault.proposals()} == {real.group}
    before = head(vault.root)
    with pytest.raises(ProposalError, match="outside that namespace"):
        vault.accept(every=True, namespace=ALICE)
    assert head(vault.root) == before and not (vault.root / bob.path).exists()
