"""Credentials never reach a memory file, a transcript, git, the index or the model.

The scanner's patterns (each kind, and near misses that must not match), every write path (store,
tools, CLI, extractor, transcripts), a person's edit holding one (left uncommitted by
``commit``, ``doctor`` and a real watcher), and the whole way from a chat message to git and back.
"""

from __future__ import annotations

import random
import string
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import err, ok, wait_for

import memfs
from memfs.cli import cli
from memfs.credentials import ALLOW_MARKER, KINDS, find_secrets, redact, redact_value
from memfs.extract import RuleExtractor
from memfs.longterm import LongTermMemory

ROOT = Path(__file__).resolve().parents[1]
_RNG = random.Random(18)
_ALNUM = string.ascii_letters + string.digits


def _r(n: int, chars: str = _ALNUM) -> str:
    value = "".join(_RNG.choice(chars) for _ in range(n - 3))
    return value + "aB3" if chars == _ALNUM else value + "".join(_RNG.choice(chars) for _ in range(3))


GITHUB = "ghp_" + _r(36)
SAMPLES = {
    "openai-key": ["sk-" + _r(48), "sk-proj-" + _r(60) + "_-" + _r(60), "sk-svcacct-" + _r(64)],
    "anthropic-key": ["sk-ant-api03-" + _r(93) + "-AA", "sk-ant-admin01-" + _r(80)],
    "aws-access-key-id": ["AKIA" + _r(16, string.ascii_uppercase + "234567"), "ASIAY34FZKBOKMUTVV7A"],
    "github-token": [GITHUB, "gho_" + _r(36), "ghu_" + _r(36), "ghs_" + _r(36), "ghr_" + _r(36),
                     "github_pat_11ABCDEFG0" + _r(12) + "_" + _r(59)],
    "slack-token": ["xoxb-123456789012-1234567890123-" + _r(24), "xoxp-2718281828-3141592653-" + _r(20)],
    "google-api-key": ["AIza" + _r(35, _ALNUM + "_-")],
    "stripe-key": ["sk_live_" + _r(24), "rk_live_" + _r(30), "sk_test_" + _r(24)],
    "private-key": [
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + _r(48) + "\n" + _r(64)
        + "\n-----END RSA PRIVATE KEY-----",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n" + _r(70) + "\n-----END OPENSSH PRIVATE KEY-----",
        "-----BEGIN PRIVATE KEY-----\n" + _r(64) + "\n",  # pasted without its end line
    ],
    "jwt": ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"],
}  # fmt: skip


@pytest.mark.parametrize(("kind", "value"), [(k, v) for k, values in SAMPLES.items() for v in values])
def test_each_kind_is_found_in_prose_and_redacted(kind: str, value: str) -> None:
    text = f'My key is "{value}", keep it safe.\nSecond line.'
    (finding,) = find_secrets(text)
    assert finding.kind == kind
    assert text[finding.start : finding.end].strip() == value.strip()
    redacted, findings = redact(text)
    assert findings == [finding]
    assert f"[REDACTED:{kind}]" in redacted and value.strip() not in redacted
    assert redacted.startswith('My key is "[REDACTED:') and redacted.endswith("Second line.")
    assert find_secrets(redacted) == []  # the placeholder matches nothing


def test_every_kind_has_a_sample() -> None:
    assert set(SAMPLES) == set(KINDS)


NEAR_MISSES = [
    "I use sk-learn and scikit-learn for models",
    "sk-learn-is-a-python-library-for-machine-learning-tasks",  # long, but words: no digit, no capitals
    "the task sk-1234 is done",
    "550e8400-e29b-41d4-a716-446655440000",  # a UUID
    "commit d6fb375a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e",  # a git hash
    "deadbeefcafebabe0123456789abcdef",  # short hex
    "ghp_short and gho_ and github_pat_tooShort",
    "AKIA1234 is not a key, nor is ASIAPACIFICREGIONAL or AKIAIOSFODNN7EXAMPL",
    "xoxb-not-a-token and xoxp-12",
    "AIzaSmall, AIza",
    "sk_live_short and sk_live_alllowercaseletterswithoutdigits",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----",
    "eyJhbGciOiJIUzI1NiJ9 alone is a header, not a token",
    "mem_01JC4Z8X2W7Y5V3T1R9Q8P6N4M is a memory id",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_do_not_match(text: str) -> None:
    assert find_secrets(text) == []


def test_example_vault_and_the_docs_hold_no_finding() -> None:
    files = sorted((ROOT / "example_vault").rglob("*.md")) + sorted((ROOT / "docs").glob("*.md"))
    assert len(files) > 20
    for path in files:
        assert find_secrets(path.read_text("utf-8")) == [], path


def test_the_allow_marker_skips_its_line_only() -> None:
    text = f"deploy: {GITHUB} <!-- {ALLOW_MARKER} -->\nbackup: {SAMPLES['github-token'][1]}\n"
    assert [f.line(text) for f in find_secrets(text, allow_marked=True)] == [2]
    assert len(find_secrets(text)) == 2  # what agents write ignores the marker


def test_redact_value_walks_json() -> None:
    item = {"role": "user", "content": [{"type": "input_text", "text": f"token {GITHUB}"}], "n": 3}
    assert redact_value(item) == {"role": "user", "content": [{"type": "input_text",
                                  "text": "token [REDACTED:github-token]"}], "n": 3}  # fmt: skip


# -- write paths ---------------------------------------------------------------------------


def _everywhere(vault: memfs.Vault) -> bytes:
    """Every byte a vault keeps: its files (.memfs/ index segments included), every git object
    and every commit message, as git prints them."""
    data = b"".join(p.read_bytes() for p in vault.root.rglob("*") if p.is_file() and ".git" not in p.parts)
    git = ["git", "-C", str(vault.root)]
    data += subprocess.run([*git, "log", "-p", "--all", "--format=%H%n%B%n%an"], capture_output=True,
                           check=True).stdout  # fmt: skip
    data += subprocess.run([*git, "rev-list", "--all", "--objects"], capture_output=True, check=True).stdout
    objects = subprocess.run([*git, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
                             capture_output=True, check=True, text=True).stdout.split()  # fmt: skip
    data += subprocess.run([*git, "cat-file", "--batch"], input="\n".join(objects).encode(), capture_output=True,
                           check=True).stdout  # fmt: skip
    return data


def test_store_add_redacts_body_title_tags_and_metadata(store: memfs.MemoryStore, vault: memfs.Vault) -> None:
    key = SAMPLES["openai-key"][1]
    memory = store.add(f"Deploy with {GITHUB}.\n", title=f"{GITHUB} deploy", tags=[key],
                       source=f"chat with {GITHUB}", metadata={"extra": [f"x {key}"], "n": 1})  # fmt: skip
    assert memory.name == "redacted-github-token-deploy.md"
    assert memory.body == "Deploy with [REDACTED:github-token].\n"
    assert memory.title == "[REDACTED:github-token] deploy"
    assert memory.tags == ("[REDACTED:openai-key]",)
    assert memory.metadata["extra"] == ["x [REDACTED:openai-key]"] and memory.metadata["n"] == 1
    assert store.get(memory.id or "").title == "[REDACTED:github-token] deploy"  # the YAML reads back
    store.update(memory.id or "", body=f"now {SAMPLES['aws-access-key-id'][0]}\n", title=f"t {key}")
    assert store.get(memory.id or "").body == "now [REDACTED:aws-access-key-id]\n"
    data = _everywhere(vault)
    for value in (GITHUB, key, SAMPLES["aws-access-key-id"][0]):
        assert value.encode() not in data
        assert value.lower().replace("_", "-").encode() not in data  # nor its slug


def test_store_refuse_and_allow(store: memfs.MemoryStore, vault: memfs.Vault) -> None:
    head = vault.history.resolve("HEAD")
    with pytest.raises(memfs.SecretError) as caught:
        store.add(f"token {GITHUB}", on_secret="refuse")
    assert caught.value.kinds == ("github-token",) and GITHUB not in str(caught.value)
    assert vault.history.resolve("HEAD") == head and store.list() == []  # nothing written
    kept = store.add(f"token {GITHUB}", title="kept", on_secret="allow")
    assert GITHUB in kept.body
    with pytest.raises(memfs.InvalidArgumentError):
        store.add("x", on_secret="ignore")


def test_a_name_holding_a_credential_is_refused(store: memfs.MemoryStore) -> None:
    with pytest.raises(memfs.SecretError):
        store.add("x", path=f"{GITHUB}.md")
    memory = store.add("x", title="plain")
    with pytest.raises(memfs.SecretError):
        store.move(memory.id or "", f"{GITHUB}.md")
    with pytest.raises(memfs.SecretError):
        store.write_text(f"notes/{GITHUB}.md", "x\n", create=True)
    assert [m.name for m in store.list()] == ["plain.md"]


def test_a_key_name_holding_a_credential_is_refused_not_written(store: memfs.MemoryStore) -> None:
    with pytest.raises(memfs.SecretError, match="outside any value"):
        store.write_text("x.md", f"---\n{GITHUB}: 1\n---\nbody\n", create=True)
    assert store.list() == []


def test_tools_redact_and_tell_the_model(vault: memfs.Vault) -> None:
    tools = memfs.MemoryTools(vault, "users/alice")
    pem = SAMPLES["private-key"][0]
    said = ok(tools, "create", path="/memories/deploy.md", file_text=f"---\ntitle: t {GITHUB}\n---\nkey: {GITHUB}\n")
    assert "[REDACTED:<kind>]" in said and "github-token" in said and GITHUB not in said
    said = ok(tools, "str_replace", path="/memories/deploy.md", old_str="key:", new_str=f"ssh:\n{pem}\nkey:")
    assert "private-key" in said and "BEGIN RSA" not in said
    ok(tools, "insert", path="/memories/deploy.md", insert_line=7, insert_text=SAMPLES["slack-token"][0])
    text = (vault.root / "memories/users/alice/deploy.md").read_text()
    assert "title: t [REDACTED:github-token]" in text and "[REDACTED:private-key]" in text
    assert "[REDACTED:slack-token]" in text
    assert "BEGIN RSA" not in ok(tools, "view", path="/memories/deploy.md")
    said = err(tools, "create", path=f"/memories/{GITHUB}.md", file_text="x")
    assert "credential" in said and GITHUB not in said
    err(tools, "rename", old_path="/memories/deploy.md", new_path=f"/memories/{GITHUB}.md")
    data = _everywhere(vault)
    assert GITHUB.encode() not in data and b"MIIEowIBAAKCAQEA" not in data


def test_cli_add_refuses_unless_told(tmp_path: Path) -> None:
    runner = CliRunner()
    path = tmp_path / "v"
    assert runner.invoke(cli, ["init", str(path)]).exit_code == 0
    result = runner.invoke(cli, ["add", "--vault", str(path), "-n", "me", f"token {GITHUB}"])
    assert result.exit_code == 1 and "github-token" in result.output and GITHUB not in result.output
    assert "--on-secret redact" in result.output
    result = runner.invoke(cli, ["add", "--vault", str(path), "-n", "me", "--on-secret", "redact", f"token {GITHUB}"])
    assert result.exit_code == 0, result.output
    with memfs.Vault.open(path) as vault:
        assert GITHUB.encode() not in _everywhere(vault)
        assert vault.search("REDACTED")


def test_transcripts_are_redacted_before_they_are_written(vault: memfs.Vault) -> None:
    session = vault.session("chat-1")
    session.append([{"role": "user", "content": f"my key is {SAMPLES['anthropic-key'][0]}"},
                    {"type": "function_call", "name": "login", "arguments": f'{{"token": "{GITHUB}"}}'}])  # fmt: skip
    items = session.items()
    assert items[0]["content"] == "my key is [REDACTED:anthropic-key]"
    assert items[1]["arguments"] == '{"token": "[REDACTED:github-token]"}'
    data = _everywhere(vault)
    assert GITHUB.encode() not in data and SAMPLES["anthropic-key"][0].encode() not in data


@pytest.mark.parametrize("extractor", [RuleExtractor(), None], ids=["rules", "no-extractor"])
def test_end_to_end_a_token_said_in_chat(vault: memfs.Vault, extractor: RuleExtractor | None) -> None:
    """A user says "my deploy token is ghp_..." in a chat: no trace in files, git, the index or the injected block."""
    session = vault.session("chat-2")
    memory = LongTermMemory(vault, stores=["users/alice"], extractor=extractor)
    said = [{"role": "user", "content": f"my deploy token is {GITHUB}"}]
    session.append(said)
    memory.observe(said, session=session)
    memory.flush()
    stored = vault.memories("users/alice").list()
    assert stored and all("[REDACTED:github-token]" in m.body for m in stored)
    assert all("ghp" not in m.name for m in stored)
    block = memory.context_for([{"role": "user", "content": "what is my deploy token?"}])
    assert "[REDACTED:github-token]" in block and GITHUB not in block
    vault.reindex(full=True)  # the index rebuilt from the files: its segments too
    data = _everywhere(vault)
    assert GITHUB.encode() not in data
    assert GITHUB.lower().replace("_", "-").encode() not in data  # nor slugged into a name or subject
    assert [s for s in vault.log() if "ghp" in s.subject.lower()] == []


def test_a_model_extractor_is_never_sent_a_credential(vault: memfs.Vault) -> None:
    model = memfs.ScriptedModel(['{"operations": []}'])
    memory = LongTermMemory(vault, stores=["users/alice"], extractor=memfs.ModelExtractor(model))
    memory.observe([{"role": "user", "content": f"my token is {GITHUB}"}])
    memory.flush()
    (call,) = model.calls
    assert GITHUB not in str(call) and "[REDACTED:github-token]" in str(call)


# -- a person's edits ----------------------------------------------------------------------


def _hand_edit(vault: memfs.Vault, text: str, name: str = "deploy.md") -> str:
    rel = f"memories/users/alice/{name}"
    (vault.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (vault.root / rel).write_text(text)
    return rel


def test_commit_leaves_a_secret_edit_uncommitted_and_doctor_says_why(tmp_path: Path) -> None:
    vault = memfs.Vault.open(tmp_path / "v", create=True, durable=False, commit_edits=False)
    try:
        rel = _hand_edit(vault, f"# Deploy\n\nUse {GITHUB} for deploys.\n")
        other = _hand_edit(vault, "# Plain\n\nNothing secret.\n", "plain.md")
        assert vault.commit() is not None
        assert vault.history.changed([rel]) == [rel] and vault.history.changed([other]) == []
        assert vault.engine.held_secrets == {rel: [("github-token", 3)]}
        (problem,) = [f for f in vault.doctor() if f.check == "secret"]
        assert rel in problem.message and "github-token on line 3" in problem.message
        assert ALLOW_MARKER in problem.message and "--allow-secret" in problem.message
        assert GITHUB not in problem.message
        assert vault.commit(allow_secrets=[rel]) is not None  # deliberately
        assert vault.history.changed([rel]) == []
        assert [f for f in vault.doctor() if f.check == "secret"] == []
        # a later edit of the same file: the credential already committed is not held again
        (vault.root / rel).write_text(f"# Deploy\n\nUse {GITHUB} for deploys, weekly.\n")
        assert vault.commit() is not None
    finally:
        vault.close()


def test_the_allow_marker_lets_a_person_commit(tmp_path: Path) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, durable=False, commit_edits=False) as vault:
        rel = _hand_edit(vault, f"token: {GITHUB} <!-- {ALLOW_MARKER} -->\n")
        assert vault.commit() is not None and vault.history.changed([rel]) == []


def test_cli_commit_names_the_held_file_and_allows_it(tmp_path: Path) -> None:
    runner = CliRunner()
    path = tmp_path / "v"
    assert runner.invoke(cli, ["init", str(path)]).exit_code == 0
    (path / "memories/key.md").write_text(f"{SAMPLES['stripe-key'][0]}\n")
    result = runner.invoke(cli, ["commit", "--vault", str(path)])
    assert result.exit_code == 0 and "not committed" in result.output and "stripe-key on line 1" in result.output
    assert "nothing to commit" in result.output and SAMPLES["stripe-key"][0] not in result.output
    doctor = runner.invoke(cli, ["doctor", "--vault", str(path)])
    assert "memories/key.md" in doctor.output and "stripe-key" in doctor.output
    result = runner.invoke(cli, ["commit", "--vault", str(path), "--allow-secret", "memories/key.md"])
    assert result.exit_code == 0 and "committed 1 edit" in result.output


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[memfs.Vault, list[tuple[str, list[str]]]]]:
    vault = memfs.Vault.open(tmp_path / "vault", create=True, durable=False, person="Ann <ann@example.com>")
    events: list[tuple[str, list[str]]] = []
    watcher = vault.watch(index_delay=0.05, commit_delay=0.2, on_change=lambda k, p: events.append((k, p)))
    try:
        yield vault, events
    finally:
        watcher.stop()
        vault.close()


@pytest.mark.slow
def test_the_watcher_leaves_a_secret_edit_uncommitted(watched: tuple) -> None:
    vault, events = watched
    rel = _hand_edit(vault, f"# Keys\n\naws {SAMPLES['aws-access-key-id'][0]}\n")
    clean = _hand_edit(vault, "# Tea\n\nAnn drinks tea.\n", "tea.md")
    wait_for(lambda: any(kind == "held" for kind, _ in events))
    wait_for(lambda: vault.history.changed([clean]) == [])  # the clean edit is committed
    (held,) = [paths for kind, paths in events if kind == "held"][:1]
    assert held[0].startswith(f"{rel}: it holds a credential (aws-access-key-id on line 3)")
    assert vault.history.changed([rel]) == [rel]
    # once the person takes the key out, the watcher commits the edit
    (vault.root / rel).write_text("# Keys\n\naws: in the password manager\n")
    wait_for(lambda: vault.history.changed([rel]) == [])
    log = subprocess.run(["git", "-C", str(vault.root), "log", "-p", "--all"], capture_output=True, check=True)
    assert SAMPLES["aws-access-key-id"][0].encode() not in log.stdout


def test_a_persons_credential_never_reaches_the_model(tmp_path: Path) -> None:
    """A held edit is a file on disk: the tools and the injected block show it redacted."""
    with memfs.Vault.open(tmp_path / "v", create=True, durable=False, freshness=0) as vault:
        _hand_edit(vault, f"# Deploy key\n\nThe deploy key is {GITHUB} <!-- {ALLOW_MARKER} -->\n")
        tools = memfs.MemoryTools(vault, "users/alice")
        for said in (ok(tools, "view", path="/memories/deploy.md"), ok(tools, "search", query="deploy key")):
            assert GITHUB not in said and "[REDACTED:github-token]" in said
        block = LongTermMemory(vault, stores=["users/alice"]).context_for([{"role": "user", "content": "deploy key"}])
        assert "deploy key is [REDACTED:github-token]" in block and GITHUB not in block


def test_a_file_named_after_a_token_is_not_committed(tmp_path: Path) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, durable=False, commit_edits=False) as vault:
        rel = _hand_edit(vault, "# Deploy\n\nnothing secret in here\n", f"{GITHUB}.md")
        assert vault.commit() is None
        assert vault.engine.held_secrets == {rel: [("github-token", 0)]}
        (problem,) = [f for f in vault.doctor() if f.check == "secret"]
        assert "github-token in the file name" in problem.message
        assert GITHUB.encode() not in subprocess.run(["git", "-C", str(vault.root), "log", "--all", "--stat"],
                                                     capture_output=True, check=True).stdout  # fmt: skip
