"""The one path gate: the plain-path rule of paths.py and the link walk of _fs, asked by every caller."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memfs import _fs
from memfs.errors import LinkError
from memfs.paths import clean_relpath, is_plain


@pytest.mark.parametrize("rel", ["memories/a.md", "memories/100%.md", "sessions/x/y.md", "a"])
def test_plain_paths(rel: str) -> None:
    assert is_plain(rel)


@pytest.mark.parametrize("rel", ["", "memories//a.md", "memories/../x", "./a", "memories/", "/abs"])
def test_paths_that_are_not_plain(rel: str) -> None:
    assert not is_plain(rel)


def test_clean_relpath_is_stricter_than_plain() -> None:
    assert is_plain("memories/100%.md")  # a person's file memfs must still write back (a sync, a rollback)
    with pytest.raises(Exception, match="forbidden character"):
        clean_relpath("memories/100%.md")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "memories" / "ns").mkdir(parents=True)
    (tmp_path / "memories" / "ns" / "a.md").write_text("a")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "s.md").write_text("secret")
    return tmp_path


def test_link_in_finds_nothing_on_plain_files_and_missing_ones(root: Path) -> None:
    for rel in ("memories/ns/a.md", "memories/ns", "memories/ns/missing.md", "memories/nope/x/y.md"):
        assert _fs.link_in(root, rel) is None
    assert _fs.link_in(root, "memories/ns/a.md/below") is None  # the walk ends at a file


def test_link_in_names_a_symbolic_link_anywhere_on_the_way(root: Path) -> None:
    os.symlink(root / "outside", root / "memories" / "ns" / "dir")
    os.symlink(root / "outside" / "s.md", root / "memories" / "ns" / "file.md")
    os.symlink(root / "nowhere", root / "memories" / "ns" / "dangling.md")
    for rel in ("memories/ns/dir", "memories/ns/dir/s.md", "memories/ns/file.md", "memories/ns/dangling.md"):
        assert _fs.link_in(root, rel) == _fs.SYMBOLIC_LINK, rel


def test_link_in_names_a_file_with_other_hard_links(root: Path) -> None:
    try:
        os.link(root / "outside" / "s.md", root / "memories" / "ns" / "hard.md")
    except OSError:
        pytest.skip("no hard links here")
    assert _fs.link_in(root, "memories/ns/hard.md") == _fs.HARD_LINK
    assert _fs.link_in(root, "memories/ns/hard.md/below") == _fs.HARD_LINK  # as the lstat walk it replaces


def test_link_in_refuses_a_path_that_is_not_plain(root: Path) -> None:
    with pytest.raises(LinkError, match="not a plain vault path"):
        _fs.link_in(root, "memories/../outside/s.md")
