"""Message search on two corpus shapes, memfs beside SQLite FTS5 and bm25s on the same messages.

One command measures, in one run, Recall@10 of message search (overall and per question
category) for memfs, FTS5 and bm25s, and the first transcript index of memfs against an FTS5
build of the same messages:

- **LoCoMo dev** (short turns between two people; ``shared/data/locomo-dev``), with session
  Recall@3 as in docs/benchmarks.md, "LoCoMo retrieval".
- **BEAM** (long user/assistant chats; "Beyond a Million Tokens", Tavakoli et al. 2025, the public
  repository mohammadtavakoli78/BEAM): give the folder of one of its scales, e.g.
  ``<checkout>/chats/500K``. Nothing of it is kept in this repository. A batch of a chat is one
  session (its date from the batch's first time anchor); each message is one item with its
  ``id`` (BEAM's chat id); the ``->-> b,n`` plan markers BEAM leaves at the end of user messages
  are cut. A question's evidence is every chat id of its ``source_chat_ids``; abstention
  questions (no evidence) are left out.

``python bench/messages.py --beam <checkout>/chats/500K --tune 1 2 3 4 5 6 --report 7 8 9 10 11 12
13 14`` runs LoCoMo and both parts of BEAM (docs/benchmarks.md has the figures); ``--no-locomo``
skips LoCoMo. Tune on ``--tune`` (``--set`` for an index setting, ``--sweep`` for a query-time
one), read the figures of ``--report``. The first index is timed as a fresh clone has it: the
transcripts written, ``.memfs/index`` removed, then the vault opened and searched once.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sessions  # noqa: E402

import memfs  # noqa: E402
from memfs.analysis import STOP_WORDS  # noqa: E402

DEPTH = 20  # hits per question: 10 for Recall@10, and enough to find 3 distinct sessions
_MARKER = re.compile(r"\s*->->\s*[\d,\s]+$")
_ANCHOR = re.compile(r"([A-Za-z]+)-(\d{1,2})-(\d{4})")


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def beam_conversations(folder: Path, names: list[str]) -> list[dict[str, Any]]:
    """BEAM chats as sessions of items (``role``, ``content``, ``id``) and questions with evidence ids."""
    out = []
    for name in names:
        chat = json.loads((folder / name / "chat.json").read_text())
        probing = json.loads((folder / name / "probing_questions" / "probing_questions.json").read_text())
        conv_sessions = []
        for batch in chat:
            items, date = [], ""
            for exchange in batch["turns"]:
                for message in exchange:
                    anchor = _ANCHOR.fullmatch(str(message.get("time_anchor") or ""))
                    if anchor and not date:
                        date = f"{int(anchor[2])} {anchor[1]} {anchor[3]}"
                    items.append(
                        {
                            "role": message["role"],
                            "content": _MARKER.sub("", message["content"]),
                            "id": str(message["id"]),
                        }
                    )
            conv_sessions.append({"date": date, "items": items})
        questions = []
        for category, asked in probing.items():
            for q in asked:
                ids = {str(i) for i in _flat(q.get("source_chat_ids"))}
                if ids:
                    questions.append({"question": q["question"], "evidence": sorted(ids), "category": category})
        out.append({"name": f"beam-{name}", "sessions": conv_sessions, "questions": questions})
    return out


def _flat(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [x for v in value for x in _flat(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _flat(v)]
    return [value] if isinstance(value, int) or (isinstance(value, str) and value.isdigit()) else []


def locomo_conversations() -> list[dict[str, Any]]:
    """LoCoMo dev, with each question's evidence resolved to the turn ids that exist."""
    out = []
    for conv in sessions.locomo_conversations():
        known = {t["id"] for s in conv["sessions"] for t in s["items"]}
        questions = [
            {
                "question": q["question"],
                "evidence": sorted(sessions._evidence(q.get("evidence", []), known)),
                "category": str(q["category"]),
            }
            for q in conv["questions"]
        ]
        out.append(conv | {"questions": [q for q in questions if q["evidence"]]})
    return out


def _first_steps(vault: Path, turns: list[tuple[str, str, str]]) -> tuple[float, float, float]:
    """Seconds to parse the vault's transcripts, to analyse their messages' texts, and to make their documents.

    The steps of a first index that come before anything is written: what any message index kept
    in Python pays, set beside the whole first index and FTS5's build. The third is memfs's own
    indexer whole (reading, parsing, analysing, each message's terms with its neighbours'), its
    documents handed to the recorder a long job keeps them in before it writes them
    (``memfs.index._Recorder``): the first index less Whoosh and the vault.
    """
    import hashlib
    from collections import Counter

    from memfs.analysis import ANALYZER
    from memfs.index import _Recorder
    from memfs.indexing import Indexer
    from memfs.transcript import parse

    paths = sorted((vault / "sessions").rglob("*.md"))
    files = [f.read_bytes() for f in paths]
    start = time.perf_counter()
    for data in files:
        parse(data)
    parsed = time.perf_counter() - start
    start = time.perf_counter()
    for _, _, text in turns:
        Counter(ANALYZER.stems(text))
    analysed = time.perf_counter() - start
    start = time.perf_counter()
    indexer = Indexer(vault, lambda rel: None)
    for path, data in zip(paths, files, strict=True):
        st = path.stat()
        rel = path.relative_to(vault).as_posix()
        sha = hashlib.sha256(data).hexdigest()
        recorder = _Recorder()
        indexer.index_transcript(recorder, rel, (st.st_mtime_ns, st.st_size), data, sha, None, recorder.report)
    return parsed, analysed, time.perf_counter() - start


def fts_query(question: str) -> str:
    words = [w for w in re.findall(r"\w+", question.lower()) if w not in STOP_WORDS]
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words)) or '""'


def _scores(ranked: list[str], evidence: set[str], session_of: dict[str, str]) -> dict[str, float]:
    """The two figures this report keeps of sessions.py's recall, under its names."""
    recall = sessions._recall(ranked, evidence, session_of)
    return {"R@10": recall["turn_R@10"], "session_R@3": recall["session_R@3"]}


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    metrics = ("R@10", "session_R@3")
    cats: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        cats.setdefault(row["category"], []).append(row)

    def mean(part: list[dict[str, Any]]) -> dict[str, float]:
        return {m: round(statistics.fmean(r[m] for r in part), 3) for m in metrics} | {"n": len(part)}

    return {"overall": mean(rows), "by_category": {c: mean(part) for c, part in sorted(cats.items())}}


def measure(conversations: list[dict[str, Any]], sweep: tuple[str, list[Any]] | None = None) -> dict[str, Any]:
    """memfs, FTS5 and bm25s on the same messages of each conversation (one vault each), and build times.

    ``sweep`` is a query-time setting of memfs.index and values to try: each question is searched
    once per value too (rows ``memfs NAME=value``), over the same vaults.
    """
    import bm25s
    import Stemmer

    index = sessions.SEARCH_SETTINGS

    stemmer = Stemmer.Stemmer("english")
    rows: dict[str, list[dict[str, Any]]] = {"memfs": [], "fts5": [], "bm25s": []}
    build = {
        "memfs_first_index_s": 0.0,
        "fts5_build_s": 0.0,
        "parse_s": 0.0,
        "analysis_s": 0.0,
        "indexer_s": 0.0,
        "messages": 0,
        "chars": 0,
    }
    latency: list[float] = []
    for conv in conversations:
        folder = Path(tempfile.mkdtemp(prefix="memfs-messages-"))
        try:
            vault, turns = sessions.conversation_vault(conv, folder)
            vault.close()
            parsed, analysed, documents = _first_steps(folder / "vault", turns)
            build["parse_s"] += parsed
            build["analysis_s"] += analysed
            build["indexer_s"] += documents
            shutil.rmtree(folder / "vault" / ".memfs" / "index")  # as a fresh clone has none
            start = time.perf_counter()  # opening a vault without an index builds it; so does a first search
            vault = memfs.Vault.open(folder / "vault", durable=False)
            vault.search_messages("warm up", k=1)
            build["memfs_first_index_s"] += time.perf_counter() - start
            db = sqlite3.connect(folder / "fts.db")
            db.execute("CREATE VIRTUAL TABLE m USING fts5(body, tokenize='porter unicode61')")
            start = time.perf_counter()
            with db:
                rows_in = [(i, text) for i, (_, _, text) in enumerate(turns)]
                db.executemany("INSERT INTO m(rowid, body) VALUES (?, ?)", rows_in)
            build["fts5_build_s"] += time.perf_counter() - start
            build["messages"] += len(turns)
            build["chars"] += sum(len(t) for _, _, t in turns)
            retriever = bm25s.BM25()
            retriever.index(
                bm25s.tokenize([t for _, _, t in turns], stopwords="en", stemmer=stemmer, show_progress=False),
                show_progress=False,
            )
            session_of = {d: s for d, s, _ in turns}
            for q in conv["questions"]:
                evidence = set(q["evidence"]) & set(session_of)
                if not evidence:
                    continue
                start = time.perf_counter()
                hits = vault.search_messages(q["question"], k=DEPTH)
                latency.append((time.perf_counter() - start) * 1000)
                ranked = {"memfs": [str(h.item.get("id")) for h in hits]}
                if sweep is not None:
                    saved = getattr(index, sweep[0])
                    for value in sweep[1]:
                        setattr(index, sweep[0], value)
                        swept = vault.search_messages(q["question"], k=DEPTH)
                        ranked[f"memfs {sweep[0]}={value}"] = [str(h.item.get("id")) for h in swept]
                    setattr(index, sweep[0], saved)
                found = db.execute(
                    "SELECT rowid FROM m WHERE m MATCH ? ORDER BY bm25(m) LIMIT ?", (fts_query(q["question"]), DEPTH)
                ).fetchall()
                ranked["fts5"] = [turns[i][0] for (i,) in found]
                tokens = bm25s.tokenize([q["question"]], stopwords="en", stemmer=stemmer, show_progress=False)
                idx, _ = retriever.retrieve(tokens, k=min(DEPTH, len(turns)), show_progress=False)
                ranked["bm25s"] = [turns[i][0] for i in idx[0]]
                for engine, order in ranked.items():
                    row = _scores(order, evidence, session_of) | {"category": q["category"]}
                    rows.setdefault(engine, []).append(row)
            db.close()
            vault.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    build["memfs_first_index_s"] = round(build["memfs_first_index_s"], 2)
    build["fts5_build_s"] = round(build["fts5_build_s"], 3)
    build["ratio"] = round(build["memfs_first_index_s"] / max(build["fts5_build_s"], 1e-9), 1)
    for step in ("parse_s", "analysis_s", "indexer_s"):  # what an index of these transcripts in Python pays first
        build[step.replace("_s", "_ratio")] = round(build[step] / max(build["fts5_build_s"], 1e-9), 1)
        build[step] = round(build[step], 3)
    out: dict[str, Any] = {engine: _summary(r) for engine, r in rows.items()}
    out["memfs"]["search_p50_ms"] = round(statistics.median(latency), 2) if latency else None
    return out | {"build": build, "conversations": [c["name"] for c in conversations]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beam", type=Path, help="a BEAM scale folder (<checkout>/chats/500K)")
    parser.add_argument("--tune", nargs="*", default=[], help="BEAM chats to tune on")
    parser.add_argument("--report", nargs="*", default=[], help="BEAM chats to report on (held out)")
    parser.add_argument("--no-locomo", action="store_true", help="skip LoCoMo dev")
    parser.add_argument("--sweep", metavar="NAME=V1,V2", help="a query-time memfs.index setting's values to try")
    parser.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="memfs search settings for this run (a grid point: CONTEXT_ALONE_TERMS=96)",
    )
    args = parser.parse_args()
    index = sessions.SEARCH_SETTINGS

    for setting in args.set:
        name, _, value = setting.partition("=")
        if not hasattr(index, name):
            parser.error(f"--set {setting}: memfs's search has no setting {name}")
        setattr(index, name, json.loads(value))
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
    ).stdout.strip()
    sweep = None
    if args.sweep:
        name, _, values = args.sweep.partition("=")
        sweep = (name, [json.loads(v) for v in values.split(",")])
    result: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit,
        "load_at_start": load,
        "settings": args.set,
    }
    if not args.no_locomo:
        say("messages: LoCoMo dev")
        result["locomo"] = measure(locomo_conversations(), sweep)
    for part in ("tune", "report"):
        names = getattr(args, part)
        if names:
            if args.beam is None:
                parser.error(f"--{part} needs --beam <BEAM checkout>/chats/<scale>")
            say(f"messages: BEAM {part} {' '.join(names)}")
            result[f"beam_{part}"] = measure(beam_conversations(args.beam, names), sweep)
    result["load_at_end"] = Path("/proc/loadavg").read_text().split()[:3] if load else []
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
