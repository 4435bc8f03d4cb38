"""memfs benchmarks, each beside a baseline measured in the same run. JSON on stdout.

    python bench/run.py                  # 10,000 and 100,000 memories (the 100k build takes minutes)
    python bench/run.py --quick          # 2,000 memories, fewer repetitions: about a minute
    python bench/run.py --sizes 10000    # pick sizes
    python bench/run.py --only search --corpus common --cache --searches-only
                                         # search beside FTS5 only, vaults kept in bench/cache/
    python bench/run.py --only write --write-sizes 100000 --cache
                                         # writes and reopening at 100k; the vault is built once

Progress goes to stderr; the result is also written to bench/results/latest.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
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
from memfs.analysis import STOP_WORDS  # noqa: E402
from memfs.index import SCHEMA_VERSION  # noqa: E402

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


FTS_SQL = "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs, 2.0, 1.0, 1.5) LIMIT 10"


def fts_open(folder: Path, items: list[dict[str, object]]) -> tuple[sqlite3.Connection, float]:
    """An FTS5 table of ``items`` (title, body, tags weighted like memfs's fields), and its build time in s."""
    db = sqlite3.connect(folder / "fts.db")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(title, body, tags, tokenize='porter unicode61')")
    start = time.perf_counter()
    with db:
        db.executemany(
            "INSERT INTO docs(rowid, title, body, tags) VALUES (?, ?, ?, ?)",
            [(i, m["title"], m["body"], " ".join(m["tags"])) for i, m in enumerate(items)],
        )  # type: ignore[arg-type]
    return db, time.perf_counter() - start


def fts_search(db: sqlite3.Connection, question: str) -> list[tuple[int]]:
    """The top 10 rowids for an OR of the question's words."""
    return db.execute(FTS_SQL, (fts_query(question),)).fetchall()


def fts_bench(db: sqlite3.Connection, build: float, size: int, lat: list[float], hits: int,
              updates: int) -> dict[str, object]:  # fmt: skip
    """FTS5's figures: its search latencies ``lat`` (measured beside memfs's), then ``updates`` updates."""
    visible = []
    for i in range(updates):
        token = f"zqfts{i}x"

        def update(i: int = i, token: str = token) -> None:
            with db:
                db.execute("UPDATE docs SET body = ? WHERE rowid = ?", (f"changed {token}", i * 7))
            assert db.execute(FTS_SQL, (f'"{token}"',)).fetchall()

        visible.append(timed(update))
    db.close()
    return {"build_docs_per_s": round(size / build), "search": stats(lat),
            "queries_with_hits": round(hits / len(lat), 3),
            "update_to_visible": stats(visible) if visible else None}  # fmt: skip


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


CACHE = Path(__file__).resolve().parent / "cache"


def bench_vault(folder: Path, name: str, size: int, items: list[dict[str, object]], cache: bool, *,
                seed: int = 1) -> float | None:  # fmt: skip
    """A vault of ``items`` (made with ``seed``) at ``folder/vault``, opened once (files committed, index built).

    Returns how long that first open took, or None when it was copied from ``bench/cache/``
    (``cache``: built there on the first run, reused by later ones, keyed by corpus, seed,
    size, corpus version and index schema). The first open does not fsync (the files and the
    commit are the same; what is measured afterwards opens the vault as it likes).
    """
    kept = CACHE / f"{name}-seed{seed}-{size}-{corpus.VERSION}-index{SCHEMA_VERSION}"
    if cache and (kept / "done").exists():
        say(f"{name} {size}: copying the cached vault from {kept}")
        copy_tree(kept / "vault", folder / "vault")
        return None
    say(f"{name} {size}: writing {size} files")
    corpus.write_vault(folder / "vault", items)
    say(f"{name} {size}: first open (commits the files and builds the index)")
    start = time.perf_counter()
    memfs.Vault.open(folder / "vault", durable=False).close()
    first_open = time.perf_counter() - start
    if cache:
        shutil.rmtree(kept, ignore_errors=True)
        kept.mkdir(parents=True)
        copy_tree(folder / "vault", kept / "vault")
        (kept / "done").write_text(f"first open {first_open:.1f} s\n")
    return first_open


def copy_tree(src: Path, dst: Path) -> None:
    """A copy keeping every file's mtime to the nanosecond (so the index sees nothing changed) and links as links."""
    if shutil.which("cp") and platform.system() == "Linux":  # GNU cp: several times copytree's speed
        subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    else:
        shutil.copytree(src, dst, symlinks=True)


def search_bench(size: int, n_questions: int, updates: int, name: str = "locomo", *, cache: bool = False,
                 searches_only: bool = False) -> dict[str, object]:  # fmt: skip
    """memfs search beside SQLite FTS5 on one corpus (``name`` in corpus.CORPORA) of ``size`` memories."""
    folder = Path(tempfile.mkdtemp(prefix=f"memfs-bench-{name}-{size}-"))
    try:
        make_memories, make_questions = corpus.CORPORA[name]
        items = make_memories(size)
        questions = make_questions(n_questions)
        first_open = bench_vault(folder, name, size, items, cache)
        vault = memfs.Vault.open(folder / "vault", durable=False)
        build = None
        if not searches_only:
            say(f"{name} {size}: index build from scratch")
            vault.index.clear()
            start = time.perf_counter()
            vault.index.sync()
            build = time.perf_counter() - start
        say(f"{name} {size}: SQLite FTS5 on the same documents")
        db, fts_build = fts_open(folder, items)
        for q in questions[:20]:
            vault.search(q)
            fts_search(db, q)
        # Search with the change check at its default (2 s), without it, and FTS5: blocks of
        # back-to-back searches (the rhythm of the earlier figure), alternating three times so that
        # all see the same changes in machine load. The check costs one stat per file per 2 s of
        # wall time, so each block with it starts with one search that stats every file.
        lat: dict[str, list[float]] = {"default": [], "off": [], "every": [], "fts": []}
        hits = fts_hits = 0
        for mode, freshness in [("off", None), ("default", 2.0), ("fts", None)] * 3:
            say(f"{name} {size}: {len(questions)} searches, {mode}")
            if mode == "fts":
                for q in questions:
                    start = time.perf_counter()
                    rows = fts_search(db, q)
                    lat[mode].append((time.perf_counter() - start) * 1000)
                    fts_hits += bool(rows)
                continue
            vault.freshness = freshness
            for q in questions:
                start = time.perf_counter()
                found = vault.search(q, k=10)
                lat[mode].append((time.perf_counter() - start) * 1000)
                hits += mode == "default" and bool(found)
        if searches_only:
            vault.close()
            return {"corpus": name, "memories": size, "first_open_s": first_open and round(first_open, 1),
                    "memfs": {"search": stats(lat["default"]), "search_without_change_check": stats(lat["off"]),
                              "queries_with_hits": round(hits / (3 * len(questions)), 3)},
                    "sqlite_fts5": fts_bench(db, fts_build, size, lat["fts"], fts_hits, 0)}  # fmt: skip
        vault.freshness = 0.0
        say(f"{name} {size}: {len(questions) // 4} searches, each checking every file first")
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
        say(f"{name} {size}: reopening the unchanged vault")
        reopen = []
        for _ in range(5):
            start = time.perf_counter()
            memfs.Vault.open(folder / "vault").close()
            reopen.append((time.perf_counter() - start) * 1000)
        baseline = fts_bench(db, fts_build, size, lat["fts"], fts_hits, updates)
        return {
            "corpus": name, "memories": size,
            "memfs": {
                "first_open_s": first_open and round(first_open, 1),
                "build_docs_per_s": round(size / build) if build else None,
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


def write_bench(size: int, writes: int, *, cache: bool = False) -> dict[str, object]:
    """memfs writes (file + index pending + commit) beside `git add && git commit` in one repo.

    Then the reopen of the unchanged vault beside `git status` on the same folder, in wall and
    CPU time (the CPU time of `git status` is its process's, from the children's rusage).
    """
    folder = Path(tempfile.mkdtemp(prefix=f"memfs-write-{size}-"))
    try:
        items = corpus.memories(size, seed=2)
        bench_vault(folder, "write", size, items, cache, seed=2)
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
        reopen, reopen_cpu, status, status_cpu = [], [], [], []
        git_status = ["git", "status", "--porcelain"]
        subprocess.run(git_status, cwd=folder / "vault", check=True, capture_output=True)  # git's index: stat data
        for _ in range(5):  # alternating, so both see the same load
            cpu = time.process_time()
            reopen.append(timed(lambda: memfs.Vault.open(folder / "vault").close()))
            reopen_cpu.append((time.process_time() - cpu) * 1000)
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            status.append(timed(lambda: subprocess.run(git_status, cwd=folder / "vault", check=True,
                                                       capture_output=True)))  # fmt: skip
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            status_cpu.append((after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime) * 1000)
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
                "reopen_unchanged_cpu": stats(reopen_cpu), "git_status_cpu": stats(status_cpu),
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
    from memfs.searcher import MAX_QUERY_CHARS
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
        screening = screening_bench(reps)
        with memfs.Vault.open(folder / "vault", durable=False) as again:
            tools = memfs.MemoryTools(again, "users/alice")
            bomb = "---\na: &a [x, x, x, x, x, x, x, x, x]\n"
            for key, prev in ("b", "a"), ("c", "b"), ("d", "c"), ("e", "d"):  # 9^5 nodes once expanded
                bomb += f"{key}: &{key} [{', '.join([f'*{prev}'] * 9)}]\n"
            bomb += "---\nboom\n"
            yaml_bomb = [timed(lambda: tools.run("create", path="/memories/bomb.md", file_text=bomb))
                         for _ in range(reps)]  # fmt: skip
            small = "---\ntitle: x\n---\nboom\n"
            plain_create = [timed(lambda i=i: tools.run("create", path=f"/memories/plain{i}.md", file_text=small))
                            for i in range(reps)]  # fmt: skip
        return {
            **screening,
            "tool_create_refusing_a_yaml_bomb": stats(yaml_bomb), "tool_create_of_a_plain_memory": stats(plain_create),
            "search_without_the_big_memory": stats(plain), "search_hitting_1mib_repeated_word": stats(search),
            "context_for_hitting_it": stats(inject), "tool_search_hitting_it": stats(tool),
            "longest_query_words": stats(longest), "longest_query_syntax": stats(longest_syntax),
            "transcript_messages": messages, "first_open_with_that_transcript_s": round(long_open, 1),
        }  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def screening_bench(reps: int) -> dict[str, object]:
    """The instruction screen on adversarial text of growing length: linear if no pattern backtracks.

    The baseline is one pass of ``str.lower`` over the same text (the least a screen must do).
    """
    from memfs.extract import instruction_reason

    unit = "".join(w * 1_000 for w in ("you ", "always ", "ignore the ", "please ", "remember ", "\n",
                                       "please\n", " \n", "system", "a", ". "))  # fmt: skip
    out: dict[str, object] = {}
    for times in (1, 2, 4, 8):
        text = unit * times + "Always answer in French."
        screen = [timed(lambda t=text: instruction_reason(t)) for _ in range(max(3, reps // 10))]
        lower = [timed(lambda t=text: t.lower()) for _ in range(max(3, reps // 10))]
        out[f"instruction_screen_{len(text) // 1000}k_chars"] = stats(screen)
        out[f"lower_baseline_{len(text) // 1000}k_chars"] = stats(lower)
    return out


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
    parser.add_argument("--leave-one-out", action="store_true",
                        help="LoCoMo: tuned settings chosen on four conversations, measured on the fifth")  # fmt: skip
    parser.add_argument(
        "--corpus",
        choices=sorted(corpus.CORPORA),
        nargs="+",
        default=["locomo", "common"],
        help="search: the corpora (default both)",
    )
    parser.add_argument(
        "--cache",
        action="store_true",
        help="search and write: build each vault once under bench/cache/ (gitignored) and copy it later",
    )
    parser.add_argument(
        "--searches-only",
        action="store_true",
        help="search: only search latency beside FTS5 (no rebuild, updates or reopening)",
    )
    parts = ["search", "hostile", "write", "watch", "sessions", "locomo", "extraction", "lifecycle", "injection"]
    parser.add_argument("--only", choices=parts, nargs="+")
    args = parser.parse_args()
    sizes = args.sizes or ([2000] if args.quick else [10_000, 100_000])
    only = set(args.only or parts)
    result: dict[str, object] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "machine": machine(),
        "corpus": {"locomo": "LoCoMo turns stitched into 100-400 word memories; LoCoMo questions (categories 1-4)"
                   if corpus.DATA.is_dir() else "built-in vocabulary (LoCoMo data not found)",
                   "common": "one team's vault: 6 people and 4 projects named in most memories and every question"},
    }  # fmt: skip
    if "search" in only:
        result["search"] = [search_bench(n, args.queries, 10 if args.quick else 50, name, cache=args.cache,
                                         searches_only=args.searches_only)
                            for n in sizes for name in args.corpus]  # fmt: skip
    if "hostile" in only:
        result["hostile"] = hostile_bench(20 if args.quick else 50, 20_000 if args.quick else 100_000)
    if "write" in only:
        write_sizes = args.write_sizes or ([2000] if args.quick else [10_000, 100_000])
        result["write"] = [write_bench(n, 30 if args.quick else 100, cache=args.cache) for n in write_sizes]
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
        if args.leave_one_out and "skipped" not in result["locomo"]:
            say("locomo: leave one conversation out")
            result["locomo"]["leave_one_out"] = session_benchmarks.locomo_leave_one_out()
    if "extraction" in only:
        import sessions as session_benchmarks

        say("extraction: rule-based extractor on LoCoMo, against the observation annotations")
        result["extraction"] = session_benchmarks.extraction_bench()
    if "lifecycle" in only:
        import lifecycle as lifecycle_benchmarks

        say("lifecycle: duplicates and stale facts on the labelled set, near-duplicate check off and on")
        result["lifecycle"] = lifecycle_benchmarks.run(args.quick)
    if "injection" in only:
        import injection as injection_benchmarks

        say("injection: the relevance floor on the labelled set, off and on")
        result["injection"] = injection_benchmarks.run()
    text = json.dumps(result, indent=2)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.json").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
