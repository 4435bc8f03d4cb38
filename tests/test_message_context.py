"""How much a message takes from its neighbours: short turns their context, long messages none.

A neighbour's words help a short turn ("Three years now" after "How long have you been doing
yoga?") and drown a long message that says one thing. docs/benchmarks.md has the measurements on
short turns (LoCoMo) and long messages (BEAM) behind the lengths.
"""

from __future__ import annotations

from typing import Any

import pytest

import memfs
from memfs import indexing, searcher
from memfs.indexing import CONTEXT_ALONE_TERMS, CONTEXT_FULL_TERMS, _context_share
from memfs.searcher import first_person


def chat(*texts: str) -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": t, "id": f"m{i + 1}"} for i, t in enumerate(texts)
    ]


def long_text(topic: str, terms: int) -> str:
    """A message of about ``terms`` distinct content words, all its own (``topic`` + a number)."""
    return " ".join(f"{topic}{n}" for n in range(terms)) + "."


def positions(hits: list[memfs.MessageHit]) -> list[int]:
    return [h.position for h in hits]


# -- the rule --------------------------------------------------------------------------------------


@pytest.mark.parametrize("own", [1, 5, 12, CONTEXT_FULL_TERMS])
@pytest.mark.parametrize("other", [1, 5, CONTEXT_FULL_TERMS])
def test_a_short_turn_takes_a_short_neighbours_words_whole(own: int, other: int) -> None:
    assert _context_share(own, other) == 1.0


@pytest.mark.parametrize("other", [3, 40, 400])
def test_the_share_falls_with_the_messages_own_length_and_stops(other: int) -> None:
    """What a neighbour brings, against what the message says itself, falls as the message grows."""
    lengths = [
        1,
        10,
        CONTEXT_FULL_TERMS,
        CONTEXT_FULL_TERMS + 1,
        (CONTEXT_FULL_TERMS + CONTEXT_ALONE_TERMS) // 2,
        CONTEXT_ALONE_TERMS - 1,
    ]
    brought = [_context_share(own, other) * other / own for own in lengths]
    assert all(a > b for a, b in zip(brought, brought[1:], strict=False))
    assert _context_share(CONTEXT_ALONE_TERMS, other) == _context_share(10 * CONTEXT_ALONE_TERMS, other) == 0.0
    if other <= CONTEXT_FULL_TERMS:  # and a short neighbour's share itself falls too
        shares = [_context_share(own, other) for own in lengths[2:]]
        assert all(a > b for a, b in zip(shares, shares[1:], strict=False))


@pytest.mark.parametrize("own", [1, 10, CONTEXT_FULL_TERMS, 60, CONTEXT_ALONE_TERMS - 1])
@pytest.mark.parametrize("other", [1, 30, 33, 100, 2000])
def test_a_neighbour_never_brings_more_words_than_the_message_has(own: int, other: int) -> None:
    assert _context_share(own, other) * other <= max(own, CONTEXT_FULL_TERMS) + 1e-9


def test_a_message_of_no_words_takes_nothing_and_gives_nothing(vault: memfs.Vault) -> None:
    assert _context_share(10, 0) == 0.0
    session = vault.session("talk")
    session.append(chat("Where is the marmalade?", "...", "In the cupboard."))
    assert positions(session.search("marmalade")) == [1, 3]


# -- what search finds ----------------------------------------------------------------------------


def test_a_long_message_is_not_found_through_its_neighbours_words(vault: memfs.Vault) -> None:
    session = vault.session("talk")
    session.append(
        chat(long_text("alpha", 150), "We went kayaking. " + long_text("beta", 150), long_text("gamma", 150))
    )
    assert positions(session.search("kayaking")) == [2]


def test_a_long_message_between_short_turns_stands_alone(vault: memfs.Vault) -> None:
    session = vault.session("talk")
    session.append(chat("Did you see the heron?", long_text("delta", CONTEXT_ALONE_TERMS), "The heron was huge."))
    assert sorted(positions(session.search("heron"))) == [1, 3]  # the long one between them is not found


def test_a_long_first_message_takes_nothing_from_the_short_turn_after_it(vault: memfs.Vault) -> None:
    session = vault.session("talk")
    session.append(chat(long_text("omega", 300), "Lovely marmalade!", "Thanks."))
    hits = session.search("marmalade")
    assert 1 not in positions(hits) and positions(hits)[0] == 2


def test_a_short_turn_still_gets_its_neighbours_context(vault: memfs.Vault) -> None:
    session = vault.session("talk")
    session.append(
        chat(
            "The weather was fine.",
            "How long have you been doing yoga?",
            "Three years now.",
            "Dinner was pasta again.",
            "We watched a film about whales.",
        )
    )
    hits = session.search("how long doing yoga", k=5)
    assert positions(hits)[0] == 2 and 3 in positions(hits)  # the question, and the answer through it


def test_a_short_turn_beside_a_long_reply_gets_its_words(vault: memfs.Vault) -> None:
    session = vault.session("talk")
    session.append(chat("The weather was fine.", "Three years now.", "Yoga helps. " + long_text("kappa", 300)))
    assert 2 in positions(session.search("yoga", k=5))  # the short turn is found through the reply


@pytest.mark.parametrize("pages", [1, 2])
def test_a_line_between_long_replies_is_not_drowned_by_them(
    vault: memfs.Vault, monkeypatch: pytest.MonkeyPatch, pages: int
) -> None:
    """The line that says all of it outranks one that says half of it between short turns."""
    monkeypatch.setattr(searcher, "USER_BONUS", 0.0, raising=False)  # both are the user's anyway
    reply = " ".join(long_text(f"page{n}x", 300) for n in range(pages))
    said = vault.session("said")
    said.append(chat(reply, "My sister moved to Lisbon in March.", reply))
    vault.session("other").append(chat("The weather was fine.", "My sister loves Lisbon.", "Dinner was pasta."))
    hits = vault.search_messages("when did my sister move to Lisbon in March", k=3)
    assert (hits[0].session, hits[0].position) == (said.path, 2)


def test_long_messages_index_what_a_rebuild_does_after_appends(vault: memfs.Vault) -> None:
    session = vault.session("talk", commit="manual")
    texts = [
        "Short one about kayaking.",
        long_text("mu", 90),
        "Another about kayaking.",
        long_text("nu", 200),
        "Kayaking again?",
        long_text("xi", 40),
        "Yes, kayaking.",
    ]
    for text in texts:
        session.append(chat(text))
    queries = ["kayaking", "mu3", "nu7", "xi1"]
    incremental = [[(h.position, h.score) for h in vault.search_messages(q, k=20)] for q in queries]
    vault.reindex(full=True)
    assert [[(h.position, h.score) for h in vault.search_messages(q, k=20)] for q in queries] == incremental
    assert incremental[0]


def test_weights_rank_as_whooshs_own_query_does_with_long_messages(vault: memfs.Vault) -> None:
    vault.session("one").append(chat("Kayaking at dawn.", long_text("rho", 70) + " kayaking", "Lake?"))
    vault.session("two").append(chat(long_text("sigma", 200) + " lake lake", "Kayaking, lake.", "Dawn."))
    plain = [(h.session, h.position, h.score) for h in vault.search_messages("kayaking lake dawn", k=20)]
    syntax = [(h.session, h.position, h.score) for h in vault.search_messages("kayaking OR lake OR dawn", k=20)]
    assert len(plain) >= 5 and plain == syntax


def test_neighbour_lengths_are_settings(vault: memfs.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """With CONTEXT_ALONE_TERMS raised, the same long message is found through its neighbour again."""
    monkeypatch.setattr(indexing, "CONTEXT_ALONE_TERMS", 10_000)
    session = vault.session("talk")
    session.append(chat(long_text("alpha", 150), "We went kayaking. " + long_text("beta", 150)))
    assert positions(session.search("kayaking")) == [2, 1]


# -- a question in the first person --------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "What is my job?",
        "When did I move?",
        "Where was I’m… I'm lost",
        "Remind me of the plan",
        "Whose is it? Mine?",
        "Did i say so",
    ],
)
def test_a_question_in_the_first_person(question: str) -> None:
    assert first_person(question)


@pytest.mark.parametrize(
    "question", ["What is Ada's job?", "When did she move to Myanmar?", "Is mime art?", "imagine that", ""]
)
def test_a_question_not_in_the_first_person(question: str) -> None:
    assert not first_person(question)


MOVE = [
    {"role": "user", "content": "I moved to Lisbon in March."},
    {
        "role": "assistant",
        "content": "Moving to Lisbon is big news! Lisbon is lovely, and after a move to "
        "Lisbon the first weeks fly by. Did the move go well?",
    },
]


def test_a_first_person_question_prefers_the_users_own_message(
    vault: memfs.Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = vault.session("talk")
    session.append(MOVE)
    assert positions(session.search("when did I move to Lisbon"))[0] == 1
    monkeypatch.setattr(searcher, "USER_BONUS", 0.0)
    assert positions(session.search("when did I move to Lisbon"))[0] == 2  # the reply repeats the words


@pytest.mark.parametrize("question", ["when did Ana move to Lisbon", "move Lisbon", "when did they move to Lisbon"])
def test_no_user_bonus_unless_the_question_is_in_the_first_person(
    vault: memfs.Vault, monkeypatch: pytest.MonkeyPatch, question: str
) -> None:
    session = vault.session("talk")
    session.append(MOVE)
    with_bonus = [(h.position, h.score) for h in session.search(question)]
    monkeypatch.setattr(searcher, "USER_BONUS", 0.0)
    assert [(h.position, h.score) for h in session.search(question)] == with_bonus


def test_the_user_bonus_is_a_share_of_the_users_messages_score(
    vault: memfs.Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = vault.session("talk")
    session.append([*MOVE, {"role": "user", "content": "The cat hates boxes."}])
    vault.session("other").append([{"role": "user", "content": "Nothing about that here."}])
    with_bonus = {h.position: h.score for h in vault.search_messages("my move to Lisbon")}
    bonus = searcher.USER_BONUS
    monkeypatch.setattr(searcher, "USER_BONUS", 0.0)
    without = {h.position: h.score for h in vault.search_messages("my move to Lisbon")}
    assert with_bonus.keys() == without.keys() == {1, 2, 3}  # a message that matched nothing stays unmatched
    assert with_bonus[2] == without[2]  # the assistant's
    for user in (1, 3):
        assert with_bonus[user] == pytest.approx(without[user] * (1 + bonus), abs=1e-3)
