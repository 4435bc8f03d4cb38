"""Session benchmarks: MarkdownSession beside the OpenAI Agents SQLiteSession, and LoCoMo retrieval."""

from __future__ import annotations

import asyncio
import html
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

import memfs  # noqa: E402


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return {"p50_ms": round(statistics.median(ordered), 3), "p95_ms": round(p95, 3), "n": len(ordered)}


def turn(i: int) -> list[dict[str, Any]]:
    question = f"Question {i}: what about the museum on Saturday? " * 3
    answer = f"Answer {i}: it opens at ten and the tickets cost twelve euros. " * 4
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


def session_bench(sizes: list[int], reps: int) -> dict[str, Any]:
    from agents import SQLiteSession

    out: dict[str, Any] = {}
    for size in sizes:
        folder = Path(tempfile.mkdtemp(prefix="memfs-sessions-"))
        try:
            vault = memfs.Vault.open(folder / "vault", create=True)
            md = vault.session("bench", commit="manual")
            sq = SQLiteSession("bench", str(folder / "agents.db"))
            prefill = [item for i in range(size // 2) for item in turn(i)]
            md.append(prefill)
            md.commit()
            asyncio.run(sq.add_items(prefill))
            row: dict[str, Any] = {"messages": size}
            for name, session in (("memfs", md), ("sqlite_session", sq)):
                adds, reads = [], []
                for i in range(reps):
                    start = time.perf_counter()
                    asyncio.run(session.add_items(turn(size + i)))
                    adds.append((time.perf_counter() - start) * 1000)
                    start = time.perf_counter()
                    got = asyncio.run(session.get_items(limit=20))
                    reads.append((time.perf_counter() - start) * 1000)
                    assert len(got) == 20
                row[name] = {"add_items_one_turn": stats(adds), "get_items_limit_20": stats(reads)}
            committed = vault.session("bench")  # the default policy: one commit per add_items
            row["memfs_commit_every_turn"] = {
                "add_items_one_turn": stats([timed_add(committed, turn(size + reps + i)) for i in range(reps)])
            }
            sq.close()
            vault.close()
            out[str(size)] = row
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return out


def timed_add(session: memfs.MarkdownSession, items: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    asyncio.run(session.add_items(items))
    return (time.perf_counter() - start) * 1000


def _evidence(raw: list[str], known: set[str]) -> set[str]:
    ids = {p for e in raw for p in re.split(r"[;,\s]+", e) if p}
    return ids & known


LOCOMO_DEPTH = 20  # hits taken per question: enough to find 3 distinct sessions


def _recall(ranked: list[str], evidence: set[str], session_of: dict[str, str]) -> dict[str, float]:
    """Turn Recall@5/@10 over the ranked turn ids; session Recall@1/@3 over the first k distinct sessions."""
    sessions = list(dict.fromkeys(session_of[d] for d in ranked if d in session_of))
    wanted = {session_of[d] for d in evidence}
    return {
        "turn_R@5": len(evidence & set(ranked[:5])) / len(evidence),
        "turn_R@10": len(evidence & set(ranked[:10])) / len(evidence),
        "session_R@1": len(wanted & set(sessions[:1])) / len(wanted),
        "session_R@3": len(wanted & set(sessions[:3])) / len(wanted),
    }


def _summary(per_cat: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    metrics = ("turn_R@5", "turn_R@10", "session_R@1", "session_R@3")
    overall = {m: round(statistics.fmean([x for c in per_cat.values() for x in c[m]]), 3) for m in metrics}
    by_category = {c: {m: round(statistics.fmean(v), 3) for m, v in scores.items()} | {"n": len(scores["turn_R@5"])}
                   for c, scores in sorted(per_cat.items())}  # fmt: skip
    return {"overall": overall, "by_category": by_category}


def rows_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Overall and per-category means of per-question rows (``_recall``'s metrics and a ``category``)."""
    per_cat: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        for metric, value in row.items():
            if metric != "category":
                per_cat.setdefault(row["category"], {}).setdefault(metric, []).append(value)
    return _summary(per_cat)


def objective(rows: list[dict[str, Any]]) -> float:
    """What a leave-one-out choice maximises on the other four conversations: turn R@10 plus session R@3."""
    return statistics.fmean(r["turn_R@10"] for r in rows) + statistics.fmean(r["session_R@3"] for r in rows)


def locomo_conversations() -> list[dict[str, Any]]:
    """The development conversations as turns (dia_id, session number, speaker, text) and questions."""
    out = []
    for path in sorted(corpus.DATA.glob("*.json")):
        data = json.loads(path.read_text())
        sessions, n = [], 1
        while f"session_{n}" in data:
            turns = []
            for t in data[f"session_{n}"]:
                text = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    text += f" [shares a photo: {t['blip_caption']}]"
                turns.append({"role": "user" if t["speaker"] == data["speaker_a"] else "assistant",
                              "content": text, "id": t["dia_id"]})  # fmt: skip
            sessions.append({"date": data.get(f"session_{n}_date_time", ""), "items": turns})
            n += 1
        questions = [q for q in data["qa"] if q.get("category") in (1, 2, 3, 4)]
        out.append({"name": path.stem, "sessions": sessions, "questions": questions})
    return out


class _SearchSettings:
    """memfs's search settings by name, wherever each lives (analysis, indexing, searcher, index).

    Read from the module that holds it; set in every module that holds it (one imported by name
    into another is bound there too), so an ablation turns a rule off wherever it is used.
    """

    @staticmethod
    def _modules() -> tuple[Any, ...]:
        from memfs import analysis, index, indexing, searcher

        return analysis, indexing, searcher, index

    def __getattr__(self, name: str) -> Any:
        for module in self._modules():
            if name in vars(module):
                return vars(module)[name]
        raise AttributeError(f"memfs's search has no setting {name}")

    def __setattr__(self, name: str, value: Any) -> None:
        holders = [m for m in self._modules() if name in vars(m)]
        if not holders:
            raise AttributeError(f"memfs's search has no setting {name}")
        for module in holders:
            setattr(module, name, value)


SEARCH_SETTINGS = _SearchSettings()


def conversation_vault(conv: dict[str, Any], folder: Path) -> tuple[memfs.Vault, list[tuple[str, str, str]]]:
    """A fresh vault holding one conversation, a transcript per session; its turns as (item id, session path, text)."""
    vault = memfs.Vault.open(folder / "vault", create=True, durable=False)
    turns: list[tuple[str, str, str]] = []
    for n, sess in enumerate(conv["sessions"], 1):
        session = vault.session(f"{conv['name']}-s{n}", commit="manual", metadata={"date": sess["date"]})
        session.append(sess["items"])
        session.commit()
        turns += [(t["id"], session.path, t["content"]) for t in sess["items"]]
    return vault, turns


def _patched(**values: Any) -> Callable[[], Callable[[], None]]:
    """A variant of the ablation: memfs.index with some of its rules turned off, put back after."""
    index = SEARCH_SETTINGS

    def setup() -> Callable[[], None]:
        saved = {name: getattr(index, name) for name in values}
        for name, value in values.items():
            setattr(index, name, value)
        index.ANALYZER._stems.clear()

        def restore() -> None:
            for name, value in saved.items():
                setattr(index, name, value)
            index.ANALYZER._stems.clear()

        return restore

    return setup


def _porter(word: str) -> str:
    from whoosh.lang.porter import stem

    return str(stem(word))


def locomo_ablation() -> dict[str, Callable[[], Any]]:
    """memfs with all its rules, then with each left out, then with none (the index before issue 15)."""
    return {
        "memfs": lambda: None,
        "without neighbours": _patched(CONTEXT_WEIGHTS=(1,)),
        "without the session date's words": _patched(DATE_WEIGHT=0),
        "without the speaker bonus (speaker field kept)": _patched(SPEAKER_BONUS=0.0),
        "without the speaker field (and so no bonus)": _patched(speaker_of=lambda item: None),
        "Porter instead of Snowball, no possessive rule": _patched(stem=_porter),
        "none of them (as before)": _patched(
            CONTEXT_WEIGHTS=(1,), DATE_WEIGHT=0, stem=_porter, speaker_of=lambda item: None, SPEAKER_BONUS=0.0
        ),  # fmt: skip
    }


def locomo_bench(variants: dict[str, Callable[[], Any]] | None = None) -> dict[str, Any]:
    """The retrieval measurement of shared/data/locomo-dev/README.md, with the protocol's bm25s beside it.

    ``variants`` maps a name to a function that sets memfs up for it (the ablation): each
    variant builds its own vaults, so the index is built the way that variant says.
    """
    try:
        import bm25s
        import Stemmer
    except ImportError:
        return {"skipped": "bm25s or PyStemmer is not installed (pip install 'memfs-vault[bench]')"}
    conversations = locomo_conversations()
    if not conversations:
        return {"skipped": "LoCoMo data not found"}
    stemmer = Stemmer.Stemmer("english")
    result: dict[str, Any] = {}
    base_cat: dict[str, dict[str, list[float]]] = {}
    base_latency: list[float] = []
    variants = variants or {"memfs": lambda: None}
    for name, setup in variants.items():
        baseline_too = name == next(iter(variants))  # the baseline is measured once, beside the first
        restore = setup()
        per_cat: dict[str, dict[str, list[float]]] = {}
        latency: list[float] = []
        messages = 0
        for conv in conversations:
            folder = Path(tempfile.mkdtemp(prefix="memfs-locomo-"))
            try:
                vault, turns = conversation_vault(conv, folder)
                messages += len(turns)
                known = {d for d, _, _ in turns}
                session_of = {d: s for d, s, _ in turns}
                retriever = None
                if baseline_too:
                    retriever = bm25s.BM25()
                    retriever.index(bm25s.tokenize([t for _, _, t in turns], stopwords="en", stemmer=stemmer,
                                                   show_progress=False), show_progress=False)  # fmt: skip
                vault.search_messages("warm up", k=LOCOMO_DEPTH)
                for q in conv["questions"]:
                    evidence = _evidence(q.get("evidence", []), known)
                    if not evidence:
                        continue
                    start = time.perf_counter()
                    hits = vault.search_messages(q["question"], k=LOCOMO_DEPTH)
                    latency.append((time.perf_counter() - start) * 1000)
                    cat = str(q["category"])
                    for metric, value in _recall([h.item.get("id") for h in hits], evidence, session_of).items():
                        per_cat.setdefault(cat, {}).setdefault(metric, []).append(value)
                    if retriever is not None:
                        start = time.perf_counter()
                        tokens = bm25s.tokenize([q["question"]], stopwords="en", stemmer=stemmer, show_progress=False)
                        idx, _ = retriever.retrieve(tokens, k=min(LOCOMO_DEPTH, len(turns)), show_progress=False)
                        base_latency.append((time.perf_counter() - start) * 1000)
                        ranked = [turns[i][0] for i in idx[0]]
                        for metric, value in _recall(ranked, evidence, session_of).items():
                            base_cat.setdefault(cat, {}).setdefault(metric, []).append(value)
                vault.close()
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        if callable(restore):
            restore()
        result[name] = _summary(per_cat) | {"search_latency": stats(latency)}
        result.setdefault("questions", len(latency))
        result.setdefault("messages", messages)
    result["bm25s"] = _summary(base_cat) | {"search_latency": stats(base_latency)}
    return result


#: Query-time settings of memfs.index tuned leave-one-conversation-out, with the values tried.
LOCOMO_TUNED = {"SPEAKER_BONUS": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0]}


def locomo_leave_one_out(tuned: dict[str, list[Any]] | None = None) -> dict[str, Any]:
    """Each setting of ``tuned`` chosen on four conversations and measured on the fifth, in turn.

    A setting is chosen by the mean of turn Recall@10 and session Recall@3 over the four
    others' questions; the held-out figures are those of the fifth with that choice. Settings
    are read at query time, so each conversation's vault is built once and searched once per value.
    """
    index = SEARCH_SETTINGS

    tuned = tuned or LOCOMO_TUNED
    per: dict[str, dict[tuple[str, Any], list[dict[str, Any]]]] = {}  # conversation -> (name, value) -> rows
    for conv in locomo_conversations():
        folder = Path(tempfile.mkdtemp(prefix="memfs-locomo-loo-"))
        try:
            vault, turns = conversation_vault(conv, folder)
            known = {d for d, _, _ in turns}
            session_of = {d: s for d, s, _ in turns}
            for name, values in tuned.items():
                saved = getattr(index, name)
                try:
                    for value in values:
                        setattr(index, name, value)
                        rows = per.setdefault(conv["name"], {}).setdefault((name, value), [])
                        for q in conv["questions"]:
                            evidence = _evidence(q.get("evidence", []), known)
                            if evidence:
                                hits = vault.search_messages(q["question"], k=LOCOMO_DEPTH)
                                ranked = [h.item.get("id") for h in hits]
                                rows.append(_recall(ranked, evidence, session_of) | {"category": str(q["category"])})
                finally:
                    setattr(index, name, saved)
            vault.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    out: dict[str, Any] = {}
    for name, values in tuned.items():
        chosen, held = {}, []
        for conv in per:
            others = [(v, [r for c in per if c != conv for r in per[c][(name, v)]]) for v in values]
            chosen[conv] = max(others, key=lambda pair: objective(pair[1]))[0]
            held += per[conv][(name, chosen[conv])]
        whole = {v: objective([r for c in per for r in per[c][(name, v)]]) for v in values}
        out[name] = {"values": values, "chosen_on_the_other_four": chosen, "held_out": rows_summary(held),
                     "best_on_all_five": max(whole, key=lambda v: whole[v])}  # fmt: skip
    return out


def locomo_cost(k: int) -> dict[str, Any]:
    """Wall and CPU time per message search over the LoCoMo conversations, one vault each.

    CPU time says what a search costs when the machine is shared; run it with ``PYTHONPATH``
    pointing at two checkouts, one after the other, to compare them.
    """
    wall: list[float] = []
    cpu: list[float] = []
    for conv in locomo_conversations():
        folder = Path(tempfile.mkdtemp(prefix="memfs-locomo-cost-"))
        try:
            vault, _ = conversation_vault(conv, folder)
            vault.search_messages("warm up", k=k)
            for q in conv["questions"]:
                start, start_cpu = time.perf_counter(), time.process_time()
                vault.search_messages(q["question"], k=k)
                cpu.append((time.process_time() - start_cpu) * 1000)
                wall.append((time.perf_counter() - start) * 1000)
            vault.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return {"memfs": memfs.__file__, "k": k, "wall": stats(wall), "cpu": stats(cpu)}


if __name__ == "__main__" and sys.argv[1:2] == ["locomo-cost"]:
    print(json.dumps(locomo_cost(int(sys.argv[2]) if len(sys.argv) > 2 else 20), indent=2))

if __name__ == "__main__" and sys.argv[1:2] not in (["first-managed-append"], ["locomo-cost"]):
    print(json.dumps({"sessions": session_bench([100, 10_000], 30), "locomo": locomo_bench()}, indent=2))


def manager_bench(sizes: list[int], reps: int) -> dict[str, Any]:
    """``apply_management`` on long transcripts: it reads only the tail it needs."""
    from memfs.conversation import SlidingWindowConversationManager, TokenWindowConversationManager

    out: dict[str, Any] = {}
    for size in sizes:
        folder = Path(tempfile.mkdtemp(prefix="memfs-managers-"))
        try:
            vault = memfs.Vault.open(folder / "vault", create=True, durable=False)
            row: dict[str, Any] = {}
            for manager in (SlidingWindowConversationManager(40), TokenWindowConversationManager(8000)):
                session = vault.session(type(manager).__name__, commit="manual", manager=manager)
                session.append([item for i in range(size // 2) for item in turn(i)])
                samples = []
                for i in range(reps):
                    session.manager = None  # append without managing, then time the management alone
                    session.append(turn(size + i))
                    session.manager = manager
                    start = time.perf_counter()
                    session.apply_management()
                    samples.append((time.perf_counter() - start) * 1000)
                row[type(manager).__name__] = stats(samples)
            vault.close()
            out[str(size)] = row
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return out


_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.I)
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”')


def readability(title: str, body: str, tags: list[str], type_: str | None, speaker_known: bool) -> dict[str, bool]:
    """The checks an extracted memory passes, as the hand-written ones of example_vault do.

    - ``title_short``: at most 8 words and 60 characters;
    - ``title_whole``: the title does not end on a word that wants another after it ("I take the 7:40
      train on"): an article, a preposition, a conjunction, a possessive, an auxiliary
      (``memfs.phrasing.DANGLING``; a copula after a pronoun ends a clause: "how simple it is");
    - ``third_person``: where the speaker is known, the body says no "I", "me" or "my" outside quotes,
      and does not frame the fact as "The user said";
    - ``tags_meaningful``: no tag is a stop word (``my``), under three letters, or a cut of the
      memory's type (``pref`` for ``preference``).
    """
    from memfs.analysis import STOP_WORDS
    from memfs.phrasing import dangles

    words = title.split()
    kind = (type_ or "").lower()
    unquoted = _QUOTED.sub("", body)
    return {
        "title_short": 0 < len(words) <= 8 and len(title) <= 60,
        "title_whole": not dangles(title),
        "third_person": not speaker_known
        or not (_FIRST_PERSON.search(unquoted) or unquoted.lower().startswith("the user said")),
        "tags_meaningful": all(
            t.lower() not in STOP_WORDS and len(t) >= 3 and not (kind.startswith(t.lower()) and t.lower() != kind)
            for t in tags
        ),
    }


def readable_share(memories: list[memfs.Memory], speaker_known: bool) -> dict[str, Any]:
    """The share of ``memories`` passing each readability check, and all of them."""
    checks = [readability(m.title or "", m.body, list(m.tags), m.type, speaker_known) for m in memories]
    out: dict[str, Any] = {"memories": len(checks)}
    for name in ("title_short", "title_whole", "third_person", "tags_meaningful"):
        out[name] = round(sum(c[name] for c in checks) / max(1, len(checks)), 3)
    out["all"] = round(sum(all(c.values()) for c in checks) / max(1, len(checks)), 3)
    return out


def extraction_bench() -> dict[str, Any]:
    """Rule-based extraction over LoCoMo, against each session's observation annotations; how
    readable the memories are (:func:`readability`, every speaker known: each turn starts with a
    name); and how often the injected block (2,000 characters) holds a memory from an evidence
    turn, with injection's relevance floor (the defaults) and without it."""
    from memfs.extract import RuleExtractor
    from memfs.longterm import LongTermMemory

    files = sorted(corpus.DATA.glob("*.json"))
    if not files:
        return {"skipped": "LoCoMo data not found"}
    observations = captured = memories = questions = hits = hits_without_floor = 0
    extracted: list[memfs.Memory] = []
    samples: list[dict[str, str]] = []
    for path in files:
        data = json.loads(path.read_text())
        folder = Path(tempfile.mkdtemp(prefix="memfs-extract-"))
        try:
            vault = memfs.Vault.open(folder / "vault", create=True, durable=False)
            manager = LongTermMemory(vault, stores=[f"people/{path.stem}"], every=0,
                                    extractor=RuleExtractor(roles=("user", "assistant")))  # fmt: skip
            turn_of: dict[str, str] = {}
            n = 1
            while f"session_{n}" in data:
                session = vault.session(f"{path.stem}-s{n}", commit="manual")
                items = [
                    {
                        "role": "user" if t["speaker"] == data["speaker_a"] else "assistant",
                        "content": f"{t['speaker']}: {t['text']}",
                        "id": t["dia_id"],
                    }
                    for t in data[f"session_{n}"]
                ]
                session.append(items)
                session.commit()
                sources = [f"{session.path}#{i + 1}" for i in range(len(items))]
                turn_of.update({src: item["id"] for src, item in zip(sources, items, strict=True)})
                manager.observe(items, sources=sources)
                manager.end_session()
                n += 1
            store = vault.memories(f"people/{path.stem}")
            listed = store.list()
            extracted += listed
            samples += [{"title": m.title or "", "body": m.body.strip(), "tags": ", ".join(m.tags)} for m in listed[:4]]
            derived = {m.path: turn_of.get(m.source or "") for m in listed}
            memories += len(derived)
            extracted_turns = set(derived.values())
            for key, value in data.items():
                if key.endswith("_observation") and isinstance(value, dict):
                    for facts in value.values():
                        for fact in facts:
                            ids = set(re.split(r"[;,\s]+", str(fact[1]))) if len(fact) > 1 else set()
                            observations += 1
                            captured += bool(ids & extracted_turns)
            unfloored = LongTermMemory(vault, stores=[f"people/{path.stem}"], min_term_share=0, min_score_share=0)
            for q in data["qa"]:
                if q.get("category") not in (1, 2, 3, 4):
                    continue
                evidence = {p for e in q.get("evidence", []) for p in re.split(r"[;,\s]+", e) if p}
                questions += 1
                for counted, asked in ((True, manager), (False, unfloored)):
                    block = asked.context_for([{"role": "user", "content": q["question"]}])
                    shown = {html.unescape(p) for p in re.findall(r'^<memory path="([^"]*)"', block, re.M)}
                    found = any(derived.get(f"memories/{p}") in evidence for p in shown)
                    if counted:
                        hits += found
                    else:
                        hits_without_floor += found
            vault.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return {"observations": observations, "captured": captured,
            "observation_recall": round(captured / max(1, observations), 3), "memories_extracted": memories,
            "readable": readable_share(extracted, speaker_known=True), "samples": samples[:12],
            "questions": questions, "injected_context_hit_rate": round(hits / max(1, questions), 3),
            "injected_context_hit_rate_without_floor": round(hits_without_floor / max(1, questions), 3)}  # fmt: skip


def first_managed_append_bench(size: int, reps: int = 3) -> dict[str, Any]:
    """The first append after a manager is attached to a long session that never had one.

    No manager entry exists yet, so the view has no newest window or summary to stop at. Each
    sample is a fresh copy of the same ``size``-message transcript (``commit="manual"``, so git is
    not timed); the second managed append is timed too.
    """
    from memfs.conversation import SlidingWindowConversationManager, TokenWindowConversationManager

    folder = Path(tempfile.mkdtemp(prefix="memfs-first-managed-"))
    try:
        vault = memfs.Vault.open(folder / "vault", durable=False, reconcile=False, create=True)
        source = vault.session("source", commit="manual")
        for start in range(0, size // 2, 5000):
            source.append([item for i in range(start, min(size // 2, start + 5000)) for item in turn(i)])
        row: dict[str, Any] = {"messages": size, "transcript_mb": round(source.file.stat().st_size / 1e6, 1)}
        for manager in (SlidingWindowConversationManager(40), TokenWindowConversationManager(8000)):
            firsts, seconds = [], []
            for rep in range(reps):
                session = vault.session(f"{type(manager).__name__}-{rep}", commit="manual")
                shutil.copyfile(source.file, session.file)
                session.manager = manager
                start = time.perf_counter()
                session.append(turn(size + 1))
                firsts.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                session.append(turn(size + 2))
                seconds.append((time.perf_counter() - start) * 1000)
                session.file.unlink()
            row[type(manager).__name__] = {"first_managed_append": stats(firsts), "second": stats(seconds)}
        vault.close()
        return row
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__" and sys.argv[1:2] == ["first-managed-append"]:
    print(json.dumps(first_managed_append_bench(int(sys.argv[2]) if len(sys.argv) > 2 else 100_000), indent=2))
