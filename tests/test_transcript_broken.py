"""A transcript entry whose heading a hand edit broke is reported and skipped, never merged (docs/format.md)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

import memfs
from memfs import transcript

ITEMS = [
    {"role": "user", "content": "Book a ryokan in Kyoto."},
    {"role": "assistant", "content": "Two options near Gion."},
    {"role": "user", "content": "The second one, please."},
]


def rendered() -> str:
    return transcript.render(ITEMS, {"session_id": "s"})


def heading_of(text: str, n: int) -> tuple[int, int]:
    """Where entry n's heading line starts and ends."""
    start = text.index(f'<!-- memfs:entry {{"n": {n},')
    start = text.rindex("\n", 0, start) + 1
    return start, text.index("\n", start)


def break_heading(text: str, n: int, how: str) -> str:
    start, end = heading_of(text, n)
    line = text[start:end]
    if how == "brace":
        broken = line.replace("} -->", " -->")
    elif how == "close":
        broken = line.replace(" -->", "")
    elif how == "json":
        broken = line.replace('"n": ', '"n" ')
    else:  # pragma: no cover
        raise AssertionError(how)
    assert broken != line
    return text[:start] + broken + text[end:]


@pytest.mark.parametrize("how", ["brace", "close", "json"])
def test_a_broken_heading_is_reported_and_skipped_and_its_neighbours_are_intact(how: str) -> None:
    text = break_heading(rendered(), 2, how)
    parsed = transcript.parse(text)
    assert [e.item for e in parsed.entries] == [ITEMS[0], ITEMS[2]]  # not merged into message 1
    assert [e.n for e in parsed.entries] == [1, 3]
    assert len(parsed.problems) == 1
    assert parsed.problems[0].offset == heading_of(rendered(), 2)[0]
    assert isinstance(parsed.problems[0], transcript.BrokenEntry)


def test_a_broken_first_heading_is_reported_not_taken_for_front_matter() -> None:
    parsed = transcript.parse(break_heading(rendered(), 1, "brace"))
    assert parsed.metadata["session_id"] == "s"
    assert [e.item for e in parsed.entries] == ITEMS[1:]
    assert len(parsed.problems) == 1


def test_a_broken_last_heading_is_reported() -> None:
    parsed = transcript.parse(break_heading(rendered(), 3, "brace"))
    assert [e.item for e in parsed.entries] == ITEMS[:2]
    assert len(parsed.problems) == 1


def test_an_edited_message_before_a_broken_heading_is_what_the_agent_reads() -> None:
    text = break_heading(rendered(), 2, "brace").replace("Book a ryokan", "Book a quiet ryokan, not a hotel,")
    parsed = transcript.parse(text)
    assert [e.item["content"] for e in parsed.entries] == ["Book a quiet ryokan, not a hotel, in Kyoto.",
                                                          "The second one, please."]  # fmt: skip
    assert len(parsed.problems) == 1


def test_a_broken_body_that_contains_heading_like_text_is_skipped_by_its_length() -> None:
    tricky = [ITEMS[0], {"role": "assistant", "content": "Quoting:\n## user · x <!-- memfs:entry {\"n\": 9} -->\nend"},
              ITEMS[2]]  # fmt: skip
    text = break_heading(transcript.render(tricky, {"session_id": "s"}), 2, "brace")
    parsed = transcript.parse(text)
    assert [e.item for e in parsed.entries] == [tricky[0], tricky[2]]
    assert len(parsed.problems) == 1


def test_read_tail_skips_a_broken_entry_whatever_the_window(tmp_path: Path) -> None:
    path = tmp_path / "t.md"
    path.write_text(break_heading(rendered(), 2, "brace"))
    fd = os.open(path, os.O_RDONLY)
    try:
        for chunk in (32, 64, 16_384):
            for count in (1, 2, 3):
                entries, _, _ = transcript.read_tail(fd, count, chunk=chunk)
                assert [e.item for e in entries] == [ITEMS[0], ITEMS[2]][-count:], (chunk, count)
        entries, problems, _ = transcript.read_tail(fd, None)
        assert [e.item for e in entries] == [ITEMS[0], ITEMS[2]] and len(problems) == 1
    finally:
        os.close(fd)


def test_a_session_logs_the_broken_entry_and_goes_on(vault: memfs.Vault, caplog: pytest.LogCaptureFixture) -> None:
    session = vault.session("trip")
    session.append(ITEMS)
    session.file.write_text(break_heading(session.file.read_text(), 2, "brace"))
    with caplog.at_level(logging.WARNING, logger="memfs"):
        assert session.items() == [ITEMS[0], ITEMS[2]]
    assert "broken entry heading" in caplog.text
    session.append([{"role": "assistant", "content": "Booked."}])
    assert [i["content"] for i in session.items()] == [ITEMS[0]["content"], ITEMS[2]["content"], "Booked."]
    hits = vault.search_messages("Gion")
    assert hits == []  # the skipped message is not served as part of another


def test_the_exact_round_trip_still_holds_for_heading_like_text() -> None:
    hostile = [{"role": "user", "content": '## user · 2026 <!-- memfs:entry {"n": 2, "len": 0 -->\nrest'},
               {"role": "assistant", "content": "## assistant <!-- memfs:entry broken\n\nmore"},
               {"role": "user", "content": "plain"}]  # fmt: skip
    text = transcript.render(hostile, {"session_id": "s"})
    parsed = transcript.parse(text)
    assert [e.item for e in parsed.entries] == hostile and parsed.problems == []
