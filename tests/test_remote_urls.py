"""A remote URL's user and password are never printed (issue 26, item 14), on a real clone over HTTP.

The remote is a bare repository served by Python's own HTTP server (git's "dumb" HTTP protocol),
so `memfs clone http://alice:PASSWORD@127.0.0.1:PORT/x.git` really clones, and a wrong path
really fails, with git repeating the URL in its error.
"""

from __future__ import annotations

import functools
import subprocess
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

import memfs
from memfs.cli import cli
from memfs.credentials import hide_url_credentials

PASSWORDS = ["PASSWORD-9f8e7d", "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "s3cr%40t"]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Nothing: the test's output is what memfs prints."""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """A vault's history as a bare repository over plain HTTP; the base URL (no credentials)."""
    with memfs.Vault.open(tmp_path / "origin", create=True, durable=False) as origin:
        origin.memories("users/alice").add("Alice prefers window seats.", title="Seats")
    subprocess.run(
        ["git", "clone", "--bare", "--quiet", str(tmp_path / "origin"), str(tmp_path / "www/x.git")],
        check=True,
        capture_output=True,
    )
    git(tmp_path / "www/x.git", "update-server-info")
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path / "www")))
    thread = threading.Thread(target=server.serve_forever, name="http-remote", daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize("password", PASSWORDS)
def test_clone_never_prints_the_password_on_success_or_failure(served: str, tmp_path: Path, password: str) -> None:
    runner = CliRunner()
    url = f"http://alice:{password}@{served}/x.git"
    result = runner.invoke(cli, ["clone", url, str(tmp_path / "laptop")])
    assert result.exit_code == 0, result.output
    assert password not in result.output and "http://***@" in result.output
    assert (tmp_path / "laptop/memories/users/alice/seats.md").exists()
    result = runner.invoke(cli, ["init", str(tmp_path / "other"), "--clone", url])
    assert result.exit_code == 0 and password not in result.output, result.output
    for wrong in (f"http://alice:{password}@{served}/missing.git", f"http://{password}@{served}/missing.git"):
        result = runner.invoke(cli, ["clone", wrong, str(tmp_path / "nowhere")])
        assert result.exit_code != 0 and "could not clone" in result.output, result.output
        assert password not in result.output, result.output


def test_a_failed_sync_never_prints_the_remotes_password(served: str, tmp_path: Path) -> None:
    password = PASSWORDS[0]
    with memfs.Vault.clone(f"http://bob:{password}@{served}/x.git", tmp_path / "laptop", durable=False) as vault:
        git(vault.root, "remote", "set-url", "origin", f"http://bob:{password}@{served}/gone.git")
        result = CliRunner().invoke(cli, ["sync", "--vault", str(vault.root)])
    assert result.exit_code != 0, result.output
    assert password not in result.output and "bob" not in result.output, result.output


def test_history_shows_no_url_credentials(vault: memfs.Vault) -> None:
    """A commit message a person's plain `git pull` wrote, naming the URL: memfs log shows it hidden."""
    (vault.root / "memories/users/alice").mkdir(parents=True)
    (vault.root / "memories/users/alice/n.md").write_text("A note.\n")
    git(vault.root, "add", "-A")
    git(
        vault.root,
        "-c",
        "user.name=P",
        "-c",
        "user.email=p@x",
        "commit",
        "-qm",
        f"Merge branch 'main' of https://carol:{PASSWORDS[0]}@example.org/x",
    )
    [last] = vault.log(limit=1)
    assert PASSWORDS[0] not in last.subject and "https://***@example.org/x" in last.subject
    output = CliRunner().invoke(cli, ["log", "--vault", str(vault.root)]).output
    assert PASSWORDS[0] not in output


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://alice:pw@host/x.git", "http://***@host/x.git"),
        (
            "fatal: unable to access 'https://u:p@github.com/a/b/': 403",
            "fatal: unable to access 'https://***@github.com/a/b/': 403",
        ),
        ("ssh://me:pw@host:22/x", "ssh://***@host:22/x"),
        ("git@github.com:me/x.git", "git@github.com:me/x.git"),
        ("see https://example.com/a@b", "see https://example.com/a@b"),
    ],
)
def test_hide_url_credentials(text: str, shown: str) -> None:
    assert hide_url_credentials(text) == shown
