"""Purge on real git repositories: a file's content or a text out of every commit, every ref and every file.

Each test builds a vault in tmp_path with real git and scans what git and memfs keep afterwards:
``git log -p --all``, every object (reachable, unreachable, in packs), the reflogs, every file of
the git folder, of ``.memfs/`` (raw bytes of the index segments) and of the working tree.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import memfs
from memfs import transcript
from memfs.cli import cli
from memfs.errors import InvalidArgumentError, NotFoundError, PurgeError, RevisionNotFoundError
from memfs.paths import slugify
from memfs.purge import TOMBSTONES, Tombstones, is_purged, tombstones
from memfs.tools import MemoryTools

# a secret of no shape memfs knows: a GitHub token would be redacted before it was ever stored
TOKEN = "pin_" + "Zq8RtY2uVw4XkLm6Np0Bc3Df5Gh7Jk9Ls1Qa"
ALICE = "users/alice"


def git(cwd: Path, *args: str, input: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, input=input).stdout


def gits(cwd: Path, *args: str) -> str:
    return git(cwd, *args).decode("utf-8", "replace")


def forms(text: str) -> list[bytes]:
    """What counts as a trace of ``text``: itself, lower-cased, and its slug (a file name)."""
    return sorted({text.encode(), text.lower().encode(), slugify(text, max_length=200).encode()})


def found(data: bytes, text: str) -> bool:
    low = data.lower()
    return any(f.lower() in low for f in forms(text))


def every_object(repo: Path) -> bytes:
    """The content of every object in the store, reachable or not, loose or packed."""
    return git(repo, "cat-file", "--batch-all-objects", "--batch")


def reachable_objects(repo: Path) -> bytes:
    ids = [line.split()[0] for line in gits(repo, "rev-list", "--all", "--objects").splitlines() if line]
    return git(repo, "cat-file", "--batch", input="".join(f"{i}\n" for i in ids).encode())


def files_under(folder: Path) -> Iterator[tuple[Path, bytes]]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            yield path, path.read_bytes()


def assert_no_trace(repo: Path, vault_root: Path, text: str) -> None:
    assert not found(git(repo, "log", "-p", "--all"), text), "git log -p --all"
    assert not found(git(repo, "log", "-g", "-p", "--all"), text), "the reflogs"
    assert not found(reachable_objects(repo), text), "rev-list --all --objects"
    assert not found(every_object(repo), text), "cat-file --batch-all-objects"
    unreachable = gits(repo, "fsck", "--unreachable", "--no-reflogs")
    assert "unreachable" not in unreachable, unreachable
    git_dir = Path(gits(repo, "rev-parse", "--absolute-git-dir").strip())
    for where in (git_dir, vault_root / ".memfs", vault_root):
        for path, data in files_under(where):
            if "objects/pack" not in path.as_posix():  # packs are compressed: their objects are read above
                assert not found(data, text), path
                assert not found(path.relative_to(where).as_posix().encode(), text), path
    assert gits(repo, "fsck", "--full", "--strict") == ""


def file_history(repo: Path, path: str) -> list[str]:
    out = gits(repo, "log", "--all", "--format=%an|%ae|%aI|%cn|%s", "--", path)
    return out.splitlines()


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[memfs.Vault]:
    with memfs.Vault.open(tmp_path / "vault", durable=False, create=True) as v:
        yield v


def plant_everywhere(vault: memfs.Vault) -> dict[str, str]:
    """The token in a memory body, a title/front matter, a file name (so a commit subject) and a transcript."""
    store = vault.memories(ALICE)
    tea = store.add("Alice drinks green tea.", title="Tea", tags=["drinks"])
    store.update(tea.id, body="Alice drinks green tea, no sugar.")
    secret = store.add(f"my deploy token is {TOKEN} for the CI", title=f"{TOKEN} deploy token")
    store.update(secret.id, body=f"rotated; the old one was {TOKEN}.\nKeep the new one elsewhere.")
    plain = store.add(f"Notes mention {TOKEN} once.", title="Ops notes")
    chat = vault.session("chat-1", commit="turn")
    chat.append([{"role": "user", "content": f"here is my token {TOKEN}, use it"},
                 {"role": "assistant", "content": "Noted."}])  # fmt: skip
    chat.append([{"role": "user", "content": "thanks > bye"}])
    vault.memories("users/bob").add("Bob likes coffee.", title="Coffee")
    return {"tea": tea.path, "secret": secret.path, "plain": plain.path, "chat": chat.path}


# -- a text ------------------------------------------------------------------------------------


def test_a_text_leaves_no_trace_anywhere_and_everything_else_is_intact(vault: memfs.Vault) -> None:
    root = vault.root
    paths = plant_everywhere(vault)
    vault.search(TOKEN.lower())  # the index holds the token now
    assert any(found(data, TOKEN) for _, data in files_under(root / ".memfs" / "index")), "nothing to purge"
    assert found(git(root, "log", "--all", "--format=%s"), TOKEN)  # in a subject, through the file name
    untouched = {p: file_history(root, p) for p in (paths["tea"], "memories/users/bob/coffee.md", ".gitignore")}
    commits_before = len(gits(root, "rev-list", "--all").split())

    report = vault.purge(text=TOKEN)

    assert_no_trace(root, root, TOKEN)
    assert {p: file_history(root, p) for p in untouched} == untouched  # ids change, nothing else does
    assert len(gits(root, "rev-list", "--all").split()) == commits_before + 1  # + the tombstone commit
    assert report.tombstone and report.versions >= 5 and not report.leftovers and not report.dry_run
    assert {c.change for c in report.changed} == {"content"}
    assert all(TOKEN not in c.subject for c in report.commits)
    # the files say [PURGED] where the token was, and stay well-formed
    secret = root / paths["secret"].replace(slugify(TOKEN), "[PURGED]")
    assert not (root / paths["secret"]).exists() and secret.exists()
    memory = vault.memories(ALICE).get(secret.name)
    assert memory.title == "[PURGED] deploy token" and "the old one was [PURGED]." in memory.body
    parsed = transcript.parse((root / paths["chat"]).read_bytes())
    assert not parsed.problems
    assert [e.item["content"] for e in parsed.entries] == ["here is my token [PURGED], use it", "Noted.",
                                                          "thanks > bye"]  # fmt: skip
    assert vault.session("chat-1").items(1) == [{"role": "user", "content": "thanks > bye"}]
    assert gits(root, "status", "--porcelain") == ""
    # search works on the rebuilt index; the token is not found
    assert [h.path for h in vault.search("green tea")] == [paths["tea"]]
    assert vault.search(TOKEN) == [] and vault.search_messages(TOKEN) == []
    # the tombstone: committed, hashes only
    data = (root / TOMBSTONES).read_bytes()
    assert not found(data, TOKEN) and gits(root, "log", "-1", "--format=%s") == "purge: remove a text from history\n"
    assert gits(root, "ls-files", TOMBSTONES).strip() == TOMBSTONES
    assert is_purged(vault, TOKEN) and is_purged(vault, f"prefix {TOKEN} suffix".encode())
    assert not is_purged(vault, "Alice drinks green tea.") and not is_purged(root, b"nothing here")


def test_purging_again_changes_nothing_and_makes_no_commit(vault: memfs.Vault) -> None:
    vault.memories(ALICE).add(f"token {TOKEN}", title="Token")
    vault.purge(text=TOKEN)
    head = gits(vault.root, "rev-parse", "HEAD")
    again = vault.purge(text=TOKEN)
    assert again.commits == [] and again.tombstone is None and again.refs == {}
    assert gits(vault.root, "rev-parse", "HEAD") == head


def test_a_text_the_vault_never_held_changes_nothing_but_is_recorded(vault: memfs.Vault) -> None:
    vault.memories(ALICE).add("Alice drinks green tea.", title="Tea")
    before = gits(vault.root, "log", "--format=%H")
    report = vault.purge(text=TOKEN)
    assert report.commits == [] and report.versions == 0
    assert gits(vault.root, "log", "--format=%H").endswith(before)  # one tombstone commit on top
    assert tombstones(vault).holds_text(TOKEN)


@pytest.mark.parametrize("text", ["", "abc", "   x   ", "title", "user", "<!-- memfs:entry ", "[PURGED]"])
def test_a_text_too_short_or_part_of_memfs_markup_is_refused(vault: memfs.Vault, text: str) -> None:
    with pytest.raises(InvalidArgumentError):
        vault.purge(text=text)


def test_path_or_text_exactly_one(vault: memfs.Vault) -> None:
    with pytest.raises(InvalidArgumentError):
        vault.purge()
    with pytest.raises(InvalidArgumentError):
        vault.purge("users/alice/x.md", text=TOKEN)


def test_a_text_escaped_inside_json_items_of_a_transcript(vault: memfs.Vault) -> None:
    secret = 'pin "Ök-4417>x"'  # quotes, non-ASCII and '>' are escaped in JSON
    chat = vault.session("tools-1", commit="turn")
    call = {"type": "function_call", "name": "login", "call_id": "c1", "arguments": json.dumps({"q": secret})}
    chat.append([{"role": "user", "content": f"my {secret}"}, call,
                 {"type": "function_call_output", "call_id": "c1", "output": f"ok {secret}"}])  # fmt: skip
    raw = chat.file.read_bytes()
    twice = json.dumps(json.dumps(secret)[1:-1], ensure_ascii=False)[1:-1]  # in the arguments' JSON
    assert secret.encode() in raw and json.dumps(secret, ensure_ascii=False)[1:-1].encode() in raw
    assert twice.encode() in raw

    vault.purge(text=secret)

    data = chat.file.read_bytes()
    for form in (secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], twice, "4417>x"):
        assert form.encode() not in data and form.encode() not in git(vault.root, "log", "-p", "--all")
    parsed = transcript.parse(data)
    assert not parsed.problems
    assert [e.item for e in parsed.entries] == [
        {"role": "user", "content": "my [PURGED]"},
        {**call, "arguments": json.dumps({"q": "[PURGED]"})},
        {"type": "function_call_output", "call_id": "c1", "output": "ok [PURGED]"},
    ]


# -- a file ------------------------------------------------------------------------------------


def test_a_file_goes_with_every_version_across_renames_and_cannot_be_restored(vault: memfs.Vault) -> None:
    root = vault.root
    store = vault.memories(ALICE)
    tea = store.add("Alice drinks green tea.", title="Tea")
    secret = store.add(f"Alice's bank PIN is 4417, card {TOKEN}.", title="Bank")
    old_revision = vault.log(secret.path)[0].sha
    store.update(secret.id, body=f"PIN changed; card {TOKEN} still.")
    store.move(secret.id, "money/bank-card.md")  # followed both ways across the rename
    with vault.batch("two at once"):  # a commit that also touches another file stays, without it
        store.update(tea.id, body="Alice drinks green tea, no sugar.")
        store.update(secret.id, body=f"card {TOKEN} (final)")
    copy = vault.memories("users/bob").add("unrelated", title="Copy")
    (root / copy.path).write_bytes((root / "memories/users/alice/money/bank-card.md").read_bytes())
    vault.reconcile()  # the same bytes, committed elsewhere by a person
    store.delete("money/bank-card.md")
    tea_history = file_history(root, tea.path)

    report = vault.purge("users/alice/bank.md")  # the name it had first

    assert report.purged_paths == sorted([copy.path, "memories/users/alice/bank.md",
                                          "memories/users/alice/money/bank-card.md"])  # fmt: skip
    assert_no_trace(root, root, TOKEN)
    assert "4417" not in gits(root, "log", "-p", "--all")
    names = gits(root, "log", "--all", "--name-only", "--format=")
    assert "bank" not in names  # the copy's own earlier version ("unrelated") stays in its history
    assert gits(root, "log", "--all", "--format=%s", "--", copy.path).count("\n") == 2
    assert file_history(root, tea.path) == tea_history  # same commits, messages, authors and dates
    assert "two at once" in gits(root, "log", "--format=%s")
    assert {c.change for c in report.changed} == {"dropped", "content"}
    assert not (root / copy.path).exists()
    # nothing brings it back: not the library, not the agent's tools
    assert store.history("bank.md") == [] and store.history("money/bank-card.md") == []
    with pytest.raises(RevisionNotFoundError):
        store.restore("bank.md", old_revision)
    with pytest.raises(RevisionNotFoundError):
        store.show("bank.md", old_revision)
    tools = MemoryTools(vault, ALICE)
    result = tools.call({"command": "restore", "path": "/memories/bank.md", "revision": old_revision})
    assert result.is_error and "no revision" in result.text and "4417" not in result.text
    assert "has no history" in tools.call({"command": "history", "path": "/memories/bank.md"}).text
    assert not (root / "memories/users/alice/bank.md").exists()
    assert tombstones(vault).holds_blob(f"unrelated {TOKEN}".encode()) is False
    assert len(tombstones(vault).blobs) == 3 and not tombstones(vault).texts


def test_a_file_only_on_disk_is_deleted_and_one_nowhere_is_not_found(vault: memfs.Vault) -> None:
    with pytest.raises(NotFoundError):
        vault.purge("users/alice/never.md")
    (vault.root / "memories/users/alice").mkdir(parents=True)
    (vault.root / "memories/users/alice/draft.md").write_text(f"draft {TOKEN}\n")
    report = vault.purge("users/alice/draft.md")  # the open above never committed it: it was not there
    assert report.files == ["memories/users/alice/draft.md"] and not (vault.root / report.files[0]).exists()
    assert_no_trace(vault.root, vault.root, TOKEN)


def test_a_transcript_by_its_vault_path(vault: memfs.Vault) -> None:
    chat = vault.session("chat-9", commit="turn")
    chat.append([{"role": "user", "content": f"token {TOKEN}"}])
    vault.memories(ALICE).add("Alice drinks green tea.", title="Tea")
    report = vault.purge(chat.path)
    assert report.purged_paths == [chat.path] and not chat.file.exists()
    assert_no_trace(vault.root, vault.root, TOKEN)
    assert [h.title for h in vault.search("green tea")] == ["Tea"]


# -- dry run -----------------------------------------------------------------------------------


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): d for p, d in files_under(root)}


def test_a_dry_run_lists_the_commits_and_changes_nothing(vault: memfs.Vault) -> None:
    root = vault.root
    paths = plant_everywhere(vault)
    vault.search("tea")  # the index caught up before the snapshot
    before = snapshot(root)
    report = vault.purge(text=TOKEN, dry_run=True)
    assert snapshot(root) == before  # the git folder (objects, refs, logs), .memfs/ and the files
    assert report.dry_run and report.tombstone is None and report.files == []
    subjects = [c.subject for c in report.changed]
    assert any("[PURGED]" in s for s in subjects) and all(TOKEN.lower() not in s.lower() for s in subjects)
    assert set(report.refs) == {"refs/heads/main"}
    by_path = vault.purge(paths["plain"], dry_run=True)
    assert [c.change for c in by_path.commits][:1] == ["dropped"] and snapshot(root) == before


# -- refs: branches, tags, stash, undo trailers ------------------------------------------------------


def test_every_ref_is_rewritten_branches_tags_stash_and_undo_still_works(vault: memfs.Vault) -> None:
    root = vault.root
    store = vault.memories(ALICE)
    secret = store.add(f"token {TOKEN}", title="Token")
    tea = store.add("Alice drinks green tea.", title="Tea")
    store.update(tea.id, body="Alice drinks black tea.")
    undone = vault.undo(author="memfs agent")  # Memfs-Undoes: <its id>, which the purge changes
    git(root, "tag", "light")
    git(root, "-c", "user.name=P", "-c", "user.email=p@x", "tag", "-a", "v1", "-m", f"release with {TOKEN}")
    git(root, "branch", "side")
    git(root, "checkout", "-q", "--detach")  # a commit only an annotated tag names, nested once more
    git(root, "-c", "user.name=P", "-c", "user.email=p@x", "commit", "-q", "--allow-empty", "-m", f"see {TOKEN}")
    git(root, "-c", "user.name=P", "-c", "user.email=p@x", "tag", "-a", "only", "-m", "only")
    git(root, "-c", "user.name=P", "-c", "user.email=p@x", "-c", "advice.nestedTag=false", "tag", "-a", "nested",
        "only", "-m", "nested")  # fmt: skip
    git(root, "checkout", "-q", "main")
    (root / secret.path).write_text(f"a person's edit, {TOKEN} again\n")  # not committed: stashed
    git(root, "-c", "user.name=P", "-c", "user.email=p@x", "stash", "push", "-m", "wip", "--", secret.path)

    vault.purge(text=TOKEN)

    assert_no_trace(root, root, TOKEN)
    refs = gits(root, "for-each-ref", "--format=%(refname)").split()
    assert {"refs/heads/main", "refs/heads/side", "refs/tags/light", "refs/tags/v1", "refs/tags/only",
            "refs/tags/nested", "refs/stash"} <= set(refs)  # fmt: skip
    assert gits(root, "log", "-1", "--format=%s", "nested^{commit}") == "see [PURGED]\n"
    assert gits(root, "cat-file", "-t", "v1").strip() == "tag"
    assert "release with [PURGED]" in gits(root, "tag", "-n1", "v1")
    assert len(gits(root, "stash", "list").splitlines()) == 1
    assert "a person's edit, [PURGED] again" in gits(root, "stash", "show", "-p")
    trailer = gits(root, "log", "--format=%(trailers:key=Memfs-Undoes,valueonly)", "--grep=^undo:").strip()
    assert trailer != undone.sha and gits(root, "log", "-1", "--format=%s", trailer).startswith("memory: update")
    # the tea update was undone before the purge; under its new id it is still known as undone,
    # so undo goes past it (else: a conflict, tea changed since that update), and past the purge
    assert vault.undo(author="memfs agent").subject == "memory: create users/alice/tea.md"


def test_a_merge_and_a_detached_head_are_rewritten(vault: memfs.Vault) -> None:
    root = vault.root
    store = vault.memories(ALICE)
    store.add("Alice drinks green tea.", title="Tea")
    git(root, "checkout", "-q", "-b", "side")
    store.add(f"token {TOKEN}", title="Side")  # memfs commits on the branch checked out
    git(root, "checkout", "-q", "main")
    store.add("Alice likes trains.", title="Trains")
    git(root, "-c", "user.name=P", "-c", "user.email=p@x", "merge", "-q", "--no-ff", "side", "-m", "merge side")
    git(root, "checkout", "-q", "--detach")
    vault.purge(text=TOKEN)
    assert_no_trace(root, root, TOKEN)
    assert not gits(root, "branch", "--show-current").strip()  # still detached, at the rewritten merge
    assert gits(root, "log", "-1", "--format=%s", "HEAD~1") == "merge side\n"
    assert len(gits(root, "log", "-1", "--format=%P", "HEAD~1").split()) == 2
    assert gits(root, "rev-parse", "HEAD~1") == gits(root, "rev-parse", "main")


def test_refused_while_a_merge_is_in_progress_and_nothing_changes(vault: memfs.Vault) -> None:
    vault.memories(ALICE).add(f"token {TOKEN}", title="Token")
    head = gits(vault.root, "rev-parse", "HEAD").strip()
    (vault.history.git_dir / "MERGE_HEAD").write_text(head + "\n")
    with pytest.raises(PurgeError, match="a merge is in progress"):
        vault.purge(text=TOKEN)
    (vault.history.git_dir / "MERGE_HEAD").unlink()
    assert gits(vault.root, "rev-parse", "HEAD").strip() == head
    assert found(git(vault.root, "log", "-p"), TOKEN)


def test_refused_in_a_repository_with_linked_worktrees(vault: memfs.Vault, tmp_path: Path) -> None:
    vault.memories(ALICE).add(f"token {TOKEN}", title="Token")
    git(vault.root, "worktree", "add", "-q", str(tmp_path / "other"))
    with pytest.raises(PurgeError, match="worktree"):
        vault.purge(text=TOKEN)


# -- remotes -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_remote_keeps_the_old_history_unless_asked_then_it_is_rewritten(vault: memfs.Vault, tmp_path: Path) -> None:
    root = vault.root
    plant_everywhere(vault)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(root, "remote", "add", "origin", remote.resolve().as_uri())
    git(root, "tag", "v1")
    git(root, "push", "-q", "origin", "main", "v1")
    git(root, "branch", "-q", "--set-upstream-to=origin/main")
    assert found(git(remote, "log", "-p", "--all"), TOKEN)

    first = vault.purge(text=TOKEN)

    assert first.remotes == [memfs.purge.RemoteState("origin", ("refs/remotes/origin/main",))]
    assert first.refs["refs/remotes/origin/main"] is None
    assert found(git(remote, "log", "-p", "--all"), TOKEN)  # nothing was pushed
    assert "refs/remotes/origin/main" not in gits(root, "for-each-ref")  # and the local copy of it is gone
    assert_no_trace(root, root, TOKEN)

    second = vault.purge(text=TOKEN, rewrite_remotes=True)  # fetches the old history, rewrites, pushes

    (state,) = second.remotes
    assert state.error is None and set(state.rewritten) == {"refs/heads/main", "refs/tags/v1"} and not state.stale
    assert not found(git(remote, "log", "-p", "--all"), TOKEN)
    assert gits(remote, "rev-parse", "main") == gits(root, "rev-parse", "main")
    assert gits(root, "rev-parse", "origin/main") == gits(root, "rev-parse", "main")
    assert gits(remote, "rev-parse", "v1") == gits(root, "rev-parse", "v1")
    assert_no_trace(root, root, TOKEN)  # the fetched old history is gone again
    assert "refs/memfs-purge" not in gits(root, "for-each-ref")


def test_a_push_the_remote_refuses_is_reported_and_the_local_purge_stands(vault: memfs.Vault, tmp_path: Path) -> None:
    root = vault.root
    vault.memories(ALICE).add(f"token {TOKEN}", title="Token")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(remote, "config", "receive.denyNonFastForwards", "true")
    git(root, "remote", "add", "origin", remote.resolve().as_uri())
    git(root, "push", "-q", "origin", "main")
    report = vault.purge(text=TOKEN, rewrite_remotes=True)
    (state,) = report.remotes
    assert state.error and "push failed" in state.error and state.stale == ("refs/remotes/origin/main",)
    assert found(git(remote, "log", "-p", "--all"), TOKEN)
    assert_no_trace(root, root, TOKEN)


# -- a vault inside a larger repository ------------------------------------------------------------


def test_in_a_larger_repository_only_the_vaults_paths_change(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / "src.py").write_text(f"KEY = '{TOKEN}'  # the project's own file\n")
    (project / "README").write_text("readme\n")
    git(project, "add", ".")
    git(project, "-c", "user.name=P", "-c", "user.email=p@x", "commit", "-q", "-m", "project")
    with memfs.Vault.open(project / ".memory", durable=False, create=True) as vault:
        vault.memories(ALICE).add(f"token {TOKEN}", title="Token")
        outside = gits(project, "rev-parse", "HEAD:src.py", "HEAD:README")
        report = vault.purge(text=TOKEN)
        assert gits(project, "rev-parse", "HEAD:src.py", "HEAD:README") == outside
        assert TOKEN in (project / "src.py").read_text()
        assert report.outside == ["src.py"]  # the project's own file still holds it, and it is said
        assert not found(git(project, "log", "-p", "--all", "--", ".memory"), TOKEN)
        assert gits(project, "log", "--format=%s").splitlines()[-1] == "project"
        assert gits(project, "status", "--porcelain") == ""


# -- the tombstone ---------------------------------------------------------------------------------


def test_tombstones_round_trip_and_answer_for_blobs_and_texts() -> None:
    stones = Tombstones.parse(Tombstones(frozenset(), frozenset()).render())
    assert stones == Tombstones()
    import hashlib

    blob = b"---\ntitle: x\n---\nbody\n"
    text = "s3cr3t-Value-42"
    stones = Tombstones(frozenset({hashlib.sha256(blob).hexdigest()}),
                        frozenset({(hashlib.sha256(text.encode()).hexdigest(), len(text))}))  # fmt: skip
    rendered = stones.render()
    assert Tombstones.parse(rendered + b"future kind of line\n") == stones and text.encode() not in rendered
    assert stones.holds_blob(blob) and not stones.holds_blob(blob + b"\n")
    assert stones.holds_text(text) and not stones.holds_text(text + "!")
    assert stones.find_text(b"xx " + text.encode() + b" yy") and not stones.find_text(b"s3cr3t-Value-43")
    assert stones.is_purged(f"see {text}") and stones.is_purged(blob) and not stones.is_purged("nothing")


# -- the command -------------------------------------------------------------------------------------


def test_cli_dry_run_confirmation_and_purge(tmp_path: Path) -> None:
    runner = CliRunner()
    path = tmp_path / "v"
    with memfs.Vault.open(path, durable=False, create=True) as vault:
        vault.memories(ALICE).add(f"token {TOKEN}", title=f"Token {TOKEN}")
        vault.memories(ALICE).add("Alice drinks green tea.", title="Tea")
    dry = runner.invoke(cli, ["purge", "--text", TOKEN, "--dry-run", "--vault", str(path)])
    assert dry.exit_code == 0, dry.output
    assert "would rewrite" in dry.output and "[PURGED]" in dry.output and TOKEN not in dry.output
    head = gits(path, "rev-parse", "HEAD")
    declined = runner.invoke(cli, ["purge", "--text", TOKEN, "--vault", str(path)], input="n\n")
    assert declined.exit_code == 1 and gits(path, "rev-parse", "HEAD") == head
    done = runner.invoke(cli, ["purge", "users/alice/tea.md", "--yes", "--vault", str(path)])
    assert done.exit_code == 0, done.output
    assert "purged" in done.output and not (path / "memories/users/alice/tea.md").exists()
    by_stdin = runner.invoke(cli, ["purge", "--text", "-", "--yes", "--json", "--vault", str(path)], input=TOKEN + "\n")
    assert by_stdin.exit_code == 0, by_stdin.output
    assert '"target": "text"' in by_stdin.output and TOKEN not in by_stdin.output
    assert_no_trace(path, path, TOKEN)
    bad = runner.invoke(cli, ["purge", "--vault", str(path)])
    assert bad.exit_code == 2 and "a PATH or --text" in bad.output
    assert re.search(r"^## `memfs purge", (Path(__file__).parents[1] / "docs" / "cli.md").read_text(), re.M)


def test_a_ref_git_holds_locked_stops_the_purge_before_anything_changes(tmp_path: Path) -> None:
    """The refs move in one checked transaction: if one cannot move (a person's git holds its lock), none does."""
    with memfs.Vault.open(tmp_path / "vault", durable=False, create=True, lock_timeout=0.5) as vault:
        root = vault.root
        vault.memories(ALICE).add(f"token {TOKEN}", title="Token")
        (root / "memories/users/alice/token.md").write_text(f"staged {TOKEN}\n")
        git(root, "add", "memories/users/alice/token.md")  # git's index holds a version too
        git(root, "branch", "side")
        before = (snapshot(root / ".memfs"), gits(root, "for-each-ref"), gits(root, "ls-files", "-s"))
        lock = vault.history.git_dir / "refs/heads/side.lock"
        lock.write_text("")
        with pytest.raises(memfs.errors.GitLockError):
            vault.purge(text=TOKEN)
        assert (snapshot(root / ".memfs"), gits(root, "for-each-ref"), gits(root, "ls-files", "-s")) == before
        assert not (root / TOMBSTONES).exists() and found(git(root, "log", "-p", "main"), TOKEN)
        lock.unlink()
        vault.purge(text=TOKEN)  # and it goes through once nothing is in its way
        assert_no_trace(root, root, TOKEN)
        assert "staged [PURGED]" in gits(root, "show", ":memories/users/alice/token.md")
