"""Tests for memfs.documents: exact round trips, safe YAML, golden files, malformed input."""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memfs
from memfs.documents import (
    MAX_FRONT_MATTER_BYTES,
    MAX_FRONT_MATTER_DEPTH,
    Document,
    dumps,
    load_bytes,
    loads,
)

GOLDEN = Path(__file__).parent / "data" / "documents"

# Modest and deterministic: no example database written into the work tree, and the
# (harmless) autouse fixtures in conftest.py are function-scoped.
PROPERTY = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# --------------------------------------------------------------------------------------------
# strategies
# --------------------------------------------------------------------------------------------

_TEXT_PIECES = [
    "---\n", "---\r\n", "--- \n", "---", "...\n", "----\n", "\ufeff", "\r\n", "\n", "\r",
    "key: value\n", "key: value\r\n", "title: Hello\n", "# Heading\n", "# comment\n", "- item\n",
    "a: [1, 2]\n", "  nested: x\n", "b: &x 1\n", "c: *x\n", "!!binary aGk=\n", ": bad\n",
    "dup: 1\ndup: 2\n", "1: one\n", "created: 2024-05-01\n", "ok: yes\n", "\t", "'", '"', "{", "[",
]  # fmt: skip

_piece = st.sampled_from(_TEXT_PIECES) | st.text(max_size=12)


_YAML_LINES = [
    "key: value", "title: Hello", "tags: [a, b]", "tags2:", "  - x", "  - y", "nested:", "  a: 1",
    "# comment", "", "created: 2024-05-01", "ok: yes", "n: 1.10", "s: 'q''s'", 'd: "\\u00e9"',
    "empty:", "content: c", "text: |", "  block", "t: true", "i: 0x1F", "w: [[link]]",
]  # fmt: skip
_BAD_YAML_LINES = [
    "b: &x 1", "c: *x", "dup: 1", "1: one", ": bad", "- item", "!!binary aGk=", "x: !!set {a}",
    "\tkey: tab", "k: v: w", "[", "null", "a: !!python/object/apply:os.system [true]",
]  # fmt: skip


@st.composite
def file_texts(draw: st.DrawFn) -> str:
    """Text shaped like a memory file often enough to reach every branch of the parser."""
    bom = draw(st.sampled_from(["", "", "\ufeff"]))
    nl = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    if draw(st.integers(0, 4)) == 0:  # free-form text
        opening = draw(st.sampled_from(["", "---\n", "---\r\n", "--- \n"]))
        return bom + opening + "".join(draw(st.lists(_piece, max_size=12)))
    opening = draw(st.sampled_from(["---", "---", "--- ", "---\t"])) + nl
    lines = draw(st.lists(st.sampled_from(_YAML_LINES), max_size=8, unique=True))
    if draw(st.booleans()):
        extra = draw(st.sampled_from(_BAD_YAML_LINES) | st.text(max_size=10))
        lines.insert(draw(st.integers(0, len(lines))), extra)
    closing = draw(st.sampled_from(["---" + nl, "---" + nl, "---" + nl, "..." + nl, "--- " + nl, "---", ""]))
    body = "" if closing == "---" else "".join(draw(st.lists(_piece, max_size=6)))
    return bom + opening + "".join(line + nl for line in lines) + closing + body


_KEY_ALPHABET = string.ascii_letters + string.digits + "_-"
keys = st.text(alphabet=_KEY_ALPHABET, min_size=1, max_size=12)

_TRICKY_STRINGS = [
    "2024-05-01", "2024-05-01T10:00:00Z", "2024-05-01 10:00:00", "yes", "no", "on", "off", "y", "n",
    "Yes", "NO", "true", "false", "True", "null", "Null", "~", "", " ", "1.10", "0x1F", "0o17", "017",
    "1e999", "1_000", "+1", "-1", "1:30", ".inf", "-.inf", ".nan", "a: b", "key: value: x", "a:b",
    "'quoted'", '"double"', "it's", "#not a comment", "a # b", "- dash", "-", "---", "...", "--- x",
    "[a]", "{b: 1}", "&anchor", "*alias", "!tag", "!!str", "%YAML", "@at", "`tick`", "|", ">", "?",
    "<<", "=", "café", "日本語", "🙂 emoji", "\u2028", "\u2029", "\x85", "\ufeff", "\x00", "\t", "\r",
    " leading", "trailing ", "multi\nline", "a\n---\nb", "a\n...\nb", "\n", "x\n\n", "\r\n",
    "tab\there", "[[Wiki Link]]", "word " * 30,
]  # fmt: skip

tricky_strings = st.sampled_from(_TRICKY_STRINGS) | st.text(max_size=30)
scalars = (
    tricky_strings
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.booleans()
    | st.none()
    | st.floats(allow_nan=False)
)
metadata_values = (
    scalars
    | st.lists(tricky_strings, max_size=5)
    | st.dictionaries(keys, scalars | st.lists(tricky_strings, max_size=3), max_size=4)
)
metadata_dicts = st.dictionaries(keys, metadata_values, max_size=8)

_BODY_PIECES = [
    "---\n", "---", "...\n", "# heading\n", "## Sub heading\n", "```\n", "```python\n", "~~~\n",
    "key: value\n", "\n", "\r\n", "text", "- item\n", "\ufeff", "[[link]]", "#tag ",
]  # fmt: skip
bodies = st.lists(st.sampled_from(_BODY_PIECES) | st.text(max_size=20), max_size=10).map("".join)


# --------------------------------------------------------------------------------------------
# (a) dumps(loads(t)) == t
# --------------------------------------------------------------------------------------------


@PROPERTY
@given(file_texts())
def test_loads_then_dumps_is_the_identity(text: str) -> None:
    try:
        doc = loads(text, path="p.md")
    except memfs.DocumentError as exc:  # anything else (TypeError, YAMLError, ...) fails the test
        assert "p.md" in str(exc)
        return
    assert dumps(doc) == text
    assert doc.bom == text.startswith("\ufeff")
    assert doc.newline in ("\n", "\r\n")
    assert all(isinstance(k, str) for k in doc.metadata)
    json.dumps(doc.metadata)  # no dates or other non-JSON types slip through


@PROPERTY
@given(st.text(max_size=200))
def test_loads_of_arbitrary_text_round_trips_or_raises_document_error(text: str) -> None:
    try:
        doc = loads(text)
    except memfs.DocumentError:
        return
    assert dumps(doc) == text


@PROPERTY
@given(st.binary(max_size=120) | file_texts().map(lambda t: t.encode("utf-8")))
def test_load_bytes_round_trips_or_raises_document_error(data: bytes) -> None:
    try:
        doc = load_bytes(data, path="b.md")
    except memfs.DocumentError as exc:
        assert "b.md" in str(exc)
        return
    assert dumps(doc).encode("utf-8") == data


# --------------------------------------------------------------------------------------------
# (b) loads(dumps(Document.new(meta, body))) gives back meta and body
# --------------------------------------------------------------------------------------------


@PROPERTY
@given(metadata_dicts, bodies)
def test_new_document_round_trips_metadata_and_body(meta: dict[str, Any], body: str) -> None:
    doc = Document.new(meta, body)
    assert doc.metadata == meta
    text = dumps(doc)
    back = loads(text, path="new.md")
    assert back.metadata == meta
    assert list(back.metadata) == list(meta)  # key order kept
    assert back.body == body
    assert back.head == doc.head
    assert dumps(back) == text


def test_new_document_with_a_very_long_value_round_trips() -> None:
    meta = {"summary": "word " * 2000, "title": "x" * 5000}
    back = loads(dumps(Document.new(meta, "body\n")))
    assert back.metadata == meta
    assert back.body == "body\n"


@pytest.mark.parametrize("body", ["---\nfoo: bar\n---\nhello\n", "\ufeffhello\n"])
def test_new_document_without_metadata_round_trips_a_body_that_looks_like_front_matter(
    body: str,
) -> None:
    back = loads(dumps(Document.new({}, body)))
    assert back.metadata == {}
    assert back.body == body


# --------------------------------------------------------------------------------------------
# (c) with_metadata touches only the named keys
# --------------------------------------------------------------------------------------------

# Hand-written styles for one key; every comment here sits inside the key's own block.
_KEY_STYLES = [
    "{k}: plain value\n",
    '{k}: "double quoted"  # inline comment\n',
    "{k}: 'single ''quoted'''\n",
    "{k}:\n  - a  # first\n  # a comment inside the list\n  - b\n",
    "{k}: [x, y]   # flow list\n",
    "{k}: |\n  literal\n    text\n",
    "{k}: >-\n  folded\n  text\n",
    "{k}:\n  nested: 1\n  # nested comment\n  other: two\n",
    "{k}: 2024-05-01\n",
    "{k}: yes\n",
    "{k}: 1.10\n",
    "{k}:\n",
    "{k}: ~\n",
    "{k}: value\n\n",
    "{k}:    spaced   # odd spacing\n",
]


# Keys a person writes unquoted: they must read back as strings (not true/null/ints).
plain_keys = keys.filter(lambda k: k[0].isalpha() and k.lower() not in {"true", "false", "null"})


_LEADS = ["", "", "# about {k}\n", "\n", "\n# a note before {k}\n# second line\n"]
_TAILS = ["", "# trailing comment\n", "\n", "\n# end of block\n"]


@st.composite
def hand_written_files(draw: st.DrawFn) -> tuple[str, list[tuple[str, str, str]], str, str, str]:
    """A file as a person might write it: (text, [(key, lead, block)], preamble, tail, newline).

    ``lead`` is the blank and full-line comment lines just above a key; ``block`` is the key's
    own lines, with its inline comments and any comments inside its value.
    """
    names = draw(st.lists(plain_keys, min_size=1, max_size=6, unique=True))
    newline = draw(st.sampled_from(["\n", "\r\n"]))

    def fix(text: str) -> str:
        return text.replace("\n", newline)

    blocks = [
        (k, fix(draw(st.sampled_from(_LEADS)).format(k=k)), fix(draw(st.sampled_from(_KEY_STYLES)).format(k=k)))
        for k in names
    ]
    preamble = fix(draw(st.sampled_from(["", "# header comment\n", "\n# two\n# comment lines\n"])))
    tail = fix(draw(st.sampled_from(_TAILS)))
    bom = draw(st.sampled_from(["", "\ufeff"]))
    body = draw(bodies)
    inner = preamble + "".join(lead + block for _, lead, block in blocks) + tail
    text = bom + "---" + newline + inner + "---" + newline + body
    return text, blocks, preamble, tail, newline


@PROPERTY
@given(hand_written_files(), st.data())
def test_with_metadata_changes_only_the_named_keys(
    sample: tuple[str, list[tuple[str, str, str]], str, str, str], data: st.DataObject
) -> None:
    text, blocks, preamble, tail, newline = sample
    doc = loads(text, path="edit.md")
    names = [k for k, _, _ in blocks]
    assert list(doc.metadata) == names
    changed = data.draw(st.lists(st.sampled_from(names), unique=True), label="changed")
    removable = [k for k in names if k not in changed]
    removed = data.draw(st.lists(st.sampled_from(removable), unique=True), label="removed") if removable else []
    added = data.draw(
        st.dictionaries(keys.filter(lambda k: k not in names), metadata_values, max_size=3), label="added"
    )
    changes = {k: data.draw(metadata_values, label=f"new {k}") for k in changed}
    changes.update(added)

    new = doc.with_metadata(changes, remove=removed)
    out = dumps(new)

    # body, BOM and line endings are untouched
    assert new.body == doc.body
    assert out.endswith(doc.body)
    assert new.bom == doc.bom and new.newline == doc.newline
    assert out.startswith(("\ufeff" if doc.bom else "") + "---" + newline + preamble)
    # Every untouched key's lines (with their comments) are byte-identical, and so is every
    # full-line comment or blank line between keys, even next to a changed or removed key;
    # all of them keep their order.
    head = new.head
    pos = 0
    survivors = [preamble]
    for key, lead, block in blocks + [("", tail, "")]:
        survivors.append(lead)
        if key not in changes and key not in removed:
            survivors.append(block)
    for piece in survivors:
        found = head.find(piece, pos)
        assert found >= 0, f"{piece!r} was altered or moved"
        pos = found + len(piece)
    assert head.endswith("---" + newline)
    # the result parses to exactly the expected metadata, in the expected order
    expected = {k: v for k, v in doc.metadata.items() if k not in removed}
    expected.update(changes)
    back = loads(out, path="edit.md")
    assert back.metadata == expected == new.metadata
    assert list(back.metadata) == list(expected)
    assert back.body == doc.body
    # new lines use the file's line ending
    if newline == "\r\n":
        assert "\n" not in head.replace("\r\n", "")
    else:
        assert "\r\n" not in head
    # nothing asked, nothing changed
    if not changes and not removed:
        assert out == text


def test_with_metadata_rewrites_only_the_changed_line() -> None:
    text = (
        "---\n"
        "# keep me\n"
        "title: 'Old'   # hand-written\n"
        "created: 2024-05-01\n"
        "tags:\n"
        "  - a   # first tag\n"
        "  - b\n"
        "---\n"
        "Body\n"
    )
    new = loads(text).with_metadata({"title": "New"})
    assert dumps(new) == text.replace("title: 'Old'   # hand-written\n", "title: New\n")


def test_with_metadata_adds_new_keys_at_the_end_and_removes_keys() -> None:
    text = "---\na: 1\nb: 2  # two\nc: 3\n---\nBody\n"
    new = loads(text).with_metadata({"z": "last", "y": [1, 2]}, remove=["a"])
    assert dumps(new) == "---\nb: 2  # two\nc: 3\nz: last\ny: [1, 2]\n---\nBody\n"
    assert list(new.metadata) == ["b", "c", "z", "y"]


def test_with_metadata_on_a_file_without_front_matter_keeps_bom_newline_and_body() -> None:
    text = "\ufeff# Note\r\n\r\nbody\r\n"
    new = loads(text).with_metadata({"title": "Note", "created": "2024-05-01"})
    out = dumps(new)
    # ISO dates are written unquoted on purpose: memfs reads them back as strings
    assert out == "\ufeff---\r\ntitle: Note\r\ncreated: 2024-05-01\r\n---\r\n# Note\r\n\r\nbody\r\n"
    assert loads(out).metadata == {"title": "Note", "created": "2024-05-01"}


def test_with_metadata_keeps_crlf_line_endings() -> None:
    text = "---\r\na: 1\r\nb: 2\r\n---\r\nx\r\n"
    out = dumps(loads(text).with_metadata({"a": "multi\nline", "c": 3}))
    assert "\n" not in out.replace("\r\n", "")
    assert out.startswith("---\r\n") and out.endswith("\r\n---\r\nx\r\n")
    assert "b: 2\r\n" in out
    assert loads(out).metadata == {"a": "multi\nline", "b": 2, "c": 3}


def test_with_metadata_refuses_values_that_are_not_plain_data() -> None:
    doc = loads("---\na: 1\n---\n")
    with pytest.raises(memfs.DocumentError):
        doc.with_metadata({"when": object()})


def test_with_body_keeps_front_matter_bytes() -> None:
    text = "\ufeff---\r\n# c\r\na:   1\r\n---\r\nold\r\n"
    new = loads(text).with_body("new body\r\n")
    assert dumps(new) == "\ufeff---\r\n# c\r\na:   1\r\n---\r\nnew body\r\n"


def test_with_metadata_on_flow_mapping_front_matter() -> None:
    doc = loads("---\n{a: 1, b: 2}\n---\nx\n")
    out = dumps(doc.with_metadata({"a": 5}))
    assert loads(out).metadata == {"a": 5, "b": 2}


@pytest.mark.parametrize(
    ("text", "changes", "remove", "kept"),
    [
        ("---\nA:\n  - a\n  - b\n# about B\nB: 1\n---\n", {"A": ["z"]}, (), "# about B\n"),
        ("---\nA:\n  - a\n  - b\n# about B\nB: 1\n---\n", {}, ("A",), "# about B\n"),
        ("---\nA:\n- a\n# about B\nB: 1\n---\n", {"A": 5}, (), "# about B\n"),
        ("---\nA:\n  x: 1\n# about B\nB: 1\n---\n", {"A": 5}, (), "# about B\n"),
        ("---\nA:\n  - a\n\nB: 1\n---\n", {"A": 5}, (), "\n\nB: 1\n"),
        ("---\nA:\n  - a\n# trailing note\n---\n", {"A": 5}, (), "# trailing note\n"),
        ("---\nA: |\n  text\n\nB: 1\n---\n", {"A": 5}, (), "\n\nB: 1\n"),
    ],
    ids=["change-list", "remove-list", "change-indentless-list", "change-mapping", "blank-line",
         "trailing-after-list", "blank-line-after-block-scalar"],
)  # fmt: skip
def test_with_metadata_keeps_lines_after_a_block_value(
    text: str, changes: dict[str, Any], remove: tuple[str, ...], kept: str
) -> None:
    out = dumps(loads(text).with_metadata(changes, remove=remove))
    assert kept in out


@pytest.mark.parametrize(
    ("text", "changes", "remove", "kept"),
    [
        ("---\na: 1\n# about b\nb: 2\n---\nx\n", {"a": 5}, (), "# about b\n"),
        ("---\na: 1\n# about b\nb: 2\n---\nx\n", {}, ("a",), "# about b\n"),
        ("---\na: 1\nb: 2\n# trailing note\n---\nx\n", {"b": 3}, (), "# trailing note\n"),
        ("---\na: |\n  text\n# about b\nb: 2\n---\nx\n", {"a": 5}, (), "# about b\n"),
        ("---\na:\n# about b\nb: 2\n---\nx\n", {"a": 5}, (), "# about b\n"),
        ("---\na: [x,\n  y]\n# about b\nb: 2\n---\nx\n", {"a": 5}, (), "# about b\n"),
        ("---\na: 'multi\n  line'\n\n# about b\nb: 2\n---\nx\n", {"a": 5}, (), "\n# about b\n"),
    ],
    ids=["change-previous-key", "remove-previous-key", "change-last-key", "after-block-scalar",
         "after-null", "after-flow-list", "after-multiline-quoted"],
)  # fmt: skip
def test_with_metadata_keeps_standalone_comment_lines(
    text: str, changes: dict[str, Any], remove: tuple[str, ...], kept: str
) -> None:
    out = dumps(loads(text).with_metadata(changes, remove=remove))
    assert kept in out


def test_with_metadata_that_changes_nothing_leaves_a_plain_file_alone() -> None:
    doc = loads("# Just text\n")
    assert dumps(doc.with_metadata({}, remove=["missing"])) == "# Just text\n"


# --------------------------------------------------------------------------------------------
# golden files
# --------------------------------------------------------------------------------------------

GOLDEN_NAMES = sorted(p.stem for p in GOLDEN.glob("*.md"))


def test_golden_files_are_present() -> None:
    assert len(GOLDEN_NAMES) >= 8
    for name in GOLDEN_NAMES:
        assert (GOLDEN / f"{name}.json").is_file(), f"{name}.md has no expected .json"


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_golden_file(name: str) -> None:
    data = (GOLDEN / f"{name}.md").read_bytes()
    expected = json.loads((GOLDEN / f"{name}.json").read_text("utf-8"))
    # guard against git or an editor normalising the test data
    if expected.get("newline") == "\r\n":
        assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b""), "CRLF was converted"
    if expected.get("bom"):
        assert data.startswith(b"\xef\xbb\xbf"), "the BOM was stripped"

    doc = load_bytes(data, path=f"{name}.md")
    assert doc.metadata == expected["metadata"]
    assert list(doc.metadata) == list(expected["metadata"])
    assert doc.body == expected["body"]
    assert doc.title(f"notes/{name}.md") == expected["title"]
    if "bom" in expected:
        assert doc.bom is expected["bom"]
    if "newline" in expected:
        assert doc.newline == expected["newline"]
    if "has_front_matter" in expected:
        assert doc.has_front_matter is expected["has_front_matter"]
    assert dumps(doc).encode("utf-8") == data  # byte-exact round trip
    json.dumps(doc.metadata)


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_golden_file_adding_a_key_only_inserts_one_line(name: str) -> None:
    text = (GOLDEN / f"{name}.md").read_bytes().decode("utf-8")
    doc = loads(text, path=f"{name}.md")
    out = dumps(doc.with_metadata({"reviewed_by": "memfs"}))
    nl = doc.newline
    bom = "\ufeff" if doc.bom else ""
    if doc.has_front_matter:
        head = bom + doc.head
        fence_at = head.rstrip("\r\n").rfind(nl) + len(nl)  # start of the closing fence line
        expected = head[:fence_at] + f"reviewed_by: memfs{nl}" + head[fence_at:] + doc.body
    else:
        expected = f"{bom}---{nl}reviewed_by: memfs{nl}---{nl}" + doc.body
    assert out == expected
    assert loads(out).metadata == {**doc.metadata, "reviewed_by": "memfs"}


# --------------------------------------------------------------------------------------------
# malformed front matter
# --------------------------------------------------------------------------------------------

_BILLION_LAUGHS = (
    "---\n"
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
    "---\n"
    "body\n"
)


def _fm(yaml_text: str) -> str:
    return "---\n" + yaml_text + "---\nbody\n"


def _deep_block_mapping(levels: int) -> str:
    """`levels` nested block mappings below the top level, one key each."""
    return "".join("  " * i + f"k{i}:\n" for i in range(levels)) + "  " * levels + "x: 1\n"


MALFORMED = {
    "invalid-yaml-unclosed-flow": _fm("title: [unclosed\n"),
    "invalid-yaml-unquoted-colon": _fm("key: value: other\n"),
    "invalid-yaml-tab-indent": _fm("a:\n\tb: 1\n"),
    "invalid-yaml-bad-indent": _fm("a: 1\n  b: 2\n"),
    "invalid-yaml-control-char": _fm("a: x\x0cy\n"),
    "list": _fm("- a\n- b\n"),
    "scalar-string": _fm("just a sentence\n"),
    "scalar-int": _fm("42\n"),
    "null": _fm("null\n"),
    "tilde": _fm("~\n"),
    "billion-laughs": _BILLION_LAUGHS,
    "single-anchor": _fm("a: &x 1\n"),
    "anchor-and-alias": _fm("a: &x [1]\nb: *x\n"),
    "python-object-apply": _fm('a: !!python/object/apply:os.system ["true"]\n'),
    "python-name": _fm("a: !!python/name:os.system\n"),
    "python-object": _fm("a: !!python/object:collections.OrderedDict {}\n"),
    "binary": _fm("a: !!binary aGVsbG8=\n"),
    "set": _fm("a: !!set {x, y}\n"),
    "omap": _fm("a: !!omap [x: 1]\n"),
    "pairs": _fm("a: !!pairs [x: 1]\n"),
    "timestamp-tag": _fm("a: !!timestamp 2024-05-01\n"),
    "custom-tag": _fm("a: !secret xyz\n"),
    "merge-key": _fm("<<: {a: 1}\n"),
    "duplicate-keys": _fm("title: one\ntitle: two\n"),
    "duplicate-nested-keys": _fm("a:\n  b: 1\n  b: 2\n"),
    "int-key": _fm("1: one\n"),
    "float-key": _fm("1.5: x\n"),
    "bool-key": _fm("true: x\n"),
    "null-key": _fm("null: x\n"),
    "nested-int-key": _fm("a: {1: one}\n"),
    "list-key": _fm("? [a, b]\n: x\n"),
    "mapping-key": _fm("{a: 1}: x\n"),
    "too-deep-flow": _fm("a: " + "[" * MAX_FRONT_MATTER_DEPTH + "]" * MAX_FRONT_MATTER_DEPTH + "\n"),
    "too-deep-unclosed": _fm("a: " + "[" * 5000 + "\n"),
    "too-deep-block": _fm(_deep_block_mapping(MAX_FRONT_MATTER_DEPTH + 1)),
    "over-64-kib-value": _fm("big: " + "x" * (MAX_FRONT_MATTER_BYTES + 10) + "\n"),
    "over-64-kib-10k-keys": _fm("".join(f"key{i}: value {i}\n" for i in range(10_000))),
    "over-64-kib-multibyte": _fm("big: " + "é" * (MAX_FRONT_MATTER_BYTES // 2 + 10) + "\n"),
}  # fmt: skip


_REASONS = {  # what the error must say, per case
    "not valid YAML": ["invalid-yaml-unclosed-flow", "invalid-yaml-unquoted-colon",
                       "invalid-yaml-tab-indent", "invalid-yaml-bad-indent", "invalid-yaml-control-char"],
    "must be a mapping": ["list", "scalar-string", "scalar-int", "null", "tilde"],
    "anchors or aliases": ["billion-laughs", "single-anchor", "anchor-and-alias"],
    "could not determine a constructor": ["python-object-apply", "python-name", "python-object",
                                          "custom-tag", "merge-key"],
    "is not allowed in front matter": ["binary", "set", "omap", "pairs", "timestamp-tag"],
    "duplicate key": ["duplicate-keys", "duplicate-nested-keys"],
    "is not a string": ["int-key", "float-key", "bool-key", "null-key", "nested-int-key"],
    "not a plain value": ["list-key", "mapping-key"],
    "nested deeper than": ["too-deep-flow", "too-deep-unclosed", "too-deep-block"],
    "larger than": ["over-64-kib-value", "over-64-kib-10k-keys", "over-64-kib-multibyte"],
}  # fmt: skip


def _reason(case: str) -> str:
    (reason,) = [reason for reason, cases in _REASONS.items() if case in cases]
    return reason


def test_every_malformed_case_has_one_expected_reason() -> None:
    listed = [case for cases in _REASONS.values() for case in cases]
    assert sorted(listed) == sorted(MALFORMED)


@pytest.mark.parametrize(("case", "text"), MALFORMED.items(), ids=MALFORMED.keys())
def test_malformed_front_matter_raises_document_error_naming_the_path(case: str, text: str) -> None:
    with pytest.raises(memfs.DocumentError) as err:
        loads(text, path="x.md")
    assert "x.md" in str(err.value)
    assert err.value.path == "x.md"
    assert _reason(case) in err.value.reason


@pytest.mark.parametrize("text", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_front_matter_also_fails_through_load_bytes(text: str) -> None:
    with pytest.raises(memfs.DocumentError, match="x.md"):
        load_bytes(text.encode("utf-8"), path="x.md")


def test_python_tags_execute_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = _fm(f'a: !!python/object/apply:os.system ["touch {marker}"]\n')
    with pytest.raises(memfs.DocumentError, match="x.md"):
        loads(text, path="x.md")
    assert not marker.exists()


def test_document_error_is_a_memfs_error() -> None:
    with pytest.raises(memfs.MemfsError):
        loads(_fm("- a\n"))


@pytest.mark.parametrize(
    "data",
    [
        b"---\ntitle: caf\xe9\n---\n",  # Latin-1
        b"\xff\xfe---\n",  # UTF-16 BOM
        b"---\na: \xed\xa0\x80\n---\n",  # an encoded surrogate
        b"body \xc0\xaf",  # overlong encoding of '/'
        b"\x80",
    ],
    ids=["latin1", "utf16-bom", "surrogate", "overlong", "lone-continuation"],
)
def test_load_bytes_refuses_invalid_utf8(data: bytes) -> None:
    with pytest.raises(memfs.DocumentError) as err:
        load_bytes(data, path="x.md")
    assert "x.md" in str(err.value)


@pytest.mark.parametrize(
    "data", [b"hello\x00world", b"\x00", b"---\na: 1\n---\n\x00", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"]
)
def test_load_bytes_refuses_nul_bytes(data: bytes) -> None:
    with pytest.raises(memfs.DocumentError) as err:
        load_bytes(data, path="x.md")
    assert "x.md" in str(err.value)


def test_load_bytes_reads_a_utf8_bom() -> None:
    doc = load_bytes(b"\xef\xbb\xbf---\r\na: 1\r\n---\r\nb\r\n")
    assert doc.bom and doc.newline == "\r\n"
    assert doc.metadata == {"a": 1} and doc.body == "b\r\n"


@pytest.mark.parametrize("text", ["---\na: \udc80\n---\n", "---\n\udc80: 1\n---\n"])
def test_loads_with_a_lone_surrogate_raises_document_error(text: str) -> None:
    with pytest.raises(memfs.DocumentError, match="x.md"):
        loads(text, path="x.md")


def test_front_matter_size_and_depth_limits_are_inclusive() -> None:
    # exactly at the limits is fine
    value = "x" * (MAX_FRONT_MATTER_BYTES - len("big: \n"))
    assert loads(_fm(f"big: {value}\n")).metadata == {"big": value}
    depth = MAX_FRONT_MATTER_DEPTH - 1  # the top-level mapping is one level
    nested = loads(_fm("a: " + "[" * depth + "]" * depth + "\n")).metadata["a"]
    for _ in range(depth - 1):
        assert isinstance(nested, list) and len(nested) == 1
        nested = nested[0]
    assert nested == []


# --------------------------------------------------------------------------------------------
# value types and odd shapes that must work
# --------------------------------------------------------------------------------------------


def test_dates_and_yes_no_stay_strings_and_true_is_a_bool() -> None:
    text = _fm(
        "created: 2024-05-01\n"
        "at: 2024-05-01T10:00:00Z\n"
        "spaced: 2024-05-01 10:00:00\n"
        "ok: yes\n"
        "nope: no\n"
        "on_: on\n"
        "off_: off\n"
        "y_: y\n"
        "Y_: Yes\n"
        "t: true\n"
        "T: True\n"
        "f: FALSE\n"
        "quoted: 'true'\n"
        "num: 42\n"
    )
    meta = loads(text).metadata
    assert meta == {
        "created": "2024-05-01", "at": "2024-05-01T10:00:00Z", "spaced": "2024-05-01 10:00:00",
        "ok": "yes", "nope": "no", "on_": "on", "off_": "off", "y_": "y", "Y_": "Yes",
        "t": True, "T": True, "f": False, "quoted": "true", "num": 42,
    }  # fmt: skip
    assert meta["t"] is True and meta["f"] is False
    json.dumps(meta)


def test_row_37_type_confusion_is_json_serialisable_and_text_is_kept() -> None:
    text = _fm("created: 2024-05-01\ntags: yes\npriority: 1e999\nid: 0x1F\nversion: 1.10\n")
    doc = loads(text)
    assert doc.metadata["created"] == "2024-05-01"
    assert doc.metadata["tags"] == "yes"
    assert doc.metadata["priority"] == "1e999"  # YAML 1.1 floats need a dot
    json.dumps(doc.metadata)
    out = dumps(doc.with_metadata({"tags": ["a"]}))
    assert "version: 1.10\n" in out and "id: 0x1F\n" in out and "created: 2024-05-01\n" in out


def test_a_key_named_content_works() -> None:
    doc = loads(_fm("content: hello\ntitle: t\n"))
    assert doc.metadata == {"content": "hello", "title": "t"}
    back = loads(dumps(Document.new({"content": "x", "body": "y", "metadata": "z"}, "b")))
    assert back.metadata == {"content": "x", "body": "y", "metadata": "z"}


def test_quoted_non_string_looking_keys_are_fine() -> None:
    assert loads(_fm("'1': one\n\"true\": yes\n")).metadata == {"1": "one", "true": "yes"}


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: never closed\n\nbody\n",
        "---\n: : [this is not yaml\n",
        "---\n- a list\n- with no closing fence\n",
        "---",
        "---\n",
        "--- \n",
    ],
)
def test_an_unclosed_fence_is_all_body_and_does_not_raise(text: str) -> None:
    doc = loads(text, path="x.md")
    assert doc.metadata == {}
    assert doc.body == text
    assert not doc.has_front_matter
    assert dumps(doc) == text


@pytest.mark.parametrize(
    "text",
    [
        "----\na: 1\n----\n",  # four dashes is not a fence
        "\n---\na: 1\n---\n",  # front matter must start on the first line
        " ---\na: 1\n---\n",
        "--- a: 1\n---\n",
        "# Title\n---\na: 1\n---\n",
    ],
)
def test_text_that_is_not_a_front_matter_fence_is_body(text: str) -> None:
    doc = loads(text)
    assert doc.metadata == {} and doc.body == text and dumps(doc) == text


@pytest.mark.parametrize(
    ("text", "meta", "body"),
    [
        ("---\n---\nbody", {}, "body"),
        ("---\n\n   \n---\nbody", {}, "body"),
        ("---\na: 1\n---", {"a": 1}, ""),
        ("---\na: 1\n...\nbody", {"a": 1}, "body"),
        ("--- \t\na: 1\n---  \nbody", {"a": 1}, "body"),
        ("---\r\na: 1\n---\nbody", {"a": 1}, "body"),  # mixed line endings
        ("---\na: 1\n---\n---\nb: 2\n---\n", {"a": 1}, "---\nb: 2\n---\n"),
    ],
)
def test_front_matter_shapes(text: str, meta: dict[str, Any], body: str) -> None:
    doc = loads(text)
    assert doc.metadata == meta
    assert doc.body == body
    assert dumps(doc) == text


def test_comment_only_front_matter_is_an_empty_mapping() -> None:
    doc = loads("---\n# title: fill me in\n---\nbody\n", path="x.md")
    assert doc.metadata == {}
    assert doc.body == "body\n"


def test_removing_every_key_leaves_a_readable_file() -> None:
    doc = loads("---\n# header comment\ntitle: x\n---\nbody\n", path="x.md")
    out = dumps(doc.with_metadata({}, remove=["title"]))
    back = loads(out, path="x.md")
    assert back.metadata == {}
    assert back.body == "body\n"


# --------------------------------------------------------------------------------------------
# title()
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "path", "title"),
    [
        ("---\ntitle: From key\n---\n# From heading\n", "a/b.md", "From key"),
        ("---\ntitle: '  padded  '\n---\n", "a/b.md", "padded"),
        ("---\ntitle: ''\n---\n# Heading\n", "a/b.md", "Heading"),
        ("---\ntitle: '   '\n---\n# Heading\n", "a/b.md", "Heading"),
        ("---\ntitle: 42\n---\n# Heading\n", "a/b.md", "Heading"),
        ("---\ntitle: [a, b]\n---\n", "a/b.md", "b"),
        ("---\ntype: x\n---\nintro\n\n## Second level\n# First level\n", "a/b.md", "Second level"),
        ("# Closing hashes ##\n", "a/b.md", "Closing hashes"),
        ("#   Spaced   \n", "a/b.md", "Spaced"),
        ("# CRLF heading\r\nbody\r\n", "a/b.md", "CRLF heading"),
        ("#hashtag, not a heading\n", "notes/window-seats.md", "window-seats"),
        ("####### seven is too many\n", "x/y.md", "y"),
        ("plain text\n", "notes/2026-11-22.md", "2026-11-22"),
        ("", "users/alice/café.md", "café"),
        ("", "archive.tar.md", "archive.tar"),
    ],
)
def test_title(text: str, path: str, title: str) -> None:
    assert loads(text).title(path) == title


def test_title_without_a_path_is_empty() -> None:
    assert loads("no heading\n").title() == ""
    assert loads("no heading\n").title(None) == ""


def test_title_ignores_comments_inside_code_blocks() -> None:
    body = "How to set up:\n\n```bash\n# install deps\npip install memfs\n```\n\n# Setup notes\n"
    assert loads(body).title("setup.md") == "Setup notes"
