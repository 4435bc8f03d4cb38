"""What a person did not touch reads back exactly, beside a hand-broken entry and a half-written one.

An entry whose marker a person broke is skipped with a warning; an append cut short leaves the
start of a heading at the end. The entry before that start once read back as ``"message 3\\n\\n##"``
(a heading cut before its ``·`` was not seen as one): every cut of the last entry is tried here.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import memfs
from memfs import transcript

MESSAGES = ["message 1", "message 2\nwith a second line", "message 3", "```\ncode 4\n```", "message 5 ends here"]


def rendered(items: list[dict[str, str]]) -> bytes:
    return transcript.render(items, {"session_id": "chat"}).encode("utf-8")


def headings(data: bytes) -> list[int]:
    return [m.start() for m in transcript._BOUNDARY.finditer(data)]


def broken(data: bytes, at: int, how: str) -> bytes:
    """``data`` with the marker of the heading at ``at`` broken by hand, as ``how`` says."""
    end = data.index(b"\n", at)
    line = data[at:end]
    line = {"json": line.replace(b'"n"', b"n", 1), "arrow": line.replace(b"-->", b"--", 1),
            "brace": line.replace(b"{", b"", 1)}[how]  # fmt: skip
    return data[:at] + line + data[end:]


@pytest.mark.parametrize("how", ["json", "arrow", "brace"])
@pytest.mark.parametrize("extra", [{"role": "user"}, {"role": "assistant", "name": "search memory helper"}],
                         ids=["user", "a-label-of-several-words"])  # fmt: skip
def test_every_cut_of_a_half_written_last_entry_leaves_the_others_exact(how: str, extra: dict[str, str]) -> None:
    items = [{**extra, "content": text} for text in MESSAGES]
    data = rendered(items)
    starts = headings(data)
    damaged = broken(data, starts[1], how)  # entry 2's marker broken by hand
    last = headings(damaged)[-1]
    for cut in range(last + 1, len(damaged) - 2):  # every byte of entry 5 short of its end
        parsed = transcript.parse(damaged[:cut])
        got = {e.n: e.item for e in parsed.entries}
        for n in (1, 3, 4):
            assert got[n] == items[n - 1], f"cut {cut - last}: entry {n} read back as {got[n]!r}"
        assert 2 not in got


def test_a_session_over_a_broken_marker_and_a_torn_tail_reads_and_appends_exactly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with memfs.Vault.open(tmp_path / "v", create=True, durable=False) as vault:
        session = vault.session("chat")
        session.append([{"role": "user", "content": text} for text in MESSAGES])
        path = vault.root / "sessions/chat.md"
        data = path.read_bytes()
    starts = headings(data)
    for cut in (1, 2, 3, 8, 20, 60):  # "#", "##", "## ", "## user ·"...
        with memfs.Vault.open(tmp_path / "v", durable=False) as vault:
            path.write_bytes(broken(data, starts[1], "json")[: starts[-1] + cut])
            session = vault.session("chat")
            with caplog.at_level(logging.WARNING):
                assert [m["content"] for m in session.history()] == [MESSAGES[0], MESSAGES[2], MESSAGES[3]]
            session.append([{"role": "user", "content": "message 6"}])
            assert [m["content"] for m in session.history()] == [MESSAGES[0], MESSAGES[2], MESSAGES[3], "message 6"]
            assert [m["content"] for m in session.items(2)] == [MESSAGES[3], "message 6"]
