"""What search finds: the analyzer's words, messages found through their neighbours, session dates.

Small hand-made cases for each retrieval rule; the LoCoMo figures are in docs/benchmarks.md.
"""

from __future__ import annotations

from typing import Any

import pytest

import memfs
from memfs import searcher
from memfs.analysis import ANALYZER
from memfs.errors import InvalidArgumentError
from memfs.indexing import speaker_of

FILLER = ["The weather was fine all week.", "We watched a film about whales.", "Dinner was pasta again.",
          "The neighbours painted their fence.", "My cousin called about the wedding."]  # fmt: skip


def chat(*texts: str) -> list[dict[str, Any]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t, "id": f"m{i + 1}"}
            for i, t in enumerate(texts)]  # fmt: skip


def positions(hits: list[memfs.MessageHit]) -> list[int]:
    return [h.position for h in hits]


# -- the analyzer ------------------------------------------------------------------------------


def test_possessives_are_the_name_they_belong_to() -> None:
    assert list(ANALYZER.stems("Audrey's dog")) == list(ANALYZER.stems("Audrey dog")) == ["audrey", "dog"]
    assert list(ANALYZER.stems("Audrey’s")) == ["audrey"]  # a typographic apostrophe too
    assert list(ANALYZER.stems("it's what's")) == []  # contractions stay stop words


def test_snowball_keeps_a_verb_together() -> None:
    stems = {word: next(ANALYZER.stems(word)) for word in ("try", "tried", "tries", "trying")}
    assert len(set(stems.values())) == 1, stems  # Porter's stemmer kept "try" apart from "tried"
    assert next(ANALYZER.stems("generously")) == next(ANALYZER.stems("generous"))


def test_memory_search_uses_the_same_words(vault: memfs.Vault) -> None:
    store = vault.memories("people")
    store.add("Audrey's dogs love the beach.", title="Dogs")
    store.add("Bob tried sushi for the first time.", title="Sushi")
    assert [h.title for h in store.search("audrey dog")][:1] == ["Dogs"]
    assert [h.title for h in store.search("did bob try sushi")][:1] == ["Sushi"]


# -- neighbours ----------------------------------------------------------------------------------


def test_an_answer_sharing_no_word_with_the_question_is_found_through_it(vault: memfs.Vault) -> None:
    session = vault.session("talk")
    session.append(chat(*FILLER, "How long have you been doing yoga?", "Three years now, every morning.",
                        *FILLER))  # fmt: skip
    hits = session.search("how long has she been doing yoga", k=3)
    assert positions(hits)[0] == 6 and 7 in positions(hits)  # the question (a direct hit), and its answer
    assert all(h.score < hits[0].score for h in hits[1:])


def test_a_direct_hit_outranks_a_message_found_only_through_its_neighbour(vault: memfs.Vault) -> None:
    session = vault.session("talk")
    long_answer = "Yes, " + " ".join(FILLER) + " and then we went kayaking on the lake at dawn."
    session.append(chat("Short one.", long_answer, "Nice!", *FILLER))
    hits = session.search("kayaking lake")
    assert positions(hits)[0] == 2
    assert set(positions(hits)) <= {1, 2, 3, 4}  # found through a neighbour: within two messages
    assert all(h.score < hits[0].score for h in hits[1:])


def test_neighbours_reach_two_messages_and_stop_at_the_session(vault: memfs.Vault) -> None:
    first = vault.session("one")
    first.append(chat("I adopted a greyhound.", *FILLER))
    vault.session("two").append(chat(*FILLER))
    hits = vault.search_messages("greyhound", k=20)
    assert positions(hits) == [1, 2, 3] and {h.session for h in hits} == {first.path}


def test_a_message_with_no_words_of_its_own_is_not_found_through_its_neighbours(vault: memfs.Vault) -> None:
    session = vault.session("talk")
    session.append([*chat("Where is the marmalade?"), {"role": "assistant", "content": "..."}])
    assert positions(session.search("marmalade")) == [1]


def test_appends_and_pops_index_neighbours_as_a_rebuild_does(vault: memfs.Vault) -> None:
    session = vault.session("talk", commit="manual")
    words = [f"{w} {FILLER[i % len(FILLER)]}" for i, w in enumerate(
        "apple banana cherry damson elder fig grape hazel iris juniper kiwi lemon mango".split())]  # fmt: skip
    session.append(chat(*words[:6]))
    session.append(chat(words[6]))
    session.pop()
    session.append(chat(*words[6:9]))
    session.append(chat(words[9]))
    session.pop()
    session.pop()
    session.append(chat(*words[8:]))
    queries = ["apple", "damson", "fig", "grape hazel", "iris", "juniper", "kiwi", "mango", "whales"]

    def ranked() -> list[list[tuple[int, float]]]:
        return [[(h.position, h.score) for h in vault.search_messages(q, k=20)] for q in queries]

    incremental = ranked()
    assert incremental[-1]  # the filler is found
    vault.reindex(full=True)
    assert ranked() == incremental


def test_plain_words_rank_as_whooshs_own_query_does(vault: memfs.Vault) -> None:
    """Plain words are scored straight from the postings; a query with syntax goes through Whoosh."""
    vault.session("one").append(chat("I adopted a greyhound from the shelter.", *FILLER, "Whales again?"))
    vault.session("two").append(chat(*FILLER, "The shelter needs volunteers for the whales film."))
    plain = [(h.session, h.position, h.score) for h in vault.search_messages("shelter whales greyhound", k=20)]
    syntax = [(h.session, h.position, h.score) for h in vault.search_messages("shelter OR whales OR greyhound", k=20)]
    assert len(plain) > 5 and plain == syntax
    in_two = vault.search_messages("shelter", k=20, session="sessions/two.md")
    assert [(h.session, h.position) for h in in_two] == [("sessions/two.md", n) for n in (6, 5, 4)]


# -- speakers ------------------------------------------------------------------------------------


def test_speaker_of_a_message() -> None:
    assert speaker_of({"role": "user", "content": "Mel: I ran a charity race."}) == "Mel"
    assert speaker_of({"role": "user", "content": "Anna Maria Lopez: hello"}) == "Anna Maria Lopez"
    assert speaker_of({"role": "user", "name": "alice", "content": "Hi"}) == "alice"
    assert speaker_of({"role": "user", "content": "no label: here"}) is None  # a label is capitalised
    assert speaker_of({"role": "user", "content": "Plain text."}) is None
    # a label is a few words at the start: a "name" running past the first 200 characters is none
    assert speaker_of({"role": "user", "content": "Z" * 190 + ": hi"}) == "Z" * 190
    assert speaker_of({"role": "user", "content": "Z" * 200 + ": hi"}) is None
    assert speaker_of({"role": "user", "content": "BIG-" + "z" * 5_000_000}) is None


def test_a_question_naming_a_speaker_prefers_their_messages(vault: memfs.Vault) -> None:
    session = vault.session("talk")
    session.append(chat("Mel: I ran a charity race last weekend.", *[f"Jon: {f}" for f in FILLER[:2]],
                        "Jon: I ran a charity race too, years ago."))  # fmt: skip
    hits = session.search("did Mel run a charity race")
    assert hits[0].position == 1 and hits[0].item["content"].startswith("Mel:")
    hits = session.search("did Jon run a charity race")
    assert hits[0].position == 4


def test_a_named_speakers_messages_score_the_bonus_more(vault: memfs.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    session = vault.session("talk")
    toms = "Tom: Ada said the charity race was a long race, a hot charity race, a charity race indeed."
    session.append(chat(toms, *FILLER, "Ada: I ran a charity race, then we had a picnic by the river with my cousins."))

    def scores() -> dict[int, float]:
        return {h.position: h.score for h in session.search("what about Ada and the charity race", k=20)}

    boosted, bonus = scores(), searcher.SPEAKER_BONUS
    assert next(iter(boosted)) == 7 and bonus > 0  # Ada's own message first
    monkeypatch.setattr(searcher, "SPEAKER_BONUS", 0.0)
    plain = scores()
    assert next(iter(plain)) == 1  # without the bonus, Tom's message (more of the words) wins
    assert boosted[7] == pytest.approx(plain[7] * (1 + bonus), abs=1e-3)
    assert all(boosted[n] == plain[n] for n in plain if n != 7)  # nobody else's message changes


def test_no_bonus_when_no_speaker_is_named(vault: memfs.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    session = vault.session("talk")
    session.append(chat("Ada: I ran a charity race.", "Tom: The race was long.", *FILLER))
    boosted = [(h.position, h.score) for h in session.search("charity race", k=20)]
    monkeypatch.setattr(searcher, "SPEAKER_BONUS", 0.0)
    assert boosted == [(h.position, h.score) for h in session.search("charity race", k=20)]


def test_a_question_naming_both_speakers_ranks_as_without_the_bonus(
    vault: memfs.Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = vault.session("talk")
    session.append([{"role": "user", "name": "Ada", "content": "I ran a charity race."},
                    {"role": "assistant", "name": "Tom", "content": "It was long, a long charity race."}])  # fmt: skip
    question, bonus = "did Ada and Tom run the charity race", searcher.SPEAKER_BONUS
    boosted = [(h.position, h.score) for h in session.search(question, k=20)]
    monkeypatch.setattr(searcher, "SPEAKER_BONUS", 0.0)
    plain = [(h.position, h.score) for h in session.search(question, k=20)]
    assert [p for p, _ in boosted] == [p for p, _ in plain] and len(plain) == 2  # the same order
    # both scaled alike: an item's ``name`` is its speaker, and the question names both speakers
    assert all(b == pytest.approx(s * (1 + bonus), abs=1e-3) for (_, b), (_, s) in zip(boosted, plain, strict=True))


# -- session dates -------------------------------------------------------------------------------


def test_message_hits_carry_their_sessions_date(vault: memfs.Vault) -> None:
    may = vault.session("may", metadata={"date": "1:56 pm on 8 May, 2023"})
    may.append(chat("We went hiking in the hills."))
    plain = vault.session("plain")
    plain.append(chat("No date given here, hiking anyway."))
    hits = {h.session: h for h in vault.search_messages("hiking")}
    assert (hits[may.path].date, hits[may.path].day) == ("1:56 pm on 8 May, 2023", "2023-05-08")
    created = str(vault.read(plain.path).metadata["created"])
    assert (hits[plain.path].date, hits[plain.path].day) == (created, created[:10])  # when it was created


def test_the_sessions_date_is_searchable(vault: memfs.Vault) -> None:
    vault.session("june", metadata={"date": "June 12, 2023"}).append(chat("We went hiking.", *FILLER))
    may = vault.session("may", metadata={"date": "2023-05-08"})
    may.append(chat(*FILLER, "We went hiking."))
    assert vault.search_messages("hiking in May 2023")[0].session == may.path
    assert vault.search_messages("hiking")[0].session != may.path  # the date alone decided it


def test_messages_filter_by_their_sessions_day(vault: memfs.Vault) -> None:
    vault.session("may", metadata={"date": "8 May 2023"}).append(chat("Lunch at the harbour."))
    june = vault.session("june", metadata={"date": "12 June 2023"})
    june.append(chat("Lunch at the harbour again."))
    vault.session("undated", metadata={"date": "some time ago"}).append(chat("Lunch somewhere."))
    assert [h.session for h in vault.search_messages("lunch", since="2023-06-01")] == [june.path]
    assert [h.day for h in vault.search_messages("lunch", until="2023-05-31")] == ["2023-05-08"]
    assert len(vault.search_messages("lunch", since="2023-05-08", until="2023-06-12")) == 2
    assert len(vault.search_messages("lunch")) == 3  # the undated session is there without a filter
    with pytest.raises(InvalidArgumentError):
        vault.search_messages("lunch", since="last spring")


def test_a_changed_session_date_reaches_its_messages(vault: memfs.Vault) -> None:
    session = vault.session("talk", metadata={"date": "8 May 2023"})
    session.append(chat("Lunch at the harbour."))
    text = session.file.read_text().replace("date: 8 May 2023", "date: 9 May 2023")
    session.file.write_text(text)
    vault.reindex()
    assert [h.day for h in vault.search_messages("harbour")] == ["2023-05-09"]
