"""Synthetic memories and natural-language questions for the benchmarks.

Two corpora:

- ``locomo``: memories of 100-400 words of real conversational English, stitched from LoCoMo
  turns (../shared/data/locomo-dev, beside the repository); questions are LoCoMo questions.
  Without that folder, a small built-in vocabulary stands in, so `make bench` always runs.
- ``common``: the vault of one small team, where a handful of people and projects are named in
  nearly every memory and in every question ("What did Alice decide about the Atlas database
  migration?"). Every query word is then in a large share of the documents: the worst case for a
  search that walks postings, and the usual case for a personal or team vault.

Both are generated deterministically from a seed.
"""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path

VERSION = "1"  # raise when a corpus changes, so vaults cached by bench/run.py --cache are rebuilt
# beside the repository (/work/main next to /work/shared), or beside an ancestor of it for a worktree
# kept further down (/work/wt/NAME); the first that exists, else the first, which reads as "not found"
_CANDIDATES = [parent / "shared" / "data" / "locomo-dev" for parent in Path(__file__).resolve().parents[2:]]
DATA = next((path for path in _CANDIDATES if path.is_dir()), _CANDIDATES[0])
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


# -- the common-words corpus: one team's vault --------------------------------------------

PEOPLE = ["Alice", "Bob", "Priya", "Marco", "Chen", "Sofia"]
PROJECTS = ["Atlas", "Phoenix", "Orion", "Harbor"]
_SUBJECTS = (
    "database migration, deploy pipeline, release schedule, budget review, onboarding guide, "
    "incident report, API design, load test, security audit, customer demo, design review, "
    "roadmap, hiring plan, offsite, conference talk, dashboard, billing service, search feature, "
    "mobile app, data export, backup policy, on-call rotation, code review, postgres upgrade, "
    "cache layer, payment flow, feature flag, sprint planning, retrospective, vendor contract"
).split(", ")
_VERBS = ["decided", "said", "asked", "agreed", "suggested", "promised", "noted", "warned", "prefers", "wants"]
_WHEN = ["on Monday", "on Friday", "next week", "before the release", "after the offsite", "by the end of the month",
         "in March", "in the morning", "during standup", "last sprint"]  # fmt: skip
_DETAILS = (
    "the staging cluster keeps timing out under load; rollback takes about ten minutes; "
    "the vendor quoted twice the usual price; a window seat on long flights; green tea instead of coffee; "
    "the old schema still has three unused tables; customers asked for a CSV export; "
    "the hotel near the venue was fully booked; pair programming on the hardest tickets; "
    "the nightly job fails when the disk is full; dark mode in the dashboard; "
    "a written summary after every meeting; the metrics look better since the cache change; "
    "tests must pass before anything is merged; the budget is tight this quarter; "
    "the mobile build is slow on the shared runners; a shorter meeting with a clear agenda; "
    "the migration needs a maintenance window; vegetarian food at the team dinner; "
    "the security audit found two minor issues; an early flight so the afternoon stays free"
).split("; ")
# The long tail every real vault has: places, tools, foods, things, each named in few memories.
_TAIL = (
    "Lisbon Berlin Tokyo Nairobi Toronto Oslo Austin Lyon Porto Seoul Denver Kyoto Dublin Prague Madrid "
    "Chicago Boston Seattle Milan Vienna Zurich Warsaw Helsinki Athens Cairo Lima Bogota Sydney Perth Delhi "
    "kubernetes terraform grafana kafka redis nginx jenkins sentry datadog figma jira slack notion airflow "
    "spark pandas react django flask rails golang rust typescript graphql webpack docker ansible vault "
    "sushi ramen tacos falafel curry pizza bagels croissants dumplings pho risotto paella kimchi hummus "
    "espresso matcha kombucha lemonade cider smoothie granola pancakes waffles brownies cheesecake "
    "bicycle kayak tent guitar piano violin camera drone telescope keyboard monitor headphones backpack "
    "yoga climbing tennis chess sailing skiing surfing hiking running swimming pottery painting baking "
    "invoice receipt passport visa badge laptop charger adapter umbrella notebook whiteboard projector "
    "dentist plumber accountant lawyer recruiter landlord mentor intern contractor auditor translator "
    "birthday wedding anniversary graduation housewarming retirement farewell reunion picnic barbecue "
    "allergy migraine vaccine physiotherapy checkup prescription vitamins insomnia marathon sabbatical"
).split()
_TAIL_ZIPF = list(itertools.accumulate(1 / rank for rank in range(1, len(_TAIL) + 1)))
_TAIL_SENTENCES = [
    "{p} mentioned {a} and {b} in passing.",
    "{p} brought up {a} again, this time with {b}.",
    "Remember {a}: {p} cares about it more than about {b}.",
    "{p} is going to {a} and asked about {b}.",
]
_QUESTIONS = [
    "What did {p} decide about the {j} {s}?",
    "When is the {j} {s} happening, according to {p}?",
    "What does {p} prefer for the {s}?",
    "Why did {p} and {q} disagree about the {j} {s}?",
    "What did {p} say about the {s} on {j}?",
    "Who is responsible for the {j} {s}?",
    "What problem did {p} find with the {j} {s}?",
    "What did {p} ask {q} to do before the {j} {s}?",
]


def _common_sentence(rng: random.Random) -> str:
    p, q = rng.sample(PEOPLE, 2)
    if rng.random() < 0.25:  # Zipf-like: a few tail words are frequent, most are rare
        a, b = rng.choices(_TAIL, cum_weights=_TAIL_ZIPF, k=2)
        return rng.choice(_TAIL_SENTENCES).format(p=p, a=a, b=b)
    j, s = rng.choice(PROJECTS), rng.choice(_SUBJECTS)
    return rng.choice([
        f"{p} {rng.choice(_VERBS)} that the {j} {s} should happen {rng.choice(_WHEN)}.",
        f"{p} and {q} talked about the {s} for {j}: {rng.choice(_DETAILS)}.",
        f"For {j}, {p} {rng.choice(_VERBS)} {rng.choice(_DETAILS)}.",
        f"{p} told {q} that {rng.choice(_DETAILS)}.",
        f"The {j} team met {rng.choice(_WHEN)} to go over the {s} with {p}.",
        f"{q} {rng.choice(_VERBS)} {p} to own the {s} {rng.choice(_WHEN)}.",
    ])  # fmt: skip


def common_memories(n: int, seed: int = 1) -> list[dict[str, object]]:
    """``n`` memories of one team: 40-200 words each, naming a few people and projects again and again."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        sentences: list[str] = []
        target = rng.randint(40, 200)
        while sum(len(x.split()) for x in sentences) < target:
            sentences.append(_common_sentence(rng))
        person, project = rng.choice(PEOPLE), rng.choice(PROJECTS)
        subject = rng.choice(_SUBJECTS)
        out.append({
            "namespace": f"{['users', 'projects', 'agents'][i % 3]}/n{i % 10}",
            "slug": f"m{i:06d}", "title": f"{person}: {project} {subject}", "type": rng.choice(_TYPES),
            "tags": [project.lower(), person.lower()], "body": " ".join(sentences),
        })  # fmt: skip
    return out


def common_questions(n: int, seed: int = 7) -> list[str]:
    """``n`` questions about the team, each naming a person or a project and a subject."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        p, q = rng.sample(PEOPLE, 2)
        question = rng.choice(_QUESTIONS).format(p=p, q=q, j=rng.choice(PROJECTS), s=rng.choice(_SUBJECTS))
        if i % 3 == 2:  # a third also name a tail word
            question = question[:-1] + f" and {rng.choice(_TAIL)}?"
        out.append(question)
    return out


CORPORA = {"locomo": (memories, questions), "common": (common_memories, common_questions)}


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
