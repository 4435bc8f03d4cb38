"""Tests for memfs.paths: the one gate for paths and namespaces that come from outside."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memfs
from memfs.paths import (
    MAX_COMPONENT_BYTES,
    MAX_DEPTH,
    MAX_PATH_BYTES,
    clean_memory_path,
    clean_namespace,
    clean_relpath,
    slugify,
)

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

BAD_PATHS: dict[str, Any] = {
    # traversal and absolute paths
    "dotdot": "..",
    "dotdot-slash": "../",
    "dotdot-file": "../etc/passwd",
    "dotdot-deep": "../../../../etc/passwd",
    "dot": ".",
    "dot-segment": "a/./b.md",
    "inner-dotdot": "a/../b.md",
    "inner-dotdot-stays-inside": "a/b/../../c.md",
    "trailing-dotdot": "a/..",
    "absolute": "/etc/passwd",
    "absolute-memories": "/memories/a.md",
    "double-slash-root": "//server/share",
    # percent-escapes are never decoded, and '%' itself is refused
    "percent-dotdot": "%2e%2e/%2e%2e/etc/passwd",
    "percent-double-encoded": "%252e%252e/x.md",
    "percent-slash": "..%2fx.md",
    "percent-overlong": "..%c0%af.md",
    # separators and control characters
    "backslash": "a\\b.md",
    "backslash-dotdot": "..\\..\\x.md",
    "windows-drive": "C:\\x.md",
    "unc": "\\\\server\\share",
    "nul": "a\x00.md",
    "newline": "a\n.md",
    "carriage-return": "a\r.md",
    "tab": "a\tb.md",
    "escape": "a\x1b[31m.md",
    "del": "a\x7f.md",
    "c1-next-line": "a\x85.md",
    "line-separator": "a\u2028b.md",  # str.splitlines() breaks lines here
    "paragraph-separator": "a\u2029b.md",
    # invisible and bidi format characters (category Cf)
    "rtl-override": "a\u202egpj.md",
    "zero-width-space": "a\u200bb.md",
    "zero-width-joiner": "a\u200db.md",
    "bom": "\ufeffa.md",
    "soft-hyphen": "a\u00adb.md",
    # surrogates, private use, unassigned
    "lone-surrogate": "\udc80.md",
    "private-use": "a\ue000.md",
    "unassigned": "a\U000e0fff.md",
    # not NFC: decomposed é
    "nfd": "cafe\u0301.md",
    "nfd-in-folder": "cafe\u0301/a.md",
    # sizes
    "component-300-bytes": "a" * 296 + ".md",
    "component-256-bytes": "a" * 253 + ".md",
    "component-256-bytes-multibyte": "é" * 128,
    "depth-20": "/".join(["d"] * 19) + "/a.md",
    "depth-17": "/".join(["d"] * (MAX_DEPTH + 1)),
    "path-1100-bytes": "/".join(["x" * 99] * 11),
    "path-5000-bytes-500-deep": "/".join(["abcdefghi"] * 500),
    # hidden and reserved names
    "git": ".git/x",
    "git-hooks": ".git/hooks/pre-commit",
    "git-config": ".git/config",
    "git-upper": ".GIT/x",
    "git-mixed": ".Git/x",
    "git-trailing-space": ".git /x",
    "git-trailing-dot": ".git./x",
    "nested-git": "a/.git/HEAD",
    "memfs-state": ".memfs/x",
    "index-dir": ".index/MAIN_WRITELOCK",
    "gitignore": ".gitignore",
    "gitattributes": ".gitattributes",
    "gitmodules": ".gitmodules",
    "lfsconfig": ".lfsconfig",
    "hidden-file": "a/.hidden.md",
    # trailing spaces and dots (stripped on Windows)
    "trailing-space": "a.md ",
    "trailing-space-folder": "a /b.md",
    "trailing-dot": "a.md.",
    "trailing-dot-folder": "a./b.md",
    # Windows device names and characters
    "con": "con.md",
    "con-upper": "CON",
    "nul-txt": "NUL.txt",
    "aux-double-ext": "aux.tar.gz",
    "prn": "prn.md",
    "com1": "com1.md",
    "lpt9": "LPT9.md",
    "com-superscript-1": "com\u00b9.md",  # COM¹ LPT² ... are reserved too
    "lpt-superscript-2": "LPT\u00b2.txt",
    "com-superscript-3": "com\u00b3",
    "device-folder": "nul/a.md",
    "star": "a*b.md",
    "question": "a?b.md",
    "angle": "<x>.md",
    "quote": 'a"b.md',
    "pipe": "a|b.md",
    # empty and malformed
    "empty": "",
    "slash": "/",
    "double-slash": "//",
    "empty-component": "a//b.md",
    "trailing-slash": "a/",
    "trailing-slash-deep": "users/alice/",
}

NON_STR = [None, b"a.md", 1, 1.5, ["a.md"], ("a.md",), True]

GOOD_PATHS = [
    "a.md",
    "users/alice/window-seats.md",
    "café.md",  # NFC
    "notes/2026-11-22.md",
    "Notes With Spaces.md",
    "a.b.c.md",
    "日本語/メモ.md",
    "emoji-🙂.md",
    "p\u0430ypal.md",  # Cyrillic а: a confusable, but a valid NFC letter
    "console.md",  # starts with 'con' but is not a device name
    "nul-memory.md",
    "com10.md",
    "a_b-c~d+e=f,g;h'i(j)k[l]m{n}o!p@q#r$s^t&u.md",
    "x" * MAX_COMPONENT_BYTES,
    "é" * (MAX_COMPONENT_BYTES // 2),  # 254 bytes
    "/".join(["d"] * (MAX_DEPTH - 1)) + "/a.md",  # exactly MAX_DEPTH levels
    "\uff0e\uff0e/x.md",  # fullwidth dots: an ordinary name, not '..'
]


@pytest.mark.parametrize("path", BAD_PATHS.values(), ids=BAD_PATHS.keys())
def test_bad_paths_raise_path_error(path: str) -> None:
    with pytest.raises(memfs.PathError):
        clean_relpath(path)


@pytest.mark.parametrize("path", BAD_PATHS.values(), ids=BAD_PATHS.keys())
def test_bad_paths_are_refused_as_memory_paths_too(path: str) -> None:
    with pytest.raises(memfs.PathError):
        clean_memory_path(path)


@pytest.mark.parametrize("path", NON_STR, ids=lambda v: type(v).__name__)
def test_non_str_paths_raise_path_error(path: Any) -> None:
    for check in (clean_relpath, clean_memory_path, clean_namespace):
        with pytest.raises(memfs.PathError, match="must be a string"):
            check(path)


def test_path_error_is_a_value_error_and_a_memfs_error() -> None:
    with pytest.raises(ValueError):
        clean_relpath("../x")
    with pytest.raises(memfs.MemfsError):
        clean_relpath("../x")


def test_path_error_names_the_reason() -> None:
    with pytest.raises(memfs.PathError, match=r"'\.\.'"):
        clean_relpath("a/../b.md")
    with pytest.raises(memfs.PathError, match="namespace"):
        clean_namespace("a/../b")


@pytest.mark.parametrize("path", GOOD_PATHS)
def test_good_paths_are_returned_unchanged(path: str) -> None:
    assert clean_relpath(path) == path


@pytest.mark.parametrize("path", [p for p in GOOD_PATHS if p.endswith(".md")])
def test_good_memory_paths(path: str) -> None:
    assert clean_memory_path(path) == path


def test_size_limits_are_inclusive() -> None:
    parts = ["y" * MAX_COMPONENT_BYTES] * 3 + ["y" * (MAX_COMPONENT_BYTES - 1), "z"]
    exact = "/".join(parts)
    assert len(exact.encode()) == MAX_PATH_BYTES
    assert clean_relpath(exact) == exact
    with pytest.raises(memfs.PathError, match="longer than"):
        clean_relpath(exact + "z")  # one byte over, every component still short enough


def test_fullwidth_dots_are_not_a_parent_reference() -> None:
    # U+FF0E is an ordinary character to every filesystem memfs targets (NFC keeps it);
    # it is accepted, but only ever as itself, never turned into '..'.
    fullwidth = "\uff0e\uff0e"
    assert unicodedata.normalize("NFC", fullwidth) == fullwidth
    assert clean_relpath(f"{fullwidth}/x.md") == f"{fullwidth}/x.md"
    assert ".." not in clean_relpath(f"{fullwidth}/x.md").split("/")
    # ...while its NFKC form is exactly the traversal that is refused
    with pytest.raises(memfs.PathError):
        clean_relpath(unicodedata.normalize("NFKC", f"{fullwidth}/x.md"))


# a strategy over the character classes of the adversarial table
_NASTY = st.sampled_from(
    ["/", ".", "..", "\\", "%", ":", "*", "?", "<", ">", "|", '"', "\x00", "\n", "\t", "\x1b",
     "\u202e", "\u200b", "\ufeff", "\u0301", " ", "\uff0e", "~", "-", "git", "con", "a", "é",
     "\u2028", "\u2029", "\x85", "\u00b9", "lpt", "com"]
)  # fmt: skip


@PROPERTY
@given(st.lists(_NASTY | st.text(max_size=4), max_size=10).map("".join))
def test_accepted_paths_are_always_safe(path: str) -> None:
    try:
        result = clean_relpath(path)
    except memfs.PathError:
        return
    assert result == path
    assert not path.startswith("/")
    assert unicodedata.normalize("NFC", path) == path
    assert len(path.encode("utf-8")) <= MAX_PATH_BYTES
    parts = path.split("/")
    assert 1 <= len(parts) <= MAX_DEPTH
    for part in parts:
        assert part and part not in (".", "..")
        assert not part.startswith(".")
        assert not part.endswith((" ", "."))
        assert not set(part) & set('\\<>"|?*%')
        assert all(unicodedata.category(ch)[0] != "C" for ch in part)
        assert all(unicodedata.category(ch) not in ("Zl", "Zp") for ch in part)
        assert len(part.splitlines()) == 1
        assert len(part.encode("utf-8")) <= MAX_COMPONENT_BYTES


# --------------------------------------------------------------------------------------------
# namespaces
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("namespace", "clean"),
    [
        ("users/alice", "users/alice"),
        ("/users/alice/", "users/alice"),
        ("///users/alice///", "users/alice"),
        ("team", "team"),
        ("/team", "team"),
        ("notes.2026", "notes.2026"),
    ],
)
def test_clean_namespace_strips_surrounding_slashes(namespace: str, clean: str) -> None:
    assert clean_namespace(namespace) == clean


@pytest.mark.parametrize(
    "namespace",
    ["x.md", "users/alice/x.md", "/x.md/", "", "/", "///", "a//b", "../x", "users/../x", ".git",
     "users/.memfs", "con", "a\\b", "a\x00b", "cafe\u0301"],
)  # fmt: skip
def test_clean_namespace_refuses(namespace: str) -> None:
    with pytest.raises(memfs.PathError):
        clean_namespace(namespace)


def test_clean_memory_path_needs_md() -> None:
    assert clean_memory_path("a/b.md") == "a/b.md"
    for path in ("a/b.txt", "a/b", "a/b.md/c", "a.markdown"):
        with pytest.raises(memfs.PathError):
            clean_memory_path(path)


# --------------------------------------------------------------------------------------------
# slugify
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Window seats!", "window-seats"),
        ("Café au lait", "cafe-au-lait"),
        ("Crème brûlée à la façon de Zoë", "creme-brulee-a-la-facon-de-zoe"),
        ("Ångström Ünïcödé", "angstrom-unicode"),
        ("  --Leading and trailing--  ", "leading-and-trailing"),
        ("a/b\\c..d", "a-b-c-d"),
        ("2026-11-22 standup", "2026-11-22-standup"),
        ("", "memory"),
        ("!!!", "memory"),
        ("日本語", "日本語"),  # a title in another script keeps its letters (issue 28)
        ("Москва зимой!", "москва-зимой"),
        ("नमस्ते दुनिया", "नमस्ते-दुनिया"),  # combining vowel signs kept
        ("🙂", "memory"),
    ],
)
def test_slugify(title: str, slug: str) -> None:
    assert slugify(title) == slug


def test_slugify_cuts_long_titles_at_a_word_boundary() -> None:
    title = "The quick brown fox jumps over the lazy dog and keeps running far away"
    slug = slugify(title)
    assert len(slug) <= 60
    assert slug == "the-quick-brown-fox-jumps-over-the-lazy-dog-and-keeps"
    full = slugify(title, max_length=200)
    assert full.startswith(slug + "-")


def test_slugify_cuts_a_single_long_word() -> None:
    assert slugify("a" * 100) == "a" * 60


@pytest.mark.parametrize("name", ["CON", "con", "Nul", "aux", "PRN", "com1", "LPT9", "nul.txt"])
def test_slugify_never_returns_a_device_name(name: str) -> None:
    slug = slugify(name)
    reserved = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
    assert slug not in reserved
    assert clean_memory_path(slug + ".md") == slug + ".md"


@PROPERTY
@given(st.text(max_size=120))
def test_slugify_always_gives_a_safe_file_name(title: str) -> None:
    slug = slugify(title)
    if slug.isascii():
        assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", slug)
    else:  # a title in another script: its letters, marks and digits, words joined by "-"
        assert all(c == "-" or unicodedata.category(c)[0] in "LMN" for c in slug)
        assert not slug.startswith("-") and not slug.endswith("-") and "--" not in slug
    assert len(slug) <= 60
    assert clean_memory_path(slug + ".md") == slug + ".md"
