"""memfs.phrasing: first-person statements told in the third person, and titles that name the fact."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memfs.phrasing import TITLE_WORDS, agree, dangles, possessive, says_something, third_person, title


@pytest.mark.parametrize(
    ("verb", "agreeing"),
    [("prefer", "prefers"), ("love", "loves"), ("try", "tries"), ("study", "studies"), ("enjoy", "enjoys"),
     ("play", "plays"), ("go", "goes"), ("watch", "watches"), ("miss", "misses"), ("fix", "fixes"),
     ("have", "has"), ("do", "does"), ("don't", "doesn't"), ("am", "is"), ("can", "can"), ("can't", "can't"),
     ("would", "would"), ("moved", "moved"), ("went", "went"), ("read", "read"), ("Prefer", "Prefers")],
)  # fmt: skip
def test_agree(verb: str, agreeing: str) -> None:
    assert agree(verb) == agreeing


@pytest.mark.parametrize(
    ("said", "told"),
    [
        ("I prefer window seats.", "Alice prefers window seats."),
        ("I really prefer window seats on long flights", "Alice really prefers window seats on long flights"),
        ("I'm allergic to peanuts", "Alice is allergic to peanuts"),
        ("I am from Porto", "Alice is from Porto"),
        ("I was born in 1990", "Alice was born in 1990"),
        ("I've two cats", "Alice has two cats"),
        ("I have been to Japan twice", "Alice has been to Japan twice"),
        ("I'll be in Rome in May", "Alice will be in Rome in May"),
        ("I'd like tea", "Alice would like tea"),
        ("I'd never seen snow", "Alice had never seen snow"),
        ("I don't eat meat", "Alice doesn't eat meat"),
        ("I do not eat meat", "Alice does not eat meat"),
        ("I can't stand early flights", "Alice can't stand early flights"),
        ("I never eat fish", "Alice never eats fish"),
        ("I usually study at night", "Alice usually studies at night"),
        ("I moved to Berlin", "Alice moved to Berlin"),
        ("I went home early", "Alice went home early"),
        ("My kids are Tom and Eva", "Alice's kids are Tom and Eva"),
        ("I love my dog and my dog loves me", "Alice loves their dog and their dog loves them"),
        ("I'm tired but I'm trying", "Alice is tired but they're trying"),
        ("I love it when I can sleep in", "Alice loves it when they can sleep in"),
        ('I love the song "I Will Survive"', 'Alice loves the song "I Will Survive"'),
        ("The doctor told me to rest", "The doctor told Alice to rest"),
        ("That car is mine", "That car is Alice's"),
        ("I, for one, agree", "Alice, for one, agree"),  # no verb right after "I": nothing is guessed
    ],
)  # fmt: skip
def test_third_person(said: str, told: str) -> None:
    assert third_person(said, "Alice") == told


def test_a_role_as_the_subject_starts_the_sentence_with_a_capital() -> None:
    assert third_person("my home airport is LIS", "the user") == "The user's home airport is LIS"
    assert third_person("I live in Paris", "the user") == "The user lives in Paris"
    assert possessive("James") == "James's" and possessive("the user") == "the user's"


@pytest.mark.parametrize(
    ("predicate", "cut", "named"),
    [
        ("prefers window seats on long flights", True, "Prefers window seats"),
        ("really prefers window seats", True, "Prefers window seats"),
        ("loves camping trips with their family, because nature is calm", True, "Loves camping trips"),
        ("loves being around friends and having a great time", True, "Loves being around friends"),
        ("prefers to travel by train", True, "Prefers to travel by train"),
        ("never wants to go through this again", True, "Never wants to go through this again"),
        ("loves when you try something new", True, "Loves when you try something new"),
        ("has two cats, Miso and Tofu", True, "Has two cats"),
        ("takes the 7:40 train on weekdays", False, "Takes the 7:40 train on weekdays"),
        ("allergic to peanuts", False, "Allergic to peanuts"),
        ("a big fan of pottery - the creativity is awesome", False, "Big fan of pottery"),
        ("the gate code is 4512", False, "Gate code is 4512"),
        ("loves how simple it is", True, "Loves how simple it is"),
        ("loves talking to people about their sneaker collection and more", True, "Loves talking to people"),
        ("the", False, ""),
    ],
)  # fmt: skip
def test_title(predicate: str, cut: bool, named: str) -> None:
    assert title(predicate, cut_at_prepositions=cut) == named


def test_dangles_and_says_something() -> None:
    assert dangles("I take the 7:40 train on") and dangles("Fan of") and dangles("")
    assert not dangles("Window seats") and not dangles("how simple it is")
    assert not says_something("it") and not says_something("that one so much") and not says_something("")
    assert says_something("green tea") and says_something("it, mostly jazz")


_WORDS = ["I", "I'm", "I've", "I'd", "I'll", "my", "me", "mine", "myself", "My", "love", "prefer", "tea", "and",
          "but", "the", "trains", "really", "never", "go", "to", "on", "with", ",", '"quoted I"', "we"]  # fmt: skip
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself)\b|\bi'", re.I)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=14), st.sampled_from(["Alice", "the user", "Jo Li"]))
def test_no_first_person_is_left_outside_quotes(words: list[str], subject: str) -> None:
    told = third_person(" ".join(words), subject)
    assert not _FIRST_PERSON.search(re.sub(r'"[^"]*"', "", told)), told


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS + ["window", "seats", "about", "a", "an", "-", "which"]), max_size=20),
       st.booleans())  # fmt: skip
def test_a_title_is_short_and_never_dangles(words: list[str], cut: bool) -> None:
    named = title(" ".join(words), cut_at_prepositions=cut)
    assert len(named.split()) <= TITLE_WORDS
    assert named == "" or not dangles(named)
