"""The ``memfs`` command: a thin shell over the library.

The vault comes from ``--vault PATH``, else ``$MEMFS_VAULT``, else the current folder.
Errors are one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import re
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from . import __version__
from .errors import MemfsError
from .items import text_of
from .layout import MEMORIES_DIR, label
from .paths import clean_namespace
from .store import Memory
from .vault import Vault

F = TypeVar("F", bound=Callable[..., Any])
_BOLD = re.compile(r"\*\*(.+?)\*\*")


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemfsError as exc:
            raise click.ClickException(str(exc)) from exc
        except (ValueError, TypeError, OSError, UnicodeError) as exc:
            raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc


def _out() -> Console:
    return Console(highlight=False, soft_wrap=True)


def vault_option(func: F) -> F:
    """Add ``--vault`` (default: $MEMFS_VAULT, else the current folder) to a command."""
    return click.option(
        "--vault", "vault_path", envvar="MEMFS_VAULT", default=".", show_default="$MEMFS_VAULT or .",
        type=click.Path(file_okay=False, path_type=Path), help="The vault folder.",
    )(func)  # fmt: skip


def json_option(func: F) -> F:
    """Add ``--json`` to a command."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


def _open(vault_path: Path, *, create: bool = False) -> Vault:
    if not create and not (vault_path / MEMORIES_DIR).is_dir():
        raise click.ClickException(
            f"{vault_path} is not a memfs vault (no {MEMORIES_DIR}/ folder); run `memfs init {vault_path}`"
        )
    return Vault.open(vault_path, create=create)


def _with_vault(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(vault_path: Path, **kwargs: Any) -> Any:
        with _open(vault_path) as vault:
            return func(vault, **kwargs)

    return wrapper


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _memory_dict(memory: Memory) -> dict[str, Any]:
    return {"path": memory.path, "namespace": memory.namespace, "id": memory.id,
            "title": memory.title, "type": memory.type, "tags": list(memory.tags),
            "updated": memory.updated}  # fmt: skip


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="memfs")
def cli() -> None:
    """memfs: agent memory as Markdown files in a git-versioned vault."""


@cli.command()
@click.argument("path", type=click.Path(file_okay=False, path_type=Path), default=".")
def init(path: Path) -> None:
    """Create a vault at PATH (a folder, its git repository and its index)."""
    with Vault.open(path, create=True) as vault:
        _out().print(f"vault ready at [bold]{escape(str(vault.root))}[/]")


@cli.command()
@vault_option
@click.option("--namespace", "-n", required=True, help="Namespace such as users/alice.")
@click.option("--title", help="Title; the file name is made from it.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for more).")
@click.option("--type", "type_", help="fact, preference, event, instruction, note, ...")
@click.option("--source", help="Where this was learned (provenance).")
@click.argument("body", required=False)
@_with_vault
def add(vault: Vault, namespace: str, title: str | None, tags: tuple[str, ...], type_: str | None,
        source: str | None, body: str | None) -> None:  # fmt: skip
    """Add a memory. BODY is the text; without it, the text is read from stdin."""
    if body is None or body == "-":
        body = sys.stdin.read()
    if not body.strip():
        raise click.ClickException("the memory is empty; give its text as an argument or on stdin")
    memory = vault.memories(namespace).add(body, title=title, tags=list(tags), type=type_, source=source)
    _out().print(f"added [bold]{escape(memory.path)}[/] ({memory.id})")


@cli.command()
@vault_option
@click.argument("ref")
@click.option("--rev", help="Show it as it was at this revision.")
@_with_vault
def show(vault: Vault, ref: str, rev: str | None) -> None:
    """Print a memory file. REF is a path (users/alice/x.md) or an id."""
    _, rel = vault.resolve(ref)
    data = vault.show(rel, rev) if rev else vault.read_bytes(rel)
    click.echo(data.decode("utf-8", "replace"), nl=False)


@cli.command(name="ls")
@vault_option
@json_option
@click.argument("namespace", required=False)
@click.option("--type", "type_", help="Only memories of this type.")
@click.option("--tag", help="Only memories with this tag.")
@_with_vault
def ls(vault: Vault, as_json: bool, namespace: str | None, type_: str | None, tag: str | None) -> None:
    """List memories, all or those of NAMESPACE."""
    memories: list[Memory] = []
    namespaces = [clean_namespace(namespace)] if namespace else _outermost(vault.namespaces())
    for ns in namespaces:
        memories += vault.memories(ns).list(type=type_, tag=tag)
    if as_json:
        _print_json([_memory_dict(m) for m in memories])
        return
    table = Table("path", "title", "type", "tags", "updated", box=None)
    for m in memories:
        table.add_row(escape(label(m.path)), escape(m.title), m.type or "",
                      escape(", ".join(m.tags)), (m.updated or "")[:10])  # fmt: skip
    _out().print(table)
    problems = vault.problems()
    for problem in problems:
        click.echo(f"skipped {problem.path}: {problem.reason}", err=True)


def _outermost(namespaces: list[str]) -> list[str]:
    """The namespaces that are not inside another one (a store lists its sub-folders too)."""
    return [n for n in namespaces if not any(n.startswith(other + "/") for other in namespaces)]


@cli.command()
@vault_option
@json_option
@click.argument("query")
@click.option("--namespace", "-n", help="Only this namespace (and its sub-namespaces).")
@click.option("--type", "type_", help="Only memories of this type.")
@click.option("--tag", "tags", multiple=True, help="Only memories with this tag (repeatable).")
@click.option("--since", help="Only memories updated at or after this date (ISO 8601).")
@click.option("--until", help="Only memories updated at or before this date (ISO 8601).")
@click.option("-k", "k", default=10, show_default=True, type=click.IntRange(1, 1000), help="How many hits.")
@click.option("--messages", is_flag=True, help="Search conversation messages in sessions/ instead of memories.")
@click.option("--session", "session_id", help="With --messages: only this session.")
@_with_vault
def search(vault: Vault, as_json: bool, query: str, namespace: str | None, type_: str | None,
           tags: tuple[str, ...], since: str | None, until: str | None, k: int, messages: bool,
           session_id: str | None) -> None:  # fmt: skip
    """Search memories (or, with --messages, conversation messages) with a natural-language QUERY."""
    if messages or session_id:
        path = vault.session(session_id).path if session_id else None
        found = vault.search_messages(query, k=k, session=path)
        if as_json:
            _print_json([dataclasses.asdict(h) for h in found])
            return
        out = _out()
        if not found:
            out.print("no matches")
        for i, msg in enumerate(found, 1):
            out.print(f"[bold]{i}. {escape(msg.session)}#{msg.position}[/] [dim]{escape(msg.role)} "
                      f"{escape(msg.time or '')} score {msg.score:.2f}[/]")  # fmt: skip
            out.print("   " + _BOLD.sub(r"[bold yellow]\1[/]", escape(msg.snippet)))
        return
    hits = vault.search(query, k=k, namespace=namespace, type=type_, tags=tags, since=since, until=until)
    if as_json:
        _print_json([dataclasses.asdict(h) for h in hits])
        return
    out = _out()
    if not hits:
        out.print("no matches")
    for i, hit in enumerate(hits, 1):
        out.print(f"[bold]{i}. {escape(hit.title)}[/]  [dim]{escape(hit.path)}  score {hit.score:.2f}[/]")
        if hit.snippet:
            out.print("   " + _BOLD.sub(r"[bold yellow]\1[/]", escape(hit.snippet)))


@cli.command()
@vault_option
@json_option
@click.argument("path", required=False)
@click.option("--author", help="Only commits whose author (a person or an agent) matches.")
@click.option("--agent", help="Only changes an agent made through memfs, by this name.")
@click.option("--session", help="Only changes made in this session (its Memfs-Session trailer).")
@click.option("--since", help="Only commits after this date (git date syntax: 2026-11-01, '2 days ago').")
@click.option("-n", "limit", type=click.IntRange(1), help="At most this many commits.")
@_with_vault
def log(vault: Vault, as_json: bool, path: str | None, author: str | None, agent: str | None,
        session: str | None, since: str | None, limit: int | None) -> None:  # fmt: skip
    """Show who changed a memory (or the vault), when and why."""
    rel = vault.resolve(path)[1] if path else None
    revisions = vault.log(rel, author=author or agent, since=since, limit=None if agent or session else limit)
    if agent:
        revisions = [r for r in revisions if r.trailers.get("Memfs-Op") not in (None, "reconcile", "init")]
    if session:
        revisions = [r for r in revisions if r.trailers.get("Memfs-Session") == session]
    revisions = revisions[:limit] if limit else revisions
    if as_json:
        _print_json([{**dataclasses.asdict(r), "author": str(r.author)} for r in revisions])
        return
    out = _out()
    for r in revisions:
        trailers = "  ".join(f"{k}={v}" for k, v in r.trailers.items())
        out.print(f"[yellow]{r.short}[/] {r.date[:19].replace('T', ' ')} [cyan]{escape(r.author.name)}[/] "
                  f"{escape(r.subject)} [dim]{escape(trailers)}[/]")  # fmt: skip


@cli.command()
@vault_option
@click.argument("rev_a")
@click.argument("rev_b", required=False)
@click.option("--path", help="Only this memory.")
@_with_vault
def diff(vault: Vault, rev_a: str, rev_b: str | None, path: str | None) -> None:
    """Show what changed from REV_A to REV_B (default: to the files on disk)."""
    rel = vault.resolve(path)[1] if path else None
    click.echo(vault.diff(rel, rev_a, rev_b), nl=False)


@cli.command()
@vault_option
@click.argument("path")
@click.option("--to", "rev", required=True, help="The revision to bring it back to.")
@_with_vault
def restore(vault: Vault, path: str, rev: str) -> None:
    """Restore the memory at PATH as it was at a revision (a new commit; works if deleted)."""
    _, rel = vault.resolve(path)
    sha = vault.restore(rel, rev)
    _out().print(f"restored {escape(rel)}" + (f" in {sha[:10]}" if sha else " (already as it was)"))


@cli.command()
@vault_option
@json_option
@click.option("--key", "keys", multiple=True, metavar="NAME=VALUE", help="Only sessions with this context key.")
@_with_vault
def sessions(vault: Vault, as_json: bool, keys: tuple[str, ...]) -> None:
    """List the sessions (conversation transcripts) in the vault."""
    wanted = {}
    for pair in keys:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise click.UsageError(f"--key takes NAME=VALUE, got {pair!r}")
        wanted[name] = value
    found = [s for s in vault.sessions() if all(str(s.keys.get(k)) == v for k, v in wanted.items())]
    if as_json:
        _print_json([dataclasses.asdict(s) for s in found])
        return
    table = Table("session", "path", "keys", "created", box=None)
    for info in found:
        keys_text = ", ".join(f"{k}={v}" for k, v in info.keys.items())
        table.add_row(escape(info.session_id), escape(info.path), escape(keys_text), (info.created or "")[:19])
    _out().print(table)


@cli.command()
@vault_option
@click.argument("session_id")
@click.option("-n", "limit", type=click.IntRange(1), help="Only the last N messages.")
@click.option("--raw", is_flag=True, help="Print the transcript file as stored.")
@_with_vault
def session(vault: Vault, session_id: str, limit: int | None, raw: bool) -> None:
    """Show a session's conversation (SESSION_ID as given to the library)."""
    chat = vault.session(session_id)
    if not chat.file.exists():
        raise click.ClickException(f"no session {session_id!r}; `memfs sessions` lists them")
    if raw:
        click.echo(chat.file.read_text("utf-8"), nl=False)
        return
    out = _out()
    items = chat.items(limit)
    for item in items:
        role = str(item.get("role") or item.get("type") or "item")
        text = text_of(item)
        out.print(f"[bold cyan]{escape(role)}[/]  {escape(text)}")


@cli.command()
@vault_option
@click.argument("ref")
@_with_vault
def rm(vault: Vault, ref: str) -> None:
    """Delete a memory (it stays in history; `memfs restore` brings it back)."""
    store, rel = vault.resolve(ref)
    store.delete(rel)
    _out().print(f"deleted {escape(label(rel))}")


@cli.command()
@vault_option
@click.argument("ref")
@click.argument("new_path")
@_with_vault
def mv(vault: Vault, ref: str, new_path: str) -> None:
    """Rename a memory inside its namespace; NEW_PATH is relative to the namespace."""
    store, rel = vault.resolve(ref)
    memory = store.move(rel, new_path)
    _out().print(f"moved to {escape(memory.path)}")


@cli.command()
@vault_option
@json_option
@click.argument("path", required=False)
@click.option("--text", help="Purge this text wherever it appears instead of a file ('-': read it from stdin).")
@click.option("--dry-run", is_flag=True, help="List the commits that would change; change nothing.")
@click.option("--yes", "-y", is_flag=True, help="Do it without asking first.")
@click.option("--rewrite-remotes", is_flag=True,
              help="Also rewrite every remote's branches and tags and force-push them.")  # fmt: skip
@_with_vault
def purge(vault: Vault, as_json: bool, path: str | None, text: str | None, dry_run: bool, yes: bool,
          rewrite_remotes: bool) -> None:  # fmt: skip
    """Remove a memory's content (PATH, every version) or a text from the vault's whole history.

    Unlike rm, nothing of it can be restored: history is rewritten, reflogs expire, unreachable
    objects are pruned and the index is rebuilt. Remotes are only told about (or, with
    --rewrite-remotes, force-pushed to).
    """
    if (path is None) == (text is None):
        raise click.UsageError("say what to purge: a PATH or --text TEXT")
    if text == "-":
        if not (yes or dry_run):
            raise click.UsageError("with --text -, stdin holds the text: add --yes (or --dry-run)")
        text = sys.stdin.read().rstrip("\r\n")
    out = _out()
    if not dry_run and not yes:
        plan = vault.purge(path, text=text, dry_run=True)
        _print_purge(out, plan)
        if not click.confirm("Rewrite the history (this cannot be undone)?", default=False):
            raise click.exceptions.Exit(1)
    report = vault.purge(path, text=text, dry_run=dry_run, rewrite_remotes=rewrite_remotes)
    if as_json:
        _print_json(dataclasses.asdict(report))
        return
    _print_purge(out, report)


def _print_purge(out: Console, report: Any) -> None:
    changed = report.changed
    later = len(report.commits) - len(changed)
    rewrite, give, move, go = ("would rewrite", "give", "would move", "would go") if report.dry_run else (
        "rewrote", "gave", "moved", "gone")  # fmt: skip
    out.print(f"{rewrite} {len(changed)} commit(s)" + (f" and {give} {later} later one(s) new ids" if later else "")
              + f"; {len(report.refs)} ref(s) {move}, {report.versions} file version(s) {go}")  # fmt: skip
    for commit in changed:
        new = "dropped" if commit.new is None else commit.new[:10]
        out.print(f"  [yellow]{commit.old[:10]}[/] -> {new} {commit.date[:10]} {escape(commit.subject)}")
    for rel in report.purged_paths:
        out.print(f"  [dim]path[/] {escape(rel)}")
    if not report.dry_run:
        out.print(f"purged in {report.seconds:.1f} s; tombstone "
                  f"{report.tombstone[:10] if report.tombstone else 'unchanged'}; index rebuilt")  # fmt: skip
    for remote in report.remotes:
        if remote.rewritten:
            out.print(f"[green]{escape(remote.name)}[/]: force-pushed {escape(', '.join(remote.rewritten))}")
        if remote.stale:
            out.print(f"[yellow]{escape(remote.name)}[/] still holds the old history "
                      f"({escape(', '.join(remote.stale))}); --rewrite-remotes force-pushes the new one")  # fmt: skip
        if remote.error:
            out.print(f"[red]{escape(remote.name)}[/]: {escape(remote.error)}")
    for oid in report.leftovers:
        out.print(f"[red]still in the object store[/]: {oid}")
    for rel in report.outside:
        out.print(f"[yellow]also outside the vault, left alone[/]: {escape(rel)}")


@cli.command()
@vault_option
@click.option("--author", help="Undo the newest change by this author (an agent's or a person's name).")
@click.option("--session", help="Undo the newest change made in this session.")
@_with_vault
def undo(vault: Vault, author: str | None, session: str | None) -> None:
    """Revert the newest change by an author or a session, as a new commit."""
    if not author and not session:
        raise click.UsageError("say whose change to undo: --author NAME or --session ID")
    undone = vault.undo(author=author, session=session)
    _out().print(f"undid {undone.short} {escape(undone.subject)} [dim]({escape(str(undone.author))})[/]")


@cli.command()
@vault_option
@click.option("--commit-delay", default=2.0, show_default=True, type=click.FloatRange(0),
              help="Seconds of quiet before edits are committed.")
@click.option("--polling", is_flag=True, help="Poll instead of native file events (network drives).")
def watch(vault_path: Path, commit_delay: float, polling: bool) -> None:
    """Watch the vault: index edits made in an editor at once, commit them under your name."""
    out = _out()
    colours = {"indexed": "cyan", "committed": "green", "problem": "red"}

    def report(kind: str, paths: list[str]) -> None:
        for path in paths:
            out.print(f"[{colours.get(kind, 'white')}]{kind:9}[/] {escape(path)}")

    with _open(vault_path) as vault:
        watcher = vault.watch(commit_delay=commit_delay, polling=polling, on_change=report)
        out.print(f"watching {escape(str(vault.root))} as {escape(str(vault.person))}; Ctrl-C to stop")
        try:
            while watcher.running:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            watcher.stop()


@cli.command()
@vault_option
@click.option("--full", is_flag=True, help="Rebuild the index from scratch.")
@_with_vault
def reindex(vault: Vault, full: bool) -> None:
    """Bring the search index up to date with the files."""
    with Progress(transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task("indexing", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        report = vault.reindex(full=full, progress=progress)
    _out().print(f"indexed: {len(report.added)} added, {len(report.updated)} updated, "
                 f"{len(report.removed)} removed, {len(report.problems)} skipped as malformed")  # fmt: skip
    for problem in report.problems:
        click.echo(f"skipped {problem.path}: {problem.reason}", err=True)


@cli.command()
@vault_option
@_with_vault
def doctor(vault: Vault) -> None:
    """Check the index against the files, git's state, and malformed files."""
    colours = {"ok": "green", "warning": "yellow", "error": "red"}
    findings = vault.doctor()
    out = _out()
    for f in findings:
        out.print(f"[{colours[f.severity]}]{f.severity:7}[/] {f.check:6} {escape(f.message)}")
    if any(f.severity == "error" for f in findings):
        sys.exit(1)


def main() -> None:
    """Entry point of the ``memfs`` console script."""
    logging.basicConfig(format="memfs: %(levelname)s: %(message)s", level=logging.WARNING)
    # watchdog 7 warns when it re-registers a folder created while being watched: harmless noise
    warnings.filterwarnings("ignore", "Callback with id", RuntimeWarning)
    cli(prog_name="memfs")
