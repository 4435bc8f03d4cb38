"""Import and export on real vaults: the exact round trip, each source format, hostile input, one commit."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import memfs
from memfs import _fs
from memfs.cli import cli
from memfs.errors import ImportSourceError, InvalidArgumentError
from memfs.sources import split_instructions

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def files_under(folder: Path) -> dict[str, bytes]:
    """The memory files under ``folder`` and their bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.md")) if p.is_file()}


def commits(vault: memfs.Vault) -> int:
    return len(vault.log())


@pytest.fixture
def example(tmp_path: Path) -> memfs.Vault:
    folder = tmp_path / "example"
    shutil.copytree(ROOT / "example_vault", folder)
    vault = memfs.Vault.open(folder, create=True, durable=False)
    yield vault
    vault.close()


def test_example_vault_round_trips_exactly(example: memfs.Vault, tmp_path: Path) -> None:
    lines, skipped = example.export()
    assert skipped == [] and len(lines) == len(list((example.root / "memories").rglob("*.md")))
    record = json.loads(next(line for line in lines if '"window-seats.md"' in line))
    assert record["namespace"] == "users/alice" and record["title"] == "Window seats"
    assert record["tags"] == ["travel", "flights"] and record["type"] == "preference"
    assert record["created"] == "2026-08-12T09:14:03Z" and record["front_matter"]["source"]
    assert {"valid_from", "valid_until", "expires", "supersedes", "superseded_by", "provenance"} <= set(record)
    export = tmp_path / "export.jsonl"
    export.write_text("".join(lines))

    with memfs.Vault.open(tmp_path / "fresh", create=True, durable=False) as fresh:
        before = commits(fresh)
        report = fresh.import_from(export, accept=True)
        assert report.format == "jsonl" and report.skipped == [] and len(report.imported) == len(lines)
        assert commits(fresh) == before + 1  # one commit for the whole import
        assert fresh.log(limit=1)[0].trailers["Memfs-Op"] == "import"
        again, _ = fresh.export()
        assert "".join(again) == "".join(lines)  # byte-identical export
        assert files_under(fresh.root / "memories") == files_under(example.root / "memories")  # identical files
        # the same export again changes nothing and says why
        second = fresh.import_from(export, accept=True)
        assert second.imported == [] and second.commit is None
        assert {s.reason for s in second.skipped} == {"already in the vault, unchanged"}
        assert commits(fresh) == before + 1


def test_export_keeps_hand_formatting_bom_and_crlf(vault: memfs.Vault, tmp_path: Path) -> None:
    folder = vault.root / "memories" / "users" / "alice"
    folder.mkdir(parents=True)
    texts = {
        "styled.md": "---\n# a comment\ntitle:   'Quoted'\ntags: [a,  b]\n---\nBody\n",
        "crlf.md": "---\r\ntitle: Windows\r\n---\r\nLine one\r\nLine two\r\n",
        "bom.md": "\ufeff---\ntitle: BOM\n---\nText\n",
        "bare.md": "# Only a heading\n\nno front matter at all\n",
    }
    for name, text in texts.items():
        (folder / name).write_bytes(text.encode("utf-8"))
    vault.commit()
    lines, _ = vault.export("users/alice")
    (tmp_path / "x.jsonl").write_text("".join(lines), encoding="utf-8")
    with memfs.Vault.open(tmp_path / "other", create=True, durable=False) as other:
        other.import_from(tmp_path / "x.jsonl", accept=True)
        for name, text in texts.items():
            assert (other.root / "memories/users/alice" / name).read_bytes() == text.encode("utf-8"), name
        assert "".join(other.export()[0]) == "".join(lines)


def test_an_edited_export_record_wins_over_its_stale_head(vault: memfs.Vault, tmp_path: Path) -> None:
    (vault.root / "memories/users/alice").mkdir(parents=True)
    (vault.root / "memories/users/alice/a.md").write_text("---\ntitle:  'Old'   # styled\n---\nBody\n")
    vault.commit()
    record = json.loads(vault.export()[0][0])
    assert "head" in record
    record["front_matter"]["title"] = "New"
    (tmp_path / "x.jsonl").write_text(json.dumps(record) + "\n")
    with memfs.Vault.open(tmp_path / "other", create=True, durable=False) as other:
        other.import_from(tmp_path / "x.jsonl", accept=True)
        assert other.memories("users/alice").get("a.md").title == "New"


def test_export_names_the_files_it_could_not_read(vault: memfs.Vault, runner_dir: Path) -> None:
    store = vault.memories("users/alice")
    store.add("fine", title="Fine")
    (vault.root / "memories/users/alice/broken.md").write_text("---\nkey: [unclosed\n---\nx\n")
    lines, skipped = vault.export()
    assert len(lines) == 1 and [s.source for s in skipped] == ["memories/users/alice/broken.md"]
    result = CliRunner().invoke(cli, ["export", str(runner_dir / "out.jsonl"), "--vault", str(vault.root)])
    assert result.exit_code == 1 and "broken.md" in result.output and "could not be read" in result.output
    assert len((runner_dir / "out.jsonl").read_text().splitlines()) == 1


@pytest.fixture
def runner_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


# -- a folder of Markdown notes (Obsidian) -------------------------------------------------------


def obsidian(tmp_path: Path) -> Path:
    notes = tmp_path / "Obsidian Vault"
    (notes / ".obsidian").mkdir(parents=True)
    (notes / ".obsidian" / "app.json").write_text('{"theme": "dark"}')
    (notes / "Projects").mkdir()
    (notes / "Trip: Lisbon.md").write_text(
        "---\ntags: [travel]\naliases: [Lisbon]\n---\nSee [[Flights]] and [[Hotels|where]].\n"
    )
    (notes / "Projects" / "Atlas.md").write_text("# Atlas\n\nUses PostgreSQL 16.\n")
    (notes / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (notes / "secret.md").write_text(f"The deploy token is {TOKEN}\n")
    (notes / "binary.md").write_bytes(b"text\x00\x01\x02")
    (notes / "latin1.md").write_bytes("caf\xe9\n".encode("latin-1"))
    (notes / "bad-yaml.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (notes / "huge.md").write_bytes(b"x" * (1024 * 1024 + 1))
    outside = tmp_path / "outside.md"
    outside.write_text("private, outside the notes\n")
    os.symlink(outside, notes / "escape.md")
    os.symlink(tmp_path, notes / "loop")
    return notes


def test_obsidian_folder_is_copied_in_one_commit_and_the_bad_notes_are_listed(vault: memfs.Vault,
                                                                               tmp_path: Path) -> None:  # fmt: skip
    notes = obsidian(tmp_path)
    before = commits(vault)
    report = vault.import_from(notes, namespace="notes/personal", accept=True)
    assert report.format == "markdown"
    assert sorted(i.source for i in report.imported) == ["Projects/Atlas.md", "Trip: Lisbon.md", "secret.md"]
    reasons = {s.source: s.reason for s in report.skipped}
    assert "symbolic link" in reasons["escape.md"] and "symbolic link" in reasons["loop"]
    assert "binary" in reasons["binary.md"] and "UTF-8" in reasons["latin1.md"]
    assert "YAML" in reasons["bad-yaml.md"] and "larger" in reasons["huge.md"]
    assert "not a Markdown note" in reasons["image.png"]
    assert not any(".obsidian" in s for s in reasons)
    assert commits(vault) == before + 1
    store = vault.memories("notes/personal")
    trip = store.get("Trip: Lisbon.md")  # a note keeps its own name, ':' and all
    assert trip.title == "Trip: Lisbon" and trip.tags == ("travel",) and trip.metadata["aliases"] == ["Lisbon"]
    assert trip.body == "See [[Flights]] and [[Hotels|where]].\n"  # wikilinks left alone
    assert trip.provenance == "import" and trip.id and trip.created
    assert vault.memories("notes/personal/Projects").get("Atlas.md").title == "Atlas"
    secret = store.get("secret.md")
    assert TOKEN not in secret.body and "[REDACTED:github-token]" in secret.body
    assert [i.redacted for i in report.imported if i.source == "secret.md"] == [("github-token",)]
    assert "private, outside" not in "".join(p.read_text() for p in (vault.root / "memories").rglob("*.md"))
    assert vault.search("PostgreSQL")[0].path == "memories/notes/personal/Projects/Atlas.md"


def test_refusing_credentials_skips_that_note_only(vault: memfs.Vault, tmp_path: Path) -> None:
    report = vault.import_from(obsidian(tmp_path), namespace="notes", on_secret="refuse", accept=True)
    assert "secret.md" not in [i.source for i in report.imported]
    assert "credential" in {s.source: s.reason for s in report.skipped}["secret.md"]
    assert len(report.imported) == 2


def test_a_dry_run_writes_nothing(vault: memfs.Vault, tmp_path: Path) -> None:
    before = commits(vault)
    report = vault.import_from(obsidian(tmp_path), namespace="notes", dry_run=True, accept=True)
    assert report.dry_run and len(report.imported) == 3 and report.commit is None
    assert commits(vault) == before and not (vault.root / "memories" / "notes").exists()


def test_a_failure_while_writing_leaves_nothing_half_written(vault: memfs.Vault, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for n in range(5):
        (notes / f"note-{n}.md").write_text(f"note number {n}\n")
    before, head = commits(vault), vault.history.head()
    with _fs.faults(_fs.FaultPlan(at=3, fault="enospc", only="write")), pytest.raises(OSError):
        vault.import_from(notes, namespace="notes", accept=True)
    assert commits(vault) == before and vault.history.head() == head
    assert not list((vault.root / "memories").rglob("note-*.md"))
    assert len(vault.import_from(notes, namespace="notes", accept=True).imported) == 5  # and it can simply run again


def test_names_already_taken_are_skipped_not_overwritten(vault: memfs.Vault, tmp_path: Path) -> None:
    vault.memories("notes").write_text("a.md", "mine\n", create=True)
    notes = tmp_path / "n"
    notes.mkdir()
    (notes / "a.md").write_text("theirs\n")
    (notes / "b.md").write_text("new\n")
    report = vault.import_from(notes, namespace="notes", accept=True)
    assert [i.source for i in report.imported] == ["b.md"]
    assert "already exists" in report.skipped[0].reason
    assert vault.memories("notes").get("a.md").body == "mine\n"


def test_in_place_adopts_notes_already_in_the_vault_without_moving_them(vault_dir: Path, tmp_path: Path) -> None:
    target = vault_dir / "memories" / "notes"
    shutil.copytree(obsidian(tmp_path), target, symlinks=True, ignore=shutil.ignore_patterns("huge.md", "*.png"))
    with memfs.Vault.open(vault_dir, durable=False) as vault:  # the person's notes are committed as theirs
        before = commits(vault)
        report = vault.import_from(target, in_place=True, accept=True)
        assert commits(vault) == before + 1
        assert "memories/notes/Trip: Lisbon.md" in [i.path for i in report.imported]  # ':' is part of a name
        adopted = vault.memories("notes/Projects").get("Atlas.md")
        assert adopted.provenance == "import" and adopted.id
        assert (target / "Projects" / "Atlas.md").read_text().endswith("# Atlas\n\nUses PostgreSQL 16.\n")
        time.sleep(1.05)  # a second later, when stamping again would move `updated`: nothing to adopt
        again = vault.import_from(target, in_place=True, accept=True)
        assert again.imported == [] and commits(vault) == before + 1
        with pytest.raises(InvalidArgumentError, match="already in the vault"):
            vault.import_from(tmp_path / "Obsidian Vault", in_place=True, accept=True)


# -- other tools' folders and files ------------------------------------------------------------


def test_anthropic_memory_tool_folder(vault: memfs.Vault, tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    (folder / "projects").mkdir(parents=True)
    (folder / "user_preferences.txt").write_text("Prefers concise answers.\n")
    (folder / "projects" / "atlas.xml").write_text("<project>Atlas uses PostgreSQL</project>\n")
    (folder / "notes.md").write_text("# Notes\nSome notes.\n")
    (folder / "blob.bin").write_bytes(b"\x00\x01")
    (folder / "blob.txt").write_bytes(b"\x00\x01")
    report = vault.import_from(folder, namespace="agents/support", accept=True)
    assert report.format == "anthropic" and len(report.imported) == 3
    store = vault.memories("agents/support")
    prefs = store.get("user_preferences.txt.md")
    assert prefs.title == "user_preferences.txt" and prefs.body == "Prefers concise answers.\n"
    assert vault.memories("agents/support/projects").get("atlas.xml.md").body.startswith("<project>")
    reasons = {s.source: s.reason for s in report.skipped}
    assert "not a text note" in reasons["blob.bin"] and "binary" in reasons["blob.txt"]  # a .bin is no memory


def test_claude_code_memory_folder(vault: memfs.Vault, tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "MEMORY.md").write_text("- [Testing](testing.md): how tests run\n")
    (folder / "testing.md").write_text(
        "---\nname: Testing rules\ndescription: how tests run here\ntype: feedback\n---\nRun pytest with -x.\n"
    )
    (folder / "broken.md").write_text("---\nname: [x\n---\n")
    report = vault.import_from(folder, namespace="projects/atlas", accept=True)
    assert report.format == "claude-code" and len(report.imported) == 1  # MEMORY.md is the folder's index
    memory = vault.memories("projects/atlas").get("testing.md")
    assert memory.title == "Testing rules" and memory.type == "feedback"
    assert memory.metadata["description"] == "how tests run here" and memory.metadata["name"] == "Testing rules"
    assert [s.source for s in report.skipped] == ["MEMORY.md", "broken.md"]


CLAUDE_MD = """# Project Atlas

Read this first.

## Build

Run `make build`.

```sh
## not a heading inside a fence
```

## Testing

- Use pytest.
- Never mock the database.

## Style

Follow ruff.
"""


def test_claude_md_is_split_by_its_headings(vault: memfs.Vault, tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_text(CLAUDE_MD)
    report = vault.import_from(path, namespace="projects/atlas", accept=True)
    assert report.format == "agents-md"
    assert [i.source for i in report.imported] == [
        f"CLAUDE.md § {t}" for t in ("Project Atlas", "Build", "Testing", "Style")
    ]
    memories = {m.title: m for m in vault.memories("projects/atlas").list()}
    assert memories["Build"].body.startswith("Run `make build`.") and "## not a heading" in memories["Build"].body
    assert memories["Testing"].body == "- Use pytest.\n- Never mock the database.\n"
    assert memories["Testing"].type == "instruction" and memories["Testing"].tags == ("claude-md",)
    assert memories["Project Atlas"].body == "Read this first.\n"


def test_agents_md_bullets_split_and_prose_kept_whole(vault: memfs.Vault, tmp_path: Path) -> None:
    bullets = tmp_path / "a" / "AGENTS.md"
    bullets.parent.mkdir()
    bullets.write_text("- Use uv for Python.\n- Keep PRs small;\n  one change each.\n* Write tests first.\n")
    report = vault.import_from(bullets, namespace="agents/dev", accept=True)
    assert len(report.imported) == 3
    bodies = sorted(m.body for m in vault.memories("agents/dev").list())
    assert "- Keep PRs small;\n  one change each.\n" in bodies
    prose = tmp_path / "b" / "AGENTS.md"
    prose.parent.mkdir()
    prose.write_text("# Agents\n\nOne paragraph of prose.\n\n- and a bullet\n")
    assert len(vault.import_from(prose, namespace="agents/other", accept=True).imported) == 1
    assert vault.memories("agents/other").list()[0].body == prose.read_text()


def test_split_instructions_only_where_clear() -> None:
    assert split_instructions("just text\n") == []
    assert split_instructions("## Only one\ntext\n") == []
    assert split_instructions("- one\nprose line\n- two\n") == []
    assert [t for t, _ in split_instructions("## A\na\n## B\nb\n")] == ["A", "B"]


# -- JSON of other memory services -----------------------------------------------------------------

MEM0 = {
    "results": [
        {"id": "3c90c3cc-0d44-4b50-8888-8dd25736052a", "memory": "Prefers window seats on long flights",
         "user_id": "alice", "hash": "62bc074f", "metadata": {"source": "chat"}, "categories": ["travel"],
         "created_at": "2024-07-25T23:57:00.108347-07:00", "updated_at": "2024-07-26T10:00:00-07:00"},
        {"id": "b", "memory": "Vegetarian", "user_id": "alice", "metadata": None,
         "created_at": "not a date"},
        {"id": "c", "user_id": "alice"},
        "not an object",
    ]
}  # fmt: skip


def test_mem0_get_all_shape(vault: memfs.Vault, tmp_path: Path) -> None:
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(MEM0))
    report = vault.import_from(path, namespace="users/alice", accept=True)
    assert report.format == "mem0" and len(report.imported) == 2
    assert sorted(s.reason for s in report.skipped) == ["no 'memory' text", "not a JSON object"]
    seats = next(m for m in vault.memories("users/alice").list() if "window" in m.body)
    assert seats.tags == ("travel",) and seats.created == "2024-07-26T06:57:00Z"
    assert seats.metadata["mem0"]["id"] == "3c90c3cc-0d44-4b50-8888-8dd25736052a"
    assert seats.metadata["mem0"]["metadata"] == {"source": "chat"} and seats.provenance == "import"
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps(MEM0["results"][:1]))
    assert vault.import_from(listed, namespace="users/bob", accept=True).format == "mem0"


def test_malformed_json_sources(vault: memfs.Vault, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[{not json")
    with pytest.raises(ImportSourceError, match="not valid JSON"):
        vault.import_from(bad, namespace="users/alice", accept=True)
    lines = tmp_path / "lines.jsonl"
    good = {"namespace": "users/alice", "name": "ok.md", "body": "fine\n", "front_matter": {"title": "Ok"}}
    lines.write_text("\n".join([json.dumps(good), "{broken", json.dumps({"namespace": "../etc", "body": "x"}),
                                json.dumps({"body": "no namespace"}), "[1, 2]"]) + "\n")  # fmt: skip
    report = vault.import_from(lines, accept=True)
    assert [i.path for i in report.imported] == ["memories/users/alice/ok.md"]
    reasons = [s.reason for s in report.skipped]
    assert len(reasons) == 4 and reasons[0].startswith("not JSON") and "namespace" in reasons[2]
    with pytest.raises(ImportSourceError, match="no such"):
        vault.import_from(tmp_path / "missing.jsonl", accept=True)
    with pytest.raises(InvalidArgumentError, match="namespace"):
        vault.import_from(tmp_path / "lines.jsonl", format="mem0", accept=True)  # mem0 needs one; nothing written
    os.symlink(lines, tmp_path / "link.jsonl")
    with pytest.raises(ImportSourceError, match="symbolic link"):
        vault.import_from(tmp_path / "link.jsonl", accept=True)


def test_foreign_jsonl_without_front_matter_is_marked_imported(vault: memfs.Vault, tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"namespace": "users/alice", "title": "Tea", "tags": ["drinks"], "body": "Likes tea"}))
    report = vault.import_from(path, accept=True)
    memory = vault.memories("users/alice").get(report.imported[0].path)
    assert memory.title == "Tea" and memory.tags == ("drinks",) and memory.provenance == "import" and memory.id


# -- the CLI ---------------------------------------------------------------------------------------


def test_cli_export_import_and_stdin(example: memfs.Vault, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "all.jsonl"
    result = runner.invoke(cli, ["export", str(out), "--vault", str(example.root)])
    assert result.exit_code == 0, result.output
    assert runner.invoke(cli, ["init", str(tmp_path / "new")]).exit_code == 0
    result = runner.invoke(cli, ["import", "--accept", str(out), "--dry-run", "--vault", str(tmp_path / "new")])
    assert result.exit_code == 0 and "would import" in result.output
    result = runner.invoke(
        cli, ["import", "--accept", "-", "--json", "--vault", str(tmp_path / "new")], input=out.read_text()
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["format"] == "jsonl" and data["commit"] and len(data["imported"]) == len(out.read_text().splitlines())
    exported = runner.invoke(cli, ["export", "--vault", str(tmp_path / "new")])
    assert exported.output == out.read_text()
    result = runner.invoke(cli, ["export", "-n", "users/alice", "--vault", str(tmp_path / "new")])
    assert {json.loads(line)["namespace"] for line in result.output.splitlines()} == {"users/alice"}
    result = runner.invoke(cli, ["import", "--accept", str(tmp_path), "--format", "agents-md", "-n", "x", "--vault",
                                 str(tmp_path / "new")])  # fmt: skip
    assert result.exit_code == 1 and "folder" in result.output and "Traceback" not in result.output


def test_a_case_twin_or_a_credential_in_a_name_is_skipped_before_anything_is_written(
    vault: memfs.Vault, tmp_path: Path
) -> None:
    vault.memories("notes").write_text("Seats.md", "mine\n", create=True)
    notes = tmp_path / "n"
    notes.mkdir()
    (notes / "seats.md").write_text("theirs\n")
    (notes / f"{TOKEN}.md").write_text("named by a token\n")
    (notes / "fine.md").write_text("fine\n")
    report = vault.import_from(notes, namespace="notes", accept=True)
    assert [i.source for i in report.imported] == ["fine.md"] and report.commit
    reasons = {s.source: s.reason for s in report.skipped}
    assert "only in case" in reasons["seats.md"] and "credential" in reasons[f"{TOKEN}.md"]
    assert TOKEN not in reasons[f"{TOKEN}.md"]


def test_auto_detection(tmp_path: Path) -> None:
    from memfs.sources import detect

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("x")
    (tmp_path / "notes" / "pic.png").write_bytes(b"\x89PNG")
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "a.txt").write_text("x")
    (tmp_path / "memories").mkdir()
    (tmp_path / "CLAUDE.md").write_text("x")
    (tmp_path / "export.jsonl").write_text('{"namespace": "a", "body": "x"}\n')
    (tmp_path / "mem0.jsonl").write_text('{"id": "1", "memory": "x"}\n')
    found = {name: detect(tmp_path / name) for name in ("notes", "texts", "memories", "CLAUDE.md", "export.jsonl",
                                                        "mem0.jsonl")}  # fmt: skip
    assert found == {"notes": "markdown", "texts": "anthropic", "memories": "anthropic", "CLAUDE.md": "agents-md",
                     "export.jsonl": "jsonl", "mem0.jsonl": "mem0"}  # fmt: skip
    (tmp_path / "data.bin").write_bytes(b"\x00")
    with pytest.raises(ImportSourceError, match="--format"):
        detect(tmp_path / "data.bin")


def test_cli_import_of_notes_lists_what_it_skipped(vault_dir: Path, tmp_path: Path) -> None:
    notes = obsidian(tmp_path)
    runner = CliRunner()
    result = runner.invoke(cli, ["import", "--accept", str(notes), "--vault", str(vault_dir)])
    assert result.exit_code == 1 and "namespace" in result.output  # nowhere to put them: nothing written
    result = runner.invoke(
        cli, ["import", "--accept", str(notes), "-n", "notes", "--dry-run", "--vault", str(vault_dir)]
    )
    assert result.exit_code == 0 and "would import 3 memories (markdown); skipped 7" in result.output
    assert "skipped escape.md: a symbolic link" in result.output
    assert not (vault_dir / "memories" / "notes").exists()
    result = runner.invoke(cli, ["import", "--accept", str(notes), "-n", "notes", "--vault", str(vault_dir)])
    assert result.exit_code == 0 and "imported 3 memories (markdown) in commit" in result.output
    assert "credentials redacted: github-token" in result.output and TOKEN not in result.output


def test_an_import_is_proposals_until_a_person_accepts_it(vault: memfs.Vault, tmp_path: Path) -> None:
    notes = obsidian(tmp_path)
    before = commits(vault)
    report = vault.import_from(notes, namespace="notes")  # the default: someone else's notes wait for review
    assert report.proposed and report.imported and commits(vault) == before + 1
    assert vault.search("trip") == [] and vault.memories("notes").list() == []
    waiting = vault.proposals()
    assert len(waiting) == len(report.imported) and {p.provenance for p in waiting} == {"import"}
    assert len({p.group for p in waiting}) == 1  # one namespace, one group
    vault.accept([waiting[0].id])  # one accept takes the whole import
    assert vault.proposals() == [] and commits(vault) == before + 2
    assert {m.path for m in vault.memories("notes").list()} == {i.path for i in report.imported}
    assert vault.undo(author=vault.author.name).subject.startswith("review: accept")
    assert vault.memories("notes").list() == [] and len(vault.proposals()) == len(report.imported)
