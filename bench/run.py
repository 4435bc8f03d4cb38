"""memfs benchmarks, each beside a baseline measured in the same run. JSON on stdout.

    python bench/run.py                  # 10,000 and 100,000 memories (the 100k build takes minutes)
    python bench/run.py --quick          # 2,000 memories, fewer repetitions: about a minute
    python bench/run.py --sizes 10000    # pick sizes

Progress goes to stderr; the result is also written to bench/results/latest.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

import memfs  # noqa: E402
from memfs.index import STOP_WORDS  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def say(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def stats(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
        "mean_ms": round(statistics.fmean(ordered), 2),
        "n": len(ordered),
    }


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


# -- SQLite FTS5, the baseline -------------------------------------------------------


def fts_query(question: str) -> str:
    words = [w for w in re.findall(r"\w+", question.lower()) if w not in STOP_WORDS]
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words)) or '""'


def fts_bench(folder: Path, items: list[dict[str, object]], questions: list[str], updates: int) -> dict[str, object]:
    db = sqlite3.connect(folder / "fts.db")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(title, body, tags, tokenize='porter unicode61')")
    start = time.perf_counter()
    with db:
        db.executemany(
            "INSERT INTO docs(rowid, title, body, tags) VALUES (?, ?, ?, ?)",
            [(i, m["title"], m["body"], " ".join(m["tags"])) for i, m in enumerate(items)],
        )  # type: ignore[arg-type]
    build = time.perf_counter() - start
    sql = "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs, 2.0, 1.0, 1.5) LIMIT 10"
    for q in questions[:20]:
        db.execute(sql, (fts_query(q),)).fetchall()
    hits, lat = 0, []
    for q in questions:
        start = time.perf_counter()
        rows = db.execute(sql, (fts_query(q),)).fetchall()
        lat.append((time.perf_counter() - start) * 1000)
        hits += bool(rows)
    visible = []
    for i in range(updates):
        token = f"zqfts{i}x"

        def update(i: int = i, token: str = token) -> None:
            with db:
                db.execute("UPDATE docs SET body = ? WHERE rowid = ?", (f"changed {token}", i * 7))
            assert db.execute(sql, (f'"{token}"',)).fetchall()

        visible.append(timed(update))
    db.close()
    return {"build_docs_per_s": round(len(items) / build), "search": stats(lat),
            "queries_with_hits": round(hits / len(questions), 3), "update_to_visible": stats(visible)}  # fmt: skip


# -- memfs ----------------------------------------------------------------------------


def list_folders(root: Path) -> int:
    """List every content folder (names only): what folder mtimes could let a change check skip."""
    names, stack = 0, [root / "memories", root / "sessions"]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    names += 1
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
        except FileNotFoundError:
            continue
    return names


def search_bench(size: int, n_questions: int, updates: int) -> dict[str, object]:
    folder = Path(tempfile.mkdtemp(prefix=f"memfs-bench-{size}-"))
    try:
        items = corpus.memories(size)
        questions = corpus.questions(n_questions)
        say(f"{size}: writing {size} files")
        corpus.write_vault(folder / "vault", items)
        say(f"{size}: first open (commits the files and builds the index)")
        start = time.perf_counter()
        vault = memfs.Vault.open(folder / "vault", durable=False)
        first_open = time.perf_counter() - start
        say(f"{size}: index build from scratch")
        vault.index.clear()
        start = time.perf_counter()
        vault.index.sync()
        build = time.perf_counter() - start
        for q in questions[:20]:
            vault.search(q)
        # Search with the change check at its default (2 s) and without it: blocks of back-to-back
        # searches (the rhythm of the earlier figure), alternating three times so that both modes
        # see the same changes in machine load. The check costs one stat per file per 2 s of wall
        # time, so each block with it starts with one search that stats every file.
        lat: dict[str, list[float]] = {"default": [], "off": [], "every": []}
        hits = 0
        for mode, freshness in [("off", None), ("default", 2.0)] * 3:
            say(f"{size}: {len(questions)} searches, freshness {freshness}")
            vault.freshness = freshness
            for q in questions:
                start = time.perf_counter()
                found = vault.search(q, k=10)
                lat[mode].append((time.perf_counter() - start) * 1000)
                hits += mode == "default" and bool(found)
        vault.freshness = 0.0
        say(f"{size}: {len(questions) // 4} searches, each checking every file first")
        for q in questions[: len(questions) // 4]:
            lat["every"].append(timed(lambda q=q: vault.search(q, k=10)))
        vault.freshness = 2.0
        full_check = [timed(lambda: vault.index.changes.step(0)) for _ in range(5)]
        listing = [timed(lambda: list_folders(folder / "vault")) for _ in range(5)]
        store = vault.memories(str(items[0]["namespace"]))
        slug = f"{items[0]['slug']}.md"
        visible, update_only = [], []
        for i in range(updates):
            token = f"zqmem{i}x"
            update_only.append(timed(lambda t=token: store.update(slug, body=f"changed {t}\n")))
            visible.append(update_only[-1] + timed(lambda t=token: vault.search(t)[0]))
        vault.close()
        say(f"{size}: reopening the unchanged vault")
        reopen = []
        for _ in range(5):
            start = time.perf_counter()
            memfs.Vault.open(folder / "vault").close()
            reopen.append((time.perf_counter() - start) * 1000)
        say(f"{size}: SQLite FTS5 on the same documents")
        baseline = fts_bench(folder, items, questions, updates)
        return {
            "memories": size,
            "memfs": {
                "first_open_s": round(first_open, 1), "build_docs_per_s": round(size / build),
                "search": stats(lat["default"]), "search_without_change_check": stats(lat["off"]),
                "search_checking_every_file": stats(lat["every"]),
                "change_check_of_every_file": stats(full_check), "listing_every_folder": stats(listing),
                "queries_with_hits": round(hits / (3 * len(questions)), 3),
                "update_then_search_visible": stats(visible), "update_alone": stats(update_only),
                "reopen_unchanged": stats(reopen),
            },
            "sqlite_fts5": baseline,
        }  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def write_bench(size: int, writes: int) -> dict[str, object]:
    """memfs writes (file + index pending + commit) beside `git add && git commit` in one repo."""
    folder = Path(tempfile.mkdtemp(prefix=f"memfs-write-{size}-"))
    try:
        items = corpus.memories(size, seed=2)
        corpus.write_vault(folder / "vault", items)
        vault = memfs.Vault.open(folder / "vault")  # durable: fsync on every write, the default
        store = vault.memories(str(items[0]["namespace"]))
        slug = f"{items[0]['slug']}.md"
        two_kb = ("Alice prefers window seats on long flights and aisle seats on short ones. " * 28)[:2000]
        say(f"write {size}: {writes} updates, {writes} adds")
        updates = [timed(lambda i=i: store.update(slug, body=f"{two_kb} v{i}\n")) for i in range(writes)]
        adds = [timed(lambda i=i: store.add(f"new memory {i} {two_kb}", title=f"bench add {i}")) for i in range(writes)]
        tools = memfs.MemoryTools(vault, str(items[0]["namespace"]))
        say(f"write {size}: tool str_replace and search")

        def replace(i: int) -> None:
            result = tools.call({"command": "str_replace", "path": f"/memories/{slug}",
                                 "old_str": f" v{i + writes - 1}\n", "new_str": f" v{i + writes}\n"})  # fmt: skip
            assert not result.is_error, result.text

        replaces = [timed(lambda i=i: replace(i)) for i in range(writes)]
        questions = corpus.questions(100)
        tool_search = [timed(lambda q=q: tools.run("search", query=q)) for q in questions]
        vault.close()
        say(f"write {size}: reopening the unchanged vault, beside `git status`")
        reopen = [timed(lambda: memfs.Vault.open(folder / "vault").close()) for _ in range(5)]
        status = [timed(lambda: subprocess.run(["git", "status", "--porcelain"], cwd=folder / "vault", check=True,
                                               capture_output=True)) for _ in range(3)]  # fmt: skip
        say(f"write {size}: bare git add && git commit")
        target = folder / "vault" / f"memories/{items[1]['namespace']}/{items[1]['slug']}.md"
        git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
        bare = []
        for i in range(max(10, writes // 3)):
            target.write_text(f"{two_kb} git {i}\n")

            def commit(i: int = i) -> None:
                subprocess.run([*git, "add", str(target)], cwd=folder / "vault", check=True, capture_output=True)
                subprocess.run([*git, "commit", "-qm", f"bench {i}"], cwd=folder / "vault", check=True,
                               capture_output=True)  # fmt: skip

            bare.append(timed(commit))
        return {"memories": size, "memfs_update": stats(updates), "memfs_add": stats(adds),
                "tool_str_replace_2kb": stats(replaces), "tool_search": stats(tool_search),
                "git_add_commit": stats(bare), "reopen_unchanged": stats(reopen), "git_status": stats(status),
                "load_average": os.getloadavg()}  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def watch_bench(edits: int, storm: int) -> dict[str, object]:
    """A person's edit to searchable with the watcher running; a burst of files copied in."""
    folder = Path(tempfile.mkdtemp(prefix="memfs-watch-"))
    try:
        items = corpus.memories(1000, seed=3)
        corpus.write_vault(folder / "vault", items)
        vault = memfs.Vault.open(folder / "vault", person="Bench Person <person@example.com>")
        target = folder / "vault" / f"memories/{items[0]['namespace']}/{items[0]['slug']}.md"
        original = target.read_text()
        latency = []
        with vault.watch():  # the defaults: index after 0.2 s of quiet, commit after 2 s
            say(f"watch: {edits} edits")
            for i in range(edits):
                token = f"zqwatch{i}x"
                start = time.perf_counter()
                target.write_text(original + f"\n{token}\n")
                while not vault.search(token):
                    time.sleep(0.005)
                latency.append((time.perf_counter() - start) * 1000)
            say(f"watch: copying {storm} files in")
            bulk = folder / "bulk"
            corpus.write_vault(bulk, corpus.memories(storm, seed=4))
            start = time.perf_counter()
            shutil.copytree(bulk / "memories", folder / "vault" / "memories" / "imported")
            while vault.index.doc_count() < 1000 + storm or vault.history.status():
                time.sleep(0.05)
            absorbed = time.perf_counter() - start
        commits = [r for r in vault.log(limit=50) if r.trailers.get("Memfs-Op") == "reconcile"]
        vault.close()
        return {"edit_to_searchable": stats(latency), "storm_files": storm,
                "storm_absorbed_s": round(absorbed, 2), "person_commits": len(commits)}  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def hostile_bench(reps: int, messages: int) -> dict[str, object]:
    """Inputs made to stall memfs (docs/security.md, "Bounded work"), each on a vault of 200 memories.

    A memory at the size limit repeating one word (searched, injected, searched through the tool),
    the longest query memfs accepts (plain words, and Whoosh syntax), and the first open of a vault
    holding a transcript of ``messages`` hand-written messages (past the entry budget).
    """
    from memfs.engine import MAX_CONTENT_BYTES
    from memfs.index import MAX_QUERY_CHARS
    from memfs.transcript import FORMAT, new_head, render_entry

    folder = Path(tempfile.mkdtemp(prefix="memfs-hostile-"))
    try:
        vault = memfs.Vault.open(folder / "vault", create=True, durable=False)
        store = vault.memories("users/alice")
        with vault.batch("corpus"):
            for item in corpus.memories(200, seed=3):
                store.add(str(item["body"]), title=str(item["title"]))
        plain = [timed(lambda: vault.search("apple pie", k=10)) for _ in range(reps)]
        store.add(("apple " * (MAX_CONTENT_BYTES // 6))[: MAX_CONTENT_BYTES - 400], title="Fruit")
        store.add("Alice bakes apple pie on Sundays.", title="Baking")
        manager = memfs.LongTermMemory(vault, stores=["users/alice"])
        tools = memfs.MemoryTools(vault, "users/alice")
        question = [{"role": "user", "content": "What do I do with apples?"}]
        vault.search("apple")
        say(f"hostile: {reps} searches hitting a {MAX_CONTENT_BYTES // 1024} KB repeated-word memory")
        search = [timed(lambda: vault.search("apple pie", k=10)) for _ in range(reps)]
        inject = [timed(lambda: manager.context_for(question)) for _ in range(reps)]
        tool = [timed(lambda: tools.run("search", query="apple pie")) for _ in range(reps)]
        words = " ".join(f"w{i}" for i in range(2000))[:MAX_QUERY_CHARS]
        syntax = " OR ".join(f"w{i}" for i in range(2000))[:MAX_QUERY_CHARS]
        longest = [timed(lambda: vault.search(words)) for _ in range(reps)]
        longest_syntax = [timed(lambda: vault.search(syntax)) for _ in range(reps)]
        vault.close()
        say(f"hostile: first open of a vault with a {messages}-message transcript written by hand")
        head = new_head({"memfs": FORMAT, "session_id": "long"}).encode()
        entries = (render_entry({"role": "user", "content": f"message {n} about the trip"}, n)
                   for n in range(1, messages + 1))  # fmt: skip
        (folder / "vault" / "sessions").mkdir(exist_ok=True)
        (folder / "vault" / "sessions" / "long.md").write_bytes(head + b"".join(entries))
        start = time.perf_counter()
        memfs.Vault.open(folder / "vault", durable=False).close()
        long_open = time.perf_counter() - start
        return {
            "search_without_the_big_memory": stats(plain), "search_hitting_1mib_repeated_word": stats(search),
            "context_for_hitting_it": stats(inject), "tool_search_hitting_it": stats(tool),
            "longest_query_words": stats(longest), "longest_query_syntax": stats(longest_syntax),
            "transcript_messages": messages, "first_open_with_that_transcript_s": round(long_open, 1),
        }  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def machine() -> dict[str, object]:
    versions = {}
    for package in ("whoosh-reloaded", "GitPython", "PyYAML", "watchdog"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version, "git": git, "packages": versions}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2,000 memories and fewer repetitions")
    parser.add_argument("--sizes", type=int, nargs="+", help="vault sizes for the search benchmark")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--write-sizes", type=int, nargs="+", help="vault sizes for the write benchmark")
    parser.add_argument("--ablation", action="store_true", help="LoCoMo: memfs with each retrieval rule left out too")
    parts = ["search", "hostile", "write", "watch", "sessions", "locomo", "extraction"]
    parser.add_argument("--only", choices=parts, nargs="+")
    args = parser.parse_args()
    sizes = args.sizes or ([2000] if args.quick else [10_000, 100_000])
    only = set(args.only or parts)
    result: dict[str, object] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "machine": machine(),
        "corpus": "LoCoMo turns stitched into 100-400 word memories; LoCoMo questions (categories 1-4)"
        if corpus.DATA.is_dir() else "built-in vocabulary (LoCoMo data not found)",
    }  # fmt: skip
    if "search" in only:
        result["search"] = [search_bench(n, args.queries, 10 if args.quick else 50) for n in sizes]
    if "hostile" in only:
        result["hostile"] = hostile_bench(20 if args.quick else 50, 20_000 if args.quick else 100_000)
    if "write" in only:
        write_sizes = args.write_sizes or ([2000] if args.quick else [10_000, 100_000])
        result["write"] = [write_bench(n, 30 if args.quick else 100) for n in write_sizes]
    if "watch" in only:
        result["watch"] = watch_bench(10 if args.quick else 30, 500 if args.quick else 5000)
    if "sessions" in only:
        import sessions as session_benchmarks

        say("sessions: MarkdownSession beside SQLiteSession")
        result["sessions"] = session_benchmarks.session_bench([100, 2000] if args.quick else [100, 10_000],
                                                              10 if args.quick else 30)  # fmt: skip
        say("sessions: apply_management on long transcripts")
        result["managers"] = session_benchmarks.manager_bench([100, 2000] if args.quick else [100, 10_000],
                                                              10 if args.quick else 30)  # fmt: skip
        say("sessions: the first managed append on a long unmanaged session")
        result["first_managed_append"] = session_benchmarks.first_managed_append_bench(
            10_000 if args.quick else 100_000, 1 if args.quick else 3
        )
    if "locomo" in only:
        import sessions as session_benchmarks

        say("locomo: message retrieval beside bm25s")
        variants = session_benchmarks.locomo_ablation() if args.ablation else None
        result["locomo"] = session_benchmarks.locomo_bench(variants)
    if "extraction" in only:
        import sessions as session_benchmarks

        say("extraction: rule-based extractor on LoCoMo, against the observation annotations")
        result["extraction"] = session_benchmarks.extraction_bench()
    text = json.dumps(result, indent=2)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.json").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
