"""Candidate retrieval rules for messages, each tuned on four LoCoMo conversations and measured on the fifth.

    python bench/recall_probes.py        # JSON on stdout, about a minute

memfs's message ranking (``memfs.searcher.IndexReader._rank`` over the terms ``memfs.indexing`` builds: a message's
own words x4, its neighbours' x2, two away x1, its session date's words, the ``speaker`` field;
BM25F with the same parameters) is re-done here in numpy over the LoCoMo development turns, so a
rule costs a function, not an index build per setting. It agrees with memfs to within Whoosh's
one-byte field lengths (the ``memfs as shipped`` line beside ``python bench/run.py --only locomo``).

Each candidate has a few settings; for each conversation in turn the setting with the best mean of
turn Recall@10 and session Recall@3 on the other four is chosen and measured on it, and the held-out
figures of the five are pooled (``leave_one_out``). ``best_on_all_five`` is the optimistic figure.
Rules that pay are in memfs (docs/benchmarks.md says which); the rest are kept here, measured.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sessions  # noqa: E402

from memfs import analysis, indexing, searcher  # noqa: E402
from memfs.dates import date_words, written_date  # noqa: E402

STEMS = analysis.ANALYZER.stems
K1, B = analysis.K1, 0.75


class Field:
    """One field's postings and lengths over a conversation's messages, with Whoosh's BM25 statistics."""

    def __init__(self, docs: list[list[str]], count: int) -> None:
        postings: dict[str, tuple[list[int], list[int]]] = {}
        self.length = np.array([len(d) for d in docs], dtype=float)
        for n, terms in enumerate(docs):
            for term, tf in Counter(terms).items():
                postings.setdefault(term, ([], []))[0].append(n)
                postings[term][1].append(tf)
        self.postings = {t: (np.array(d), np.array(f, dtype=float)) for t, (d, f) in postings.items()}
        self.count = count  # Whoosh counts every document of the index, transcripts too
        self.average = self.length.sum() / count

    def df(self, term: str) -> int:
        return len(self.postings.get(term, ((),))[0])

    def idf(self, term: str) -> float:
        return math.log(self.count / (self.df(term) + 1)) + 1

    def bm25(self, terms: list[str], k1: float, b: float = B, idf: Callable[[str], float] | None = None) -> Any:
        scores = np.zeros(len(self.length))
        for term in terms:
            if term in self.postings:
                docs, tf = self.postings[term]
                weight = idf(term) if idf else self.idf(term)
                norm = k1 * ((1 - b) + b * self.length[docs] / self.average)
                scores[docs] += weight * tf * (k1 + 1) / (tf + norm)
        return scores


def conversations() -> list[dict[str, Any]]:
    """Each development conversation's messages as memfs indexes them, and its questions with evidence."""
    out = []
    for conv in sessions.locomo_conversations():
        texts, session, speakers, message, dates, words = [], [], [], [], [], []
        for n, sess in enumerate(conv["sessions"], 1):
            day = written_date(sess["date"])
            date_terms = list(STEMS(date_words(day) if day else sess["date"] or ""))
            own = [Counter(STEMS(item["content"])) for item in sess["items"]]
            for i, item in enumerate(sess["items"]):
                texts.append(item["content"])
                session.append(n)
                speakers.append(list(STEMS(indexing.speaker_of(item) or "")))
                weighted = indexing._message_terms(own, i, []) or []  # (term, weight): repeated by its rounded weight
                message.append([term for term, weight in weighted for _ in range(round(weight))])
                words.append(list(own[i].elements()))
                dates.append(date_terms)
        count = len(texts) + len(conv["sessions"])
        date_repeats = round(indexing.DATE_WEIGHT * analysis.WEIGHT_SCALE)
        ids = [item["id"] for sess in conv["sessions"] for item in sess["items"]]
        by_session: dict[int, list[str]] = {}
        for n, terms in zip(session, words, strict=True):  # a session's own words, each once
            by_session.setdefault(n, []).extend(terms)
        questions = []
        for q in conv["questions"]:
            evidence = sessions._evidence(q.get("evidence", []), set(ids))
            if evidence:
                questions.append({"text": q["question"], "category": str(q["category"]), "evidence": evidence})
        out.append({
            "name": conv["name"], "ids": ids, "texts": texts, "session": np.array(session), "questions": questions,
            "message": Field([m + d * date_repeats if m else [] for m, d in zip(message, dates, strict=True)],
                             count),
            "message_no_date": Field(message, count), "dates": Field(dates, count),
            "speaker": Field(speakers, count),
            "sessions": Field([by_session[n] for n in sorted(by_session)], len(by_session)),
        })  # fmt: skip
    return out


def terms_of(text: str) -> list[str]:
    return list(dict.fromkeys(STEMS(text)))[: searcher.MAX_QUERY_TERMS]


def memfs_scores(conv: dict[str, Any], terms: list[str], *, bonus: float = searcher.SPEAKER_BONUS,
                 message: str = "message") -> Any:  # fmt: skip
    """memfs's scores: BM25F over ``message`` (K1 scaled by the own-word weight) and ``speaker``, and the bonus."""
    scores = conv[message].bm25(terms, K1 * analysis.WEIGHT_SCALE) + conv["speaker"].bm25(terms, K1)
    named = np.zeros(len(scores), dtype=bool)
    for term in terms:
        if term in conv["speaker"].postings:
            named[conv["speaker"].postings[term][0]] = True
    return scores * np.where(named, 1 + bonus, 1.0)


def _z(x: Any) -> Any:
    return (x - x.mean()) / (x.std() or 1.0)


# -- the candidates: each (conversation, question, setting) -> a score per message -------------------


def speaker_bonus(conv: dict[str, Any], q: dict[str, Any], bonus: float) -> Any:
    return memfs_scores(conv, terms_of(q["text"]), bonus=bonus)


def session_share(conv: dict[str, Any], q: dict[str, Any], share: float) -> Any:
    """A share of the whole session's score (the session as one document, z-scored) added to each message."""
    terms = terms_of(q["text"])
    scores = memfs_scores(conv, terms)
    whole = conv["sessions"].bm25(terms, K1)
    return _z(scores) + share * _z(whole)[conv["session"] - 1]


def session_coverage(conv: dict[str, Any], q: dict[str, Any], share: float) -> Any:
    """Each session scored by the sum, over query terms, of its best message for that term (z-scored), added.

    A multi-hop question's terms are often answered by different messages of one session.
    """
    terms = terms_of(q["text"])
    scores = memfs_scores(conv, terms)
    best = np.zeros((len(terms), conv["session"].max()))
    for i, term in enumerate(terms):
        alone = conv["message"].bm25([term], K1 * analysis.WEIGHT_SCALE) + conv["speaker"].bm25([term], K1)
        np.maximum.at(best[i], conv["session"] - 1, alone)
    return _z(scores) + share * _z(best.sum(axis=0))[conv["session"] - 1]


def session_idf(conv: dict[str, Any], q: dict[str, Any], power: float) -> Any:
    """Term weights scaled by how few sessions hold the term (a word every session uses says little)."""
    terms, sessions_ = terms_of(q["text"]), conv["sessions"]
    top = math.log((sessions_.count + 1) / 0.5)

    def idf(term: str) -> float:
        return conv["message"].idf(term) * (math.log((sessions_.count + 1) / (sessions_.df(term) + 0.5)) / top) ** power

    scores = conv["message"].bm25(terms, K1 * analysis.WEIGHT_SCALE, idf=idf) + conv["speaker"].bm25(terms, K1)
    named = np.zeros(len(scores), dtype=bool)
    for term in terms:
        if term in conv["speaker"].postings:
            named[conv["speaker"].postings[term][0]] = True
    return scores * np.where(named, 1 + searcher.SPEAKER_BONUS, 1.0)


def date_field(conv: dict[str, Any], q: dict[str, Any], weight: float) -> Any:
    """The session date's words as a field of their own, without length normalisation, not mixed into the message."""
    terms = terms_of(q["text"])
    return memfs_scores(conv, terms, message="message_no_date") + weight * conv["dates"].bm25(terms, 0.5, b=0.0)


_TIME = re.compile(r"\b(?:yesterday|today|tonight|tomorrow|ago|last|next|weeks?|weekend|months?|years?|morning|"
                   r"evening|night|recently|lately|since|\d+|(?:mon|tues|wednes|thurs|fri|satur|sun)day|"
                   r"january|february|march|april|may|june|july|august|september|october|november|december|"
                   r"spring|summer|autumn|fall|winter)\b", re.IGNORECASE)  # fmt: skip
_NUMBER = re.compile(r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|hundred|dozen|"
                     r"couple|few|several|once|twice|times)\b", re.IGNORECASE)  # fmt: skip
_NAME = re.compile(r"(?<=[a-z,] )[A-Z][a-z]+")  # a capitalised word inside a sentence


def answer_type(conv: dict[str, Any], q: dict[str, Any], bonus: float) -> Any:
    """A message holding what the question word asks for (when: a time; how many: a number; where/who: a name)."""
    scores = memfs_scores(conv, terms_of(q["text"]))
    asked = q["text"].lower()
    if asked.startswith("when") or " when " in asked:
        pattern = _TIME
    elif re.match(r"how (?:many|much|long|old|often)", asked):
        pattern = _NUMBER
    elif asked.startswith(("where", "who")):
        pattern = _NAME
    else:
        return scores
    said = [text.split(":", 1)[-1] for text in conv["texts"]]
    holds = np.array([bool(pattern.search(text)) for text in said])
    return scores * np.where(holds, 1 + bonus, 1.0)


_HEDGES = {"likely", "probably", "possibly", "kind", "type", "sort"}


def question_words(conv: dict[str, Any], q: dict[str, Any], drop: bool) -> Any:
    """Hedges and frames of a question left out ("Would X likely ..." stems "likely" to the common "like")."""
    words = re.findall(r"\w+(?:['’]\w+)*", q["text"])
    text = " ".join(w for w in words if not drop or w.lower() not in _HEDGES)
    return memfs_scores(conv, terms_of(text))


def _one_edit(word: str) -> set[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    cuts = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    dropped = {a + b[1:] for a, b in cuts if b}
    swapped = {a + b[1] + b[0] + b[2:] for a, b in cuts if len(b) > 1}
    replaced = {a + c + b[1:] for a, b in cuts if b for c in letters}
    return dropped | swapped | replaced | {a + c + b for a, b in cuts for c in letters}


def typos(conv: dict[str, Any], q: dict[str, Any], shortest: int) -> Any:
    """A query word no message has, replaced by the most frequent indexed word one edit away."""
    field, terms = conv["message"], terms_of(q["text"])
    if shortest:
        for i, term in enumerate(terms):
            if field.df(term) == 0 and len(term) >= shortest and term.isalpha():
                near = [t for t in _one_edit(term) if field.df(t)]
                terms[i] = max(near, key=field.df) if near else term
    return memfs_scores(conv, terms)


def sessions_alone(conv: dict[str, Any], q: dict[str, Any], k1: float) -> Any:
    """Sessions ranked as documents of their own (the first message of each stands for it): session recall only."""
    whole = conv["sessions"].bm25(terms_of(q["text"]), k1)
    first = np.flatnonzero(np.diff(conv["session"], prepend=0))  # each session's first message
    scores = np.full(len(conv["session"]), -1.0)
    scores[first] = whole[conv["session"][first] - 1]
    return scores


CANDIDATES: dict[str, tuple[Callable[..., Any], list[Any]]] = {
    "speaker bonus (in memfs: 0.4)": (speaker_bonus, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7]),
    "a share of the session's score added to each message": (session_share, [0.0, 0.05, 0.1, 0.2, 0.3]),
    "sessions ranked as whole documents": (sessions_alone, [0.6, 1.2, 2.0]),
    "a session's best message per query term, summed, added to each message": (
        session_coverage,
        [0.0, 0.1, 0.2, 0.3, 0.5],
    ),
    "term weights scaled by session frequency": (session_idf, [0.0, 0.25, 0.5, 1.0]),
    "the session date as a field of its own": (date_field, [0.5, 1.0, 2.0]),
    "question word -> answer type bonus": (answer_type, [0.0, 0.1, 0.2, 0.3, 0.5]),
    "hedge and frame words left out of the question": (question_words, [False, True]),
    "typos: an unknown word replaced by one an edit away": (typos, [0, 4, 5, 6]),
}


def _rows(conv: dict[str, Any], rule: Callable[..., Any], setting: Any) -> list[dict[str, Any]]:
    session_of = {d: str(s) for d, s in zip(conv["ids"], conv["session"], strict=True)}
    rows = []
    for q in conv["questions"]:
        scores = rule(conv, q, setting)
        order = np.lexsort((np.arange(len(scores)), -scores))
        ranked = [conv["ids"][i] for i in order[: sessions.LOCOMO_DEPTH]]
        rows.append(sessions._recall(ranked, q["evidence"], session_of) | {"category": q["category"]})
    return rows


def run() -> dict[str, Any]:
    convs = conversations()
    if not convs:
        return {"skipped": "LoCoMo data not found"}
    shipped = [r for c in convs for r in _rows(c, speaker_bonus, searcher.SPEAKER_BONUS)]
    out: dict[str, Any] = {"memfs as shipped": sessions.rows_summary(shipped)}
    for name, (rule, settings) in CANDIDATES.items():
        per = {(c["name"], json.dumps(s)): _rows(c, rule, s) for c, s in itertools.product(convs, settings)}
        chosen, held = {}, []
        for conv in convs:
            others = {s: [r for c in convs if c is not conv for r in per[(c["name"], json.dumps(s))]] for s in settings}
            chosen[conv["name"]] = max(settings, key=lambda s: sessions.objective(others[s]))
            held += per[(conv["name"], json.dumps(chosen[conv["name"]]))]
        whole = {json.dumps(s): [r for c in convs for r in per[(c["name"], json.dumps(s))]] for s in settings}
        best = max(whole, key=lambda s: sessions.objective(whole[s]))
        out[name] = {"leave_one_out": sessions.rows_summary(held)["overall"], "chosen_on_the_other_four": chosen,
                     "best_on_all_five": {"setting": json.loads(best)}
                     | sessions.rows_summary(whole[best])["overall"]}  # fmt: skip
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
