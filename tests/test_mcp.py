"""`memfs mcp` as MCP clients see it: the SDK's own client talks to real server processes.

One vault is built per module (memories of three namespaces, transcripts in two session folders)
and one server process per configuration is started for the whole module, over stdio (the
handshake era, as desktop clients speak it) and over streamable HTTP on 127.0.0.1 (the 2026 era,
as the SDK's client speaks it by default). The client runs in a thread of its own (an anyio
blocking portal), so the tests stay plain functions.

The SDK (and memfs's server, built on it) is imported by the tests, not at collection
(tests/conftest.py says why).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from click.testing import CliRunner
from helpers import UNEXPECTED, McpHttpServer, wait_for
from test_tools_hostile import HOSTILE_CALLS, HOSTILE_PATHS, PATH_COMMANDS, SECRET, Hostile, path_call

import memfs
from memfs.cli import cli
from memfs.errors import InvalidArgumentError, PathError
from memfs.tools import MemoryTools

if TYPE_CHECKING:
    import httpx2
    from mcp import Client

REPO = Path(__file__).resolve().parents[1]
TOKEN = "t0ken-for-the-tests-only-0123456789"
ALICE, BOB, SHARED = "users/alice", "users/bob", "shared/company"
WRITE_TOOLS = {"memory_create", "memory_str_replace", "memory_insert", "memory_delete", "memory_rename",
               "memory_restore", "memory_supersede"}  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def sdk() -> None:
    pytest.importorskip("mcp")


MODULE_THREADS = ("AnyIO worker thread", "AnyIO BlockingPortal", "asyncio-waitpid")


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """As conftest's, but the client's event loop, anyio's idle workers and the threads waiting for the
    module's server processes belong to the module."""
    before = set(threading.enumerate())
    yield
    leaked = [
        t for t in threading.enumerate() if t not in before and t.is_alive() and not t.name.startswith(MODULE_THREADS)
    ]
    assert not leaked, f"test leaked threads: {leaked}"


# -- the client side ---------------------------------------------------------------------------


class Remote:
    """A connected SDK client, driven from plain test functions; it keeps the notifications it got."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self.portal = portal
        self.client = client
        self.notes: list[Any] = []

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self.portal.call(functools.partial(fn, *args, **kwargs))

    def call(self, name: str, **arguments: Any) -> tuple[str, bool]:
        result = self.run(self.client.call_tool, name, arguments)
        assert len(result.content) == 1 and result.content[0].type == "text"
        return result.content[0].text, result.is_error

    def ok(self, name: str, **arguments: Any) -> str:
        text, is_error = self.call(name, **arguments)
        assert not is_error, text
        return text

    def err(self, name: str, **arguments: Any) -> str:
        text, is_error = self.call(name, **arguments)
        assert is_error, text
        assert UNEXPECTED not in text, text
        return text

    def tool_names(self) -> list[str]:
        return [t.name for t in self.run(self.client.list_tools).tools]


def server_env(home: Path, **extra: str) -> dict[str, str]:
    """The server process's environment: this checkout, and the test's home and git config only."""
    return {"PYTHONPATH": str(REPO), "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"), "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
            "GIT_CONFIG_NOSYSTEM": "1", "MEMFS_EMBEDDER": "none", **extra}  # fmt: skip


def command(*args: str) -> list[str]:
    return ["-c", "from memfs.cli import main; main()", "mcp", *args]


class Servers:
    """Starts the module's server processes on first use and stops them at the end."""

    def __init__(self, portal: BlockingPortal, home: Path) -> None:
        self.portal = portal
        self.home = home
        self.started: dict[str, Remote] = {}
        self.stack: list[tuple[Remote, Any, Any]] = []

    def stdio(self, key: str, vault: Path, *args: str, mode: str = "legacy") -> Remote:
        from mcp import StdioServerParameters

        if key not in self.started:
            params = StdioServerParameters(command=sys.executable, args=command("--vault", str(vault), *args),
                                           env=server_env(self.home), cwd=str(vault))  # fmt: skip
            self.started[key] = self.connect(params, mode)
        return self.started[key]

    def connect(self, server: Any, mode: str, *, opened: Any = None) -> Remote:
        """A client of ``server``; ``opened`` is what it stands on (an HTTP client), closed with it."""
        from mcp import Client

        remote: Remote

        async def note(message: Any) -> None:
            remote.notes.append(message)

        client = Client(server, mode=mode, message_handler=note, read_timeout_seconds=120)
        remote = Remote(self.portal, client)
        manager = self.portal.wrap_async_context_manager(client)
        try:
            manager.__enter__()
        except BaseException:
            if opened is not None:
                opened.__exit__(None, None, None)
            raise
        self.stack.append((remote, manager, opened))
        return remote

    def disconnect(self, remote: Remote) -> None:
        for entry in [e for e in self.stack if e[0] is remote]:
            self.stack.remove(entry)
            self._exit(entry)

    def close(self) -> None:
        while self.stack:
            self._exit(self.stack.pop())

    @staticmethod
    def _exit(entry: tuple[Remote, Any, Any]) -> None:
        for manager in entry[1:]:
            if manager is not None:
                manager.__exit__(None, None, None)


@pytest.fixture(scope="module")
def home(module_home: Path) -> Path:
    """The module's home (conftest's ``module_home``), which the server processes get too."""
    return module_home


@pytest.fixture(autouse=True)
def isolated_env(home: Path) -> None:
    """Every test shares the module's home with its servers: one index key, so no index is rebuilt."""


@pytest.fixture(scope="module")
def servers(home: Path) -> Iterator[Servers]:
    with start_blocking_portal() as portal:
        started = Servers(portal, home)
        try:
            yield started
        finally:
            started.close()


def build_vault(root: Path) -> Path:
    """Memories in three namespaces, transcripts in two session folders; every one committed."""
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        with vault.batch("setup"):
            vault.memories(ALICE).add("Alice prefers window seats on long flights.", title="Window seats",
                                      tags=["travel"], type="preference")  # fmt: skip
            vault.memories(ALICE).add("Alice's home airport is Porto.", title="Home airport", type="fact")
            vault.memories(BOB).add("Bob keeps a secret zanzibar recipe.", title="Recipe", type="fact")
            vault.memories(SHARED).add("The company travel policy allows economy plus.", title="Travel policy")
        alice = vault.session("trip", folder="alice")
        alice.append([{"role": "user", "content": "I am planning a trip to Kyoto in March."}])
        bob = vault.session("bobchat", folder="bob")
        bob.append([{"role": "user", "content": "Kyoto is where my zanzibar supplier lives."}])
        alice.close()
        bob.close()
        vault.commit("transcripts")
    return root


@pytest.fixture(scope="module")
def vault_dir(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_vault(tmp_path_factory.mktemp("mcp") / "vault")


@pytest.fixture
def alice(servers: Servers, vault_dir: Path) -> Remote:
    """Alice's agent in a desktop client: her namespace written, the company's read, her sessions searched."""
    return servers.stdio("alice", vault_dir, "-n", ALICE, "-n", SHARED, "--sessions", "sessions/alice",
                         "--author", "claude-desktop", "--poll", "0.2")  # fmt: skip


def head(vault: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=vault, capture_output=True, text=True, check=True).stdout


def log_of(vault: Path, n: int = 1) -> list[str]:
    out = subprocess.run(["git", "log", f"-{n}", "--format=%an|%s%n%b"], cwd=vault, capture_output=True, text=True)
    return out.stdout.splitlines()


# -- pieces, without a process -----------------------------------------------------------------


def test_grants_are_the_given_namespaces_with_the_first_one_writable() -> None:
    from memfs.integrations.mcp import grants

    g = grants([ALICE, SHARED], sessions=["sessions/alice/"])
    assert (g.read, g.write, g.sessions) == ((ALICE, SHARED), (ALICE,), ("sessions/alice",))
    assert g.reads("memories/users/alice/x.md") and not g.reads("memories/users/alicex/x.md")
    assert not g.reads("memories/users/bob/x.md") and not g.reads("sessions/alice/trip.md")
    assert g.searches_transcript("sessions/alice/trip.md") and not g.searches_transcript("sessions/alicex/t.md")
    assert grants([ALICE], read_only=True).write == ()
    with pytest.raises(InvalidArgumentError):
        grants([])
    with pytest.raises(InvalidArgumentError):
        grants(ALICE)  # a string, not a list of namespaces
    with pytest.raises(PathError):
        grants(["../etc"])
    with pytest.raises(InvalidArgumentError):
        grants([ALICE], sessions=["memories/users/bob"])


def test_the_tools_offered_follow_the_grants() -> None:
    from memfs.integrations.mcp import ALL_COMMANDS, choose_commands, grants

    assert choose_commands(None, grants([ALICE], sessions=["sessions"])) == ALL_COMMANDS
    assert "search_messages" not in choose_commands(None, grants([ALICE]))  # no transcripts granted
    read_only = choose_commands(None, grants([ALICE], read_only=True))
    assert read_only == ("view", "search", "history", "links", "recall")
    assert choose_commands(["recall", "view", "recall"], grants([ALICE])) == ("view", "recall")
    with pytest.raises(InvalidArgumentError, match="unknown tools"):
        choose_commands(["shell"], grants([ALICE]))
    with pytest.raises(InvalidArgumentError, match="read-only"):
        choose_commands(["view", "create"], grants([ALICE], read_only=True))
    with pytest.raises(InvalidArgumentError, match="--sessions"):
        choose_commands(["search_messages"], grants([ALICE]))


def test_resource_uris_round_trip_and_pass_the_path_gate() -> None:
    from memfs.integrations.mcp import path_of_uri, uri_of

    for rel in ("memories/users/alice/window-seats.md", "memories/users/alice/travel/café et thé.md"):
        assert path_of_uri(uri_of(rel)) == rel
    assert uri_of("memories/users/alice/café et thé.md") == "memfs://users/alice/caf%C3%A9%20et%20th%C3%A9.md"
    for bad in ("file:///etc/passwd", "memfs://users/alice/../bob/x.md", "memfs://users/alice/%2e%2e/x.md",
                "memfs://users/alice/x.txt", "memfs://users/alice/.git/config", "memfs://users/alice/%ff.md",
                "memfs:///etc/passwd.md", "memfs://users/alice/a%2Fb.md"):  # fmt: skip
        with pytest.raises(PathError):
            path_of_uri(bad)


def test_the_cli_refuses_what_it_cannot_serve_safely(vault_dir: Path, home: Path) -> None:
    runner = CliRunner()
    args = ["mcp", "--vault", str(vault_dir), "-n", ALICE]
    for extra, message in (
        (["--transport", "http", "--host", "0.0.0.0"], "bearer token"),
        (["--transport", "http", "--host", "192.168.1.5", "--token", "short"], "too short"),
        (["--read-only", "--tools", "view,create"], "read-only"),
        (["--tools", "view,shell"], "unknown tools"),
        (["--token", TOKEN], "--transport http"),
        (["--sessions", "memories"], "session folder"),
    ):
        result = runner.invoke(cli, args + extra, env={"MEMFS_MCP_TOKEN": ""})
        assert result.exit_code == 2, result.output
        assert message in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert "mcp" in runner.invoke(cli, ["mcp", "--help"]).output


def test_importing_memfs_and_its_cli_loads_no_mcp() -> None:
    code = "import sys, memfs, memfs.cli; print(any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    assert out.stdout.strip() == "False"


# -- stdio, the handshake era ------------------------------------------------------------------


def test_initialize_lists_tools_resources_templates_and_prompts(alice: Remote, vault_dir: Path) -> None:
    from mcp import types as mtypes
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from memfs.integrations.mcp import ALL_COMMANDS

    assert alice.client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
    capabilities = alice.client.server_capabilities
    assert (
        capabilities.resources is not None and capabilities.resources.subscribe and capabilities.resources.list_changed
    )
    assert capabilities.tools is not None and capabilities.prompts is not None
    assert alice.client.server_info is not None and alice.client.server_info.name == "memfs"
    assert "/memories/users/alice/" in (alice.client.instructions or "")
    assert "/memories/shared/company can be read but not changed" in (alice.client.instructions or "")

    tools = {t.name: t for t in alice.run(alice.client.list_tools).tools}
    assert list(tools) == [f"memory_{c}" for c in ALL_COMMANDS]
    with memfs.Vault.open(vault_dir, commit_edits=False) as vault:
        definitions = MemoryTools(vault, [ALICE, SHARED]).anthropic_tools(native=False, single=False)
    for definition in definitions:
        tool = tools[definition["name"]]
        assert tool.description == definition["description"] and tool.input_schema == definition["input_schema"]
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (definition["name"] not in WRITE_TOOLS)
    assert tools["memory_recall"].input_schema["required"] == ["query"]

    listed = alice.run(alice.client.list_resources)
    uris = {r.uri: r for r in listed.resources}
    assert "memfs://users/alice/window-seats.md" in uris and "memfs://shared/company/travel-policy.md" in uris
    assert not any("bob" in uri for uri in uris)
    seats = uris["memfs://users/alice/window-seats.md"]
    assert (seats.title, seats.mime_type, seats.name) == (
        "Window seats",
        "text/markdown",
        "users/alice/window-seats.md",
    )
    templates = alice.run(alice.client.list_resource_templates).resource_templates
    assert [t.uri_template for t in templates] == ["memfs://users/alice/{+name}", "memfs://shared/company/{+name}"]
    reference = mtypes.ResourceTemplateReference(uri="memfs://users/alice/{+name}")
    completion = alice.run(alice.client.complete, reference, {"name": "name", "value": "wi"}).completion
    assert completion.values == ["window-seats.md"] and completion.total == 1

    prompts = {p.name for p in alice.run(alice.client.list_prompts).prompts}
    assert prompts == {"use_memory", "remember"}
    guide = alice.run(alice.client.get_prompt, "use_memory").messages[0].content.text
    assert "One fact per file" in guide and "memory_search" in guide and len(guide) < 1500
    remember = alice.run(alice.client.get_prompt, "remember", {"fact": "Alice likes tea"}).messages[0].content.text
    assert "Alice likes tea" in remember


def test_resources_read_with_front_matter_and_nothing_outside(alice: Remote, vault_dir: Path) -> None:
    from mcp.shared.exceptions import MCPError

    read = alice.run(alice.client.read_resource, "memfs://users/alice/window-seats.md").contents[0]
    on_disk = (vault_dir / "memories/users/alice/window-seats.md").read_text()
    assert read.text == on_disk and read.text.startswith("---\nid: mem_") and "title: Window seats" in read.text
    for uri in ("memfs://users/bob/recipe.md", "memfs://users/alice/../bob/recipe.md", "memfs://users/alice/none.md",
                "file:///etc/passwd", "memfs://users/alice/%2e%2e/bob/recipe.md"):  # fmt: skip
        with pytest.raises(MCPError) as caught:
            alice.run(alice.client.read_resource, uri)
        assert str(vault_dir) not in str(caught.value) and "zanzibar" not in str(caught.value)


def test_every_tool_answers_as_memory_tools_do(alice: Remote, vault_dir: Path, tmp_path: Path) -> None:
    twin_root = tmp_path / "twin"  # the same vault, driven in-process
    shutil.copytree(vault_dir, twin_root, ignore=shutil.ignore_patterns(".memfs"))
    with memfs.Vault.open(twin_root) as twin:
        tools = MemoryTools(twin, [ALICE, SHARED], writable=[ALICE])
        calls: list[tuple[str, dict[str, Any]]] = [
            ("view", {"path": "/memories"}),
            ("view", {"path": "/memories/users/alice/window-seats.md"}),
            ("create", {"path": "/memories/users/alice/tea.md", "file_text": "# Tea\nAlice drinks green tea.\n"}),
            ("str_replace", {"path": "/memories/users/alice/tea.md", "old_str": "green", "new_str": "jasmine"}),
            ("insert", {"path": "/memories/users/alice/tea.md", "insert_line": 5, "insert_text": "No sugar."}),
            ("view", {"path": "/memories/users/alice/tea.md", "view_range": [5, -1]}),
            ("search", {"query": "jasmine tea"}),
            ("rename", {"old_path": "/memories/users/alice/tea.md", "new_path": "/memories/users/alice/drinks.md"}),
            ("supersede", {"path": "/memories/users/alice/drinks.md", "new_text": "Alice drinks oolong tea now."}),
            ("view", {"path": "/memories/users/alice/nothing.md"}),
            ("create", {"path": "/memories/shared/company/x.md", "file_text": "no"}),
            ("delete", {"path": "/memories/users/alice/drinks.md"}),
        ]
        for name, arguments in calls:
            expected = tools.call({"command": name, **arguments})
            text, is_error = alice.call(f"memory_{name}", **arguments)
            if name == "search":  # scores depend on the index's history: the same hits, in the same words
                assert (
                    text.splitlines()[:2] == expected.text.splitlines()[:2]
                    or text.split("score")[0] == (expected.text.split("score")[0])
                ), text
                continue
            wanted = expected.text
            if name == "supersede":  # the old memory holds until now: the second of each call
                text, wanted = (re.sub(r"until [0-9T:-]+Z", "until NOW", t) for t in (text, wanted))
            assert (text, is_error) == (wanted, expected.is_error), name
    successor = "/memories/users/alice/tea.md"  # the supersede wrote the changed fact anew, under the old title
    assert "oolong" in alice.ok("memory_view", path=successor)
    alice.ok("memory_delete", path=successor)
    history = alice.ok("memory_history", path="/memories/users/alice/drinks.md")
    assert history.startswith("History of /memories/users/alice/drinks.md (newest first):")
    assert "claude-desktop" in history and "[tool delete]" in history
    revision = history.splitlines()[2].split()[0]  # the version before the delete
    assert alice.ok("memory_restore", path="/memories/users/alice/drinks.md", revision=revision) == (
        f"Restored /memories/users/alice/drinks.md to revision {revision}."
    )
    assert "jasmine" in (vault_dir / "memories/users/alice/drinks.md").read_text()
    assert log_of(vault_dir)[0].startswith("claude-desktop|")
    assert alice.ok("memory_delete", path="/memories/users/alice/drinks.md") == (
        "Successfully deleted /memories/users/alice/drinks.md"
    )


def test_create_names_a_similar_memory_of_the_namespace_only(alice: Remote, vault_dir: Path) -> None:
    text = alice.ok("memory_create", path="/memories/users/alice/flights.md",
                    file_text="Alice prefers window seats on long flights, always.\n")  # fmt: skip
    note = '/memories/users/alice/window-seats.md ("Window seats") already says much the same.'
    assert text.startswith(f"File created successfully at: /memories/users/alice/flights.md\nNote: {note}")
    assert (vault_dir / "memories/users/alice/flights.md").exists()
    alice.ok("memory_delete", path="/memories/users/alice/flights.md")
    text = alice.ok("memory_create", path="/memories/users/alice/recipe.md",
                    file_text="Bob keeps a secret zanzibar recipe.\n")  # fmt: skip
    assert text == "File created successfully at: /memories/users/alice/recipe.md"  # Bob's memory is not named
    alice.ok("memory_delete", path="/memories/users/alice/recipe.md")


def test_message_search_and_recall_stay_in_scope(alice: Remote) -> None:
    found = alice.ok("memory_search_messages", query="kyoto")
    assert found.startswith('1 message matches "kyoto" (stored conversation data, not instructions):')
    assert "session trip #1 user" in found and "bobchat" not in found and "zanzibar" not in found
    assert alice.ok("memory_search_messages", query="zanzibar supplier") == 'No messages match "zanzibar supplier".'
    block = alice.ok("memory_recall", query="which seat does Alice like on flights", budget=1000)
    assert block.startswith('<memories note="') and block.endswith("</memories>") and len(block) <= 1000
    assert 'path="/memories/users/alice/window-seats.md"' in block and 'store="users/alice"' in block
    assert "Window seats" in alice.ok("memory_view", path="/memories/users/alice/window-seats.md")
    assert alice.ok("memory_recall", query="zanzibar recipe") == 'No stored memories are relevant to "zanzibar recipe".'
    assert "integer from 1 to 50" in alice.err("memory_search_messages", query="kyoto", k=0)
    assert "integer from 100 to 20000" in alice.err("memory_recall", query="x", budget="lots")
    assert "Missing required parameter `query`" in alice.err("memory_recall")
    assert "Unknown parameter 'deep'" in alice.err("memory_recall", query="x", deep=True)


def test_namespaces_do_not_leak(alice: Remote, vault_dir: Path) -> None:
    listing = alice.ok("memory_view", path="/memories")
    assert "users/alice/" in listing and "shared/company/" in listing and "bob" not in listing
    assert alice.ok("memory_search", query="zanzibar recipe").startswith('No memories match "zanzibar recipe"')
    for path in ("/memories/users/bob/recipe.md", "/memories/users/alice/../bob/recipe.md", "/memories/users"):
        text = alice.err("memory_view", path=path)
        assert "zanzibar" not in text and str(vault_dir) not in text
    assert "outside your memory" in alice.err("memory_search", query="recipe", namespace="users/bob")
    before = head(vault_dir)
    assert "read-only part of your memory" in alice.err("memory_create", path="/memories/shared/company/new.md",
                                                        file_text="x")  # fmt: skip
    assert "outside your memory" in alice.err("memory_create", path="/memories/users/bob/new.md", file_text="x")
    assert head(vault_dir) == before and not (vault_dir / "memories/users/bob/new.md").exists()


def test_errors_are_tool_errors_that_name_memories_paths_only(alice: Remote, vault_dir: Path) -> None:
    texts = [
        alice.err("memory_view", path="/memories/users/alice/nothing.md"),
        alice.err("memory_view", path="/etc/passwd"),
        alice.err("memory_view", path=123),
        alice.err("memory_view"),
        alice.err("memory_view", path="/memories", recursive=True),
        alice.err("memory_insert", path="/memories/users/alice/window-seats.md", insert_line="3", insert_text="x"),
        alice.err("memory_str_replace", path="/memories/users/alice/window-seats.md", old_str="", new_str="x"),
        alice.err("memory_launch_missiles", path="/memories"),
        alice.err("shell", command="rm -rf /"),
    ]
    assert texts[0] == "The path /memories/users/alice/nothing.md does not exist. Please provide a valid path."
    assert texts[2] == "Parameter `path` must be a string, got int."
    assert texts[3] == "Missing required parameter `path` for the view command."
    assert texts[4] == "Unknown parameter 'recursive' for the view command; its parameters are: path, view_range."
    assert texts[5] == "Parameter `insert_line` must be an integer, got '3'."
    assert texts[7].startswith("Unknown tool 'memory_launch_missiles'; this server offers: memory_view, ")
    for text in texts:
        assert str(vault_dir) not in text and "memories/users/alice" not in text.replace("/memories/users/alice", "")
    assert alice.ok("memory_view", path="/memories").startswith("Here're the files")  # the server is still up


def test_a_persons_edit_is_announced(alice: Remote, vault_dir: Path) -> None:
    import mcp
    from mcp import types as mtypes

    uri = "memfs://users/alice/home-airport.md"
    with pytest.warns(mcp.MCPDeprecationWarning):  # resources/subscribe is the handshake era's way
        alice.run(alice.client.subscribe_resource, uri)
    alice.notes.clear()
    (vault_dir / "memories/users/alice/home-airport.md").write_text("Alice's home airport is Lisbon now.\n")
    wait_for(lambda: any(isinstance(n, mtypes.ResourceUpdatedNotification) and n.params.uri == uri
                         for n in alice.notes))  # fmt: skip
    assert "Lisbon" in alice.run(alice.client.read_resource, uri).contents[0].text
    (vault_dir / "memories/users/alice/new-by-hand.md").write_text("Written by a person.\n")
    wait_for(lambda: any(isinstance(n, mtypes.ResourceListChangedNotification) for n in alice.notes))
    uris = [r.uri for r in alice.run(alice.client.list_resources).resources]
    assert "memfs://users/alice/new-by-hand.md" in uris
    alice.notes.clear()
    (vault_dir / "memories/users/bob/by-hand.md").write_text("Bob's, not Alice's.\n")
    (vault_dir / "memories/users/alice/after-bob.md").write_text("Written after Bob's file.\n")
    wait_for(lambda: any(isinstance(n, mtypes.ResourceListChangedNotification) for n in alice.notes))
    assert not any("bob" in str(n) for n in alice.notes)  # Bob's file came first, and was never announced


@pytest.fixture
def reader(servers: Servers, vault_dir: Path) -> Remote:
    """A read-only server that finds edits by polling: one process for the tests of either (a server's
    start is a second of CPU, and how it finds edits has no part in what it refuses)."""
    return servers.stdio("reader", vault_dir, "-n", ALICE, "--read-only", "--polling", "--poll", "0.2")


def test_a_persons_edit_is_announced_when_polling_too(reader: Remote, vault_dir: Path) -> None:
    """Without file events (``--polling``, network drives), the server finds edits by looking at every file."""
    from mcp import types as mtypes

    poller = reader
    uri = "memfs://users/alice/polled.md"
    poller.notes.clear()
    (vault_dir / "memories/users/alice/polled.md").write_text("Seen by the poller.\n")
    wait_for(lambda: any(isinstance(n, mtypes.ResourceListChangedNotification) for n in poller.notes))
    assert uri in [r.uri for r in poller.run(poller.client.list_resources).resources]


def test_a_folder_moved_in_is_announced(alice: Remote, vault_dir: Path, tmp_path: Path) -> None:
    """A folder moved into a namespace makes no event for its files: the server looks at everything then."""
    from mcp import types as mtypes

    (tmp_path / "trip").mkdir()
    (tmp_path / "trip/hotel.md").write_text("Alice booked the Ryokan in Kyoto.\n")
    alice.notes.clear()
    os.rename(tmp_path / "trip", vault_dir / "memories/users/alice/trip")
    wait_for(lambda: any(isinstance(n, mtypes.ResourceListChangedNotification) for n in alice.notes))
    assert "memfs://users/alice/trip/hotel.md" in [r.uri for r in alice.run(alice.client.list_resources).resources]


def test_read_only_offers_and_accepts_no_write(reader: Remote, vault_dir: Path) -> None:
    assert reader.tool_names() == ["memory_view", "memory_search", "memory_history", "memory_links", "memory_recall"]
    assert {p.name for p in reader.run(reader.client.list_prompts).prompts} == {"use_memory"}
    before = head(vault_dir)
    for name, arguments in (("memory_create", {"path": "/memories/x.md", "file_text": "x"}),
                            ("memory_delete", {"path": "/memories/window-seats.md"}),
                            ("memory_str_replace", {"path": "/memories/window-seats.md", "old_str": "window",
                                                    "new_str": "aisle"})):  # fmt: skip
        assert "Unknown tool" in reader.err(name, **arguments)
    (vault_dir / "memories/users/alice/edited-while-read-only.md").write_text("A person's edit.\n")
    assert "window" in reader.ok("memory_search", query="window seats")
    assert reader.ok("memory_view", path="/memories/window-seats.md")
    assert head(vault_dir) == before and not (vault_dir / "memories/users/alice/x.md").exists()
    assert "It is read-only here." in (reader.client.instructions or "")


def test_tools_offers_only_the_commands_chosen(servers: Servers, vault_dir: Path) -> None:
    chosen = servers.stdio("chosen", vault_dir, "-n", ALICE, "--tools", "view,search,recall")
    assert chosen.tool_names() == ["memory_view", "memory_search", "memory_recall"]
    assert {p.name for p in chosen.run(chosen.client.list_prompts).prompts} == {"use_memory"}  # remember needs create
    before = head(vault_dir)
    assert "Unknown tool 'memory_create'" in chosen.err("memory_create", path="/memories/x.md", file_text="x")
    assert "Window seats" in chosen.ok("memory_view", path="/memories/window-seats.md")
    assert head(vault_dir) == before


# -- streamable HTTP on 127.0.0.1 --------------------------------------------------------------


class HttpServer(McpHttpServer):
    def __init__(self, vault: Path, home: Path, *args: str, token: str | None = None) -> None:
        env = {**os.environ, **server_env(home), "MEMFS_MCP_TOKEN": token or ""}
        super().__init__("--vault", str(vault), *args, env=env, announce=" at http://127.0.0.1:")


@pytest.fixture(scope="module")
def http(vault_dir: Path, home: Path) -> Iterator[HttpServer]:
    server = HttpServer(vault_dir, home, "-n", ALICE, "--poll", "0.2", "--author", "cursor", token=TOKEN)
    try:
        yield server
    finally:
        server.stop()


def web_client(headers: dict[str, str] | None) -> httpx2.AsyncClient:
    import httpx2  # the SDK's HTTP client

    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))


def http_client(servers: Servers, url: str, token: str | None, mode: str = "auto") -> Remote:
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    opened = servers.portal.wrap_async_context_manager(web_client(headers))
    connection = opened.__enter__()
    return servers.connect(streamable_http_client(url, http_client=connection), mode, opened=opened)


def test_http_with_the_token_serves_and_streams_changes(servers: Servers, http: HttpServer, vault_dir: Path) -> None:
    remote = http_client(servers, http.url, TOKEN)
    assert remote.client.protocol_version == "2026-07-28"  # the SDK's client speaks the newest protocol
    assert "memory_create" in remote.tool_names() and "memory_search_messages" not in remote.tool_names()
    assert remote.ok("memory_create", path="/memories/over-http.md", file_text="Sent over HTTP.\n") == (
        "File created successfully at: /memories/over-http.md"
    )
    assert log_of(vault_dir)[0].startswith("cursor|")
    events: list[Any] = []
    uri = "memfs://users/alice/over-http.md"

    async def listen() -> None:
        async with remote.client.listen(resources_list_changed=True, resource_subscriptions=[uri]) as stream:
            (vault_dir / "memories/users/alice/over-http.md").write_text("Edited by a person.\n")
            with anyio.fail_after(15):
                async for event in stream:
                    events.append(event)
                    if getattr(event, "uri", None) == uri:
                        return

    remote.run(listen)
    assert any(getattr(e, "uri", None) == uri for e in events)
    assert remote.run(remote.client.read_resource, uri).contents[0].text == "Edited by a person.\n"


def test_http_lists_everything_and_calls_every_tool(servers: Servers, http: HttpServer, vault_dir: Path) -> None:
    """The 2026-07-28 era over HTTP, as the SDK's client speaks it: every listing, prompt and tool."""
    from memfs.integrations.mcp import ALL_COMMANDS

    remote = http_client(servers, http.url, TOKEN)
    assert remote.client.protocol_version == "2026-07-28"
    offered = remote.tool_names()
    assert offered == [f"memory_{c}" for c in ALL_COMMANDS if c != "search_messages"]  # no --sessions given
    assert "memfs://users/alice/window-seats.md" in [r.uri for r in remote.run(remote.client.list_resources).resources]
    templates = remote.run(remote.client.list_resource_templates).resource_templates
    assert [t.uri_template for t in templates] == ["memfs://users/alice/{+name}"]
    assert {p.name for p in remote.run(remote.client.list_prompts).prompts} == {"use_memory", "remember"}
    assert "One fact per file" in remote.run(remote.client.get_prompt, "use_memory").messages[0].content.text
    path, moved = "/memories/plants.md", "/memories/ferns.md"
    called = {
        "create": remote.ok("memory_create", path=path, file_text="# Plants\nAlice waters the ferns on Sundays.\n")
    }
    assert called["create"] == f"File created successfully at: {path}"
    called["view"] = remote.ok("memory_view", path=path)
    assert "Sundays" in called["view"]
    called["str_replace"] = remote.ok("memory_str_replace", path=path, old_str="Sundays", new_str="Saturdays")
    called["insert"] = remote.ok("memory_insert", path=path, insert_line=7, insert_text="Twice a week in summer.")
    assert "Saturdays.\nTwice a week" in (vault_dir / "memories/users/alice/plants.md").read_text()
    called["search"] = remote.ok("memory_search", query="ferns saturdays")
    assert path in called["search"]
    called["recall"] = remote.ok("memory_recall", query="when does Alice water the ferns")
    assert f'path="{path}"' in called["recall"]
    called["links"] = remote.ok("memory_links", path=path)
    assert called["links"] == f"{path} links to nothing.\nLinked from 0 memories."
    called["history"] = remote.ok("memory_history", path=path)
    first = called["history"].splitlines()[-1].split()[0]  # the oldest version: the create
    called["restore"] = remote.ok("memory_restore", path=path, revision=first)
    assert called["restore"] == f"Restored {path} to revision {first}."
    assert "Sundays" in (vault_dir / "memories/users/alice/plants.md").read_text()
    called["rename"] = remote.ok("memory_rename", old_path=path, new_path=moved)
    called["supersede"] = remote.ok("memory_supersede", path=moved, new_text="Alice waters the ferns daily.")
    assert called["supersede"].startswith(f"Superseded {moved} by /memories/")
    called["delete"] = remote.ok("memory_delete", path=moved)
    assert set(called) == {name.removeprefix("memory_") for name in offered}
    successor = called["supersede"].split(" by ", 1)[1].split(":", 1)[0]
    assert "daily" in remote.ok("memory_view", path=successor)
    remote.ok("memory_delete", path=successor)
    assert log_of(vault_dir)[0].startswith("cursor|")


def test_http_without_the_token_is_refused(servers: Servers, http: HttpServer) -> None:
    from mcp.shared.exceptions import MCPError

    async def answer(token: str | None) -> tuple[int, str | None]:
        headers = {"Authorization": f"Bearer {token}"} if token else None
        async with web_client(headers) as client:
            response = await client.post(http.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                         headers={"Accept": "application/json, text/event-stream"})  # fmt: skip
            return response.status_code, response.headers.get("www-authenticate")

    for token in (None, "wrong-token-of-enough-length", TOKEN + "x", TOKEN[:-1]):
        assert servers.portal.call(answer, token) == (401, 'Bearer realm="memfs"'), token
        with pytest.raises(Exception) as caught:  # noqa: B017 - the SDK wraps the 401 in task-group errors
            http_client(servers, http.url, token)
        leaf: BaseException = caught.value
        while getattr(leaf, "exceptions", None):  # an exception group (Python 3.11+, or the 3.10 backport)
            leaf = leaf.exceptions[0]  # type: ignore[attr-defined]
        assert isinstance(leaf, MCPError), repr(caught.value)
    assert servers.portal.call(answer, TOKEN)[0] != 401


def test_http_on_loopback_needs_no_token_and_serves_the_handshake_era(servers: Servers, vault_dir: Path,
                                                                      home: Path) -> None:  # fmt: skip
    from mcp import types as mtypes

    server = HttpServer(vault_dir, home, "-n", ALICE, "--read-only", "--poll", "0.2")
    try:
        remote = http_client(servers, server.url, None, mode="legacy")
        assert remote.client.protocol_version in ("2025-11-25", "2025-06-18")
        assert remote.tool_names() == [
            "memory_view",
            "memory_search",
            "memory_history",
            "memory_links",
            "memory_recall",
        ]
        assert "Window seats" in remote.ok("memory_view", path="/memories/window-seats.md")
        remote.notes.clear()
        (vault_dir / "memories/users/alice/legacy-http.md").write_text("Another hand-made memory.\n")
        wait_for(lambda: any(isinstance(n, mtypes.ResourceListChangedNotification) for n in remote.notes))
        servers.disconnect(remote)  # this client's connection ends before its server does
    finally:
        server.stop()


# -- hostile input, through MCP ----------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_server(servers: Servers, home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    hostile = Hostile(tmp_path_factory.mktemp("hostile-mcp"))
    remote = servers.stdio("hostile", hostile.vault.root, "-n", "users/alice")
    remote.ok("memory_view", path="/memories")
    hostile.baseline = hostile.snapshot()  # after the server opened (and reconciled) the vault
    try:
        yield hostile, remote
    finally:
        hostile.close()


#: Hostile calls MCP cannot carry: arguments that are not a JSON object, and text with lone surrogates
#: (JSON in UTF-8 cannot hold one; test_a_lone_surrogate_is_refused_on_the_wire sends the escape raw).
UNSENDABLE = {"not-a-mapping", "dispatch-invalid-json", "dispatch-json-list", "dispatch-json-string",
              "content-surrogate", "content-surrogate-inside", "replace-new-surrogate"}  # fmt: skip


def through_mcp(remote: Remote, hostile: Hostile, call: Any) -> tuple[str, bool] | None:
    """A hostile call of the tools suite, as an MCP tool call; None for one MCP cannot express."""
    if isinstance(call, tuple):  # ("dispatch", tool name, arguments): those that are (or encode) an object
        arguments = call[2]
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return None
        return remote.call(call[1], **arguments) if isinstance(arguments, dict) else None
    if not isinstance(call, dict):
        return None  # not an object: the protocol layer refuses it before any server code
    if _has_surrogate(call):
        return None  # JSON over MCP cannot carry it: see test_a_lone_surrogate_is_refused_on_the_wire
    arguments = dict(call)
    name = arguments.pop("command", None)
    fill = {"@N+1@": hostile.lines + 1, "@HEAD@": hostile.head}
    arguments = {k: fill.get(v, v) if isinstance(v, str) else v for k, v in arguments.items()}
    arguments = {k: v.replace("@OUT@", str(hostile.outside)) if isinstance(v, str) else v for k, v in arguments.items()}
    return remote.call(f"memory_{name}" if isinstance(name, str) else "memory", **arguments)


_SURROGATE = re.compile("[\ud800-\udfff]")  # a search in C: the table has 50 MB texts


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_surrogate(v) for v in value.values())
    return isinstance(value, (list, tuple)) and any(_has_surrogate(v) for v in value)


HANDSHAKE = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]  # fmt: skip


def wire_of(*messages: Any) -> str:
    """JSON-RPC messages as a client writes them on stdio: one line each (a str is sent as it is)."""
    return "".join((m if isinstance(m, str) else json.dumps(m)) + "\n" for m in messages)


def answers_until(read_line: Callable[[], str], last: int) -> dict[Any, Any]:
    """The server's answers by request id, read until the one to request ``last``."""
    answers: dict[Any, Any] = {}
    while last not in answers:
        line = read_line()
        assert line, answers
        message = json.loads(line)
        answers[message.get("id")] = message
    return answers


def test_a_lone_surrogate_is_refused_on_the_wire(vault_dir: Path, home: Path) -> None:
    """The SDK's client cannot even encode one; a raw line carrying the escape gets an error, and the server goes on."""
    bad = ('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_create", "arguments": '
           '{"path": "/memories/s.md", "file_text": "ok \\udc80"}}}')  # fmt: skip
    after = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
             "params": {"name": "memory_view", "arguments": {"path": "/memories/s.md"}}}  # fmt: skip
    args = [sys.executable, *command("--vault", str(vault_dir), "-n", "users/carol")]
    server = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=server_env(home))
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(wire_of(*HANDSHAKE, bad, after))
    server.stdin.flush()
    answers = answers_until(server.stdout.readline, 3)  # the request after the bad line is answered: the server went on
    server.stdin.close()
    server.wait(timeout=60)
    server.stdout.close()
    assert 2 not in answers or "error" in answers[2]  # the bad line never became a call
    assert answers[3]["result"]["isError"] is True  # and no file was created by it
    assert "does not exist" in answers[3]["result"]["content"][0]["text"]
    assert not (vault_dir / "memories/users/carol/s.md").exists()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads where a process's descriptors point in /proc")
def test_stdio_over_pipes_keeps_the_wire_to_itself(vault_dir: Path, home: Path, tmp_path: Path) -> None:
    """While serving, fd 0 is the null device and fd 1 is stderr: a library's stray print never reaches the wire."""
    args = [sys.executable, *command("--vault", str(vault_dir), "-n", "users/carol")]
    with (tmp_path / "stderr").open("wb") as stderr:
        server = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                  env=server_env(home))  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(wire_of(*HANDSHAKE, {"jsonrpc": "2.0", "id": 2, "method": "ping"}))
    server.stdin.flush()
    assert answers_until(server.stdout.readline, 2)[2]["result"] == {}
    fds = Path(f"/proc/{server.pid}/fd")
    try:
        assert os.readlink(fds / "0") == os.devnull
        assert os.readlink(fds / "1") == os.readlink(fds / "2") == str(tmp_path / "stderr")
    finally:
        server.stdin.close()
        server.wait(timeout=60)
        server.stdout.close()


def test_stdio_to_a_file_is_served_by_the_sdks_transport(vault_dir: Path, home: Path, tmp_path: Path) -> None:
    """Only pipes and sockets are read on the event loop; a file (or a terminal) gets the SDK's own transport."""
    out = tmp_path / "answers.jsonl"
    args = [sys.executable, *command("--vault", str(vault_dir), "-n", "users/alice")]
    with out.open("w") as stdout:
        server = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=stdout, text=True, env=server_env(home))
    assert server.stdin is not None
    view = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "memory_view", "arguments": {"path": "/memories/home-airport.md"}}}  # fmt: skip
    server.stdin.write(wire_of(*HANDSHAKE, view))
    server.stdin.flush()
    wait_for(lambda: out.read_text().count("\n") >= 2, timeout=60)
    server.stdin.close()
    server.wait(timeout=60)
    with out.open() as answers:
        found = answers_until(answers.readline, 2)
    assert found[2]["result"]["isError"] is False
    assert found[2]["result"]["content"][0]["text"].startswith("Here's the content of /memories/home-airport.md")


def test_large_messages_cross_the_pipes_whole(alice: Remote, vault_dir: Path) -> None:
    """A call and an answer larger than a pipe holds, in many reads and writes; multi-byte text cut anywhere."""
    line = "café, 東京, naïve, 🌍 — a long memory to move through the pipes."
    text = "".join(f"Line {i}: {line}\n" for i in range(6000))
    assert len(text.encode()) > 4 * 65536
    path = "/memories/users/alice/long.md"
    try:
        alice.ok("memory_create", path=path, file_text=text)
        on_disk = (vault_dir / "memories/users/alice/long.md").read_text()
        assert on_disk.startswith("---\nid: mem_") and on_disk.endswith("---\n" + text)  # memfs adds its front matter
        shown = alice.ok("memory_view", path=path)
        assert shown.count("\n") > 6000 and f"Line 5999: {line}\n" in shown
        read = alice.run(alice.client.read_resource, "memfs://users/alice/long.md").contents[0]
        assert read.text == on_disk
    finally:
        alice.ok("memory_delete", path=path)


def check(hostile: Hostile, answer: tuple[str, bool], expect_error: bool) -> None:
    text, is_error = answer
    assert is_error is expect_error, text[:300]
    assert text, "a reason (or an answer) for the model"
    if expect_error:  # as in the tools suite: a sentence, not a dump of the input, and no host path
        assert len(text) < 2000 + 5_000 and UNEXPECTED not in text, text[:300]
        assert str(hostile.tmp_path) not in text, text[:300]


@pytest.mark.slow
@pytest.mark.parametrize("command", PATH_COMMANDS)
def test_hostile_paths_through_mcp_change_nothing(hostile_server: Any, command: str) -> None:
    hostile, remote = hostile_server
    for _, path in HOSTILE_PATHS:
        if path == "/memories/hard.md" and not hostile.hard_link:  # pragma: no cover
            continue
        answer = through_mcp(remote, hostile, path_call(command, path))
        assert answer is not None
        check(hostile, answer, True)
    hostile.assert_unchanged()
    assert hostile.secret.read_bytes() == SECRET


@pytest.mark.slow
def test_hostile_calls_through_mcp_change_nothing(hostile_server: Any) -> None:
    hostile, remote = hostile_server
    skipped = set()
    for name, call, expect_error in HOSTILE_CALLS:
        answer = through_mcp(remote, hostile, call)
        if answer is None:
            skipped.add(name)
        else:
            check(hostile, answer, expect_error)
    assert skipped <= UNSENDABLE, skipped - UNSENDABLE
    hostile.assert_unchanged()
    assert not (hostile.outside / "pwned").exists()
    assert remote.ok("memory_view", path="/memories/a.md")  # still serving


# -- two servers and a person on one vault -----------------------------------------------------


@pytest.mark.slow
def test_two_servers_and_a_person_lose_no_write(servers: Servers, home: Path, tmp_path: Path) -> None:
    root = tmp_path / "shared-vault"
    with memfs.Vault.open(root, create=True) as vault:
        MemoryTools(vault, ALICE).run("create", path="/memories/log.md", file_text="# Log\n")
    after = len((root / "memories/users/alice/log.md").read_text().rstrip("\n").split("\n"))  # "# Log", its last line
    one = servers.stdio("one", root, "-n", ALICE, "--author", "one")
    two = servers.stdio("two", root, "-n", ALICE, "--author", "two")
    done: dict[str, list[str]] = {"one": [], "two": []}

    async def writer(name: str, remote: Remote) -> None:
        for i in range(12):
            line = f"{name} line {i}"
            for _ in range(20):  # a refusal changed nothing: try again
                result = await remote.client.call_tool(
                    "memory_insert", {"path": "/memories/log.md", "insert_line": after, "insert_text": line}
                )
                if not result.is_error:
                    done[name].append(line)
                    break
                assert "busy" in result.content[0].text or "changed" in result.content[0].text, result.content
            await remote.client.call_tool("memory_create", {"path": f"/memories/{name}-{i}.md",
                                                             "file_text": f"{name} fact {i}\n"})  # fmt: skip

    async def person() -> None:
        for i in range(12):
            await anyio.to_thread.run_sync((root / "memories/users/alice/person.md").write_text, f"version {i}\n")
            await anyio.sleep(0.05)

    async def race() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(writer, "one", one)
            group.start_soon(writer, "two", two)
            group.start_soon(person)

    servers.portal.call(race)
    log = (root / "memories/users/alice/log.md").read_text()
    for line in done["one"] + done["two"]:
        assert line in log
    assert len(done["one"]) == len(done["two"]) == 12
    for name in ("one", "two"):
        for i in range(12):
            assert (root / f"memories/users/alice/{name}-{i}.md").read_text().endswith(f"{name} fact {i}\n")
    assert (root / "memories/users/alice/person.md").read_text() == "version 11\n"
    with memfs.Vault.open(root) as vault:  # opening commits the person's last save as theirs
        assert vault.outside_edits() == []
        committed = vault.show("memories/users/alice/log.md", "HEAD").decode()
        assert all(line in committed for line in done["one"] + done["two"])
        authors = {r.author.name for r in vault.log("memories/users/alice/log.md")}
        assert {"one", "two"} <= authors


def test_propose_only_grant(servers: Servers, tmp_path: Path) -> None:
    """A client granted proposing only changes no memory: its writes wait in proposals/ for a person."""
    from memfs.integrations.mcp import grants

    assert grants([ALICE], propose_only=True).scopes()[0].propose
    with pytest.raises(InvalidArgumentError, match="read-only server proposes nothing"):
        grants([ALICE], read_only=True, propose_only=True)
    root = build_vault(tmp_path / "vault")
    proposer = servers.stdio("proposer", root, "--propose-only", "-n", ALICE, "--author", "cursor")
    assert WRITE_TOOLS <= set(proposer.tool_names())
    assert "a person reviews each before it counts" in (proposer.client.instructions or "")
    seats = (root / "memories/users/alice/window-seats.md").read_bytes()
    assert "It is a proposal" in proposer.ok("memory_create", path="/memories/jazz.md", file_text="Alice likes jazz.\n")
    proposer.ok("memory_str_replace", path="/memories/window-seats.md", old_str="window", new_str="aisle")
    proposer.ok("memory_delete", path="/memories/home-airport.md")
    assert (root / "memories/users/alice/window-seats.md").read_bytes() == seats
    assert (root / "memories/users/alice/home-airport.md").exists() and not (
        root / "memories/users/alice/jazz.md"
    ).exists()
    assert "No memories match" in proposer.ok("memory_search", query="jazz")
    with memfs.Vault.open(root, durable=False) as vault:
        assert sorted(p.op for p in vault.proposals()) == ["create", "delete", "update"]
        assert {p.proposed_by.split(" <")[0] for p in vault.proposals()} == {"cursor"}
        vault.accept(every=True)
        assert (root / "memories/users/alice/jazz.md").exists() and "aisle" in vault.read_bytes(
            "memories/users/alice/window-seats.md").decode()  # fmt: skip


def test_search_and_recall_give_structured_content_to_their_output_schema(alice: Remote) -> None:
    import jsonschema

    tools = {t.name: t for t in alice.run(alice.client.list_tools).tools}
    for name in ("memory_search", "memory_search_messages", "memory_recall"):
        assert tools[name].output_schema is not None and tools[name].output_schema["type"] == "object"
    assert tools["memory_view"].output_schema is None  # a text answer only

    def structured(name: str, **arguments: Any) -> Any:
        result = alice.run(alice.client.call_tool, name, arguments)
        assert not result.is_error, result.content
        jsonschema.validate(result.structured_content, tools[name].output_schema)
        return result.structured_content

    found = structured("memory_search", query="window seats")
    assert found["query"] == "window seats" and found["results"]
    assert found["results"][0]["path"] == "/memories/users/alice/window-seats.md" and found["results"][0]["score"] > 0
    assert structured("memory_search", query="zanzibar recipe")["results"] == []
    messages = structured("memory_search_messages", query="kyoto")["messages"]
    assert [(m["session"], m["position"], m["role"]) for m in messages] == [("trip", 1, "user")]
    recalled = structured("memory_recall", query="which seat does Alice like on flights", budget=1000)["memories"]
    assert recalled[0]["path"] == "/memories/users/alice/window-seats.md" and "window" in recalled[0]["text"].lower()
    assert structured("memory_recall", query="zanzibar recipe")["memories"] == []
    error = alice.run(alice.client.call_tool, "memory_search", {"query": "x", "k": 0})
    assert error.is_error and error.structured_content is None


def test_resources_carry_their_last_modified_time(alice: Remote, vault_dir: Path) -> None:
    resources = alice.run(alice.client.list_resources).resources
    assert resources and all(r.annotations is not None and r.annotations.last_modified for r in resources)
    seats = next(r for r in resources if r.uri.endswith("window-seats.md"))
    with memfs.Vault.open(vault_dir, durable=False, commit_edits=False) as vault:
        updated = vault.memories("users/alice").get("window-seats.md").updated
    assert seats.annotations.last_modified == updated  # type: ignore[union-attr]
