"""Credentials however they are pasted, wherever they would land, and the operator told of each redaction.

Issue 26, items 12, 13 and 16: a private key quoted, commented, indented or escaped inside a string
is redacted from its BEGIN line to its END line; a token as a session id, a context key, session
metadata, a namespace, a commit message or an author never reaches a file name, a commit or
front matter; every redaction of what someone writes is a warning naming the kind, the place and
the writer, never the value.
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import memfs
from memfs.cli import cli
from memfs.credentials import find_secrets, redact
from memfs.errors import SecretError

ALICE = "users/alice"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SLACK = "xoxb-123456789012-abcdefghIJKL"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
TOKENS = [GITHUB, SLACK, AWS]
#: Lines of a key body: each long and random enough that any line left behind is found by the test.
BODY = [
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
    "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu",
    "NMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ",
    "qgtzJ6GR3eqoYSW9b9UMvkBpZODSctWSNGj3P7jRFDO5VoTwCQAWbFnOjDfH5Ulg",
]
LEFT = [line[8:40] for line in BODY]  # a piece of each line, whatever escapes surround it


def pem(kind: str = "PRIVATE KEY", eol: str = "\n") -> str:
    return eol.join([f"-----BEGIN {kind}-----", *BODY, f"-----END {kind}-----"]) + eol


def quoted(prefix: str, text: str) -> str:
    return "".join(prefix + line + "\n" for line in text.splitlines())


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def everything_in_git(root: Path) -> str:
    """Every object git holds, and every name: what a credential must never be in."""
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"], cwd=root, capture_output=True, check=True
    ).stdout.decode("utf-8", "replace")
    return (
        objects
        + git(root, "log", "--all", "--format=%an %ae %cn %ce %B")
        + "\n".join(str(p) for p in root.rglob("*") if ".git" not in p.parts)
    )


# -- item 12: a private key however it was pasted ----------------------------------------------------

PASTED = {
    "markdown quote": quoted("> ", pem()),
    "nested quote": quoted("> > ", pem("RSA PRIVATE KEY")),
    "indented": quoted("        ", pem("OPENSSH PRIVATE KEY")),
    "// comment": quoted("// ", pem()),
    "# comment": quoted("# ", pem("EC PRIVATE KEY")),
    " * block comment": quoted(" * ", pem()),
    "CRLF": pem(eol="\r\n"),
    "service account JSON": json.dumps(
        {
            "type": "service_account",
            "private_key_id": "a1b2",
            "private_key": pem(),
            "client_email": "x@p.iam.gserviceaccount.com",
        }
    ),
    "double-escaped JSON": json.dumps({"arguments": json.dumps({"private_key": pem()})}),
    "JSON with CRLF": json.dumps({"private_key": pem(eol="\r\n")}),
    "escaped slashes": json.dumps({"k": pem()}).replace("/", "\\/"),
    "quoted JSON": quoted("> ", json.dumps({"private_key": pem()}, indent=2)),
    "HTML line breaks": pem().replace("\n", "<br>"),
    "URL-encoded": pem().replace("\n", "%0A").replace("+", "%2B").replace("/", "%2F"),
}


@pytest.mark.parametrize("name", list(PASTED))
def test_a_private_key_is_redacted_from_begin_to_end_however_it_was_pasted(name: str) -> None:
    text = "Here is the key:\n" + PASTED[name] + "\nThat was it.\n"
    found = find_secrets(text)
    assert [f.kind for f in found] == ["private-key"], name
    redacted, _ = redact(text)
    assert not any(piece in redacted for piece in LEFT), (name, redacted)
    assert "END" not in redacted.split("[REDACTED:private-key]", 1)[1].split("That was it")[0], redacted
    assert redacted.startswith("Here is the key:") and "That was it." in redacted


def test_json_around_a_redacted_key_stays_json() -> None:
    for name in ("service account JSON", "double-escaped JSON", "JSON with CRLF", "escaped slashes"):
        data = json.loads(redact(PASTED[name])[0])
        assert "REDACTED:private-key" in json.dumps(data), name
    account = json.loads(redact(PASTED["service account JSON"])[0])
    assert account["client_email"] == "x@p.iam.gserviceaccount.com" and account["private_key_id"] == "a1b2"


@pytest.mark.parametrize("name", ["markdown quote", "service account JSON", "double-escaped JSON"])
def test_a_pasted_key_reaches_neither_a_memory_nor_a_transcript_nor_git(vault: memfs.Vault, name: str) -> None:
    vault.memories(ALICE, writer="agent").add("The deploy key:\n" + PASTED[name], title="Deploy")
    session = vault.session("s1")
    session.append([{"role": "user", "content": "my key: " + PASTED[name]}])
    session.append([{"role": "assistant", "content": [{"type": "tool_use", "input": {"text": PASTED[name]}}]}])
    session.close()
    stored = everything_in_git(vault.root) + "".join(
        p.read_text("utf-8", "replace") for p in vault.root.rglob("*.md") if ".git" not in p.parts
    )
    assert not any(piece in stored for piece in LEFT), name
    assert not any(piece.replace("/", "\\/") in stored for piece in LEFT), name


# -- item 13: a token never lands in a file name, a commit or front matter -----------------------------------


@pytest.mark.parametrize("token", TOKENS)
def test_a_session_id_holding_a_token_is_refused(vault: memfs.Vault, token: str) -> None:
    for session_id in (token, f"chat-{token}", f"user {token} talk"):
        with pytest.raises(SecretError) as caught:
            vault.session(session_id)
        assert token not in str(caught.value) and "session id" in str(caught.value)
    with pytest.raises(SecretError):
        vault.session("s1", folder=f"team/{token}")
    assert not (vault.root / "sessions").exists() or not any((vault.root / "sessions").rglob("*.md"))


@pytest.mark.parametrize("token", TOKENS)
def test_context_keys_holding_a_token_are_refused(vault: memfs.Vault, token: str) -> None:
    for keys in ({"user_id": token}, {"api": f"key={token}"}, {token: "alice"}):
        with pytest.raises(SecretError) as caught:
            vault.session(keys=keys)
        assert token not in str(caught.value)
        with pytest.raises(SecretError):
            vault.session("s2", keys=keys)
    assert git(vault.root, "log", "--all", "--format=%B").count("session:") == 0


@pytest.mark.parametrize("token", TOKENS)
def test_session_metadata_is_redacted_and_the_operator_told(
    vault: memfs.Vault, token: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="memfs"):
        session = vault.session("s3", metadata={"title": f"Deploy with {token}", "notes": [f"key {token}"]})
        session.append([{"role": "user", "content": "hello"}])
        session.close()
    assert token not in everything_in_git(vault.root)
    text = (vault.root / "sessions/s3.md").read_text()
    assert token not in text and "[REDACTED:" in text
    assert any("front matter of sessions/s3.md" in r.getMessage() for r in caplog.records)
    assert all(token not in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("token", TOKENS)
def test_a_namespace_or_a_stores_session_holding_a_token_is_refused(vault: memfs.Vault, token: str) -> None:
    with pytest.raises(SecretError):
        vault.memories(f"users/{token}")
    with pytest.raises(SecretError):
        vault.memories(ALICE, writer="agent", session=token)
    assert not (vault.root / "memories/users" / token).exists()


def test_a_library_commit_never_records_a_token(vault: memfs.Vault, caplog: pytest.LogCaptureFixture) -> None:
    """The last net: whatever path a text takes to a commit (a message, a trailer, an author), it is redacted."""
    (vault.root / "memories/users/alice").mkdir(parents=True)
    (vault.root / "memories/users/alice/note.md").write_text("A person's note.\n")
    with caplog.at_level(logging.WARNING, logger="memfs"):
        assert vault.commit(f"note for {GITHUB} and {SLACK}") is not None
    last = git(vault.root, "log", "-1", "--format=%an %ae %B")
    assert GITHUB not in last and SLACK not in last and "[REDACTED:github-token]" in last
    assert any("commit message" in r.getMessage() for r in caplog.records)
    with memfs.Vault.open(vault.root, author=f"Dev {AWS} <dev@example.com>", durable=False) as other:
        other.memories(ALICE).add("Written by a token-named author.")
    assert AWS not in git(vault.root, "log", "-1", "--format=%an %ae %cn %ce %B")


def test_a_proposals_front_matter_never_carries_an_authors_token(vault_dir: Path) -> None:
    with memfs.Vault.open(vault_dir, author=f"Dev {GITHUB} <dev@example.com>", durable=False) as vault:
        proposer = vault.memories(ALICE, propose=True, writer="agent", session="s1")
        proposer.add("Alice likes jazz.", title="Jazz")
        [proposal] = vault.proposals()
        assert GITHUB not in proposal.proposed_by and "[REDACTED:github-token]" in proposal.proposed_by
        assert GITHUB not in everything_in_git(vault.root)


@pytest.mark.parametrize("token", TOKENS)
def test_cli_commit_refuses_a_token_in_its_message_or_author(vault_dir: Path, token: str) -> None:
    (vault_dir / "memories/users/alice").mkdir(parents=True)
    (vault_dir / "memories/users/alice/note.md").write_text("A person's note.\n")
    before = git(vault_dir, "rev-parse", "HEAD")
    runner = CliRunner()
    for args in (
        ["-m", f"rotate {token}"],
        ["--author", f"Dev {token} <dev@example.com>"],
        ["--author", f"Dev <{token}@example.com>"],
        ["--author", f"broken {token}"],
    ):
        result = runner.invoke(cli, ["commit", "--vault", str(vault_dir), *args])
        assert result.exit_code != 0, args
        assert token not in result.output and "credential" in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
    assert git(vault_dir, "rev-parse", "HEAD") == before
    result = runner.invoke(cli, ["add", "-n", f"users/{token}", "--vault", str(vault_dir), "A note."])
    assert result.exit_code != 0 and token not in result.output
    assert token not in everything_in_git(vault_dir)


# -- item 16: every redaction of what someone writes is told to the operator ---------------------------


def test_every_redaction_is_a_warning_with_kind_place_and_writer(
    vault: memfs.Vault, caplog: pytest.LogCaptureFixture
) -> None:
    tools = memfs.MemoryTools(vault, ALICE, session="chat-9")
    with caplog.at_level(logging.WARNING, logger="memfs"):
        vault.memories(ALICE, writer="agent", session="chat-9").add(f"The token is {GITHUB}.", title="Token")
        tools.call({"command": "create", "path": "/memories/slack.md", "file_text": f"Slack: {SLACK}\n"})
        session = vault.session("chat-9")
        session.append([{"role": "user", "content": f"my aws key is {AWS}"}])
        session.close()
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert all(t not in m for t in TOKENS for m in messages), messages
    assert any(
        "github-token" in m and "a new memory of users/alice" in m and "agent in session chat-9" in m for m in messages
    ), messages
    assert any("slack-token" in m and "memories/users/alice/slack.md" in m and "agent" in m for m in messages)
    assert any("aws-access-key-id" in m and "sessions/chat-9.md" in m and "session chat-9" in m for m in messages)


def test_the_warning_never_quotes_a_token_in_the_writers_name(
    vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with memfs.Vault.open(vault_dir, author=f"Dev {SLACK} <dev@example.com>", durable=False) as vault:
        with caplog.at_level(logging.WARNING, logger="memfs"):
            vault.memories(ALICE, writer="agent").add(f"The token is {GITHUB}.", title="Token")
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("github-token" in m for m in messages)
    assert all(SLACK not in m and GITHUB not in m for m in messages), messages


def test_the_extractor_redaction_is_told_too(vault: memfs.Vault, caplog: pytest.LogCaptureFixture) -> None:
    from memfs.extract import Operation, screen

    with caplog.at_level(logging.WARNING, logger="memfs"):
        op = screen(Operation("add", text=f"Alice's deploy token is {GITHUB}", source="sessions/s1.md#3"))
    assert GITHUB not in op.text
    [record] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "github-token" in record.getMessage() and "the extractor" in record.getMessage()
    assert "sessions/s1.md#3" in record.getMessage() and GITHUB not in record.getMessage()
