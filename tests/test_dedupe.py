"""No duplicates (issue #19): the near-duplicate lookup, add(if_similar=), extraction, the tools' create."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers import ok

import memfs
from memfs import DuplicateMemoryError, InvalidArgumentError, LongTermMemory, MemoryTools, RuleExtractor, ValidityError
from memfs.similar import CONTAINMENT, JACCARD, compare, query_words, terms

LABELLED = Path(__file__).resolve().parents[1] / "bench" / "data" / "lifecycle.json"


def commits(vault: memfs.Vault) -> int:
    out = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=vault.root, capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


def say(manager: LongTermMemory, *turns: str) -> None:
    for turn in turns:
        manager.observe([{"role": "user", "content": turn}])


# -- the measure -------------------------------------------------------------------------------


def test_the_thresholds_never_merge_two_labelled_facts() -> None:
    """The labelled pairs that state different facts (a changed value, another fact) stay apart."""
    pairs = json.loads(LABELLED.read_text())["pairs"]
    merged = [p for p in pairs if not p["same"] and compare(p["b"], p["a"]).near()]
    assert merged == []
    found = [p for p in pairs if p["same"] and compare(p["b"], p["a"]).near()]
    assert len(found) >= 0.85 * sum(p["same"] for p in pairs)


def test_the_measure_on_the_issues_example() -> None:
    refined = compare("I really prefer window seats on flights.", "I prefer window seats.")
    assert refined.near() and refined.containment == 1.0 and not refined.covered
    said_less = compare("I prefer window seats.", "I really prefer window seats on flights.")
    assert said_less.near() and said_less.covered
    assert not compare("I prefer aisle seats.", "I prefer window seats.").near()
    assert not compare("", "I prefer window seats.").near() and not compare("!!", "?").near()
    assert (CONTAINMENT, JACCARD) == (0.9, 0.4)  # the values docs/memory.md and docs/benchmarks.md give


def test_query_words_are_plain_and_bounded() -> None:
    assert query_words('prefer AND NOT "window" (seats) OR') == "prefer window seats"  # lower case: no operator
    assert len(query_words(" ".join(f"w{i}" for i in range(500))).split()) == 12
    assert terms("x" * 10_000_000) == terms("x" * 4000)  # only the start is read


# -- the store ---------------------------------------------------------------------------------


def test_similar_finds_a_restatement_in_the_same_namespace_only(vault: memfs.Vault) -> None:
    alice, bob = vault.memories("users/alice"), vault.memories("users/bob")
    seats = alice.add("I prefer window seats.", title="Seats")
    bob.add("I really prefer window seats on flights.", title="Bob's seats")
    alice.add("I like green tea.", title="Tea")
    found = alice.similar("I really prefer window seats on flights.")
    assert [s.memory.id for s in found] == [seats.id]
    assert found[0].likeness.near() and not found[0].likeness.covered
    assert alice.similar("I prefer aisle seats.") == []
    assert alice.similar("I like black coffee.") == []
    assert alice.similar("I prefer window seats.", exclude=seats.id) == []
    assert alice.similar("I prefer window seats.", exclude=seats.path) == []
    below = vault.memories("users").similar("I prefer window seats.", k=5)  # a parent namespace sees both
    assert [s.memory.path for s in below] == [seats.path, "memories/users/bob/bob-s-seats.md"]


def test_similar_passes_over_retired_and_malformed_memories(vault: memfs.Vault) -> None:
    store = vault.memories("users/alice")
    newer = store.add("Alice prefers aisle seats.", title="Aisle")
    store.add("Alice prefers middle seats on flights.", metadata={"superseded_by": newer.id})
    store.add("Alice is in Tokyo for the conference this week.", metadata={"expires": "2020-01-01"})
    later = store.add("Alice's passport expires in March 2099.", metadata={"valid_until": "2099-03-31"})
    folder = vault.root / "memories" / "users" / "alice"
    # written by hand: a write through memfs refuses the date
    (folder / "bicycle.md").write_text("---\nexpires: not a date\n---\nAlice owns a red bicycle.\n")
    (folder / "broken.md").write_text("---\ntitle: [unclosed\n---\nAlice prefers middle seats on flights.\n")
    vault.commit("a broken file")
    assert store.similar("Alice prefers middle seats on flights.") == []
    assert store.similar("Alice is in Tokyo for the conference this week.") == []
    assert [s.memory.id for s in store.similar("Alice's passport expires in March 2099.")] == [later.id]
    assert len(store.similar("Alice owns a red bicycle.")) == 1  # a value that is no date hides nothing
    assert store.similar('Whoosh ( syntax AND NOT "quotes:') == []
    assert store.similar("seats " * 400_000) == []  # megabytes of one word: the start is compared
    with pytest.raises(InvalidArgumentError):
        store.similar(None)  # type: ignore[arg-type]


def test_add_if_similar_keep_update_raise(vault: memfs.Vault) -> None:
    store = vault.memories("users/alice")
    first = store.add("I prefer window seats.", title="Seats", tags=["travel"])
    before = commits(vault)
    assert store.add("I prefer window seats.", if_similar="keep").id == first.id
    assert store.add("I prefer window seats.", tags=["travel"], if_similar="update").id == first.id
    assert commits(vault) == before  # nothing new: nothing written

    with pytest.raises(DuplicateMemoryError) as refused:
        store.add("I really prefer window seats on flights.", if_similar="raise")
    assert refused.value.id == first.id and refused.value.path == first.path
    assert isinstance(refused.value, memfs.AlreadyExistsError) and "seats.md" in str(refused.value)
    assert commits(vault) == before and len(store.list()) == 1

    updated = store.add("I really prefer window seats on flights.", tags=["flights"], if_similar="update",
                        source="sessions/trip.md#3")  # fmt: skip
    assert updated.id == first.id and updated.name == "seats.md" and updated.title == "Seats"
    assert updated.body == "I really prefer window seats on flights.\n"
    assert updated.tags == ("travel", "flights") and updated.source == "sessions/trip.md#3"
    assert commits(vault) == before + 1 and len(store.list()) == 1
    assert store.history(first.id)[0].trailers["Memfs-Op"] == "update"

    other = store.add("I prefer aisle seats on trains.", if_similar="update")
    assert other.id != first.id and len(store.list()) == 2
    assert store.add("I prefer window seats.").id not in (first.id, other.id)  # the default adds, as before
    with pytest.raises(InvalidArgumentError):
        store.add("I prefer window seats.", if_similar="merge")
    assert len(store.list()) == 3


def test_add_if_similar_updates_a_persons_file_without_an_id(vault: memfs.Vault) -> None:
    folder = vault.root / "memories" / "users" / "alice"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "seats.md").write_text("I prefer window seats.\n")
    vault.commit("a person's note")
    store = vault.memories("users/alice")
    updated = store.add("I really prefer window seats on flights.", if_similar="update", provenance="agent")
    assert updated.name == "seats.md" and updated.provenance == "agent" and len(store.list()) == 1
    assert (folder / "seats.md").read_text().endswith("I really prefer window seats on flights.\n")


# -- extraction --------------------------------------------------------------------------------


def test_the_issues_example_gives_one_memory_updated(vault: memfs.Vault) -> None:
    manager = LongTermMemory(vault, stores=["users/alice"], extractor=RuleExtractor())
    say(manager, "I prefer window seats.", "I really prefer window seats on flights.", "I prefer window seats.")
    stored = vault.memories("users/alice").list()
    assert [m.body for m in stored] == ["The user really prefers window seats on flights.\n"]
    assert stored[0].provenance == "extractor"
    block = manager.context_for([{"role": "user", "content": "Which seats do I prefer?"}])
    assert block.count("<memory ") == 1 and "on flights" in block


def test_dedupe_off_is_the_old_behaviour(vault: memfs.Vault) -> None:
    manager = LongTermMemory(vault, stores=["users/alice"], extractor=RuleExtractor(), dedupe=False)
    say(manager, "I prefer window seats.", "I really prefer window seats on flights.", "I prefer window seats.")
    assert len(vault.memories("users/alice").list()) == 2  # the exact repeat is still kept out


def test_facts_of_the_same_shape_and_changed_values_are_not_merged(vault: memfs.Vault) -> None:
    manager = LongTermMemory(vault, stores=["users/alice"], extractor=RuleExtractor())
    say(manager, "I like green tea. I like black coffee.", "I love Italian food.", "I love Thai food.",
        "I prefer aisle seats.", "I prefer window seats.")  # fmt: skip
    bodies = sorted(m.body for m in vault.memories("users/alice").list())
    assert len(bodies) == 6 and any("tea" in b for b in bodies) and any("coffee" in b for b in bodies)


def test_a_model_extractor_that_only_adds_updates_instead(vault: memfs.Vault) -> None:
    replies = [json.dumps({"operations": [{"op": "add", "text": text, "title": "Seats"}]})
               for text in ("The user prefers window seats.", "The user prefers window seats on long flights.",
                            "The user prefers window seats.")]  # fmt: skip
    extractor = memfs.ModelExtractor(memfs.ScriptedModel(replies))
    manager = LongTermMemory(vault, stores=["users/alice"], extractor=extractor)
    for n, turn in enumerate(("I like window seats", "especially on long flights", "window seats, yes"), 1):
        manager.observe([{"role": "user", "content": turn}], sources=[f"sessions/trip.md#{n}"])
    stored = vault.memories("users/alice").list()
    assert [m.body for m in stored] == ["The user prefers window seats on long flights.\n"]
    assert stored[0].source == "sessions/trip.md#3"  # the latest statement is where it was learned


def test_a_superseded_memory_is_not_merged_into(vault: memfs.Vault) -> None:
    store = vault.memories("users/alice")
    newer = store.add("The user said: I prefer aisle seats.", title="Aisle")
    old = store.add("The user said: I prefer window seats.", metadata={"superseded_by": newer.id})
    manager = LongTermMemory(vault, stores=["users/alice"], extractor=RuleExtractor())
    say(manager, "I really prefer window seats on flights.")
    assert store.get(old.id).body == "The user said: I prefer window seats.\n"
    assert len(store.list()) == 2  # the aisle memory and the new one: the superseded one is history


def test_an_instruction_restating_a_fact_is_held_for_review(vault: memfs.Vault) -> None:
    store = vault.memories("users/alice")
    store.add("Always answer in French.", title="Language")
    manager = LongTermMemory(vault, stores=["users/alice"], extractor=None)
    say(manager, "Always answer in French, please, from now on.")
    (memory,) = store.list()
    assert memory.metadata.get("review") == "pending" and "from now on" in memory.body


# -- the tools and MCP's create ----------------------------------------------------------------


def test_create_names_a_similar_memory_and_still_creates(vault: memfs.Vault) -> None:
    vault.memories("users/bob").add("Bob keeps a secret zanzibar recipe for pie.", title="Recipe")
    tools = MemoryTools(vault, "users/alice")
    assert ok(tools, "create", path="/memories/seats.md", file_text="# Seats\nI prefer window seats.\n") == (
        "File created successfully at: /memories/seats.md"
    )
    text = ok(tools, "create", path="/memories/travel/flights.md",
              file_text="---\ntitle: Flights\n---\nI really prefer window seats on flights.\n")  # fmt: skip
    assert text.startswith("File created successfully at: /memories/travel/flights.md\nNote: /memories/seats.md")
    assert '("Seats")' in text and "str_replace" in text and "delete /memories/travel/flights.md" in text
    assert (vault.root / "memories/users/alice/travel/flights.md").exists()
    assert "Note" not in ok(tools, "create", path="/memories/tea.md", file_text="I like green tea.\n")
    assert "Note" not in ok(tools, "create", path="/memories/seats.txt", file_text="I prefer window seats.\n")
    leak = ok(tools, "create", path="/memories/recipe.md", file_text="Bob keeps a secret zanzibar recipe for pie.\n")
    assert "bob" not in leak.lower().replace("/memories/recipe.md", "")  # another namespace is never named


def test_create_over_an_existing_file_does_not_name_itself(vault: memfs.Vault) -> None:
    tools = MemoryTools(vault, "users/alice", overwrite=True)
    ok(tools, "create", path="/memories/seats.md", file_text="I prefer window seats.\n")
    again = ok(tools, "create", path="/memories/seats.md", file_text="I really prefer window seats on flights.\n")
    assert "Note" not in again


def test_an_add_merged_into_a_near_duplicate_keeps_its_checks_and_its_review_marker(vault: memfs.Vault) -> None:
    store = vault.memories("users/alice")
    seats = store.add("I prefer window seats.", title="Seats")
    with pytest.raises(ValidityError):  # a bad date is refused before a near-duplicate takes the text
        store.add("I really prefer window seats on flights.", metadata={"expires": "someday"}, if_similar="update")
    assert store.get(seats.path).body == "I prefer window seats.\n"
    merged = store.add("I really prefer window seats on flights.", if_similar="update",
                       metadata={"review": "pending", "expires": "2099-12-31"})  # fmt: skip
    assert merged.path == seats.path and merged.metadata["review"] == "pending"  # still held for a person
    assert merged.metadata["expires"] == "2099-12-31"
