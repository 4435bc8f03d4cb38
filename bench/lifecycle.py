"""Duplicates and stale facts on the labelled set of issue #19, with the near-duplicate check off and on.

    python bench/lifecycle.py            # the labelled set, and writes on a vault of 2,000 memories
    python bench/lifecycle.py --quick    # writes on 500 memories, fewer of them

The labelled set is ``bench/data/lifecycle.json`` (hand-written: what it holds is said in its
``about``). Prints JSON (also part of ``bench/run.py``):

- ``pairs``: the near-duplicate measure (:mod:`memfs.similar`) on labelled statement pairs: the
  chosen thresholds' precision and recall, on the statements as written and as the rule extractor
  stores them (in the third person: "The user prefers ..."), and a sweep of other thresholds, which
  is what justifies the chosen ones.
- ``extraction``: each conversation run through ``LongTermMemory`` (the rule extractor, and a
  scripted model extractor that adds every user message, as a model that never looks first does),
  with ``dedupe`` off (only memories with exactly the same words are kept instead of added: the
  behaviour before) and on. ``duplicates_per_100`` counts, per 100 memories the extraction left,
  those that state a labelled fact another memory already states; ``recall`` is the share of the
  current labelled facts stored, so a check that merged two facts into one would show there.
  ``injection``: the memories injected for the conversation's questions; one is a miss when its
  front matter says it no longer holds (``superseded_by``, or ``valid_until``/``expires`` in the
  past: read here from the file, not through memfs), when it states a value the conversation
  changed, or when it repeats a fact already in the same block. ``precision`` is the rest's share.
- ``write``: ``MemoryStore.add`` with the check (``if_similar="update"``) beside without it
  (``"add"``), interleaved in the same run on the same durable vault, and the lookup alone: right
  after a write (it first brings the index up to date with that write, as any search then would)
  and again with nothing pending.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import corpus  # noqa: E402

import memfs  # noqa: E402
from memfs.documents import loads  # noqa: E402
from memfs.phrasing import third_person  # noqa: E402
from memfs.similar import CONTAINMENT, JACCARD, compare  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "lifecycle.json"
_ENTRY = re.compile(r'<memory path="([^"]*)"')
_WORDS = re.compile(r"\w+")


def say(message: str) -> None:
    print(f"[lifecycle] {message}", file=sys.stderr, flush=True)


def load(path: Path = DATA) -> dict[str, Any]:
    """The labelled set, checked: a malformed file fails here with what is wrong, not halfway through."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("pairs"), list)
        or not isinstance(data.get("conversations"), list)
    ):
        raise ValueError(f"{path}: needs 'pairs' and 'conversations' lists")
    for pair in data["pairs"]:
        if not isinstance(pair, dict) or not (
            isinstance(pair.get("a"), str) and isinstance(pair.get("b"), str) and isinstance(pair.get("same"), bool)
        ):
            raise ValueError(f"{path}: a pair needs strings 'a', 'b' and a boolean 'same': {pair!r:.200}")
    for conv in data["conversations"]:
        if not isinstance(conv, dict):
            raise ValueError(f"{path}: a conversation must be an object: {conv!r:.200}")
        turns, facts = conv.get("turns"), conv.get("facts")
        if not isinstance(conv.get("id"), str) or not isinstance(turns, list) or not isinstance(facts, list):
            raise ValueError(f"{path}: a conversation needs 'id', 'turns' and 'facts': {conv!r:.200}")
        if not all(isinstance(f, dict) and isinstance(f.get("keys"), list) and f["keys"] for f in facts):
            raise ValueError(f"{path}: conversation {conv['id']}: every fact needs a non-empty 'keys' list")
    return data


# -- the measure on labelled pairs ------------------------------------------------------


def stored(statement: str) -> str:
    """A statement as the rule extractor stores it: told in the third person about the user."""
    return third_person(statement, "the user")


def score_pairs(pairs: list[dict[str, Any]], containment: float, jaccard: float, told: bool = False) -> dict[str, Any]:
    """Precision and recall of "near-duplicate" at these thresholds (``told``: as stored); the pairs it got wrong."""
    tp = fp = fn = 0
    wrong = []
    for pair in pairs:
        a, b = (stored(pair["a"]), stored(pair["b"])) if told else (pair["a"], pair["b"])
        near = compare(b, a).near(containment, jaccard)
        tp += near and pair["same"]
        fp += near and not pair["same"]
        fn += not near and pair["same"]
        if near != pair["same"]:
            wrong.append(f"{pair.get('kind', '?')}: {pair['a']!r} / {pair['b']!r}")
    return {"precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / (tp + fn), 3) if tp + fn else None, "false_merges": fp, "missed": fn,
            "wrong": wrong}  # fmt: skip


def pairs_bench(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    sweep = []
    for c in (0.6, 0.7, 0.8, 0.9, 1.0):
        for j in (0.2, 0.3, 0.4, 0.5, 0.6):
            raw, third = score_pairs(pairs, c, j), score_pairs(pairs, c, j, told=True)
            sweep.append({"containment": c, "jaccard": j, "raw": {k: raw[k] for k in ("precision", "recall")},
                          "as_stored": {k: third[k] for k in ("precision", "recall")}})  # fmt: skip
    return {"n": len(pairs), "same": sum(p["same"] for p in pairs),
            "chosen": {"containment": CONTAINMENT, "jaccard": JACCARD,
                       "raw": score_pairs(pairs, CONTAINMENT, JACCARD),
                       "as_stored": score_pairs(pairs, CONTAINMENT, JACCARD, told=True)},
            "sweep": sweep}  # fmt: skip


# -- conversations ------------------------------------------------------------------------


def words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def states(body: str, fact: dict[str, Any]) -> bool:
    """True when every key of ``fact`` starts a word of ``body``."""
    found = words(body)
    return all(any(w.startswith(str(key).lower()) for w in found) for key in fact["keys"])


def past(value: Any, now: datetime) -> bool:
    """True when a front-matter date or time is before ``now`` (a day counts to its end)."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return moment < now
    if isinstance(value, date):
        return value < now.date()
    text = str(value).strip()
    try:
        if len(text) == 10:
            return date.fromisoformat(text) < now.date()
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)) < now


def retired(front: dict[str, Any], now: datetime) -> bool:
    """What a memory's front matter says, read directly: superseded, or no longer valid."""
    return bool(front.get("superseded_by")) or any(
        front.get(key) not in (None, "") and past(front[key], now) for key in ("valid_until", "expires")
    )


def model_extractor(turns: list[str]) -> memfs.ModelExtractor:
    """A model that adds each user message as a memory, never updating: what dedupe has to catch."""
    replies = [json.dumps({"operations": [{"op": "add", "text": turn, "title": " ".join(turn.split()[:5]),
                                           "type": "fact"}]}) for turn in turns]  # fmt: skip
    return memfs.ModelExtractor(memfs.ScriptedModel(replies))


def run_conversations(data: dict[str, Any], kind: str, dedupe: bool) -> dict[str, Any]:
    """Every conversation through a LongTermMemory; what was stored and what was injected."""
    folder = Path(tempfile.mkdtemp(prefix="memfs-lifecycle-"))
    now = datetime.now(timezone.utc)
    totals = {"memories": 0, "duplicates": 0, "stale_stored": 0, "facts": 0, "facts_stored": 0, "unlabelled": 0,
              "injected": 0, "retired_injected": 0, "stale_injected": 0, "repeats_injected": 0}  # fmt: skip
    per_conversation = {}
    try:
        vault = memfs.Vault.open(folder / "vault", create=True, durable=False)
        for conv in data["conversations"]:
            namespace = f"bench/{conv['id']}"
            store = vault.memories(namespace)
            seeded = set()
            for seed in conv.get("seed", []):  # written as a person would: a file, then committed
                front = "".join(f"{key}: {json.dumps(value)}\n" for key, value in seed.get("front_matter", {}).items())
                target = vault.root / "memories" / namespace / seed["name"]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(f"---\n{front}---\n{seed['body']}\n")
                seeded.add(seed["name"])
            if seeded:
                vault.commit("seeded memories that no longer hold")
            extractor = memfs.RuleExtractor() if kind == "rule" else model_extractor(conv["turns"])
            manager = memfs.LongTermMemory(vault, stores=[namespace], extractor=extractor, dedupe=dedupe)
            for turn in conv["turns"]:
                manager.observe([{"role": "user", "content": turn}])
            manager.flush()
            stored = [m for m in store.list() if m.name not in seeded]
            counts = [sum(states(m.body, f) for m in stored) for f in conv["facts"]]
            current = [(f, n) for f, n in zip(conv["facts"], counts, strict=True) if not f.get("stale")]
            mine = {"memories": len(stored), "duplicates": sum(max(0, n - 1) for n in counts),
                    "stale_stored": sum(n for f, n in zip(conv["facts"], counts, strict=True) if f.get("stale")),
                    "facts": len(current), "facts_stored": sum(n > 0 for _, n in current),
                    "unlabelled": sum(not any(states(m.body, f) for f in conv["facts"]) for m in stored)}  # fmt: skip
            mine.update(inject(vault, manager, conv, now))
            per_conversation[conv["id"]] = mine
            for key in totals:
                totals[key] += mine[key]
        vault.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    wrong = totals["retired_injected"] + totals["stale_injected"] + totals["repeats_injected"]
    return {
        "duplicates_per_100": round(100 * totals["duplicates"] / max(1, totals["memories"]), 1),
        "recall": round(totals["facts_stored"] / max(1, totals["facts"]), 3),
        "injection_precision": round(1 - wrong / totals["injected"], 3) if totals["injected"] else None,
        **totals, "conversations": per_conversation,
    }  # fmt: skip


def inject(vault: memfs.Vault, manager: memfs.LongTermMemory, conv: dict[str, Any], now: datetime) -> dict[str, int]:
    """Classify every memory injected for the conversation's questions (a miss, or right)."""
    out = {"injected": 0, "retired_injected": 0, "stale_injected": 0, "repeats_injected": 0}
    for question in conv.get("questions", []):
        block = manager.context_for([{"role": "user", "content": question}])
        told: set[int] = set()
        for label in _ENTRY.findall(block):
            doc = loads((vault.root / "memories" / html.unescape(label)).read_text(encoding="utf-8"))
            out["injected"] += 1
            facts = [i for i, f in enumerate(conv["facts"]) if states(doc.body, f)]
            if retired(dict(doc.metadata), now):
                out["retired_injected"] += 1
            elif any(conv["facts"][i].get("stale") for i in facts):
                out["stale_injected"] += 1
            elif facts and set(facts) <= told:
                out["repeats_injected"] += 1
            told.update(facts)
    return out


def extraction_bench(data: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for kind in ("rule", "model_adds_every_message"):
        result[kind] = {}
        for mode, dedupe in (("off", False), ("on", True)):
            say(f"{kind} extractor, dedupe {mode}")
            result[kind][mode] = run_conversations(data, "rule" if kind == "rule" else "model", dedupe)
    return result


# -- write latency ------------------------------------------------------------------------


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(p95, 2), "n": len(ordered)}


def write_bench(size: int, writes: int) -> dict[str, Any]:
    """``add`` with and without the near-duplicate check, alternating, on one durable vault of ``size``."""
    folder = Path(tempfile.mkdtemp(prefix="memfs-lifecycle-write-"))
    try:
        items = corpus.memories(size, seed=5)
        corpus.write_vault(folder / "vault", items)
        say(f"write: opening a vault of {size} memories")
        vault = memfs.Vault.open(folder / "vault")  # durable: fsync on every write, the default
        store = vault.memories(str(items[0]["namespace"]))
        new = corpus.memories(2 * writes, seed=6)
        off, on, lookup, warm, merged = [], [], [], [], 0
        say(f"write: {writes} adds each way, alternating")
        for i in range(writes):
            for mode, item in (("add", new[2 * i]), ("update", new[2 * i + 1])):
                body = str(item["body"])
                start = time.perf_counter()
                written = store.add(body, title=f"lifecycle {mode} {i}", if_similar=mode)
                (off if mode == "add" else on).append((time.perf_counter() - start) * 1000)
                merged += mode == "update" and written.title != f"lifecycle {mode} {i}"
            for samples in (lookup, warm):  # the first indexes the add before it; the second finds nothing pending
                start = time.perf_counter()
                store.similar(str(new[2 * i]["body"]))
                samples.append((time.perf_counter() - start) * 1000)
        vault.close()
        return {"memories": size, "add_without_check": stats(off), "add_with_check": stats(on),
                "lookup_after_a_write": stats(lookup), "lookup_with_the_index_caught_up": stats(warm),
                "adds_merged_by_the_check": merged}  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(quick: bool = False) -> dict[str, Any]:
    data = load()
    return {
        "labelled_set": str(DATA.relative_to(DATA.parents[2])),
        "pairs": pairs_bench(data["pairs"]),
        "extraction": extraction_bench(data),
        "write": write_bench(500 if quick else 2000, 20 if quick else 60),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a smaller vault and fewer writes")
    args = parser.parse_args()
    from run import machine

    result = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "machine": machine(),
              **run(args.quick)}  # fmt: skip
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
