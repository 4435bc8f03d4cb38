"""memfs's message ranking rebuilt on SQLite FTS5, measured beside memfs and plain FTS5 on the same messages.

A design measurement for message search on a compiled engine (issue #25: a first transcript
index within 5x an FTS5 build is out of reach in Python, docs/benchmarks.md, "The first
transcript index"). For each conversation, FTS5 tables whose rows are messages and whose
columns carry memfs's rules (memfs/indexing.py, memfs/searcher.py) as far as FTS5 can:

- ``own``: the message's text.
- ``near`` / ``far``: the texts of the messages one and two away in the same transcript, only
  when the message is short, each cut to at most ``max(own words, CONTEXT_FULL_TERMS)`` words
  and fewer as the message grows (as ``_context_share`` fades: whole up to CONTEXT_FULL_TERMS
  words, nothing from CONTEXT_ALONE_TERMS on). FTS5 cannot weigh a term per row, so the
  weight memfs gives a neighbour's words is approximated by how many of them are kept. Words
  are counted by whitespace (stop words included, where memfs counts its analysed terms), so
  the fade starts a little earlier than memfs's.
- ``date``: the session date's words as memfs writes them (``memfs.dates.date_words``).
- ``speaker``: ``memfs.indexing.speaker_of`` (a LoCoMo turn's "Name:" label; BEAM has none).

All with ``tokenize='porter unicode61 remove_diacritics 2'``, ranked by ``bm25(m, 1, 0.5,
0.25, 0.25, w_speaker)`` (memfs's CONTEXT_WEIGHTS and DATE_WEIGHT; ``w_speaker`` chosen on
LoCoMo dev only, from a small grid), the query being memfs bench's content words OR-ed
(``messages.fts_query``). FTS5's bm25 adds the columns' weighted frequencies into one term
frequency but takes the row's length unweighted over all columns: close to memfs's BM25F, not
the same. The variants:

- ``a plain``: FTS5 on the message text alone (bench/messages.py's baseline).
- ``b own+near+far``, ``c +date``, ``d +speaker``.
- ``e +user bonus``: (d), then memfs's user bonus on its top 50 in Python: for a first-person
  question (``memfs.searcher.first_person``) a user message's score times ``1 + USER_BONUS``.
- ``f +speaker bonus``: (e), and a message whose speaker the question names times
  ``1 + SPEAKER_BONUS`` (memfs's other multiplicative rule, also on the top 50).
- ``g``: (f) without the neighbours' columns (a table of ``own``, ``date``, ``speaker``): what
  the neighbours bring, or cost, on each corpus.

Each table is built in a file as bench/messages.py builds its FTS5 one; a variant's build time
includes the Python that makes its column texts, and is given as a ratio of the plain build and
of memfs's first index of the same transcripts (the fastest of three builds, each in a fresh
file; memfs's first index timed once, as bench/messages.py times it: the vault
written, ``.memfs/index`` removed, opened and searched once). Recall@10 and session Recall@3 as
bench/messages.py reports them. Two checks beside: whether FTS5's ``unicode61`` finds a
two-character Chinese word inside a sentence with no spaces (memfs's analyzer cuts CJK text
into character pairs), and whether deleting a row removes its text from the database file (memfs
purges a secret from ``.memfs/``), for a table with content, a contentless one and, where SQLite
has it (3.43+), ``contentless_delete=1``.

Run: ``python bench/messages_fts5.py --beam <BEAM checkout>/chats/500K --report 7 8 9 10 11 12
13 14`` (LoCoMo dev from ``shared/data/locomo-dev``; BEAM, "Beyond a Million Tokens", Tavakoli
et al. 2025, the public repository mohammadtavakoli78/BEAM, not kept here: see bench/messages.py).
JSON on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import messages  # noqa: E402
import sessions  # noqa: E402

import memfs  # noqa: E402
from memfs.analysis import ANALYZER  # noqa: E402
from memfs.dates import date_words, written_date  # noqa: E402
from memfs.indexing import CONTEXT_ALONE_TERMS, CONTEXT_FULL_TERMS, CONTEXT_WEIGHTS, DATE_WEIGHT, speaker_of  # noqa: E402
from memfs.searcher import SPEAKER_BONUS, USER_BONUS, first_person  # noqa: E402

TOKENIZER = "porter unicode61 remove_diacritics 2"
TOP = 50  # the bonuses are applied to FTS5's first this many hits
BUILDS = 3  # each table is built this many times (in a fresh file each time), the fastest kept
SPEAKER_GRID = (0.5, 1.0, 2.0, 4.0, 8.0)  # w_speaker tried on LoCoMo dev
COLUMNS = {
    "b own+near+far": ("own", "near", "far"),
    "c +date": ("own", "near", "far", "date"),
    "d +speaker": ("own", "near", "far", "date", "speaker"),
    "g own+date+speaker": ("own", "date", "speaker"),
}
BASE_WEIGHTS = (CONTEXT_WEIGHTS[0], CONTEXT_WEIGHTS[1], CONTEXT_WEIGHTS[2], DATE_WEIGHT)


def _kept(own: int, other: int) -> int:
    """How many of a neighbour's ``other`` words a message of ``own`` words keeps (memfs's _context_share)."""
    if own >= CONTEXT_ALONE_TERMS or other <= 0:
        return 0
    fade = 1.0
    if own > CONTEXT_FULL_TERMS:
        fade = (CONTEXT_ALONE_TERMS - own) / (CONTEXT_ALONE_TERMS - CONTEXT_FULL_TERMS)
    return round(fade * min(other, max(own, CONTEXT_FULL_TERMS)))


def _context(words: list[list[str]], texts: list[str], i: int, distance: int) -> str:
    """The words message ``i`` takes from its neighbours ``distance`` away in its transcript."""
    own, parts = len(words[i]), []
    for j in (i - distance, i + distance):
        if 0 <= j < len(words):
            keep = _kept(own, len(words[j]))
            if keep >= len(words[j]):
                parts.append(texts[j])
            elif keep:
                parts.append(" ".join(words[j][:keep]))
    return " ".join(parts)


def rows_of(conv: dict[str, Any], columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """Each message's row (rowid, its ``columns``' texts, role), in the order of the vault's turns."""
    rows: list[tuple[Any, ...]] = []
    for sess in conv["sessions"]:
        items = sess["items"]
        texts = [str(t["content"]) for t in items]
        words = [t.split() for t in texts] if "near" in columns else []
        day = written_date(sess["date"]) if "date" in columns else None
        date = date_words(day) if day else sess["date"] or ""
        for i, item in enumerate(items):
            row: list[Any] = [len(rows)]
            for column in columns:
                if column == "own":
                    row.append(texts[i])
                elif column in ("near", "far"):
                    row.append(_context(words, texts, i, 1 if column == "near" else 2))
                elif column == "date":
                    row.append(date)
                else:
                    row.append(speaker_of(item) or "")
            rows.append((*row, item.get("role", "")))
    return rows


def build(path: Path, conv: dict[str, Any], turns: list[tuple[str, str, str]], variant: str) -> float:
    """Seconds to make a variant's column texts and fill its FTS5 table in the database at ``path``."""
    db = sqlite3.connect(path)
    if variant == "a plain":
        db.execute("CREATE VIRTUAL TABLE m USING fts5(body, tokenize='porter unicode61')")
        start = time.perf_counter()
        with db:
            db.executemany("INSERT INTO m(rowid, body) VALUES (?, ?)", [(i, t) for i, (_, _, t) in enumerate(turns)])
        took = time.perf_counter() - start
    else:
        columns = COLUMNS[variant]
        db.execute(f"CREATE VIRTUAL TABLE m USING fts5({', '.join(columns)}, role UNINDEXED, tokenize='{TOKENIZER}')")
        start = time.perf_counter()
        rows = rows_of(conv, columns)
        marks = ", ".join("?" * (len(columns) + 2))
        with db:
            db.executemany(f"INSERT INTO m(rowid, {', '.join(columns)}, role) VALUES ({marks})", rows)
        took = time.perf_counter() - start
    db.close()
    return took


def _ranked(
    db: sqlite3.Connection, question: str, weights: tuple[float, ...], user_bonus: bool, speaker_bonus: bool
) -> list[int]:
    """Row ids for ``question``, by FTS5's bm25 with ``weights``, then memfs's bonuses on the top ``TOP``."""
    query = messages.fts_query(question)
    if not weights:
        found = db.execute("SELECT rowid FROM m WHERE m MATCH ? ORDER BY bm25(m) LIMIT ?", (query, messages.DEPTH))
        return [r for (r,) in found]
    marks = ", ".join("?" * len(weights))
    speaker = ", speaker" if speaker_bonus else ", ''"
    found = db.execute(
        f"SELECT rowid, -bm25(m, {marks}), role{speaker} FROM m WHERE m MATCH ? ORDER BY bm25(m, {marks}) LIMIT ?",
        (*weights, query, *weights, TOP),
    ).fetchall()
    asked_by_user = user_bonus and first_person(question)
    named = set(ANALYZER.stems(question)) if speaker_bonus else set()
    scored = []
    for rowid, score, role, who in found:
        if asked_by_user and role == "user":
            score *= 1 + USER_BONUS
        if who and not named.isdisjoint(ANALYZER.stems(who)):
            score *= 1 + SPEAKER_BONUS
        scored.append((score, rowid))
    scored.sort(key=lambda s: -s[0])
    return [rowid for _, rowid in scored[: messages.DEPTH]]


def measure(conversations: list[dict[str, Any]], speaker_weights: tuple[float, ...]) -> dict[str, Any]:
    """memfs and each FTS5 variant on the same messages of each conversation, and their build times."""
    queries: dict[str, tuple[str, tuple[float, ...], bool, bool]] = {
        "a plain": ("a plain", (), False, False),
        "b own+near+far": ("b own+near+far", BASE_WEIGHTS[:3], False, False),
        "c +date": ("c +date", BASE_WEIGHTS, False, False),
    }
    for w in speaker_weights:
        label = f" w_speaker={w}" if len(speaker_weights) > 1 else ""
        queries[f"d +speaker{label}"] = ("d +speaker", (*BASE_WEIGHTS, w), False, False)
        queries[f"e +user bonus{label}"] = ("d +speaker", (*BASE_WEIGHTS, w), True, False)
        queries[f"f +speaker bonus{label}"] = ("d +speaker", (*BASE_WEIGHTS, w), True, True)
        queries[f"g (f) without near, far{label}"] = ("g own+date+speaker", (1.0, DATE_WEIGHT, w), True, True)
    rows: dict[str, list[dict[str, Any]]] = {"memfs": []} | {name: [] for name in queries}
    seconds = {"memfs first index": 0.0} | dict.fromkeys(("a plain", *COLUMNS), 0.0)
    count = 0
    for conv in conversations:
        folder = Path(tempfile.mkdtemp(prefix="memfs-fts5-"))
        try:
            vault, turns = sessions.conversation_vault(conv, folder)
            vault.close()
            shutil.rmtree(folder / "vault" / ".memfs" / "index")  # as a fresh clone has none
            start = time.perf_counter()
            vault = memfs.Vault.open(folder / "vault", durable=False)
            vault.search_messages("warm up", k=1)
            seconds["memfs first index"] += time.perf_counter() - start
            expected = [t["id"] for s in conv["sessions"] for t in s["items"]]
            assert expected == [d for d, _, _ in turns], "the vault's turns are not the conversation's items"
            dbs: dict[str, sqlite3.Connection] = {}
            for variant in ("a plain", *COLUMNS):
                times = []
                for n in range(BUILDS):
                    path = folder / f"{variant.split()[0]}{n}.db"
                    times.append(build(path, conv, turns, variant))
                seconds[variant] += min(times)
                dbs[variant] = sqlite3.connect(path)
            count += len(turns)
            session_of = {d: s for d, s, _ in turns}
            for q in conv["questions"]:
                evidence = set(q["evidence"]) & set(session_of)
                if not evidence:
                    continue
                hits = vault.search_messages(q["question"], k=messages.DEPTH)
                ranked = {"memfs": [str(h.item.get("id")) for h in hits]}
                for name, (table, weights, user, speaker) in queries.items():
                    ranked[name] = [turns[i][0] for i in _ranked(dbs[table], q["question"], weights, user, speaker)]
                for name, order in ranked.items():
                    rows[name].append(messages._scores(order, evidence, session_of) | {"category": q["category"]})
            for db in dbs.values():
                db.close()
            vault.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    plain, first = seconds["a plain"], seconds["memfs first index"]
    build_of = {"e": "d +speaker", "f": "d +speaker", "g": "g own+date+speaker"}
    out: dict[str, Any] = {}
    for name, found in rows.items():
        summary = messages._summary(found)
        out[name] = summary["overall"] | {"by_category": summary["by_category"]}
        if name != "memfs":
            took = seconds[build_of.get(name[0], name.split(" w_")[0])]
            out[name] |= {
                "build_s": round(took, 3),
                "x_plain": round(took / plain, 2),
                "x_memfs": round(took / first, 3),
            }
    out["memfs"] |= {"first_index_s": round(first, 2), "x_plain": round(first / plain, 1)}
    return {"variants": out, "messages": count, "conversations": [c["name"] for c in conversations]}


def cjk_check() -> list[dict[str, Any]]:
    """Whether FTS5 (unicode61, and trigram) and memfs's analyzer find a two-character Chinese word in a sentence."""
    cases = [("我喜欢喝绿茶", "绿茶"), ("他昨天去了北京大学", "北京"), ("我们明天开会讨论项目", "项目")]
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE u USING fts5(t, tokenize='{TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE g USING fts5(t, tokenize='trigram')")
    out = []
    for sentence, word in cases:
        for table in ("u", "g"):
            db.execute(f"DELETE FROM {table}")
            db.execute(f"INSERT INTO {table}(t) VALUES (?)", (sentence,))
        out.append(
            {
                "sentence": sentence,
                "word": word,
                "unicode61": bool(db.execute("SELECT 1 FROM u WHERE u MATCH ?", (f'"{word}"',)).fetchall()),
                "trigram": bool(db.execute("SELECT 1 FROM g WHERE g MATCH ?", (f'"{word}"',)).fetchall()),
                "memfs analyzer": word in set(ANALYZER.stems(sentence)),
            }
        )
    db.close()
    return out


def _holds(path: Path, token: str) -> bool:
    """Whether the file at ``path`` holds ``token``, or its tail (FTS5 prefix-compresses the terms of a page)."""
    data = path.read_bytes()
    return token.encode() in data or token[4:].encode() in data


def purge_check() -> dict[str, Any]:
    """Whether a deleted row's unique word leaves the database file: after the delete, and after optimize + VACUUM."""
    token = "qxjvpurgesecret"
    kinds: dict[str, tuple[str, Callable[[sqlite3.Connection], None]]] = {
        "with content": ("", lambda db: db.execute("DELETE FROM m WHERE rowid = 5")),
        "contentless (content='')": (
            ", content=''",
            lambda db: db.execute("INSERT INTO m(m, rowid, t) VALUES ('delete', 5, ?)", (f"the key is {token}",)),
        ),
        "contentless_delete=1": (
            ", content='', contentless_delete=1",
            lambda db: db.execute("DELETE FROM m WHERE rowid = 5"),
        ),
    }
    out: dict[str, Any] = {"sqlite_version": sqlite3.sqlite_version}
    for kind, (options, delete) in kinds.items():
        folder = Path(tempfile.mkdtemp(prefix="memfs-fts5-purge-"))
        path = folder / "p.db"
        try:
            db = sqlite3.connect(path)
            try:
                db.execute(f"CREATE VIRTUAL TABLE m USING fts5(t, tokenize='{TOKENIZER}'{options})")
            except sqlite3.Error as exc:
                out[kind] = f"not available: {exc}"
                continue
            texts = [f"message {n} about tea and the weather" for n in range(10)]
            texts[5] = f"the key is {token}"
            with db:
                db.executemany("INSERT INTO m(rowid, t) VALUES (?, ?)", list(enumerate(texts)))
            db.close()
            db = sqlite3.connect(path)

            before = _holds(path, token)
            with db:
                delete(db)
            after_delete = _holds(path, token)
            found = bool(db.execute("SELECT 1 FROM m WHERE m MATCH ?", (token,)).fetchall())
            with db:
                db.execute("INSERT INTO m(m) VALUES ('optimize')")
            db.execute("VACUUM")
            db.close()
            out[kind] = {
                "in file after insert": before,
                "in file after delete": after_delete,
                "matched after delete": found,
                "in file after optimize + VACUUM": _holds(path, token),
            }
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beam", type=Path, help="a BEAM scale folder (<checkout>/chats/500K)")
    parser.add_argument("--report", nargs="*", default=[], help="BEAM chats to report on (held out)")
    parser.add_argument("--speaker-weight", type=float, help="w_speaker, not chosen on LoCoMo (no grid)")
    args = parser.parse_args()
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
    ).stdout.strip()
    result: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit,
        "load_at_start": load,
        "sqlite_version": sqlite3.sqlite_version,
    }
    say = messages.say
    grid = (args.speaker_weight,) if args.speaker_weight is not None else SPEAKER_GRID
    say(f"fts5: LoCoMo dev, w_speaker in {grid}")
    locomo = measure(messages.locomo_conversations(), grid)
    if len(grid) > 1:  # the best w_speaker on LoCoMo dev (R@10, then session R@3), the only one kept
        variants = locomo["variants"]
        chosen = max(
            grid,
            key=lambda w: (
                variants[f"d +speaker w_speaker={w}"]["R@10"],
                variants[f"d +speaker w_speaker={w}"]["session_R@3"],
            ),
        )
        locomo["grid"] = {name: v for name, v in variants.items() if " w_speaker=" in name}
        locomo["variants"] = {
            name.split(" w_speaker=")[0]: v
            for name, v in variants.items()
            if " w_speaker=" not in name or name.endswith(f"w_speaker={chosen}")
        }
    else:
        chosen = grid[0]
    result["w_speaker"] = chosen
    result["locomo"] = locomo
    if args.report:
        if args.beam is None:
            parser.error("--report needs --beam <BEAM checkout>/chats/<scale>")
        say(f"fts5: BEAM report {' '.join(args.report)}, w_speaker={chosen}")
        result["beam_report"] = measure(messages.beam_conversations(args.beam, args.report), (chosen,))
    say("fts5: CJK and purge checks")
    result["cjk"] = cjk_check()
    result["purge"] = purge_check()
    result["load_at_end"] = Path("/proc/loadavg").read_text().split()[:3] if load else []
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
