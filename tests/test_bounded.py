"""Bounded work: no file, body, transcript or query can stall a turn or exhaust memory.

Each hostile input runs through the real components (Whoosh, git, watchdog, the CLI), and the
memory it took is measured: a subprocess reports its peak resident size (``ru_maxrss``), or
``tracemalloc`` its peak allocation. Nothing here is timed; bench/run.py measures the speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import err

import memfs
from memfs import _fs, transcript
from memfs.cli import cli
from memfs.engine import MAX_CONTENT_BYTES
from memfs.indexing import MAX_INDEXED_BYTES, MAX_INDEXED_ENTRIES, MAX_TRANSCRIPT_BYTES
from memfs.searcher import MAX_QUERY_CHARS, MAX_QUERY_TERMS, SNIPPET_SCAN_CHARS, make_snippet
from memfs.tools import ECHO_CHARS, MemoryTools

HUGE = 2 * 1024**3  # a sparse file this large takes no disk, but reading it whole takes 2 GiB of memory
PEAK_MB = 400  # a child process doing everything below stays far under this (measured: ~100 MB)


def run_child(code: str, *args: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; its JSON result, with its peak resident size in MB."""
    script = textwrap.dedent(code) + textwrap.dedent("""
        import resource
        result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env,
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def sparse(path: Path, size: int = HUGE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(size)


def git_files(root: Path) -> list[str]:
    return subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split()


# -- a huge sparse file ------------------------------------------------------------------


_SPARSE_CHILD = """
    import json, sys, time
    from pathlib import Path
    from click.testing import CliRunner
    import memfs
    from memfs.cli import cli
    from memfs.tools import MemoryTools

    root = Path(sys.argv[1])
    result = {}
    with memfs.Vault.open(root, person="Pat Person <pat@example.com>") as vault:  # reconciles, commits edits
        store = vault.memories("users/alice")
        result["search"] = [h.path for h in vault.search("window seats")]
        result["messages"] = [h.session for h in vault.search_messages("hello")]
        result["problems"] = sorted(p.path for p in vault.problems())
        result["doctor"] = [[f.severity, f.check, f.message] for f in vault.doctor()]
        result["list"] = [m.name for m in store.list()]
        for call in ("get", "read_bytes"):
            try:
                store.get("huge.md") if call == "get" else vault.read_bytes("memories/users/alice/huge.md")
                result[call] = "read"
            except memfs.FileTooLargeError as exc:
                result[call] = [exc.size, exc.limit]
        result["commit"] = vault.commit()
        tools = MemoryTools(vault, "users/alice")
        result["view"] = tools.call({"command": "view", "path": "/memories/huge.md"}).text
        result["delete"] = tools.call({"command": "delete", "path": "/memories/huge.md"}).text
        watcher = vault.watch(index_delay=0.05, commit_delay=0.2)
        try:
            (root / "memories/users/alice/later.md").write_text("Alice learns Japanese.\\n")
            with open(root / "memories/users/alice/huge.md", "r+b") as handle:
                handle.seek(2 * 1024**3 - 1)
                handle.write(b"x")  # an edit of the huge file: the watcher sees it, never reads it
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not vault.search("japanese"):
                time.sleep(0.05)
            while time.monotonic() < deadline and "memories/users/alice/later.md" in vault.outside_edits():
                time.sleep(0.05)
            result["watched"] = [h.path for h in vault.search("japanese")]
            result["left"] = vault.outside_edits()
        finally:
            watcher.stop()
    runner = CliRunner()
    shown = runner.invoke(cli, ["show", "users/alice/huge.md", "--vault", str(root)])
    result["show"] = [shown.exit_code, shown.output]
    raw = runner.invoke(cli, ["session", "big", "--raw", "--vault", str(root)])
    result["raw"] = [raw.exit_code, len(raw.output)]
    doctor = runner.invoke(cli, ["doctor", "--vault", str(root)])
    result["cli_doctor"] = doctor.output
"""


@pytest.mark.slow
def test_a_huge_sparse_file_costs_a_stat_everywhere(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.memories("users/alice").add("Alice prefers window seats.", title="Window seats")
        vault.session("big").append([{"role": "user", "content": "hello there"}])
    sparse(root / "memories/users/alice/huge.md")
    sparse(root / "sessions/huge.md")

    result = run_child(_SPARSE_CHILD, str(root))

    assert result["peak_mb"] < PEAK_MB  # reading either file whole would take 2,048 MB
    assert result["search"] == ["memories/users/alice/window-seats.md"]
    assert result["messages"] == ["sessions/big.md"]
    assert result["problems"] == ["memories/users/alice/huge.md", "sessions/huge.md"]
    said = {message for _, _, message in result["doctor"]}
    assert any(m.startswith("memories/users/alice/huge.md: 2,147,483,648 bytes, larger than") for m in said)
    assert any(m.startswith("sessions/huge.md: 2,147,483,648 bytes") and "not searchable" in m for m in said)
    assert not any("huge.md" in m and "commit` commits it" in m for m in said)  # never offered to commit
    assert result["list"] == ["window-seats.md"]
    assert result["get"] == result["read_bytes"] == [HUGE, MAX_INDEXED_BYTES]
    assert result["commit"] is None
    assert "too large to show" in result["view"]
    assert "larger than the 4,194,304 bytes memory tools read" in result["delete"]
    assert "Nothing was changed" in result["delete"]
    assert result["watched"] == ["memories/users/alice/later.md"]  # the watcher went on working
    assert result["left"] == ["memories/users/alice/huge.md", "sessions/huge.md"]  # the huge files: left alone
    assert result["show"][0] == 1 and "larger than the 4,194,304 bytes memfs reads" in result["show"][1]
    assert result["raw"][0] == 0 and result["raw"][1] > 0
    assert "huge.md" in result["cli_doctor"]
    assert os.path.getsize(root / "memories/users/alice/huge.md") == HUGE  # nothing was deleted or cut
    tracked = git_files(root)
    assert "memories/users/alice/later.md" in tracked
    assert not any(p.endswith("huge.md") for p in tracked)


def test_read_file_stats_before_it_reads(tmp_path: Path) -> None:
    sparse(tmp_path / "big", HUGE)
    tracemalloc.start()
    try:
        with pytest.raises(memfs.FileTooLargeError) as raised:
            _fs.read_file(tmp_path / "big", limit=1024, name="memories/big.md")
        assert not _fs.holds(tmp_path / "big", b"x" * 10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024
    assert (raised.value.path, raised.value.size, raised.value.limit) == ("memories/big.md", HUGE, 1024)
    assert "memories/big.md is 2,147,483,648 bytes" in str(raised.value)
    (tmp_path / "small").write_bytes(b"abc")
    assert _fs.read_file(tmp_path / "small", limit=3) == b"abc"
    assert _fs.read_file(tmp_path / "missing", limit=3) is None
    (tmp_path / "link").symlink_to(tmp_path / "small")
    assert _fs.read_file(tmp_path / "link", limit=3) is None  # a link reads as no file
    assert _fs.read_head(tmp_path / "big", 16) == b"\0" * 16
    assert _fs.holds(tmp_path / "small", b"abc") and not _fs.holds(tmp_path / "small", b"ab")
    assert _fs.holds(tmp_path / "missing", None) and not _fs.holds(tmp_path / "small", None)


def test_reads_through_the_path_gate_are_bounded_too(tmp_path: Path) -> None:
    """The gate's read checks the size before it reads, and still refuses links on the way."""
    (tmp_path / "memories/a").mkdir(parents=True)
    sparse(tmp_path / "memories/a/big.md", HUGE)
    (tmp_path / "memories/a/small.md").write_bytes(b"abc")
    tracemalloc.start()
    try:
        with pytest.raises(memfs.FileTooLargeError) as raised:
            _fs.read_vault_file(tmp_path, "memories/a/big.md", limit=1024)
        assert not _fs.vault_file_holds(tmp_path, "memories/a/big.md", b"x" * 10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024
    assert (raised.value.path, raised.value.size, raised.value.limit) == ("memories/a/big.md", HUGE, 1024)
    found = _fs.read_vault_file(tmp_path, "memories/a/small.md", limit=3)
    assert found is not None and found[0] == b"abc"
    assert _fs.read_vault_head(tmp_path, "memories/a/big.md", 16) == b"\0" * 16
    assert _fs.read_vault_file(tmp_path, "memories/a/missing.md", limit=3) is None
    (tmp_path / "memories/link").symlink_to(tmp_path / "memories/a")
    with pytest.raises(memfs.LinkError):
        _fs.read_vault_file(tmp_path, "memories/link/small.md", limit=3)
    assert not _fs.vault_file_holds(tmp_path, "memories/link/small.md", b"abc")
    assert _fs.vault_file_holds(tmp_path, "memories/a/missing.md", None)


def test_a_planted_huge_pending_list_is_ignored(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.memories("users/alice").add("Alice prefers window seats.", title="Window seats")
    sparse(root / ".memfs/pending")  # as a received vault could carry it
    result = run_child("""
        import json, sys
        import memfs
        result = {}
        with memfs.Vault.open(sys.argv[1]) as vault:
            result["search"] = [h.title for h in vault.search("window")]
    """, str(root))  # fmt: skip
    assert result["search"] == ["Window seats"]
    assert result["peak_mb"] < PEAK_MB


# -- a repeated-word memory at the size limit ------------------------------------------------


def at_the_limit(word: str = "apple") -> str:
    """A body that makes the memory file exactly as large as memfs stores."""
    return (f"{word} " * (MAX_CONTENT_BYTES // (len(word) + 1)))[: MAX_CONTENT_BYTES - 400]


def test_a_repeated_word_memory_at_the_limit_is_searched_and_injected(vault: memfs.Vault) -> None:
    store = vault.memories("users/alice")
    big = store.add(at_the_limit(), title="Fruit")
    assert (vault.root / big.path).stat().st_size > MAX_CONTENT_BYTES - 1024
    store.add("Alice bakes apple pie on Sundays.", title="Baking")
    manager = memfs.LongTermMemory(vault, stores=["users/alice"])
    tools = MemoryTools(vault, "users/alice")
    vault.search("apple")  # the index caught up: what follows is the search itself

    tracemalloc.start()
    try:
        hits = vault.search("apple")
        block = manager.context_for([{"role": "user", "content": "What do I do with apples?"}])
        answer = tools.run("search", query="apple")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert peak < 16 * 1024 * 1024  # the body is 1 MiB; it is never copied whole more than a few times
    fruit = next(h for h in hits if h.title == "Fruit")
    assert fruit.snippet.startswith("**apple** **apple**") and fruit.snippet.endswith(" …")
    assert len(fruit.snippet) < 500
    assert 'title="Fruit"' in block and len(block) <= manager.budget
    assert "Fruit" in answer and len(answer) < 2000


def test_snippets_are_bounded_whatever_the_body() -> None:
    stems = {"appl"}
    one_word = make_snippet("apple" * 200_000, stems)  # a megabyte without a space
    assert len(one_word) < 250 and one_word.endswith("…")
    late = make_snippet("pear " * SNIPPET_SCAN_CHARS + "apple", stems)  # past what is scanned
    assert "**" not in late and late.endswith(" …")
    spaced = make_snippet(" " * 500_000 + "apple", stems)  # white space counts toward the scan too
    assert spaced == ""
    punct = make_snippet("apple" + "!" * 100_000, stems)  # a long word is cut before it is bolded
    assert punct.startswith("**apple**!!!") and len(punct) < 250
    best = make_snippet("pear " * 100 + "apple pie and apple tart " + "plum " * 100, stems)
    assert best.startswith("… ") and "**apple** pie and **apple** tart" in best and best.endswith(" …")
    whole = make_snippet("I like apple pie.", stems)
    assert whole == "I like **apple** pie."


# -- transcripts over the budget -------------------------------------------------------------


def write_transcript(path: Path, count: int, *, start: int = 1) -> None:
    head = transcript.new_head({"memfs": transcript.FORMAT, "session_id": "long"})
    entries = (transcript.render_entry({"role": "user", "content": f"note {n} word{n}x"}, n)
               for n in range(start, start + count))  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(head.encode() + b"".join(entries))


@pytest.mark.slow
def test_a_transcript_over_the_entry_budget_indexes_its_last_entries(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    memfs.Vault.open(root, create=True, durable=False).close()
    count = MAX_INDEXED_ENTRIES + 40
    write_transcript(root / "sessions/long.md", count)

    result = run_child("""
        import json, sys
        import memfs
        result = {}
        with memfs.Vault.open(sys.argv[1], durable=False) as vault:
            result["first"] = [h.position for h in vault.search_messages("word1x")]
            # a message is also found, lower, through a neighbour's words: the top hit is its own
            result["kept"] = [h.position for h in vault.search_messages("word41x")][:1]
            result["last"] = [h.position for h in vault.search_messages("word%dx" % int(sys.argv[2]))][:1]
            result["doctor"] = [[f.severity, f.check, f.message] for f in vault.doctor()]
    """, str(root), str(count))  # fmt: skip

    assert result["peak_mb"] < PEAK_MB
    assert result["first"] == [] and result["kept"] == [41] and result["last"] == [count]
    assert ["warning", "limits", f"sessions/long.md: {count:,} entries; message search covers the last "
            f"{MAX_INDEXED_ENTRIES:,} (entries 1 to 40 are not indexed)"] in result["doctor"]  # fmt: skip

    with memfs.Vault.open(root, durable=False) as vault:
        session = vault.session("long")
        session.append([{"role": "user", "content": "newest word99999x"}])  # the window moves on by one

        def top(word: str) -> int | None:
            hits = vault.search_messages(word)
            return hits[0].position if hits else None

        assert 41 not in [h.position for h in vault.search_messages("word41x")]
        assert top("word42x") == 42
        assert top("word99999x") == count + 1
        session.pop()
        session.pop()  # a pop brings older entries back into the window

        def positions() -> dict[str, int | None]:
            return {w: top(w) for w in ("word39x", "word40x", "word41x", "word42x", "word99999x")}

        incremental = positions()
        assert incremental == {"word39x": None, "word40x": 40, "word41x": 41, "word42x": 42, "word99999x": None}
        vault.reindex(full=True)
        assert positions() == incremental


def test_a_transcript_over_the_byte_budget_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.session("chat").append([{"role": "user", "content": "hello there"}])
        path = vault.root / "sessions/chat.md"
        with open(path, "r+b") as handle:  # a person pasted a log into it: past the budget, sparse
            handle.truncate(MAX_TRANSCRIPT_BYTES + 1)
        vault.freshness = 0  # the next search looks at every file
        assert vault.search_messages("hello") == []
        assert [(p.path, "its messages are not searchable" in p.reason) for p in vault.problems()] == [
            ("sessions/chat.md", True)
        ]


def test_parse_reads_only_the_last_entries() -> None:
    head = transcript.new_head({"memfs": transcript.FORMAT, "session_id": "s"}).encode()
    data = head + b"".join(transcript.render_entry({"role": "user", "content": f"m{n}"}, n) for n in range(1, 51))
    parsed = transcript.parse(data, last=5)
    assert [e.n for e in parsed.entries] == [46, 47, 48, 49, 50]
    assert parsed.metadata["session_id"] == "s"
    assert [e.n for e in transcript.parse(data, last=500).entries] == list(range(1, 51))


# -- long queries ----------------------------------------------------------------------------


def test_a_query_over_the_cap_is_refused_without_being_quoted(vault: memfs.Vault) -> None:
    vault.memories("users/alice").add("Alice prefers window seats.", title="Window seats")
    vault.session("chat").append([{"role": "user", "content": "window seats please"}])
    long = "window " * 150_000  # about a megabyte
    for search in (vault.search, vault.search_messages, vault.memories("users/alice").search):
        with pytest.raises(memfs.QueryTooLongError) as raised:
            search(long)
        assert "window" not in str(raised.value) and f"{MAX_QUERY_CHARS:,}" in str(raised.value)
    assert isinstance(raised.value, ValueError)  # an InvalidArgumentError, like every bad argument
    result = CliRunner().invoke(cli, ["search", long[:20_000], "--vault", str(vault.root)])
    assert result.exit_code == 1 and "window window" not in result.output and "4,096" in result.output


def test_the_longest_query_searches_its_first_words(vault: memfs.Vault) -> None:
    store = vault.memories("users/alice")
    store.add("Alice prefers window seats.", title="Window seats")
    store.add("Alice is allergic to peanuts.", title="Allergy")
    filler = [f"w{i}" for i in range(MAX_QUERY_TERMS - 1)]
    first = " ".join(["window", *filler, "peanuts"])  # peanuts is the 33rd distinct word
    assert [h.title for h in vault.search(first)] == ["Window seats"]
    syntax = " OR ".join(f"w{i}" for i in range(1000))[:MAX_QUERY_CHARS]  # too many words to parse
    tracemalloc.start()
    try:
        assert vault.search(syntax) == []
        assert vault.search_messages(syntax) == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024


# -- tools never echo their input --------------------------------------------------------------


def test_tool_answers_quote_only_a_short_prefix_of_any_argument(vault: memfs.Vault) -> None:
    tools = MemoryTools(vault, "users/alice")
    tools.run("create", path="/memories/x.md", file_text="Alice likes tea.\n")
    megabyte = "q" * (1024 * 1024)
    answers = [
        err(tools, "search", query=megabyte),
        tools.run("search", query="zz" + "q" * 3000),  # under the cap, nothing matches: quoted short
        err(tools, "str_replace", path="/memories/x.md", old_str=megabyte, new_str="y"),
        err(tools, megabyte),
        err(tools, "view", path="/memories/x.md", **{megabyte: 1}),
        err(tools, "search", query="tea", k=10**5000),
        err(tools, "view", path="/memories/x.md", view_range=[10**5000, 1]),
        err(tools, "insert", path="/memories/x.md", insert_line=10**5000, insert_text="a"),
        err(tools, "view", path="/memories/x.md", view_range=[megabyte, 1]),
        tools.dispatch("memory_" + megabyte, {}).text,
    ]
    for text in answers:
        assert len(text) < 600, text[:200]
        assert "q" * (ECHO_CHARS + 1) not in text
    assert "1,048,576 characters" in answers[2]
    assert "an integer of 16,610 bits" in answers[5]
