"""Synthetic memories and natural-language questions for the benchmarks.

Memories are 100-400 words of real conversational English, stitched from LoCoMo turns
(../shared/data/locomo-dev, beside the repository); questions are LoCoMo questions. Without
that folder, a small built-in vocabulary stands in, so `make bench` always runs.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo-dev"
_FALLBACK = (
    "alice bob project meeting travel flight window seat hotel coffee tea dinner booking refund "
    "deploy database postgres review incident payment schedule weekend garden painting music "
    "concert running marathon family daughter school holiday beach mountain camera photo recipe"
).split()
_TYPES = ["fact", "preference", "event", "instruction", "note"]


def turns_and_questions() -> tuple[list[str], list[str]]:
    """LoCoMo turn texts and questions (categories 1-4), or stand-ins without the data."""
    turns: list[str] = []
    questions: list[str] = []
    for path in sorted(DATA.glob("*.json")):
        data = json.loads(path.read_text())
        for key, value in data.items():
            if key.startswith("session_") and isinstance(value, list):
                turns += [t["text"] for t in value if t.get("text")]
        questions += [q["question"] for q in data.get("qa", []) if q.get("category") in (1, 2, 3, 4)]
    if not turns:
        rng = random.Random(0)
        turns = [" ".join(rng.choice(_FALLBACK) for _ in range(rng.randint(8, 30))) for _ in range(5000)]
        questions = [" ".join(rng.choice(_FALLBACK) for _ in range(rng.randint(5, 10))) + "?" for _ in range(300)]
    return turns, questions


def memories(n: int, seed: int = 1) -> list[dict[str, object]]:
    """``n`` memories: namespace, slug, title, type, tags and a 100-400 word body."""
    turns, _ = turns_and_questions()
    rng = random.Random(seed)
    out = []
    for i in range(n):
        target = rng.randint(100, 400)
        words: list[str] = []
        j = rng.randrange(len(turns))
        while len(words) < target:
            words += turns[j % len(turns)].split()
            j += rng.randint(1, 50)
        body = " ".join(words[:target])
        title = " ".join(w.strip(".,!?;:'\"()") for w in words[: rng.randint(2, 6)]) or f"memory {i}"
        out.append({
            "namespace": f"{['users', 'projects', 'agents'][i % 3]}/n{i % 10}",
            "slug": f"m{i:06d}", "title": title, "type": rng.choice(_TYPES),
            "tags": [f"tag{rng.randint(0, 30)}"], "body": body,
        })  # fmt: skip
    return out


def questions(n: int) -> list[str]:
    """The first ``n`` questions."""
    return turns_and_questions()[1][:n]


def write_vault(root: Path, items: list[dict[str, object]]) -> list[str]:
    """Write memory files straight to disk (fast, no memfs); returns their vault paths."""
    paths = []
    for i, m in enumerate(items):
        rel = f"memories/{m['namespace']}/{m['slug']}.md"
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        title = json.dumps(m["title"])  # a JSON string is a valid YAML string
        tags = ", ".join(m["tags"])  # type: ignore[arg-type]
        target.write_text(
            f"---\nid: mem_BENCH{i:020d}\ntitle: {title}\ntype: {m['type']}\ntags: [{tags}]\n"
            f"created: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\n---\n{m['body']}\n"
        )
        paths.append(rel)
    os.sync()
    return paths
