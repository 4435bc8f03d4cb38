from __future__ import annotations

import logging
import multiprocessing
import os
import random
import shutil
import time
from pathlib import Path

import pytest
from whoosh import query

import memfs
from memfs.searcher import make_snippet


def fill(vault: memfs.Vault) -> None:
    alice = vault.memories("users/alice")
    alice.add("Alice prefers window seats on long flights.", title="Window seats",
              tags=["travel"], type="preference")  # fmt: skip
    alice.add("Alice is vegetarian and allergic to peanuts.", title="Diet", tags=["food"], type="fact")
    vault.memories("projects/atlas").add(
        "We chose PostgreSQL 16 over MySQL for its JSON support.", title="Database choice",
        tags=["architecture"], type="decision",
    )  # fmt: skip


def results(vault: memfs.Vault, queries: list[str]) -> list[list[tuple[str, float]]]:
    return [[(h.path, h.score) for h in vault.search(q)] for q in queries]


QUERIES = ["seat preference", "what does alice eat", "database", "peanuts OR mysql", "json"]


def test_search_ranks_and_highlights(vault: memfs.Vault) -> None:
    fill(vault)
    hits = vault.search("which seat does alice prefer on flights")
    assert hits[0].title == "Window seats"
    assert "**seats**" in hits[0].snippet and "**flights**" in hits[0].snippet
    assert hits[0].tags == ("travel",) and hits[0].type == "preference"
    assert hits[0].namespace == "users/alice"


def test_filters(vault: memfs.Vault) -> None:
    fill(vault)
    assert [h.title for h in vault.search("alice", type="fact")] == ["Diet"]
    assert [h.title for h in vault.search("alice peanuts seats", tags=["travel"])] == ["Window seats"]
    assert [h.title for h in vault.search("postgresql", namespace="projects")] == ["Database choice"]
    assert vault.search("postgresql", namespace="users") == []
    assert len(vault.search("alice peanuts postgresql", since="2000-01-01")) == 3
    assert vault.search("alice peanuts postgresql", until="2000-01-01") == []


def test_title_and_tags_are_searched(vault: memfs.Vault) -> None:
    fill(vault)
    assert vault.search("architecture")[0].title == "Database choice"
    assert vault.search("choice")[0].title == "Database choice"


def test_whoosh_syntax_and_broken_syntax(vault: memfs.Vault) -> None:
    fill(vault)
    assert {h.title for h in vault.search("peanuts OR mysql")} == {"Diet", "Database choice"}
    assert [h.title for h in vault.search("alice AND NOT peanuts")] == ["Window seats"]
    assert [h.title for h in vault.search("title:diet")] == ["Diet"]
    for broken in ('"unclosed peanuts', "peanuts AND (", "((((", "title:", "peanuts)", "-peanuts +"):
        hits = vault.search(broken)
        assert isinstance(hits, list)
    assert [h.title for h in vault.search('"unclosed peanuts')] == ["Diet"]


def test_wildcards_and_fuzzy_terms_are_not_expanded(vault: memfs.Vault) -> None:
    fill(vault)
    assert vault.search("pea*") == []
    assert vault.search("peanutz~2") == []
    assert vault.search("a* OR b* OR c* OR d*") == []


def test_queries_with_nothing_to_search(vault: memfs.Vault) -> None:
    fill(vault)
    for q in ("", "   ", "the and of", "?!", "*"):
        assert vault.search(q) == []
    assert vault.search("x" * memfs.searcher.MAX_QUERY_CHARS) == []
    with pytest.raises(memfs.QueryTooLongError):  # a longer query is refused, never quoted back
        vault.search("x" * 10_000)
    assert vault.search("seats", k=0) == []
    for bad_k in (-1, 1.5, True):
        with pytest.raises(ValueError):
            vault.search("seats", k=bad_k)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        vault.search(None)  # type: ignore[arg-type]


def test_document_frequencies_count_memories_holding_each_term(vault: memfs.Vault) -> None:
    store = vault.memories("users/alice")
    store.add("Quiet rooms on a high floor; she books hotels a week ahead.", title="Hotels")
    store.add("The team meets every week on Monday.", title="Team meeting")
    store.add("Deploys happen twice a week.", title="Deploy days")
    # the terms search looks for (stems, no stop words), in order; a title counts ("days" is only there)
    assert vault.document_frequencies("Can you find me a hotel for next week?") == (
        3, {"find": 0, "hotel": 1, "next": 0, "week": 3})  # fmt: skip
    assert vault.document_frequencies("Days, and more days") == (3, {"day": 1})
    # a new memory counts at once, a deleted or changed one once
    store.add("Book the hotel near the venue.", title="Venue", path="venue.md")
    assert vault.document_frequencies("hotel") == (4, {"hotel": 2})
    store.update("venue.md", body="Book the hostel near the venue.\n")
    assert vault.document_frequencies("hotel hostel") == (4, {"hotel": 1, "hostel": 1})
    store.delete("venue.md")
    assert vault.document_frequencies("hotel hostel") == (3, {"hotel": 1, "hostel": 0})
    # messages are not memories: a session full of a word changes no count
    vault.session("chat").append([{"role": "user", "content": "hotel hotel week"}] * 5)
    assert vault.document_frequencies("hotel week") == (3, {"hotel": 1, "week": 3})


def test_document_frequencies_within_namespaces_count_only_their_memories(vault: memfs.Vault) -> None:
    vault.memories("users/alice").add("Alice's zebra notes.", title="Own")
    vault.memories("users/alice/travel").add("Zebra crossings near the hotel.", title="Crossings")
    mallory = vault.memories("users/mallory")
    for i in range(4):
        mallory.add(f"zebra zebra {i}", title=f"Z{i}")
    mallory.add("PIN notes", title="PIN", path="x users/alice/pin.md")  # a folder named like another namespace
    assert vault.document_frequencies("zebra pin") == (7, {"zebra": 6, "pin": 1})
    # alice's memories (her folder and the one below it), never the folder that only looks like hers
    assert vault.document_frequencies("zebra pin", namespaces=["users/alice"]) == (2, {"zebra": 2, "pin": 0})
    assert vault.document_frequencies("zebra pin", namespaces=["/users/alice/", "users/alice/travel"]) == (
        2, {"zebra": 2, "pin": 0})  # fmt: skip
    assert vault.document_frequencies("zebra pin", namespaces=["users/alice/travel", "users/mallory"]) == (
        6, {"zebra": 5, "pin": 1})  # fmt: skip
    assert vault.document_frequencies("zebra", namespaces=["users/nobody"]) == (0, {"zebra": 0})
    for bad in ("users/alice", b"users/alice", 3, None):
        with pytest.raises(memfs.InvalidArgumentError, match="namespaces must be a list"):
            vault.document_frequencies("zebra", namespaces=bad)  # type: ignore[arg-type]
    for bad_name in (["../etc"], ["users/alice/x.md"], [3]):
        with pytest.raises(memfs.PathError):
            vault.document_frequencies("zebra", namespaces=bad_name)  # type: ignore[list-item]


def test_document_frequencies_of_malformed_or_empty_text(vault: memfs.Vault) -> None:
    fill(vault)
    for text in ("", "   ", "the and of", "?!"):
        assert vault.document_frequencies(text) == (3, {})
    many = vault.document_frequencies(" ".join(f"word{i}" for i in range(100)))[1]
    assert list(many) == [f"word{i}" for i in range(memfs.searcher.MAX_QUERY_TERMS)]
    with pytest.raises(memfs.QueryTooLongError):
        vault.document_frequencies("x" * 10_000)
    for bad in (None, 3, b"hotel", ["hotel"]):
        with pytest.raises(TypeError):
            vault.document_frequencies(bad)  # type: ignore[arg-type]


def test_deleting_the_index_gives_identical_results(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True) as vault:
        fill(vault)
        before = results(vault, QUERIES)
    shutil.rmtree(root / ".memfs")
    with memfs.Vault.open(root) as vault:
        assert results(vault, QUERIES) == before
        assert len(vault.log()) == 4  # nothing to commit: the files did not change


def test_full_reindex_gives_identical_results(vault: memfs.Vault) -> None:
    fill(vault)
    before = results(vault, QUERIES)
    report = vault.reindex(full=True)
    assert len(report.added) == 3
    assert results(vault, QUERIES) == before


@pytest.mark.parametrize("damage", ["garbage_toc", "delete_segments", "garbage_segments", "empty_dir", "schema"])
def test_corrupt_index_is_rebuilt_with_a_warning(tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True) as vault:
        fill(vault)
        vault.search("x")  # flush pending writes into the index
        before = results(vault, QUERIES)
    folder = root / ".memfs" / "index"
    if damage == "garbage_toc":
        for toc in folder.glob("*.toc"):
            toc.write_bytes(b"\x00garbage" * 10)
    elif damage == "delete_segments":
        for seg in folder.glob("*.seg"):
            seg.unlink()
    elif damage == "garbage_segments":
        for seg in folder.glob("*.seg"):
            seg.write_bytes(os.urandom(seg.stat().st_size))
    elif damage == "empty_dir":
        shutil.rmtree(folder)
        folder.mkdir()
    else:  # a newer memfs, whose index schema changed, opens this index
        monkeypatch.setattr(memfs.index, "SCHEMA_VERSION", "newer")
    with caplog.at_level(logging.WARNING), memfs.Vault.open(root) as vault:
        assert results(vault, QUERIES) == before
    assert "rebuilding" in caplog.text


def test_reconcile_reads_only_changed_files(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True) as vault:
        fill(vault)
    diet = root / "memories/users/alice/diet.md"
    diet.write_text(diet.read_text().replace("peanuts", "shellfish"))
    (root / "memories/users/alice/window-seats.md").unlink()
    new = root / "memories/users/bob/new.md"
    new.parent.mkdir()
    new.write_text("Bob likes jazz.\n")
    with memfs.Vault.open(root, reconcile=False) as vault:
        report = vault.reconcile()
        assert report.added == ["memories/users/bob/new.md"]
        assert report.updated == ["memories/users/alice/diet.md"]
        assert report.removed == ["memories/users/alice/window-seats.md"]
        assert vault.search("peanuts") == [] and vault.search("shellfish")[0].title == "Diet"
        assert vault.search("seats") == []
        assert vault.search("jazz")[0].path == "memories/users/bob/new.md"
        assert vault.reconcile().changed == 0
        assert vault.history.status() == []


def test_touching_a_file_does_not_count_as_a_change(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True) as vault:
        fill(vault)
        vault.search("x")
    later = time.time() + 5
    os.utime(root / "memories/users/alice/diet.md", (later, later))
    with memfs.Vault.open(root, reconcile=False) as vault:
        assert vault.reconcile().changed == 0
        assert len(vault.log()) == 4


def test_malformed_files_are_reported_and_skipped(vault: memfs.Vault) -> None:
    fill(vault)
    folder = vault.root / "memories/users/alice"
    bad = {
        "yaml.md": b"---\ntitle: [unclosed\n---\nbody\n",
        "list.md": b"---\n- a\n- b\n---\nbody\n",
        "latin1.md": "caf\xe9 alice".encode("latin-1"),
        "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00alice",
        "bomb.md": b"---\na: &a [x, x]\nb: [*a, *a]\n---\nalice\n",
        "huge.md": b"alice " * (1024 * 1024),
    }
    for name, data in bad.items():
        (folder / name).write_bytes(data)
    report = vault.reconcile()
    assert {p.path.rsplit("/", 1)[1] for p in report.problems} == set(bad)
    assert all(p.reason for p in report.problems)
    assert {h.title for h in vault.search("alice", k=50)} == {"Window seats", "Diet"}
    for name, data in bad.items():  # never rewritten or deleted
        assert (folder / name).read_bytes() == data
    assert vault.memories("users/alice").list()  # listing survives
    assert vault.reindex(full=True).problems
    doctor = vault.doctor()
    assert sum(f.severity == "error" for f in doctor) == len(bad)


def test_symlinks_are_not_followed(vault: memfs.Vault, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("secret launch codes\n")
    folder = vault.root / "memories/users/alice"
    folder.mkdir(parents=True)
    (folder / "link.md").symlink_to(outside)
    (folder / "dirlink").symlink_to(tmp_path, target_is_directory=True)
    vault.reconcile()
    assert vault.search("secret launch codes") == []


def _write_one(root: str) -> None:
    with memfs.Vault.open(root, durable=False) as vault:
        vault.memories("other").add("Written by another process: kumquat.", title="From afar")


@pytest.mark.slow
def test_search_sees_a_write_from_another_process(tmp_path: Path) -> None:
    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True) as vault:
        fill(vault)
        assert vault.search("kumquat") == []
        proc = multiprocessing.get_context("spawn").Process(target=_write_one, args=(str(root),))
        proc.start()
        proc.join(60)
        assert proc.exitcode == 0
        assert [h.title for h in vault.search("kumquat")] == ["From afar"]


def test_search_right_after_a_write_in_the_same_process(vault: memfs.Vault) -> None:
    store = vault.memories("a")
    for i in range(5):
        m = store.add(f"fact number {i} about zebra{i}", title=f"f{i}")
        assert vault.search(f"zebra{i}")[0].id == m.id
        store.update(m.id, body=f"now about yak{i}")  # type: ignore[arg-type]
        assert vault.search(f"zebra{i}") == []
        assert vault.search(f"yak{i}")[0].id == m.id


def test_snippet() -> None:
    body = "Intro words here. " * 30 + "The cat sat on the warm mat today. " + "Filler text. " * 30
    snippet = make_snippet(body, {"cat", "mat"})
    assert "**cat**" in snippet and "**mat**" in snippet
    assert snippet.startswith("… ") and snippet.endswith(" …")
    assert len(snippet) < 300
    assert make_snippet("", {"x"}) == ""
    assert make_snippet("no match here", {"zzz"}) == "no match here"


def test_index_damaged_while_running_is_rebuilt(vault: memfs.Vault, caplog: pytest.LogCaptureFixture) -> None:
    fill(vault)
    before = results(vault, QUERIES)
    shutil.rmtree(vault.root / ".memfs" / "index")  # say, a person cleaning up caches
    assert results(vault, QUERIES) == before
    vault.memories("users/alice").add("Alice collects stamps.", title="Hobby")
    assert vault.search("stamps")[0].title == "Hobby"
    assert "rebuilding" in caplog.text


@pytest.mark.slow
def test_a_fresh_build_in_two_processes_finds_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import memfs.index

    root = tmp_path / "v"
    with memfs.Vault.open(root, create=True, durable=False) as vault:
        with vault.batch("many"):
            for i in range(240):
                vault.memories(f"n{i % 4}").add(f"note {i} about {['figs', 'dates', 'plums'][i % 3]} and more",
                                                title=f"t{i}")  # fmt: skip
        queries = ["figs", "dates plums", "note 17", "more about plums"]
        serial = [sorted((h.path, h.score) for h in vault.search(q, k=300)) for q in queries]
        monkeypatch.setattr(memfs.index, "PARALLEL_FROM_DOCS", 100)
        report = vault.reindex(full=True)
        assert len(report.added) == 240
        assert len(list((root / ".memfs" / "index").glob("*.seg"))) >= 2  # two writers, two segments
        parallel = [sorted((h.path, h.score) for h in vault.search(q, k=300)) for q in queries]
        assert parallel == serial  # the same hits with the same scores


def test_a_program_that_seeds_random_does_not_break_the_index(vault: memfs.Vault,
                                                              caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    """Whoosh draws segment names from `random`: seeded alike, two commits once picked the same name."""
    import random

    store = vault.memories("users/alice")
    state = random.getstate()
    try:
        for i in range(3):
            random.seed(7)  # what a reproducible run (or Hypothesis, before each example) does
            store.add(f"Seeded note {i} about kayaks.", title=f"Kayak {i}")
            assert len(vault.search("kayaks", k=10)) == i + 1
    finally:
        random.setstate(state)  # the rest of the suite keeps its own randomness
    assert "rebuilding" not in caplog.text and "failed" not in caplog.text


def test_a_word_of_a_megabyte_is_not_a_term_and_the_rest_is_searchable(vault: memfs.Vault) -> None:
    from memfs.analysis import ANALYZER, MAX_WORD_CHARS

    blob = "z" * (1024 * 1024 - 1000)  # a pasted blob, as large as a memory may be: stemming it took a second
    assert list(ANALYZER.stems(f"kayak {blob} paddles")) == ["kayak", "paddl"]
    assert list(ANALYZER.stems("k" * MAX_WORD_CHARS)) == ["k" * MAX_WORD_CHARS]  # the longest word still indexed
    vault.memories("users/alice").add(f"Kayak notes {blob} and paddles.", title="Blob")
    assert [h.title for h in vault.search("paddles")] == ["Blob"]
    assert vault.search(blob[: MAX_WORD_CHARS + 1]) == []
    session = vault.session("pasted")
    session.append([{"role": "user", "content": f"a message with {blob} inside it, about canoes"}])
    assert [h.position for h in vault.search_messages("canoes")] == [1]


def whooshs_own(vault: memfs.Vault, text: str, k: int, namespace: str | None) -> list[tuple[str, float]]:
    """The top ``k`` memories for ``text`` by Whoosh's own search of the query memfs parses from it."""
    index = vault.index
    filters = [query.Term("kind", "memory")] + ([query.Term("ns", namespace)] if namespace else [])
    with index.lock:
        found = index.searcher().search(vault.engine.catalog.reader._parse(text, ("title", "body", "tags")), limit=k,
                                       filter=query.And(filters))  # fmt: skip
        return [(hit["path"], round(hit.score, 4)) for hit in found]


def test_plain_words_rank_as_whooshs_own_or_query_across_segments_and_deletions(vault: memfs.Vault) -> None:
    """Plain words are scored from postings decoded once per segment: Whoosh's exact ranking, writes or not.

    Common words (in most memories, so their postings are kept decoded) and rare ones, over
    several segments, before and after updates and deletions mark documents of the older segments.
    """
    rng = random.Random(3)
    common = ["alice", "atlas", "deploy", "review"]
    rare = ["kayak", "lisbon", "matcha", "pottery", "invoice", "sushi", "violin", "dentist"]
    stores = [vault.memories("users/alice"), vault.memories("projects/atlas")]
    added = []
    for batch in range(3):  # each batch is one segment of the index
        with vault.batch(f"batch {batch}"):
            for i in range(100):
                words = [rng.choice(common if rng.random() < 0.6 else rare) for _ in range(rng.randint(3, 30))]
                added.append(stores[i % 2].add(" ".join(words), title=" ".join(rng.sample(common + rare, 2)),
                                               tags=[rng.choice(common + rare)]))  # fmt: skip
        vault.search("alice")  # the index commits the batch
    queries = ["alice deploy", "atlas review kayak", "lisbon", "alice atlas deploy review matcha violin"]

    def same_as_whoosh() -> None:
        for q in queries:
            for namespace in (None, "users/alice"):
                plain = [(h.path, h.score) for h in vault.search(q, k=25, namespace=namespace)]
                as_or = [(h.path, h.score) for h in vault.search(" OR ".join(q.split()), k=25, namespace=namespace)]
                assert plain and plain == as_or == whooshs_own(vault, " OR ".join(q.split()), 25, namespace), q

    same_as_whoosh()
    with vault.batch("changes"):  # one commit: deletion marks in the older segments (not merged away), a new one
        for memory in added[:250:10]:
            stores[0 if memory.path.startswith("memories/users/") else 1].update(memory.path, body="alice deploy kayak")
        for memory in added[5:250:20]:
            stores[0 if memory.path.startswith("memories/users/") else 1].delete(memory.path)
    same_as_whoosh()
    vault.reindex(full=True)  # new segments altogether
    same_as_whoosh()
