"""An Obsidian vault is a memfs vault: adopted as it is, names, folders, attachments and ``.obsidian/`` kept.

Every test builds a realistic notes folder of its own (nested folders with capitals, names with
``:``, accents in NFD as macOS writes them, emoji, aliases, inline and nested tags, wikilinks of
every form, embeds, an attachments folder, ``.obsidian/``) and drives real vaults, git and the CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import wait_for

import memfs
from memfs.cli import cli
from memfs.paths import keepable_name
from memfs.sources import detect

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
NFD_NAME = unicodedata.normalize("NFD", "Café Crème.md")
BROKEN = "notes/Projects/🌱 Garden.md: the link [[Missing Note]] leads to no file"  # the one the vault holds

NOTES: dict[str, bytes] = {
    "Areas/Travel/Kyoto Trip: March.md": (
        "---\naliases: [Kyoto in spring, 京都]\ntags: [travel]\n---\n# Kyoto Trip\n"
        "Book the ryokan; see [[Atlas Plan#Goals|the plan]] and [[Tomás]].\n![[photo.png]]\n#trip/japan\n"
    ).encode(),
    f"Areas/{NFD_NAME}": "Tomás drinks café crème at the corner. [[Kyoto Trip: March]]\n".encode(),
    "Projects/Atlas/Atlas Plan.md": (
        b"---\ntags:\n  - project/atlas\n---\n## Goals\nShip the atlas by June. #project/atlas/launch\n"
        b"See [the trip](../../Areas/Travel/Kyoto%20Trip%3A%20March.md) and ![[Spec.pdf]].\n"
    ),
    "Projects/🌱 Garden.md": "喜欢喝绿茶 in the garden. [[Missing Note]]\n".encode(),
    "People/Tomás.md": "---\naliases: [Tom]\n---\nTomás Alvarez, the atlas lead.\n".encode(),
    "Inbox.md": b"Loose thoughts #idea\n",
    "attachments/photo.png": PNG,
    "attachments/Spec.pdf": b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n",
    "board.canvas": b'{"nodes": [], "edges": []}\n',
    "Projects/prices.csv": b"item,price\ntea,3\n",
    ".obsidian/app.json": b'{"attachmentFolderPath": "attachments"}\n',
    ".obsidian/workspace.json": b'{"main": {"id": "1"}}\n',
}


def notes_folder(root: Path) -> Path:
    """A realistic Obsidian vault at ``root`` (every file of :data:`NOTES`)."""
    for rel, data in NOTES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def nfc(rel: str) -> str:
    return unicodedata.normalize("NFC", rel)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def tracked(root: Path) -> set[str]:
    return set(filter(None, git(root, "-c", "core.quotepath=off", "ls-files", "-z").split("\0")))


def empty_folders(root: Path) -> list[str]:
    return [
        str(Path(d).relative_to(root))
        for d, dirs, files in os.walk(root)
        if not dirs and not files and ".git" not in Path(d).parts
    ]


@pytest.fixture
def adopted(tmp_path: Path) -> Path:
    """A notes folder that was a git repository of its own, made a vault by ``memfs init``."""
    root = notes_folder(tmp_path / "Notes")
    git(root, "init", "-q", "--initial-branch=main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=Ann", "-c", "user.email=ann@example.com", "commit", "-qm", "my notes")
    result = CliRunner().invoke(cli, ["init", str(root), "--author", "Ann <ann@example.com>"])
    assert result.exit_code == 0, result.output
    assert "skipped 0" in result.output
    return root


# -- 1. a notes folder adopted as it is --------------------------------------------------------


def test_init_adopts_a_notes_folder_with_every_name_and_path_kept(adopted: Path) -> None:
    base = adopted / "memories" / "notes"
    for rel, data in NOTES.items():
        path = base / nfc(rel)
        assert path.is_file(), rel
        if not rel.endswith(".md"):
            assert path.read_bytes() == data  # attachments and settings moved, untouched
        else:  # a note keeps its text; adoption adds id, times and provenance to its front matter
            doc = memfs.documents.loads(path.read_text("utf-8"))
            assert doc.metadata["provenance"] == "import" and str(doc.metadata["id"]).startswith("mem_")
            assert data.decode().split("---\n")[-1] in path.read_text("utf-8")
    # nothing left behind at the top, no empty folder, the moves committed (workspace state aside)
    assert sorted(p.name for p in adopted.iterdir()) == [".git", ".gitignore", ".memfs", "memories"]
    assert empty_folders(adopted / "memories") == []
    files = tracked(adopted)
    assert "memories/notes/attachments/photo.png" in files and "memories/notes/.obsidian/app.json" in files
    assert "memories/notes/.obsidian/workspace.json" not in files and "Inbox.md" not in files
    assert git(adopted, "status", "--porcelain") == ""
    # the name with ':' and the NFD accent are memories under their own names
    with memfs.Vault.open(adopted) as vault:
        names = {m.name for m in vault.memories("notes").list()}
        assert names == {nfc(rel) for rel in NOTES if rel.endswith(".md")}
        assert not any(n.endswith((".canvas.md", ".csv.md")) for n in names)
        assert [f.message for f in vault.doctor() if f.severity != "ok"] == [BROKEN]


def test_init_on_a_notes_folder_says_which_names_it_changed_and_why(tmp_path: Path) -> None:
    root = notes_folder(tmp_path / "Notes")
    (root / "Why? Because.md").write_text("a question\n")
    (root / "Drafts.").mkdir()
    (root / "Drafts." / "100% done.md").write_text("done\n")
    result = CliRunner().invoke(cli, ["init", str(root), "-n", "people/ann"])
    assert result.exit_code == 0, result.output
    base = root / "memories" / "people" / "ann"
    assert (base / "Why- Because.md").is_file() and (base / "Drafts" / "100- done.md").is_file()
    assert "renamed: 'Why? Because.md' holds characters a memory's name may not: '?'" in result.output
    assert "'Drafts.' holds characters a memory's name may not: a trailing space or dot" in result.output
    assert "Unicode NFC" in result.output and "skipped 0" in result.output
    with memfs.Vault.open(root) as vault:  # the title is the note's own name, where the file's had to change
        assert vault.memories("people/ann").get("Why- Because.md").title == "Why? Because"


TOKEN = "ghp_" + "a1B2" * 9


@pytest.mark.parametrize(
    "rel, data",
    [
        ("Ops/Deploy.md", f"The deploy token is {TOKEN}\n".encode()),  # a note
        ("attachments/keys.txt", f"aws key AKIAIOSFODNN7EXAMPLE\ngithub {TOKEN}\n".encode()),  # beside the notes
        (f"Ops/{TOKEN}.md", b"named after a token\n"),  # in its name
    ],
)
def test_init_never_commits_a_credential_a_note_or_attachment_holds(tmp_path: Path, rel: str, data: bytes) -> None:
    """Adopting a notes folder commits its files as a person's edits are: one holding a credential waits."""
    root = notes_folder(tmp_path / "Notes")
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)
    (root / ".env").write_text(f"GITHUB_TOKEN={TOKEN}\n")  # the folder's own hidden file, not a note's
    result = CliRunner().invoke(cli, ["init", str(root)])
    assert result.exit_code == 0, result.output
    history = subprocess.run(["git", "-C", str(root), "log", "-p", "--all"], capture_output=True, check=True).stdout
    history += "\n".join(tracked(root)).encode()
    assert TOKEN.encode() not in history and b"AKIAIOSFODNN7EXAMPLE" not in history
    assert (root / ".env").is_file()  # left where it was, never moved into memories/
    assert "not committed" in result.output and "credential" in result.output
    assert "memories/notes/Inbox.md" in tracked(root)  # the rest of the folder is adopted as before


def test_init_of_an_empty_folder_or_an_existing_vault_adopts_nothing(tmp_path: Path, vault_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["init", str(tmp_path / "fresh")])
    assert result.exit_code == 0 and not (tmp_path / "fresh" / "memories" / "notes").exists()
    (vault_dir / "README.md").write_text("not a note to adopt: this folder is already a vault\n")
    result = CliRunner().invoke(cli, ["init", str(vault_dir)])
    assert result.exit_code == 0 and (vault_dir / "README.md").is_file()


def test_init_adopts_only_a_notes_folder_never_a_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "README.md").write_text("# My app\n")
    (project / "src" / "app.py").write_text("print('hi')\n")
    result = CliRunner().invoke(cli, ["init", str(project)])
    assert result.exit_code == 0 and "imported" not in result.output
    assert (project / "README.md").is_file() and (project / "src" / "app.py").is_file()
    assert not (project / "memories" / "notes").exists()
    plain = tmp_path / "plain"  # no .obsidian/: notes and what notes keep beside them
    (plain / "Trips").mkdir(parents=True)
    (plain / "Trips" / "Lisbon.md").write_text("Pastéis de nata.\n")
    (plain / "Trips" / "map.png").write_bytes(PNG)
    result = CliRunner().invoke(cli, ["init", str(plain)])
    assert result.exit_code == 0 and "imported 1 memories" in result.output
    assert (plain / "memories" / "notes" / "Trips" / "map.png").read_bytes() == PNG


def test_in_place_keeps_a_decomposed_name_as_the_same_name_composed(vault_dir: Path) -> None:
    notes = vault_dir / "memories" / "notes"
    (notes / unicodedata.normalize("NFD", "Été")).mkdir(parents=True)
    (notes / unicodedata.normalize("NFD", "Été") / NFD_NAME).write_text("au coin de la rue\n")
    (notes / "Kyoto Trip: March.md").write_text("ryokan\n")
    (notes / unicodedata.normalize("NFD", "Noël.md")).write_text("decomposed\n")
    (notes / "Noël.md").write_text("composed, another file\n")
    with memfs.Vault.open(vault_dir) as vault:
        dry = vault.import_from(notes, in_place=True, dry_run=True)
        report = vault.import_from(notes, in_place=True)
        assert [(i.path, i.renamed) for i in dry.imported] == [(i.path, i.renamed) for i in report.imported]
        assert dry.skipped == report.skipped
        assert {i.path: i.renamed for i in report.imported} == {
            "memories/notes/Kyoto Trip: March.md": None,
            "memories/notes/Noël.md": None,
            "memories/notes/Été/Café Crème.md": "its name was not in Unicode NFC form",
        }
        assert [s.reason for s in report.skipped] == [
            "its name is not in Unicode NFC form, and notes/Noël.md (the same name in NFC form) is another file; "
            "merge or rename one of them"
        ]
        assert [h.path for h in vault.search("coin rue")] == ["memories/notes/Été/Café Crème.md"]
        assert [f.message for f in vault.doctor() if f.check == "index" and f.severity != "ok"] == []


@pytest.mark.parametrize("name", ["Kyoto Trip: March.md", "Areas/Travel/Kyoto Trip: March.md", "a:b/c:d.md"])
def test_a_colon_is_part_of_a_name(name: str) -> None:
    assert memfs.paths.clean_memory_path(name) == name
    assert keepable_name(name) == (name, None)


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("Areas/Why? Because.md", "Areas/Why- Because.md"),
        ("Big <Idea>/x.md", "Big -Idea-/x.md"),
        ("CON.md", "con-memory.md"),
        (NFD_NAME, "Café Crème.md"),
        ("Drafts./Note .md", "Drafts/Note .md"),
    ],
)
def test_a_name_memfs_cannot_keep_changes_only_where_it_must(name: str, kept: str) -> None:
    found, why = keepable_name(name)
    assert found == kept and why
    assert memfs.paths.clean_memory_path(found) == found


def test_copy_import_keeps_names_case_and_folders_and_its_dry_run_predicts_it(
    vault: memfs.Vault, tmp_path: Path
) -> None:
    source = notes_folder(tmp_path / "Obsidian")
    (source / "areas").mkdir()
    (source / "areas" / "lower.md").write_text("a folder one letter's case from Areas\n")
    (source / "Odd|Name.md").write_text("a pipe\n")
    dry = vault.import_from(source, namespace="notes", accept=True, dry_run=True)
    real = vault.import_from(source, namespace="notes", accept=True)
    assert [(i.source, i.path, i.renamed) for i in dry.imported] == [
        (i.source, i.path, i.renamed) for i in real.imported
    ]
    assert dry.skipped == real.skipped
    paths = {i.path for i in real.imported}
    assert "memories/notes/Areas/Travel/Kyoto Trip: March.md" in paths
    assert "memories/notes/Projects/🌱 Garden.md" in paths and "memories/notes/Areas/Café Crème.md" in paths
    assert "memories/notes/Odd-Name.md" in paths
    clash = [s for s in real.skipped if s.source == "areas/lower.md"]
    assert clash and "notes/areas differs only in case from notes/Areas" in clash[0].reason
    assert not any(p.endswith((".canvas.md", ".csv.md")) for p in paths)
    assert empty_folders(vault.root / "memories") == []


def test_proposed_import_with_case_twins_is_accepted_whole(vault: memfs.Vault, tmp_path: Path) -> None:
    source = notes_folder(tmp_path / "Obsidian")
    (source / "projects").mkdir()
    (source / "projects" / "x.md").write_text("lower case folder\n")
    report = vault.import_from(source, namespace="notes")
    assert report.proposed
    accepted = CliRunner().invoke(cli, ["accept", "--all", "--vault", str(vault.root)])
    assert accepted.exit_code == 0, accepted.output
    assert {m.name for m in vault.memories("notes").list()} == {
        i.path.removeprefix("memories/notes/") for i in report.imported
    }


def test_a_notes_folder_with_notes_only_in_sub_folders_is_markdown(tmp_path: Path) -> None:
    root = tmp_path / "Notes"
    (root / "Areas").mkdir(parents=True)
    (root / "Areas" / "a.md").write_text("a\n")
    (root / "board.canvas").write_text("{}\n")
    (root / "prices.csv").write_text("a,b\n")
    assert detect(root) == "markdown"
    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "notes.txt").write_text("a memory-tool note\n")
    assert detect(tool) == "anthropic"


def test_a_memory_tool_import_never_turns_canvas_or_csv_into_memories(vault: memfs.Vault, tmp_path: Path) -> None:
    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "notes.txt").write_text("a memory-tool note\n")
    (tool / "board.canvas").write_text("{}\n")
    (tool / "prices.csv").write_text("a,b\n")
    report = vault.import_from(tool, namespace="tool", format="anthropic", accept=True)
    assert [i.path for i in report.imported] == ["memories/tool/notes.txt.md"]
    assert {s.source for s in report.skipped} == {"board.canvas", "prices.csv"}


# -- 2. .obsidian/ ------------------------------------------------------------------------------


def test_obsidian_workspace_is_ignored_and_doctor_stays_quiet_about_settings(adopted: Path) -> None:
    settings = adopted / "memories" / "notes" / ".obsidian"
    (settings / "workspace.json").write_text('{"main": {"id": "2"}}\n')  # every click in Obsidian
    (settings / "workspace-mobile.json").write_text("{}\n")
    (settings / "app.json").write_text('{"attachmentFolderPath": "files"}\n')  # a setting changed
    (settings / "plugins").mkdir()
    (settings / "plugins" / "x.json").write_text("{}\n")
    status = git(adopted, "-c", "core.quotepath=off", "status", "--porcelain", "--untracked-files=all")
    assert "workspace" not in status and "app.json" in status  # shareable settings are the person's to commit
    with memfs.Vault.open(adopted) as vault:
        assert [f.message for f in vault.doctor() if f.severity != "ok"] == [BROKEN]


# -- 3. aliases and tags ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "tags"),
    [
        ("#idea and #project/atlas/launch, #y1984 but not #1984", ("idea", "project/atlas/launch", "y1984")),
        ("# Heading\n[[Note#Heading]] https://x.org/#frag a#b", ()),
        ("`#code` and\n```\n#fenced\n```\n#after", ("after",)),
        ("(#paren) [#bracket] #café #日本", ("paren", "bracket", "café", "日本")),
    ],
)
def test_inline_tags_are_read_as_obsidian_reads_them(body: str, tags: tuple[str, ...]) -> None:
    assert memfs.notes.inline_tags(body) == tags


def test_tags_are_the_union_and_nest_under_their_parents() -> None:
    meta = {"tags": ["#Travel", "project/atlas"]}
    assert memfs.notes.note_tags(meta, "#travel #trip/japan\n") == ("Travel", "project/atlas", "trip/japan")
    tags = ("project/atlas/launch",)
    assert [w for w in ("project", "PROJECT/atlas", "#project/atlas/launch/") if memfs.notes.has_tag(tags, w)] == [
        "project",
        "PROJECT/atlas",
        "#project/atlas/launch/",
    ]
    assert not memfs.notes.has_tag(tags, "proj") and not memfs.notes.has_tag(tags, "atlas")
    assert memfs.notes.aliases_of({"aliases": "Kyoto"}) == ("Kyoto",)
    assert memfs.notes.aliases_of({"aliases": ["A", 2, None, ""]}) == ("A", "2")


def ls_paths(root: Path, *args: str) -> list[str]:
    result = CliRunner().invoke(cli, ["ls", "--json", "--vault", str(root), *args])
    assert result.exit_code == 0, result.output
    return sorted(m["path"].removeprefix("memories/notes/") for m in json.loads(result.output))


def test_tags_and_aliases_in_ls_search_and_tools(adopted: Path) -> None:
    atlas, kyoto = "Projects/Atlas/Atlas Plan.md", "Areas/Travel/Kyoto Trip: March.md"
    assert ls_paths(adopted, "--tag", "project") == [atlas]  # front matter project/atlas, nested
    assert ls_paths(adopted, "--tag", "project/atlas/launch") == [atlas]  # inline, nested
    assert ls_paths(adopted, "--tag", "trip") == ls_paths(adopted, "--tag", "#Trip/Japan") == [kyoto]
    assert ls_paths(adopted, "--tag", "idea") == ["Inbox.md"]
    assert ls_paths(adopted, "--tag", "proj") == []
    listed = json.loads(CliRunner().invoke(cli, ["ls", "--json", "--tag", "travel", "--vault", str(adopted)]).output)
    assert listed[0]["tags"] == ["travel", "trip/japan"] and listed[0]["aliases"] == ["Kyoto in spring", "京都"]
    with memfs.Vault.open(adopted) as vault:
        assert [h.path for h in vault.search("spring", k=3)][:1] == [f"memories/notes/{kyoto}"]  # by its alias
        assert [h.path for h in vault.search("Tom", k=3)] == ["memories/notes/People/Tomás.md"]
        assert [h.path for h in vault.search("atlas", tags=["project"])] == [f"memories/notes/{atlas}"]
        assert vault.search("atlas", tags=["proj"]) == []
        hit = vault.search("ryokan")[0]
        assert hit.tags == ("travel", "trip/japan")
        tools = memfs.MemoryTools(vault, "notes")
        found = tools.run("search", query="ship the atlas", tag="project")
        assert "/memories/Projects/Atlas/Atlas Plan.md" in found
        assert "No memories match" in tools.run("search", query="ship the atlas", tag="idea")
        assert "Kyoto Trip: March.md" in tools.run("search", query="Kyoto in spring")


# -- 4. links -----------------------------------------------------------------------------------


def test_links_of_every_form_are_parsed_outside_code() -> None:
    body = (
        "See [[Atlas Plan#Goals|the plan]], [[Tomás]] and [[Folder/Deep Note^block]].\n"
        "![[photo.png]] ![alt](<attachments/my pic.png>) [trip](../Trips/Kyoto%202027.md#day-1)\n"
        "[web](https://example.org/x.md) [here](#part) [[#Local heading]] `[[not a link]]`\n"
        "```\n[[fenced]]\n```\n"
    )
    found = [(x.target, x.heading, x.label, x.embed, x.markdown) for x in memfs.notes.links(body)]
    assert found == [
        ("Atlas Plan", "Goals", "the plan", False, False),
        ("Tomás", None, None, False, False),
        ("Folder/Deep Note", "^block", None, False, False),
        ("photo.png", None, None, True, False),
        ("attachments/my pic.png", None, "alt", True, True),
        ("../Trips/Kyoto 2027.md", "day-1", "trip", False, True),
        ("", "Local heading", None, False, False),
    ]
    spans = [body[x.start : x.end] for x in memfs.notes.links(body)]
    assert spans[:3] == ["Atlas Plan", "Tomás", "Folder/Deep Note"] and spans[5] == "../Trips/Kyoto%202027.md"


def test_links_resolve_as_obsidian_resolves_them(vault: memfs.Vault) -> None:
    store = vault.memories("kb")
    for name in ("Inbox/Plan.md", "Projects/Plan.md", "Projects/Old/Deep/Plan.md", "Ideas.md", "Projects/Todo.md"):
        store.write_text(name, f"{name}\n", create=True)
    texts = {
        "Projects/Todo.md": "[[plan]] [[Deep/Plan]] [[IDEAS]] [[inbox/plan|x]] [up](../Ideas.md) [[Nowhere]]\n",
        "Ideas.md": "[[Plan]]\n",  # no Plan.md beside it: the shortest path, then the first by name
    }
    for name, text in texts.items():
        store.write_text(name, text, create=False)
    lead = {x.link.target: x.path for x in store.outlinks("Projects/Todo.md")}
    assert lead == {
        "plan": "memories/kb/Projects/Plan.md",  # the same folder first, case aside
        "Deep/Plan": "memories/kb/Projects/Old/Deep/Plan.md",
        "IDEAS": "memories/kb/Ideas.md",
        "inbox/plan": "memories/kb/Inbox/Plan.md",
        "../Ideas.md": "memories/kb/Ideas.md",
        "Nowhere": None,
    }
    assert [x.path for x in store.outlinks("Ideas.md")] == ["memories/kb/Inbox/Plan.md"]
    assert sorted(x.source for x in store.backlinks("Projects/Plan.md")) == ["memories/kb/Projects/Todo.md"]
    assert sorted(x.source for x in store.backlinks("Ideas.md")) == ["memories/kb/Projects/Todo.md"] * 2


def link_map(vault: memfs.Vault, namespace: str = "notes") -> dict[tuple[str, str], str | None]:
    """Every link of every note: (note, target as written) -> where it leads."""
    store = vault.memories(namespace)
    return {(m.name, x.link.target): x.path for m in store.list() for x in store.outlinks(m.name)}


def test_a_rename_through_memfs_keeps_every_link_leading_to_the_note(adopted: Path) -> None:
    with memfs.Vault.open(adopted) as vault:
        store = vault.memories("notes")
        before = link_map(vault)
        commits = len(vault.log())
        store.move("Areas/Travel/Kyoto Trip: March.md", "Trips/Kyoto 2027.md")  # the library
        assert len(vault.log()) == commits + 1  # the move and the links it kept whole: one commit
        changed = vault.engine.history.log(limit=1)[0]
        assert "Kyoto" in changed.subject
        body = store.get("Projects/Atlas/Atlas Plan.md").body
        assert "[the trip](../../Trips/Kyoto%202027.md)" in body  # a Markdown link keeps its form
        assert "[[Kyoto 2027]]" in store.get("Areas/Café Crème.md").body  # a bare name stays bare
        tools = memfs.MemoryTools(vault, "notes")  # the tools: a folder with notes that link out of it
        assert "Successfully renamed" in tools.run(
            "rename", old_path="/memories/People", new_path="/memories/Team/People"
        )
        tools.run("rename", old_path="/memories/Projects/Atlas/Atlas Plan.md", new_path="/memories/Atlas.md")
    result = CliRunner().invoke(cli, ["mv", "notes/Trips/Kyoto 2027.md", "Kyoto.md", "--vault", str(adopted)])
    assert result.exit_code == 0, result.output  # the CLI (NEW_PATH is relative to the note's folder)
    with memfs.Vault.open(adopted) as vault:
        moved = {
            "Areas/Travel/Kyoto Trip: March.md": "Trips/Kyoto.md",
            "People/Tomás.md": "Team/People/Tomás.md",
            "Projects/Atlas/Atlas Plan.md": "Atlas.md",
        }
        now = link_map(vault)
        for (note, _target), path in before.items():
            lead = (
                None
                if path is None
                else "memories/notes/"
                + moved.get(path.removeprefix("memories/notes/"), path.removeprefix("memories/notes/"))
            )
            assert lead in [p for (n, _), p in now.items() if n == moved.get(note, note)], (note, path)
        assert len(now) == len(before)
        assert [f.message for f in vault.doctor() if f.severity != "ok"] == [BROKEN]
        assert git(adopted, "status", "--porcelain") == ""


def test_links_from_the_cli_and_the_tools(adopted: Path) -> None:
    result = CliRunner().invoke(
        cli, ["links", "--json", "notes/Areas/Travel/Kyoto Trip: March.md", "--vault", str(adopted)]
    )
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert [(x["target"], x["heading"], x["label"], x["embed"], x["path"]) for x in found["links"]] == [
        ("Atlas Plan", "Goals", "the plan", False, "memories/notes/Projects/Atlas/Atlas Plan.md"),
        ("Tomás", None, None, False, "memories/notes/People/Tomás.md"),
        ("photo.png", None, None, True, "memories/notes/attachments/photo.png"),
    ]
    assert sorted(x["source"] for x in found["backlinks"]) == [
        "memories/notes/Areas/Café Crème.md",
        "memories/notes/Projects/Atlas/Atlas Plan.md",
    ]
    text = CliRunner().invoke(cli, ["links", "notes/Projects/🌱 Garden.md", "--vault", str(adopted)]).output
    assert "[[Missing Note]] -> broken: no such file" in text and "linked from nothing" in text
    with memfs.Vault.open(adopted) as vault:
        tools = memfs.MemoryTools(vault, "notes")
        shown = tools.run("links", path="/memories/Areas/Travel/Kyoto Trip: March.md")
        assert "- /memories/Projects/Atlas/Atlas Plan.md (as [[Atlas Plan]])" in shown
        assert "Linked from 2 memories:\n- /memories/Areas/Café Crème.md" in shown
        assert "broken (no such file)" in tools.run("links", path="/memories/Projects/🌱 Garden.md")
        assert "No memory at" in tools.call({"command": "links", "path": "/memories/nope.md"}).text


def test_the_vault_over_mcp_tags_aliases_links_and_a_rename(adopted: Path) -> None:
    pytest.importorskip("mcp")
    from anyio.from_thread import start_blocking_portal
    from test_mcp import Servers

    with start_blocking_portal() as portal:
        servers = Servers(portal, Path(os.environ["HOME"]))
        try:
            remote = servers.stdio("obsidian", adopted, "-n", "notes", "--author", "claude-desktop")
            assert "Kyoto Trip: March.md" in remote.ok("memory_search", query="Kyoto in spring")  # an alias
            tagged = remote.ok("memory_search", query="atlas", tag="project")
            assert tagged.startswith("1 memory matches") and "/memories/Projects/Atlas/Atlas Plan.md" in tagged
            shown = remote.ok("memory_links", path="/memories/Projects/Atlas/Atlas Plan.md")
            assert (
                "- /memories/Areas/Travel/Kyoto Trip: March.md (as (../../Areas/Travel/Kyoto Trip: March.md))" in shown
            )
            remote.ok(
                "memory_rename",
                old_path="/memories/Areas/Travel/Kyoto Trip: March.md",
                new_path="/memories/Trips/Kyoto: 2027.md",
            )
            after = remote.ok("memory_links", path="/memories/Trips/Kyoto: 2027.md")
            assert "Linked from 2 memories:" in after
            assert "[[Kyoto: 2027]]" in remote.ok("memory_view", path="/memories/Areas/Café Crème.md")
        finally:
            servers.close()


# -- 5. attachments -----------------------------------------------------------------------------


def test_memfs_commit_takes_attachments_and_names_one_past_the_cap(adopted: Path) -> None:
    folder = adopted / "memories" / "notes" / "attachments"
    (folder / "diagram.svg").write_text("<svg/>\n")
    (folder / "photo.png").write_bytes(PNG + b"edited")
    with open(folder / "scan.pdf", "wb") as huge:  # sparse: past the cap without writing it
        huge.truncate(memfs.layout.MAX_ATTACHMENT_BYTES + 1)
    (folder / "notes.xyz").write_text("not an attachment memfs knows\n")
    with memfs.Vault.open(adopted, commit_edits=False) as vault:
        messages = [f.message for f in vault.doctor() if f.check == "limits"]
        assert messages == [
            f"memories/notes/attachments/scan.pdf: {memfs.layout.MAX_ATTACHMENT_BYTES + 1:,} bytes, "
            f"larger than the {memfs.layout.MAX_ATTACHMENT_BYTES:,} memfs commits of an attachment; "
            "it stays in the folder, uncommitted (make it smaller, or keep it outside the vault)"
        ]
    result = CliRunner().invoke(cli, ["commit", "--vault", str(adopted)])
    assert result.exit_code == 0, result.output
    files = tracked(adopted)
    assert {"memories/notes/attachments/diagram.svg", "memories/notes/attachments/photo.png"} <= files
    assert "memories/notes/attachments/scan.pdf" not in files and "memories/notes/attachments/notes.xyz" not in files
    shown = subprocess.run(
        ["git", "-C", str(adopted), "show", "HEAD:memories/notes/attachments/photo.png"],
        capture_output=True,
        check=True,
    ).stdout
    assert shown == PNG + b"edited"
    with memfs.Vault.open(adopted) as vault:  # never indexed as text, never a problem
        assert vault.problems() == [] and vault.search("svg") == []


@pytest.mark.slow
def test_the_watcher_commits_an_attachment(adopted: Path) -> None:
    with memfs.Vault.open(adopted, durable=False) as vault:
        watcher = vault.watch(index_delay=0.05, commit_delay=0.2)
        try:
            (adopted / "memories" / "notes" / "attachments" / "new.jpg").write_bytes(b"\xff\xd8\xff\xe0JFIF")
            wait_for(lambda: "memories/notes/attachments/new.jpg" in tracked(adopted))
        finally:
            watcher.stop()
        assert vault.problems() == []


def test_attachments_move_with_their_folder_purge_and_sync(adopted: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "--bare", "--quiet", "--initial-branch=main", str(remote))
    git(adopted, "remote", "add", "origin", remote.as_uri())
    with memfs.Vault.open(adopted) as vault:
        tools = memfs.MemoryTools(vault, "notes")
        tools.run("rename", old_path="/memories/attachments", new_path="/memories/Files")
        assert "memories/notes/Files/photo.png" in tracked(adopted)
        kyoto = vault.memories("notes").outlinks("Areas/Travel/Kyoto Trip: March.md")
        assert "memories/notes/Files/photo.png" in [x.path for x in kyoto]  # ![[photo.png]] still leads to it
        vault.sync()
    clone = tmp_path / "clone"
    with memfs.Vault.clone(remote.as_uri(), clone) as other:
        assert (clone / "memories/notes/Files/photo.png").read_bytes() == PNG
        (clone / "memories/notes/Files/photo.png").write_bytes(PNG + b"from the clone")
        other.commit()
        other.sync()
    with memfs.Vault.open(adopted) as vault:
        vault.sync()
        assert (adopted / "memories/notes/Files/photo.png").read_bytes() == PNG + b"from the clone"
        (adopted / "memories/notes/Files/Spec.pdf").write_bytes(b"%PDF-1.4 here")  # both sides change one
        vault.commit()
    with memfs.Vault.open(clone) as other:
        (clone / "memories/notes/Files/Spec.pdf").write_bytes(b"%PDF-1.4 there")
        other.commit()
        other.sync()
    with memfs.Vault.open(adopted) as vault:
        result = vault.sync()
        assert (adopted / "memories/notes/Files/Spec.pdf").read_bytes() == b"%PDF-1.4 here"  # bytes: never merged
        (copy,) = vault.conflicts()
        assert copy.path == "memories/notes/Files/Spec.pdf" and result.conflicts
        assert (adopted / copy.copy).read_bytes() == b"%PDF-1.4 there"
        report = vault.purge("memories/notes/Files/photo.png")
        assert "memories/notes/attachments/photo.png" in report.purged_paths and report.versions == 2
        assert not (adopted / "memories/notes/Files/photo.png").exists()
    assert "photo.png" not in git(adopted, "log", "--all", "--name-only", "--format=")


# -- 6. any language ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("Tomas", "People/Tomás.md"),  # an accent left out
        ("TOMÁS", "People/Tomás.md"),  # case and accent
        ("cafe creme", "Areas/Café Crème.md"),
        ("CAFÉ", "Areas/Café Crème.md"),
        ("绿茶", "Projects/🌱 Garden.md"),  # Chinese: no spaces between words
        ("京都", "Areas/Travel/Kyoto Trip: March.md"),  # an alias in Japanese
    ],
)
def test_search_folds_accents_and_case_and_finds_words_in_cjk_text(adopted: Path, query: str, found: str) -> None:
    with memfs.Vault.open(adopted) as vault:
        assert [h.path for h in vault.search(query, k=1)] == [f"memories/notes/{found}"]


def test_the_same_folding_holds_the_other_way_and_for_messages(vault: memfs.Vault) -> None:
    store = vault.memories("kb")
    store.add("Tomas and the cafe on the corner.", title="Plain")
    store.add("東京に行きました。서울에서 만나요.", title="Trips")
    assert [h.title for h in vault.search("Tomás café")] == ["Plain"]  # accents asked, none written
    assert [h.title for h in vault.search("東京")] == [h.title for h in vault.search("서울")] == ["Trips"]
    assert vault.search("京に行") and not vault.search("大阪")
    session = vault.session("chat")
    session.append(
        [
            {"role": "user", "content": "我喜欢喝绿茶，也喜欢咖啡。"},
            {"role": "assistant", "content": "Noted: José prefers the façade room."},
        ]
    )
    session.close()
    assert vault.search_messages("绿茶")[0].position == 1  # (its neighbour is found by its words too)
    assert vault.search_messages("jose facade")[0].position == 2
    assert vault.search_messages("大阪") == []
    hit = vault.search("Tomás")[0]
    assert "**Tomas**" in hit.snippet


# -- 7. links in recall -------------------------------------------------------------------------


def test_follow_links_brings_the_notes_a_hit_links_to(adopted: Path) -> None:
    with memfs.Vault.open(adopted) as vault:
        plain = vault.search("ryokan", k=1)
        assert [h.path for h in plain] == ["memories/notes/Areas/Travel/Kyoto Trip: March.md"]
        hits = vault.search("ryokan", k=1, follow_links=5)
        kyoto = "memories/notes/Areas/Travel/Kyoto Trip: March.md"
        assert [(h.path, h.linked_from) for h in hits] == [
            (kyoto, None),
            ("memories/notes/Projects/Atlas/Atlas Plan.md", kyoto),  # one hop, in link order,
            ("memories/notes/People/Tomás.md", kyoto),  # notes only (not photo.png), each once
        ]
        assert [h.path for h in vault.search("ryokan", k=1, follow_links=1)][1:] == [hits[1].path]  # bounded
        # the hit's own links back to itself, and to each other, are not brought twice
        both = vault.search("ryokan atlas", k=2, follow_links=10)
        assert len({h.path for h in both}) == len(both)
        assert vault.memories("notes/Projects").search("atlas", follow_links=5)[1:] == []  # not outside the store
        with pytest.raises(memfs.InvalidArgumentError, match="follow_links"):
            vault.search("ryokan", follow_links=-1)


def test_context_for_follows_links_within_its_stores(adopted: Path) -> None:
    with memfs.Vault.open(adopted) as vault:
        ask = [{"role": "user", "content": "Which ryokan do we book?"}]
        plain = memfs.LongTermMemory(vault, stores=["notes"]).context_for(ask)
        assert "Kyoto" in plain and "Tomás Alvarez" not in plain
        followed = memfs.LongTermMemory(vault, stores=["notes"], follow_links=2).context_for(ask)
        assert "Kyoto" in followed and "Tomás Alvarez, the atlas lead." in followed and "Ship the atlas" in followed
        assert followed.index("ryokan") < followed.index("Ship the atlas")  # the hit first
        inner = memfs.LongTermMemory(vault, stores=["notes/Areas"], follow_links=2).context_for(ask)
        assert "Tomás Alvarez" not in inner  # a note outside the stores never comes along


# -- the whole vault ----------------------------------------------------------------------------


def test_the_adopted_vault_round_trips_through_export_and_import_byte_for_byte(adopted: Path, tmp_path: Path) -> None:
    export = tmp_path / "notes.jsonl"
    result = CliRunner().invoke(cli, ["export", str(export), "--vault", str(adopted)])
    assert result.exit_code == 0, result.output
    fresh = tmp_path / "fresh"
    CliRunner().invoke(cli, ["init", str(fresh)])
    result = CliRunner().invoke(cli, ["import", str(export), "--accept", "--vault", str(fresh)])
    assert result.exit_code == 0 and "skipped 0" in result.output, result.output

    def notes(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in (root / "memories").rglob("*.md")}

    assert notes(fresh) == notes(adopted) and len(notes(fresh)) == 6  # every note, its name and bytes
    again = tmp_path / "again.jsonl"
    CliRunner().invoke(cli, ["export", str(again), "--vault", str(fresh)])
    assert again.read_bytes() == export.read_bytes()
    with memfs.Vault.open(fresh) as vault:  # links, tags and aliases mean the same there
        assert link_map(vault) == link_map_without_attachments(adopted)
        assert [h.path for h in vault.search("Kyoto in spring", tags=["trip"], k=1)] == [
            "memories/notes/Areas/Travel/Kyoto Trip: March.md"
        ]


def link_map_without_attachments(root: Path) -> dict[tuple[str, str], str | None]:
    """The links of a vault's notes as a copy without its attachments resolves them."""
    with memfs.Vault.open(root) as vault:
        found = link_map(vault)
    return {key: None if path is not None and not path.endswith(".md") else path for key, path in found.items()}
