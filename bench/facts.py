"""LoCoMo's observations as stored facts, and its questions with the facts that answer them.

The data of the fact recall protocol (../shared/data/locomo-dev/README.md, "Fact recall"): every
observation of every session is one fact; a question's gold facts are those whose evidence turn is
among the question's evidence; questions of categories 1-4 with at least one gold fact count.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def _ids(raw: Any) -> set[str]:
    """Evidence ids as a set: LoCoMo writes a few as ``"D8:6; D9:17"`` or lists."""
    values = raw if isinstance(raw, list) else [raw]
    return {p for value in values for p in re.split(r"[;,\s]+", str(value)) if p}


def conversation(path: Path) -> dict[str, Any]:
    """One conversation: its facts (text, evidence ids) and its questions (text, category, gold fact indices)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SystemExit(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("qa"), list):
        raise SystemExit(f"{path}: not a LoCoMo conversation (an object with a 'qa' list): give locomo-dev's folder")
    facts: list[dict[str, Any]] = []
    for key, value in data.items():
        if key.endswith("_observation") and isinstance(value, dict):
            for per_speaker in value.values():
                for entry in per_speaker:
                    text, evidence = entry[0], entry[1] if len(entry) > 1 else []
                    if isinstance(text, str) and text.strip():
                        facts.append({"text": text.strip(), "evidence": _ids(evidence)})
    questions = []
    for q in data["qa"]:
        if q.get("category") not in CATEGORIES:
            continue
        evidence = _ids(q.get("evidence", []))
        gold = {i for i, fact in enumerate(facts) if fact["evidence"] & evidence}
        if gold:
            questions.append({"text": q["question"], "category": CATEGORIES[q["category"]], "gold": gold})
    return {"name": path.stem, "facts": facts, "questions": questions}


def conversations(folder: Path) -> list[dict[str, Any]]:
    """Every conversation file (``*.json``) of ``folder``, in name order."""
    return [conversation(path) for path in sorted(folder.glob("*.json"))]


def scores(ranked: list[int], gold: set[int]) -> dict[str, float]:
    """First-5 hit rate, Recall@5 and @10 (share of the gold facts), MRR@10 of one ranked list of fact indices."""
    first = next((rank for rank, i in enumerate(ranked[:10], 1) if i in gold), None)
    return {
        "hit@5": float(bool(gold & set(ranked[:5]))),
        "R@5": len(gold & set(ranked[:5])) / len(gold),
        "R@10": len(gold & set(ranked[:10])) / len(gold),
        "MRR@10": 1 / first if first else 0.0,
    }
