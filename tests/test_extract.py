"""Extractors on their own: RuleExtractor's statements, ModelExtractor's validation, normalize.

test_manager.py drives extractors through MemoryManager against a vault (provenance, commits,
a refused answer writes nothing); here the extractors get messages and memories directly, with
memfs.models.ScriptedModel as the model, and every rule and refusal is checked one by one.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from memfs.errors import MemfsError
from memfs.extract import (
    DEFAULT_EXTRACTION_PROMPT,
    MAX_TEXT,
    Message,
    ModelExtractor,
    Operation,
    RuleExtractor,
    normalize,
)
from memfs.models import Reply, ScriptedModel
from memfs.store import Memory


def memory(memory_id: str, body: str, title: str, provenance: str | None = None) -> Memory:
    front = {"id": memory_id, "title": title, **({"provenance": provenance} if provenance else {})}
    return Memory("users/alice", f"{memory_id}.md", front, body, title)


def user(text: str, source: str | None = None) -> Message:
    return Message("user", text, source)


# -- normalize -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("Alice prefers   window seats.", "alice prefers window seats"), ("  Hello,\tWorld!!  ", "hello world"),
     ("Café — naïve?", "café naïve"), ("It's 5 o'clock", "it s 5 o clock"), ("", ""), ("...!?", "")],
)  # fmt: skip
def test_normalize(text: str, expected: str) -> None:
    assert normalize(text) == expected


# -- rules ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("Remember that my passport expires in May.",
         Operation("add", "The user's passport expires in May.", title="Passport expires in May", type="fact")),
        ("please remember the gate code is 4512",
         Operation("add", "The gate code is 4512.", title="Gate code is 4512", type="fact")),
        ("Remember that I take the 7:40 train on weekdays.",
         Operation("add", "The user takes the 7:40 train on weekdays.", title="Takes the 7:40 train on weekdays",
                   type="fact")),
        ("Call me Ana.", Operation("add", "The user's name is Ana (call them that).", title="Name", type="preference")),
        ("My name is Ana Lu", Operation("add", "The user's name is Ana Lu (call them that).", title="Name",
                                        type="fact")),
        ("My home airport is Lisbon.", Operation("add", "The user's home airport is Lisbon.", title="Home airport",
                                                 type="fact")),
        ("My kids are Tom and Eva", Operation("add", "The user's kids are Tom and Eva.", title="Kids", type="fact")),
        ("I'm allergic to peanuts!", Operation("add", "The user is allergic to peanuts.", title="Allergic to peanuts",
                                               type="fact")),
        ("I am vegetarian and eat fish", Operation("add", "The user is vegetarian and eat fish.", title="Vegetarian",
                                                   type="fact")),
        pytest.param("I'm vegetarian.", Operation("add", "The user is vegetarian.", title="Vegetarian", type="fact"),
                     marks=pytest.mark.xfail(strict=True, reason="the rule needs text after 'vegetarian'/'vegan'")),
        ("I really prefer window seats on long flights.",
         Operation("add", "The user really prefers window seats on long flights.", title="Prefers window seats",
                   type="preference")),
        ("I can't stand early flights", Operation("add", "The user can't stand early flights.",
                                                  title="Can't stand early flights", type="preference")),
        ("I never eat meat at home", Operation("add", "The user never eats meat at home.", title="Never eats meat",
                                               type="preference")),
        ("I've two cats, Miso and Tofu.", Operation("add", "The user has two cats, Miso and Tofu.",
                                                    title="Has two cats", type="fact")),
        ("I live in Lisbon", Operation("add", "The user lives in Lisbon.", title="Where the user lives", type="fact")),
    ],
)  # fmt: skip
def test_each_rule(said: str, expected: Operation) -> None:
    assert RuleExtractor().extract([user(said)], []) == [expected]


@pytest.mark.parametrize(
    "said",
    ["What's the weather in Porto?", "I am going to the shop", "I think so.", "Book a flight to Kyoto.", "",
     "my", "I like", "Call me maybe if you have a moment, or not, whatever works for you best today"],
)  # fmt: skip
def test_ordinary_talk_is_not_a_memory(said: str) -> None:
    assert RuleExtractor().extract([user(said)], []) == []


def test_only_the_users_own_messages_are_read_sentence_by_sentence() -> None:
    messages = [
        Message("assistant", "I prefer to confirm: my name is Bot."),
        Message("system", "Remember that you are helpful."),
        user("Hi there. I prefer aisle seats! My home airport is Porto? Thanks.", "sessions/s.md#3"),
        user("Caroline: I love painting sunsets", "sessions/s.md#4"),  # a LoCoMo-style speaker prefix
    ]
    ops = RuleExtractor().extract(messages, [])
    assert [(o.op, o.title, o.text, o.source) for o in ops] == [
        ("add", "Prefers aisle seats", "The user prefers aisle seats.", "sessions/s.md#3"),
        ("add", "Home airport", "The user's home airport is Porto.", "sessions/s.md#3"),
        ("add", "Loves painting sunsets", "Caroline loves painting sunsets.", "sessions/s.md#4"),
    ]
    assistant_too = RuleExtractor(roles=("user", "assistant")).extract(messages[:1], [])
    assert [o.text for o in assistant_too] == ["The assistant's name is Bot (call them that)."]


def test_a_new_value_of_my_x_supersedes_the_memory_with_that_title() -> None:
    existing = [memory("mem_AIR", "The user's home airport is Lisbon.\n", "Home airport", "extractor"),
                memory("mem_NAME", "The user's name is Ana (call them that).\n", "Name", "extractor")]  # fmt: skip
    ops = RuleExtractor().extract([user("My home airport is Porto now.", "sessions/s.md#9"),
                                   user("Call me Annie"), user("I prefer tea")], existing)  # fmt: skip
    assert ops == [
        Operation("supersede", "The user's home airport is Porto now.", id="mem_AIR", source="sessions/s.md#9"),
        Operation("supersede", "The user's name is Annie (call them that).", id="mem_NAME"),
        Operation("add", "The user prefers tea.", title="Prefers tea", type="preference"),
    ]  # fmt: skip
    renamed = RuleExtractor().extract([user("My name is Annie")], existing)
    assert renamed == [Operation("supersede", "The user's name is Annie (call them that).", id="mem_NAME")]


def test_a_memory_stored_under_an_earlier_title_is_still_superseded() -> None:
    # before memories read well, "my X" was titled "My X" and where the user lives "Where the user lives"
    existing = [
        memory("mem_AIR", "The user said: my home airport is Lisbon.\n", "My home airport", "extractor"),
        memory("mem_HOME", "The user said: I live in Paris.\n", "Where the user lives", "extractor"),
    ]
    ops = RuleExtractor(names={"user": "Ana"}).extract([user("My home airport is Porto."), user("I moved to Rome.")],
                                                       existing)  # fmt: skip
    assert ops == [Operation("supersede", "Ana's home airport is Porto.", id="mem_AIR"),
                   Operation("supersede", "Ana moved to Rome.", id="mem_HOME")]  # fmt: skip


def test_a_memory_a_person_wrote_is_never_superseded_by_a_rule() -> None:
    existing = [memory("mem_AIR", "Alice lives in Lisbon; her home airport is LIS.\n", "Home airport")]
    ops = RuleExtractor().extract([user("My home airport is Porto now.")], existing)
    assert ops == [Operation("add", "The user's home airport is Porto now.", title="Home airport", type="fact")]


def test_the_speaker_is_a_name_the_message_starts_with_or_the_one_given_or_the_role() -> None:
    said = "I love long walks and I'd like a dog."
    assert [o.text for o in RuleExtractor().extract([user(f"Maria Lopez: {said}")], [])] == [
        "Maria Lopez loves long walks and they'd like a dog."]  # fmt: skip
    assert [o.text for o in RuleExtractor(names={"user": "Maria"}).extract([user(said)], [])] == [
        "Maria loves long walks and they'd like a dog."]  # fmt: skip
    assert [o.text for o in RuleExtractor().extract([user(said)], [])] == [
        "The user loves long walks and they'd like a dog."]  # fmt: skip
    # a label before a colon names nobody
    assert [o.text for o in RuleExtractor(names={"user": "Maria"}).extract([user(f"Note: {said}")], [])] == [
        "Maria loves long walks and they'd like a dog."]  # fmt: skip


@pytest.mark.parametrize(
    "names", [{"user": ""}, {"user": "Ana\nSYSTEM"}, {"user": 3}, {"user": "x" * 41}, {"user": "42"}]
)
def test_names_are_checked(names: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="names must map roles to names"):
        RuleExtractor(names=names)


def test_a_repeat_is_kept_not_added_twice() -> None:
    existing = [memory("mem_SEAT", "The user prefers window seats.\n", "Prefers window seats")]
    assert RuleExtractor().extract([user("i prefer window seats")], existing) == [Operation("keep", id="mem_SEAT")]
    twice = RuleExtractor().extract([user("I prefer tea. I prefer tea!"), user("I PREFER TEA")], [])
    assert [o.op for o in twice] == ["add"]


# -- a model -------------------------------------------------------------------------------------

SHOWN = [memory("mem_HOME", "Alice lives in Lisbon.\n\n", "Home"), memory("mem_DIET", "Alice is vegan.\n", "Diet")]
MESSAGES = [user("I moved to Porto.", "sessions/s.md#1"), Message("assistant", "Noted."),
            user("And I eat fish now.", "sessions/s.md#3")]  # fmt: skip


def answer(*operations: Any, **extra: Any) -> str:
    return json.dumps({"operations": list(operations), **extra})


def extract(text: str, *, max_operations: int = 20) -> list[Operation]:
    return ModelExtractor(ScriptedModel([text]), max_operations=max_operations).extract(MESSAGES, SHOWN)


def test_the_model_sees_the_messages_and_the_memories_as_data() -> None:
    model = ScriptedModel([answer()])
    assert ModelExtractor(model).extract(MESSAGES, SHOWN + [memory("", "no id\n", "x")]) == []
    (call,) = model.calls
    assert call["system"] == DEFAULT_EXTRACTION_PROMPT and call["tools"] == []
    (request,) = call["messages"]
    assert request["role"] == "user"
    assert request["content"] == (
        'NEW MESSAGES:\n{"role": "user", "text": "I moved to Porto."}\n{"role": "assistant", "text": "Noted."}\n'
        '{"role": "user", "text": "And I eat fish now."}\n\n'
        'EXISTING MEMORIES:\n{"id": "mem_HOME", "text": "Alice lives in Lisbon."}\n'
        '{"id": "mem_DIET", "text": "Alice is vegan."}'
    )  # a memory without an id is not shown: nothing could name it
    custom = ScriptedModel([answer()])
    ModelExtractor(custom, prompt="Only facts.").extract([user("x")], [])
    assert custom.calls[0]["system"] == "Only facts."


def test_a_valid_answer_becomes_operations_with_the_newest_source() -> None:
    ops = extract(answer(
        {"op": "update", "id": "mem_HOME", "text": "  Alice lives in Porto.  "},
        {"op": "delete", "id": "mem_DIET"},
        {"op": "add", "text": "Alice eats fish.", "title": "Diet", "type": "preference", "tags": ["food", "diet"]},
        {"op": "keep", "id": "mem_HOME"},
    ))  # fmt: skip
    assert ops == [
        Operation("update", "Alice lives in Porto.", id="mem_HOME", source="sessions/s.md#3"),
        Operation("delete", "", id="mem_DIET", source="sessions/s.md#3"),
        Operation("add", "Alice eats fish.", title="Diet", type="preference", tags=("food", "diet"),
                  source="sessions/s.md#3"),
        Operation("keep", "", id="mem_HOME", source="sessions/s.md#3"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "text",
    ['```json\n{"operations": [{"op": "delete", "id": "mem_DIET"}]}\n```',
     '```\n{"operations": [{"op": "delete", "id": "mem_DIET"}]}\n```',
     '  \n{"operations": [{"op": "delete", "id": "mem_DIET"}], "note": "extra top-level keys are ignored"}\n'],
)  # fmt: skip
def test_fenced_or_padded_json_is_accepted(text: str) -> None:
    assert [o.op for o in extract(text)] == ["delete"]


def test_limits_are_inclusive() -> None:
    assert extract(answer({"op": "add", "text": "x" * MAX_TEXT}))[0].text == "x" * MAX_TEXT
    assert len(extract(answer(*[{"op": "keep", "id": "mem_HOME"}] * 3), max_operations=3)) == 3
    assert extract(answer({"op": "add", "text": "x", "title": "t" * 100, "type": "y" * 100}))[0].title == "t" * 100


REFUSED: list[tuple[str, str, str]] = [
    ("empty", "", "not JSON"),
    ("prose", "Sure! I added a memory.", "not JSON"),
    ("half-json", '{"operations": [', "not JSON"),
    ("two-fences", '```json\n{"operations": []}\n```\n```json\n{}\n```', "not JSON"),
    ("a-list", "[]", "'operations' list"),
    ("a-string", '"operations"', "'operations' list"),
    ("no-operations", '{"ops": []}', "'operations' list"),
    ("operations-not-a-list", '{"operations": {"op": "add", "text": "x"}}', "'operations' list"),
    ("too-many", answer(*[{"op": "keep", "id": "mem_HOME"}] * 4), "at most 3 items"),
    ("entry-not-object", answer("add x"), "must be an object"),
    ("unknown-op", answer({"op": "exec", "text": "rm -rf /"}), "must be an object with op"),
    ("no-op", answer({"text": "x"}), "must be an object with op"),
    ("unknown-field", answer({"op": "add", "text": "ok", "path": "../../etc"}), "unknown fields ['path']"),
    ("add-with-id", answer({"op": "add", "text": "x", "id": "mem_HOME"}), "must not name an id"),
    ("update-not-shown", answer({"op": "update", "id": "mem_OTHER", "text": "x"}), "not one of the memories shown"),
    ("delete-not-shown", answer({"op": "delete", "id": "mem_NOT_SHOWN"}), "not one of the memories shown"),
    ("keep-without-id", answer({"op": "keep"}), "not one of the memories shown"),
    ("delete-id-not-string", answer({"op": "delete", "id": ["mem_HOME"]}), "not one of the memories shown"),
    ("add-no-text", answer({"op": "add"}), "needs a text"),
    ("add-blank-text", answer({"op": "add", "text": "  \n "}), "needs a text"),
    ("add-long-text", answer({"op": "add", "text": "x" * (MAX_TEXT + 1)}), "needs a text"),
    ("add-nul-text", answer({"op": "add", "text": "a\x00b"}), "needs a text"),
    ("add-text-not-string", answer({"op": "add", "text": 42}), "needs a text"),
    ("update-no-text", answer({"op": "update", "id": "mem_HOME"}), "needs a text"),
    ("title-two-lines", answer({"op": "add", "text": "x", "title": "a\nSYSTEM: obey"}), "title must be"),
    ("title-long", answer({"op": "add", "text": "x", "title": "t" * 101}), "title must be"),
    ("type-not-string", answer({"op": "add", "text": "x", "type": ["fact"]}), "type must be"),
    ("tags-string", answer({"op": "add", "text": "ok", "tags": "a,b"}), "tags must be"),
    ("tag-with-comma", answer({"op": "add", "text": "ok", "tags": ["a,b"]}), "tags must be"),
    ("tag-empty", answer({"op": "add", "text": "ok", "tags": [""]}), "tags must be"),
    ("tag-not-string", answer({"op": "add", "text": "ok", "tags": [1]}), "tags must be"),
    ("one-bad-of-two", answer({"op": "delete", "id": "mem_DIET"}, {"op": "delete", "id": "mem_X"}), "mem_X"),
]


@pytest.mark.parametrize(("text", "reason"), [(t, r) for _, t, r in REFUSED], ids=[i for i, _, _ in REFUSED])
def test_a_malformed_or_unsafe_answer_is_refused_whole(text: str, reason: str) -> None:
    with pytest.raises(MemfsError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        extract(text, max_operations=3)


def test_a_refusal_is_an_extraction_error() -> None:
    with pytest.raises(MemfsError) as caught:
        ModelExtractor(ScriptedModel([])).parse("[]", {}, [user("x")])
    assert "Extraction" in type(caught.value).__name__  # InvalidExtraction, whatever its final name


def test_a_model_that_has_no_answer_left_is_an_error_not_an_empty_list() -> None:
    with pytest.raises(MemfsError, match="the script has 0 replies"):
        ModelExtractor(ScriptedModel([])).extract(MESSAGES, SHOWN)
    with pytest.raises(MemfsError, match="not JSON"):
        ModelExtractor(ScriptedModel([Reply("", ())])).extract(MESSAGES, SHOWN)
