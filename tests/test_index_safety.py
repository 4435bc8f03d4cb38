"""The index is derived state that cannot hurt: damaged, planted or deleted, it is rebuilt, never obeyed."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from whoosh import fields
from whoosh.filedb.filestore import FileStorage
from whoosh.index import TOC, open_dir

import memfs

QUERIES = ["peanuts", "window seats", "postgresql", "alice"]


def fill(vault: memfs.Vault) -> None:
    alice = vault.memories("users/alice")
    alice.add("Alice prefers window seats on long flights.", title="Window seats", path="seats.md")
    alice.add("Alice is vegetarian and allergic to peanuts.", title="Diet", path="diet.md")
    vault.memories("projects/atlas").add("We chose PostgreSQL for its JSON support.", title="Database")


def results(vault: memfs.Vault) -> list[list[str]]:
    return [[h.path for h in vault.search(q)] for q in QUERIES]


def index_folder(root: Path) -> Path:
    return root / ".memfs" / "index"


class Plant:
    """Unpickling this makes a folder: the stand-in for code an attacker would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.mkdir, (self.marker,)


def plant_toc(folder: Path, marker: Path, generation: int) -> str:
    """Write a Whoosh table of contents whose segment list runs ``Plant`` when read."""
    TOC(fields.Schema(path=fields.ID()), [Plant(marker)], generation).write(FileStorage(str(folder)), "MAIN")
    return f"_MAIN_{generation}.toc"


def test_the_planted_table_of_contents_would_run_in_plain_whoosh(tmp_path: Path) -> None:
    folder = tmp_path / "ix"
    folder.mkdir()
    plant_toc(folder, tmp_path / "ran", 7)
    with contextlib.suppress(Exception):  # whatever Whoosh makes of it afterwards
        open_dir(str(folder))
    assert (tmp_path / "ran").is_dir()  # so the tests below test something


def _sign_as(folder: Path, key: bytes, extra: dict[str, Path]) -> None:
    """What someone with their own memfs key can do: sign a list naming files they planted."""
    manifest = json.loads((folder / "memfs-index.json").read_text())
    body = manifest["index"]
    for name, path in extra.items():
        data = path.read_bytes()
        body["files"][name] = [len(data), hashlib.sha256(data).hexdigest()]
    body["generation"] = 99
    payload = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    manifest["hmac"] = hmac.new(key, payload, hashlib.sha256).hexdigest()
    (folder / "memfs-index.json").write_text(json.dumps(manifest))


def test_a_copied_vault_with_a_planted_index_is_rebuilt_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    mine = os.environ["XDG_STATE_HOME"]
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "someone-else"))  # another user, another key
    theirs = tmp_path / "theirs"
    with memfs.Vault.open(theirs, create=True, durable=False) as vault:
        fill(vault)
        expected = results(vault)
    key = (tmp_path / "someone-else/memfs/index-key").read_bytes()
    marker = tmp_path / "ran"
    name = plant_toc(index_folder(theirs), marker, 99)
    _sign_as(index_folder(theirs), key, {name: index_folder(theirs) / name})
    copy = tmp_path / "copy"
    shutil.copytree(theirs, copy, symlinks=True)  # cp -r, a zip, a synced folder
    monkeypatch.setenv("XDG_STATE_HOME", mine)
    with caplog.at_level(logging.WARNING), memfs.Vault.open(copy, create=True, durable=False) as vault:
        assert results(vault) == expected
        assert not marker.exists()
        assert "not built by memfs for this user" in caplog.text and "rebuilding" in caplog.text
    assert not (index_folder(copy) / name).exists()  # the rebuilt folder holds none of it


@pytest.mark.parametrize("where", ["newer_toc", "replaced_toc", "replaced_segment"])
def test_files_planted_in_our_own_index_are_never_read(tmp_path: Path, where: str,
                                                       caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    root = tmp_path / "v"
    marker = tmp_path / "ran"
    with memfs.Vault.open(root, create=True, durable=False) as vault:  # a long-lived process
        vault.freshness = 0
        fill(vault)
        expected = results(vault)
        folder = index_folder(root)
        if where == "newer_toc":  # a higher generation: plain Whoosh would open this one
            plant_toc(folder, marker, 999)
        elif where == "replaced_toc":
            toc = next(folder.glob("_MAIN_*.toc"))
            toc.unlink()
            plant_toc(folder, marker, int(toc.stem.rsplit("_", 1)[1]))
        else:
            payload = __import__("pickle").dumps(Plant(marker))
            for seg in folder.glob("*.seg"):  # a compound file's directory is a pickle at the offset given
                seg.write_bytes((12).to_bytes(8, "big") + len(payload).to_bytes(4, "big") + payload)
        assert results(vault) == expected
        vault.memories("users/alice").add("Stamps from Peru.", title="Stamps")  # a commit reads segments
        assert [h.title for h in vault.search("stamps")] == ["Stamps"]
        assert not marker.exists()
    with caplog.at_level(logging.WARNING), memfs.Vault.open(root, create=True, durable=False) as vault:  # a new process
        assert results(vault) == expected
        assert [h.title for h in vault.search("stamps")] == ["Stamps"]
    assert not marker.exists()


DAMAGE_SCRIPT = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    import memfs

    root, how = Path(sys.argv[1]), sys.argv[2]
    with memfs.Vault.open(root, create=True, durable=False) as vault:  # opened before the damage, used after it
        vault.freshness = 0
        before = [[h.path for h in vault.search(q)] for q in ("peanuts", "window seats", "postgresql")]
        for seg in (root / ".memfs" / "index").glob("*.seg"):
            os.truncate(seg, 0 if how == "empty" else seg.stat().st_size // 2)
        after = [[h.path for h in vault.search(q)] for q in ("peanuts", "window seats", "postgresql")]
        assert after == before, (after, before)
        stamps = vault.memories("users/alice").add("Stamps from Peru.", title="Stamps")
        assert [h.path for h in vault.search("stamps")] == [stamps.path]
        for seg in (root / ".memfs" / "index").glob("*.seg"):
            os.truncate(seg, 0 if how == "empty" else seg.stat().st_size // 2)
        assert [h.path for h in vault.search("stamps")] == [stamps.path]
    print("survived")
""")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["empty", "truncated"])
def test_a_segment_cut_short_under_a_running_process_does_not_kill_it(tmp_path: Path, how: str) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        fill(vault)
        expected = results(vault)
    run = subprocess.run([sys.executable, "-c", DAMAGE_SCRIPT, str(root), how], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, timeout=300)  # fmt: skip
    assert run.returncode != -signal.SIGBUS, "the process was killed by SIGBUS"
    assert run.returncode == 0 and "survived" in run.stdout, run.stderr
    with memfs.Vault.open(root, create=True, durable=False) as vault:  # and the next process rebuilds what is damaged
        assert results(vault) == expected
        assert [h.title for h in vault.search("stamps")] == ["Stamps"]


def test_deleting_the_state_folder_at_any_moment_costs_one_rebuild(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        fill(vault)
        expected = results(vault)
        shutil.rmtree(root / ".memfs")
        assert results(vault) == expected  # a search
        shutil.rmtree(root / ".memfs")
        stamps = vault.memories("users/alice").add("Stamps from Peru.", title="Stamps")  # a write
        assert [h.path for h in vault.search("stamps")] == [stamps.path]
        shutil.rmtree(root / ".memfs")
        session = vault.session("trip")
        session.append([{"role": "user", "content": "Book the kumquat festival."}])  # a session turn
        assert [h.position for h in session.search("kumquat")] == [1]
        shutil.rmtree(root / ".memfs")
        assert vault.path_of(stamps.id or "") == stamps.path
        assert vault.problems() == []
        assert vault.history.status() == []
        shutil.rmtree(root / ".memfs")  # and closing without it does not fail either
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        assert results(vault) == expected


def test_bad_pending_lines_are_ignored_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("the launch codes are here\n")
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        vault.freshness = 0
        fill(vault)
        expected = results(vault)
        (root / "memories/link").symlink_to(outside, target_is_directory=True)
        bad = [b"\xff\xfe not utf-8", b"../outside/secret.md", b"memories/../../outside/secret.md",
               str(outside / "secret.md").encode(), b"notes/elsewhere.md", b"memories/link/secret.md",
               b".memfs/lock", b"memories/users/alice/diet.txt", b"memories/users/alice/\x00.md"]  # fmt: skip
        with open(root / ".memfs/pending", "ab") as pending:
            pending.write(b"\n".join(bad) + b"\nmemories/users/alice/diet.md\n")
        with caplog.at_level(logging.WARNING):
            assert vault.search("launch codes") == []
            assert results(vault) == expected
        assert caplog.text.count("ignoring a line of") == len(bad) - 1  # the link passes as a path ...
        assert (root / ".memfs/pending").read_bytes() == b""
        assert vault.search("launch codes") == []  # ... and is refused as one: it leads out of the vault
        assert "secret" not in json.dumps(vault.index.entries())
