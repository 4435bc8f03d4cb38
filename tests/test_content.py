"""The one content check: the same rules, worded once, for every writer and for the tools' reads."""

from __future__ import annotations

import pytest

import memfs
from memfs.content import MAX_CONTENT_BYTES, Vouched, check_content, check_text, parse_text, vouched
from memfs.documents import MAX_FRONT_MATTER_BYTES, loads
from memfs.errors import ContentError, DocumentError
from memfs.tools import MemoryTools


@pytest.mark.parametrize(
    "content, words",
    [
        (b"text", "must be text (str), got bytes"),
        (None, "must be text (str), got NoneType"),
        ("a\x00b", "The content contains NUL bytes"),
        ("\udc80", "lone surrogate"),
        ("x" * (MAX_CONTENT_BYTES + 1), f"is {MAX_CONTENT_BYTES + 1} bytes; the limit for a memory file is"),
    ],
)
def test_check_text_names_the_rule_broken(content: object, words: str) -> None:
    with pytest.raises(ContentError, match=words.replace("(", r"\(").replace(")", r"\)")):
        check_text(content)


def test_a_read_file_is_checked_by_the_same_rules() -> None:
    assert check_text("é\n".encode(), read=True, limit=None) == ("é\n", "é\n".encode())
    with pytest.raises(ContentError, match="The file /memories/x.md is not UTF-8 text"):
        check_text(b"\xff\xfe", read=True, limit=None, what="The file /memories/x.md")
    with pytest.raises(ContentError, match="The file /memories/x.md contains NUL bytes"):
        check_text(b"a\x00", read=True, limit=None, what="The file /memories/x.md")


@pytest.mark.parametrize("head", ["a: &x 1\nb: *x\n", "- a list\n", "x: !!python/object {}\n"])
def test_front_matter_that_does_not_parse_is_refused_by_every_writer(head: str) -> None:
    text = f"---\n{head}---\nbody\n"
    with pytest.raises(ContentError, match="The front matter would be invalid"):
        parse_text(text)
    with pytest.raises(ContentError, match="The front matter would be invalid"):
        check_content(text)


def test_only_text_stamped_from_a_parsed_document_skips_the_second_parse() -> None:
    doc = parse_text("---\ntype: fact\n---\nbody\n").with_metadata({"id": "X"})
    text = vouched(doc)
    assert isinstance(text, Vouched) and loads(text).metadata == {"type": "fact", "id": "X"}
    assert check_content(text) == text.encode()
    assert check_content(Vouched("---\n- a\n---\n"))  # vouched for: not parsed (so only vouched() makes one)
    with pytest.raises(ContentError):  # the same text, not vouched for, is parsed
        check_content("---\n- a\n---\n")


def test_a_stamped_front_matter_past_the_bound_is_parsed_and_refused() -> None:
    doc = parse_text(f"---\nnote: {'x' * (MAX_FRONT_MATTER_BYTES - 20)}\n---\nbody\n").with_metadata({"id": "Y" * 40})
    with pytest.raises(DocumentError, match="front matter is larger"):
        vouched(doc)


@pytest.mark.parametrize("data, words", [(b"\xff\xfe bad", "is not UTF-8 text"), (b"ok\x00", "contains NUL bytes")])
def test_the_tools_word_a_file_they_cannot_show_as_the_check_does(vault: memfs.Vault, data: bytes, words: str) -> None:
    folder = vault.root / "memories" / "users" / "alice"
    folder.mkdir(parents=True)
    (folder / "odd.md").write_bytes(data)
    result = MemoryTools(vault, "users/alice").call({"command": "view", "path": "/memories/odd.md"})
    assert result.is_error and result.text.startswith(f"The file /memories/odd.md {words}")
