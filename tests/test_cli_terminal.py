"""What the CLI prints for people is safe on a terminal; what it prints for scripts (--json) is exact.

File names, titles, tags, types, snippets, session keys, commit subjects and authors come from a
vault's files and history, which someone else may have written: an escape sequence in them must
not clear the screen, set the window title or rewrite a line, and rich markup in them must print
as it is.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import on_a_terminal

import memfs
from memfs.cli import cli, shown

CLEAR, TITLE, CSI1 = "\x1b[2J", "\x1b]0;owned\x07", "\x9b31m"
BIDI = "\u202e"
HOSTILE = f"kumquat {CLEAR}{TITLE} \r{BIDI}[bold]loud[/bold] :red_heart: {CSI1}"
NAME = f"evil{CLEAR}{TITLE}{BIDI}.md"
# Anything a terminal acts on: C0 but tab and newline, DEL, C1, bidirectional controls.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def yaml_quoted(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.memories("users/alice").add("Alice likes tea.", title="Tea")
        vault.session("chat-1", keys={"user": f"al{TITLE}ice"}).append(
            [{"role": "user", "content": f"kumquat {CLEAR} here\r\nsecond line"}]
        )
    (root / "memories/users/alice" / NAME).write_text(
        f"---\ntitle: {yaml_quoted(HOSTILE)}\ntype: {yaml_quoted('[red]fact' + CLEAR)}\n"
        f"tags: [{yaml_quoted('t' + TITLE)}]\n---\nkumquat body {CLEAR} and {TITLE}\n"
    )
    (root / "memories/users/alice/body.md").write_text(f"---\ntitle: Body\n---\nkumquat body {CLEAR} and {TITLE}\n")
    author = {"GIT_AUTHOR_NAME": f"Mallory{TITLE}", "GIT_AUTHOR_EMAIL": "m@example.com",
              "GIT_COMMITTER_NAME": "m", "GIT_COMMITTER_EMAIL": "m@example.com"}  # fmt: skip
    subprocess.run(["git", "add", "-A", "memories"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", f"sneaky {CLEAR}{TITLE} rewritten {BIDI}gnp.exe"], cwd=root,
                   env={**os.environ, **author}, check=True)  # fmt: skip
    (root / "memories/users/alice" / f"new{TITLE}.md").write_text("---\ntitle: New\n---\nan edit not committed yet\n")
    return root


def run(root: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--vault", str(root)], env={"MEMFS_AUTHOR": "Pat <pat@example.com>"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(
    "args",
    [["ls"], ["search", "kumquat"], ["log"], ["log", "users/alice/body.md"], ["sessions"], ["session", "chat-1"],
     ["search", "--messages", "kumquat"], ["doctor"]],
    ids=lambda a: " ".join(a)[:20],
)  # fmt: skip
def test_human_output_shows_control_characters_instead_of_obeying_them(root: Path, args: list[str]) -> None:
    out = run(root, *args)
    assert not UNSAFE.findall(out), repr(out)
    assert "\\x1b" in out  # shown, not dropped


def test_what_each_listing_shows_is_what_the_vault_says(root: Path) -> None:
    listing = run(root, "ls")
    assert "\\x1b[2J\\x1b]0;owned\\x07" in listing and "\\u202e" in listing and "\\r" in listing
    assert "[bold]loud[/bold] :red_heart:" in listing  # markup and emoji codes print as they are
    assert "[red]fact" in listing and "\\x9b31m" in listing
    hits = run(root, "search", "kumquat")
    assert "[bold]loud[/bold]" in hits and "evil\\x1b[2J" in hits
    log = run(root, "log")
    assert "sneaky \\x1b[2J\\x1b]0;owned\\x07 rewritten \\u202egnp.exe" in log and "Mallory\\x1b]0;owned" in log
    assert "user=al\\x1b]0;owned\\x07ice" in run(root, "sessions")
    assert "kumquat \\x1b[2J here\\r\nsecond line" in run(root, "session", "chat-1")  # lines stay lines


def test_json_output_is_exact(root: Path) -> None:
    listed = {m["title"]: m for m in json.loads(run(root, "ls", "--json"))}
    assert listed[HOSTILE]["path"] == f"memories/users/alice/{NAME}"
    assert listed[HOSTILE]["tags"] == [f"t{TITLE}"]
    hits = json.loads(run(root, "search", "kumquat", "--json"))
    assert hits[0]["title"] == HOSTILE
    log = json.loads(run(root, "log", "--json"))
    assert log[0]["subject"].startswith(f"sneaky {CLEAR}{TITLE} rewritten {BIDI}")


def test_show_is_exact_into_a_pipe_and_safe_on_a_terminal(root: Path) -> None:
    exact = (root / "memories/users/alice/body.md").read_text()
    assert run(root, "show", "users/alice/body.md") == exact  # `memfs show x > copy.md` copies it
    shown_there = on_a_terminal("show", "users/alice/body.md", "--vault", str(root))
    shown_there = shown_there.replace("\r\n", "\n")  # the pty turns \n into \r\n
    assert "kumquat body \\x1b[2J and \\x1b]0;owned\\x07" in shown_there
    assert not UNSAFE.findall(shown_there)


def test_errors_show_names_safely(root: Path) -> None:
    result = CliRunner().invoke(cli, ["show", f"users/alice/missing{CLEAR}.md", "--vault", str(root)])
    assert result.exit_code != 0
    assert not UNSAFE.findall(result.output), repr(result.output)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("a\x1b[2Jb", "a\\x1b[2Jb"), ("\x07\x08\x00\x7f", "\\x07\\x08\\x00\\x7f"), ("x\x9b1m", "x\\x9b1m"),
     ("\r", "\\r"), ("one\ntwo", "one\\ntwo"), ("tab\there", "tab\there"),
     ("\u202ereversed\u202c", "\\u202ereversed\\u202c"),
     ("\u2066iso\u2069", "\\u2066iso\\u2069"), ("\u2028", "\\u2028"), ("café ✓ 東京", "café ✓ 東京")],
)  # fmt: skip
def test_shown_escapes_each_kind_of_control(text: str, expected: str) -> None:
    assert shown(text) == expected


def test_multi_line_text_keeps_its_lines() -> None:
    assert shown("one\ntwo\r\n\x1b[0m", lines=True) == "one\ntwo\\r\n\\x1b[0m"
