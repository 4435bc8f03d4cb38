"""Three-way merges by meaning: memories key by key and line by line, transcripts as a union of entries."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memfs import transcript
from memfs.documents import load_bytes
from memfs.merge import merge_file, merge_front_matter, merge_lines, merge_memories, merge_transcripts


def memory(body: str, **keys: object) -> bytes:
    head = "".join(f"{k}: {v}\n" for k, v in keys.items())
    return f"---\n{head}---\n{body}".encode()


BASE = memory("Line one.\nLine two.\nLine three.\n", id="m1", title="Seats", updated="2026-11-01T10:00:00Z")


# -- lines ------------------------------------------------------------------------------------


def test_changes_to_lines_apart_merge() -> None:
    base = "a\nb\nc\nd\ne\n"
    assert merge_lines(base, "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n") == "A\nb\nc\nd\nE\n"


def test_the_same_change_on_both_sides_is_taken_once() -> None:
    assert merge_lines("a\nb\n", "a\nB\n", "a\nB\n") == "a\nB\n"


def test_the_same_line_changed_two_ways_is_a_conflict() -> None:
    assert merge_lines("a\nb\nc\n", "a\nX\nc\n", "a\nY\nc\n") is None


def test_adjacent_lines_changed_on_each_side_are_a_conflict_as_in_git_merge_file() -> None:
    assert merge_lines("a\nb\nc\nd\n", "a\nB\nc\nd\n", "a\nb\nC\nd\n") is None


def test_insertions_at_both_ends_merge() -> None:
    assert merge_lines("m\n", "top\nm\n", "m\nbottom\n") == "top\nm\nbottom\n"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n"]), max_size=8), st.data())
def test_a_change_on_one_side_only_is_taken_whole(base: list[str], data: st.DataObject) -> None:
    changed = data.draw(st.lists(st.sampled_from(["a\n", "x\n", "y\n"]), max_size=8))
    text, other = "".join(base), "".join(changed)
    assert merge_lines(text, other, text) == other
    assert merge_lines(text, text, other) == other


# -- memories -----------------------------------------------------------------------------------


def test_different_keys_changed_on_each_side_are_both_kept() -> None:
    ours = memory("Line one.\nLine two.\nLine three.\n", id="m1", title="Window seats", updated="2026-11-01T10:00:00Z")
    theirs = memory("Line one.\nLine two.\nLine three.\n", id="m1", title="Seats", updated="2026-11-01T10:00:00Z",
                    type="preference")  # fmt: skip
    merged = merge_file("memories/u/x.md", BASE, ours, theirs)
    assert not merged.conflict
    doc = load_bytes(merged.data or b"")
    assert doc.metadata == {"id": "m1", "title": "Window seats", "updated": "2026-11-01T10:00:00Z",
                            "type": "preference"}  # fmt: skip


def test_updated_takes_the_later_time_and_bodies_merge_by_line() -> None:
    ours = memory("Line ONE.\nLine two.\nLine three.\n", id="m1", title="Seats", updated="2026-11-02T10:00:00Z")
    theirs = memory("Line one.\nLine two.\nLine THREE.\n", id="m1", title="Seats", updated="2026-11-03T10:00:00Z")
    doc = load_bytes(merge_file("memories/u/x.md", BASE, ours, theirs).data or b"")
    assert doc.metadata["updated"] == "2026-11-03T10:00:00Z"
    assert doc.body == "Line ONE.\nLine two.\nLine THREE.\n"


def test_tags_merge_as_sets() -> None:
    base = {"tags": ["a", "b"]}
    assert merge_front_matter(base, {"tags": ["a", "b", "c"]}, {"tags": ["b", "d"]}) == {"tags": ["b", "c", "d"]}


def test_one_key_changed_to_two_values_is_a_conflict_and_ours_stays() -> None:
    ours = memory("Line one.\nLine two.\nLine three.\n", id="m1", title="Aisle", updated="2026-11-01T10:00:00Z")
    theirs = memory("Line one.\nLine two.\nLine three.\n", id="m1", title="Window", updated="2026-11-01T10:00:00Z")
    merged = merge_file("memories/u/x.md", BASE, ours, theirs)
    assert merged.conflict and merged.data == ours


def test_edit_against_delete_keeps_the_edit() -> None:
    ours = memory("edited\n", id="m1")
    assert merge_file("memories/u/x.md", BASE, ours, None).data == ours
    assert merge_file("memories/u/x.md", BASE, None, ours).data == ours
    assert "edit is kept" in merge_file("memories/u/x.md", BASE, None, ours).note


def test_a_memory_added_on_both_sides_differently_is_a_conflict() -> None:
    assert merge_file("memories/u/x.md", None, memory("mine\n"), memory("theirs\n")).conflict


def test_no_conflict_marker_is_ever_produced() -> None:
    ours = memory("X\n", id="m1")
    theirs = memory("Y\n", id="m1")
    merged = merge_memories(memory("W\n", id="m1"), ours, theirs)
    assert merged is None


# -- transcripts ----------------------------------------------------------------------------------


def chat(*messages: tuple[str, str, str]) -> bytes:
    head = transcript.new_head({"memfs": transcript.FORMAT, "id": "s1"}).encode()
    entries = b"".join(
        transcript.render_entry({"role": role, "content": text}, n, time)
        for n, (role, text, time) in enumerate(messages, 1)
    )
    return head + entries


HELLO = ("user", "hello", "2026-11-01T10:00:00Z")


def test_messages_appended_on_two_machines_end_up_once_each_in_time_order() -> None:
    base = chat(HELLO)
    ours = chat(HELLO, ("assistant", "hi from laptop", "2026-11-01T10:00:05Z"))
    theirs = chat(HELLO, ("user", "from the server", "2026-11-01T10:00:02Z"),
                  ("assistant", "late reply", "2026-11-01T10:00:09Z"))  # fmt: skip
    merged = merge_transcripts(base, ours, theirs)
    assert merged is not None
    parsed = transcript.parse(merged)
    assert not parsed.problems
    assert [e.item["content"] for e in parsed.entries] == ["hello", "from the server", "hi from laptop", "late reply"]
    assert [e.n for e in parsed.entries] == [1, 2, 3, 4]


def test_entries_both_sides_already_have_count_once() -> None:
    third = ("user", "from a third machine", "2026-11-01T10:00:03Z")
    base = chat(HELLO)
    ours = chat(HELLO, third, ("assistant", "a", "2026-11-01T10:00:04Z"))
    theirs = chat(HELLO, third, ("assistant", "b", "2026-11-01T10:00:06Z"))
    parsed = transcript.parse(merge_transcripts(base, ours, theirs) or b"")
    assert [e.item["content"] for e in parsed.entries] == ["hello", "from a third machine", "a", "b"]


def test_a_summary_entry_keeps_pointing_at_the_messages_it_summarised() -> None:
    base = chat(HELLO)
    mine = [HELLO, ("assistant", "a", "2026-11-01T10:00:04Z")]
    ours = chat(*mine) + transcript.render_entry({"role": "system", "content": "sum"}, 3, "2026-11-01T10:00:07Z",
                                                 kind="summary", meta={"range": [1, 2]})  # fmt: skip
    theirs = chat(HELLO, ("user", "b", "2026-11-01T10:00:01Z"))
    parsed = transcript.parse(merge_transcripts(base, ours, theirs) or b"")
    summary = [e for e in parsed.entries if e.kind == "summary"][0]
    assert [e.item["content"] for e in parsed.entries] == ["hello", "b", "a", "sum"]
    assert summary.meta["range"] == [1, 3]  # message 2 ("a") is now message 3


def test_a_popped_entry_on_one_side_makes_a_conflict_not_a_loss() -> None:
    base = chat(HELLO, ("assistant", "a", "2026-11-01T10:00:04Z"))
    assert merge_transcripts(base, chat(HELLO), chat(*[HELLO, ("assistant", "a", "2026-11-01T10:00:04Z"),
                                                      ("user", "b", "2026-11-01T10:00:05Z")])) is None  # fmt: skip
    assert merge_file("sessions/s1.md", base, chat(HELLO), base + b"").data == chat(HELLO)
