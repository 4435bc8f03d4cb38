"""What an MCP client can get out of a server: proposals named as such, no foreign page, no kept credential.

Issue 26, items 9-11, on the real server (:class:`memfs.integrations.mcp.MemoryServer` in this process
for the tools, resources and prompts; a real `memfs mcp --transport http` process on loopback
addresses other than 127.0.0.1 for DNS rebinding).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import McpHttpServer

import memfs

REPO = Path(__file__).resolve().parents[1]
ALICE = "users/alice"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SLACK = "xoxb-123456789012-abcdefghIJKL"
WRITES = ("create", "str_replace", "insert", "delete", "rename", "restore", "supersede")


@pytest.fixture(autouse=True)
def sdk() -> None:
    pytest.importorskip("mcp")


def server(vault: memfs.Vault, **options: Any) -> Any:
    from memfs.integrations.mcp import MemoryServer

    return MemoryServer(vault, [ALICE], **options)


# -- item 9: under --propose-only, every write's answer says it is only a proposal ------------------


def test_every_write_tool_under_propose_only_says_it_is_a_proposal(vault: memfs.Vault) -> None:
    store = vault.memories(ALICE)
    store.add("Alice's home city is Porto.", title="Home city", path="home.md")
    store.add("Alice waters the ferns on Sundays.", title="Ferns", path="ferns.md")
    store.add("Alice likes jazz.", title="Jazz", path="jazz.md")
    first = vault.log("memories/users/alice/ferns.md")[-1].sha
    mcp = server(vault, propose_only=True)
    calls = {
        "create": {"path": "/memories/new.md", "file_text": "Alice likes tea.\n"},
        "str_replace": {"path": "/memories/ferns.md", "old_str": "Sundays", "new_str": "Saturdays"},
        "insert": {"path": "/memories/jazz.md", "insert_line": 7, "insert_text": "And blues."},
        "delete": {"path": "/memories/jazz.md"},
        "rename": {"old_path": "/memories/ferns.md", "new_path": "/memories/plants.md"},
        "restore": {"path": "/memories/ferns.md", "revision": first},
        "supersede": {"path": "/memories/home.md", "new_text": "Alice's home city is Lisbon."},
    }
    assert set(calls) == set(WRITES)
    before = {p.name: p.read_bytes() for p in (vault.root / "memories/users/alice").iterdir()}
    for command, args in calls.items():
        text, is_error = mcp.call(f"memory_{command}", args)
        assert not is_error, (command, text)
        assert "It is a proposal" in text and "waiting for a person's review" in text, (command, text)
        assert not text.startswith(("Superseded", "Restored")), (command, text)
    after = {p.name: p.read_bytes() for p in (vault.root / "memories/users/alice").iterdir()}
    assert after == before  # not one memory changed
    assert len(vault.proposals()) >= len(WRITES)
    assert "proposal" in mcp.guide() and "person's review" in mcp.guide()


def test_supersede_by_an_existing_memory_under_propose_only(vault: memfs.Vault) -> None:
    """by_path in the same folder is accepted under propose-only too, and answered as a proposal."""
    store = vault.memories(ALICE)
    store.add("Alice's home city is Porto.", title="Home city", path="home.md")
    store.add("Alice's home city is Lisbon.", title="New home", path="new-home.md")
    text, is_error = server(vault, propose_only=True).call(
        "memory_supersede", {"path": "/memories/home.md", "by_path": "/memories/new-home.md"}
    )
    assert not is_error and text.startswith("Proposed superseding /memories/home.md"), text
    assert "superseded_by" not in (vault.root / "memories/users/alice/home.md").read_text()


def test_without_propose_only_the_answers_are_unchanged(vault: memfs.Vault) -> None:
    vault.memories(ALICE).add("Alice's home city is Porto.", title="Home city", path="home.md")
    text, _ = server(vault).call("memory_supersede", {"path": "/memories/home.md", "new_text": "Lisbon now."})
    assert text.startswith("Superseded /memories/home.md") and "proposal" not in text


# -- item 11: a credential a person kept reaches no agent, through any face ------------------------------


def _kept(vault: memfs.Vault, name: str, secret: str) -> str:
    """A person's file holding a credential kept deliberately (the marker on its line), committed."""
    rel = f"memories/users/alice/{name}"
    (vault.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (vault.root / rel).write_text(
        f"---\ntitle: Deploy {secret}  # memfs:allow-secret\n---\nThe key is {secret} <!-- memfs:allow-secret -->\n"
    )
    vault.commit("a kept credential")
    assert secret in (vault.root / rel).read_text()
    return rel


@pytest.mark.parametrize("secret", [GITHUB, SLACK])
def test_resources_and_listings_never_carry_a_kept_credential(vault: memfs.Vault, secret: str) -> None:
    from memfs.integrations.mcp import uri_of

    rel = _kept(vault, "deploy.md", secret)
    mcp = server(vault)
    read = mcp.read_resource(uri_of(rel)).contents[0].text
    assert secret not in read and "[REDACTED:" in read and "The key is" in read
    listed = mcp.list_resources()
    assert all(secret not in json.dumps(r.model_dump(mode="json")) for r in listed.resources)
    assert any(r.uri == uri_of(rel) for r in listed.resources)
    for command, args in (
        ("recall", {"query": "deploy key"}),
        ("view", {"path": "/memories/deploy.md"}),
        ("search", {"query": "deploy key"}),
    ):
        text, _ = mcp.call(f"memory_{command}", args)
        assert secret not in text, command


def test_a_file_named_after_a_credential_is_not_offered_as_a_resource(vault: memfs.Vault) -> None:
    (vault.root / "memories/users/alice").mkdir(parents=True, exist_ok=True)
    (vault.root / f"memories/users/alice/{GITHUB}.md").write_text("Named after a token.\n")
    listed = server(vault).list_resources()
    assert listed.resources == [] or all(GITHUB not in r.uri and GITHUB not in r.name for r in listed.resources)


def test_the_remember_prompt_never_echoes_a_credential(vault: memfs.Vault) -> None:
    import anyio
    from mcp import types

    mcp = server(vault)
    params = types.GetPromptRequestParams(name="remember", arguments={"fact": f"my deploy key is {GITHUB}"})
    result = anyio.run(mcp._get_prompt, None, params)
    assert GITHUB not in result.messages[0].content.text


# -- item 10: DNS rebinding on every loopback address served without a token ---------------------


class HttpServer(McpHttpServer):
    """A real `memfs mcp --transport http` process on ``host``, port chosen by the system."""

    def __init__(self, vault: Path, host: str, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "MEMFS_MCP_TOKEN": ""}
        super().__init__("--vault", str(vault), "--host", host, "-n", ALICE, "--read-only", *args, env=env)

    def status(self, headers: dict[str, str]) -> int:
        """The status of an initialize request with these headers (Host, Origin) added."""
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        request = urllib.request.Request(
            self.url,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)


@pytest.fixture(params=["127.0.0.2", "127.1.2.3"])
def loopback(request: pytest.FixtureRequest, vault_dir: Path) -> Iterator[HttpServer]:
    started = HttpServer(vault_dir, request.param)
    try:
        yield started
    finally:
        started.stop()


def test_a_foreign_host_or_origin_is_refused_on_any_loopback_address(loopback: HttpServer) -> None:
    served = loopback.url.split("/")[2]  # 127.0.0.2:PORT
    port = served.rsplit(":", 1)[1]
    assert loopback.status({}) == 200  # a local client, its Host the address served
    assert loopback.status({"Origin": f"http://{served}"}) == 200
    for host in (f"evil.example:{port}", "evil.example", f"rebind.attacker.test:{port}"):
        assert loopback.status({"Host": host}) in (400, 421), host
    for origin in ("http://evil.example", f"http://evil.example:{port}", "null"):
        assert loopback.status({"Origin": origin}) in (400, 403), origin
