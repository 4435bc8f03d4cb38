"""The ``memfs`` command: a thin shell over the library.

The vault comes from ``--vault PATH``, else ``$MEMFS_VAULT``, else the current folder (``~``
expanded). Commands that only read open the vault without changing it or its history; commands
that write commit as the person who typed them (``--author``, else ``$MEMFS_AUTHOR``, else git's
``user.name``/``user.email``). Errors are one line on stderr and a non-zero exit, never a traceback.
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
from rich.measure import Measurement
from rich.progress import Progress
from rich.table import Table

from . import __version__
from .dates import iso_range
from .errors import MemfsError
from .history import DEFAULT_PERSON, Identity, configured_identity
from .items import text_of
from .layout import label
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


class _BadValue(click.ClickException):
    """A malformed option value: one line, exit status 2 like click's usage errors."""

    exit_code = 2


def _out() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _print_table(table: Table) -> None:
    """Print a table whole: wider than the terminal rather than cut or fold a cell (ids are copied)."""
    out = _out()
    needed = Measurement.get(out, out.options.update(width=1_000_000), table).maximum
    if needed > out.width:
        out = Console(highlight=False, soft_wrap=True, width=needed)
    out.print(table)


def _expand(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    return value.expanduser() if value is not None else None


def vault_option(func: F) -> F:
    """Add ``--vault`` (default: $MEMFS_VAULT, else the current folder) to a command."""
    return click.option(
        "--vault", "vault_path", envvar="MEMFS_VAULT", default=".", show_default="$MEMFS_VAULT or .",
        type=click.Path(file_okay=False, path_type=Path), callback=_expand, help="The vault folder.",
    )(func)  # fmt: skip


def author_option(func: F) -> F:
    """Add ``--author`` (default: $MEMFS_AUTHOR, else the person's git identity) to a command that writes."""
    return click.option(
        "--author", "author", envvar="MEMFS_AUTHOR", metavar='"NAME <EMAIL>"',
        help="Who makes this change (default: $MEMFS_AUTHOR, else your git user.name and user.email).",
    )(func)  # fmt: skip


def json_option(func: F) -> F:
    """Add ``--json`` to a command."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


def _who(author: str | None, folder: Path) -> tuple[Identity, Identity | None]:
    """Who typed the command, and that identity again if it was given explicitly (else None).

    The person's git identity is read where git would read it (the vault's repository, then the
    global config); with none, a placeholder, never an error and never a write to git config.
    """
    if author is None or not author.strip():
        return configured_identity(folder) or DEFAULT_PERSON, None
    try:
        given = Identity.parse(author)
    except ValueError:
        raise _BadValue(f'--author {author!r} is not an identity; give it as "Name <email>"') from None
    return given, given


def _open(vault_path: Path, *, author: str | None = None, writes: bool = False) -> Vault:
    """Open the vault: as it is for a command that only reads, as the person for one that writes."""
    if not writes:
        return Vault.open(vault_path, commit_edits=False)
    who, given = _who(author, vault_path)
    return Vault.open(vault_path, author=who, person=given)


def _with_vault(func: Callable[..., Any]) -> Callable[..., Any]:
    """Open the vault for a command that only reads: nothing in the folder or its history changes."""

    @functools.wraps(func)
    def wrapper(vault_path: Path, **kwargs: Any) -> Any:
        with _open(vault_path) as vault:
            return func(vault, **kwargs)

    return wrapper


def _writing(func: Callable[..., Any]) -> Callable[..., Any]:
    """Open the vault for a command that writes, committing as ``--author`` (or the person)."""

    @functools.wraps(func)
    def wrapper(vault_path: Path, author: str | None, **kwargs: Any) -> Any:
        with _open(vault_path, author=author, writes=True) as vault:
            return func(vault, **kwargs)

    return wrapper


def _dates(since: str | None, until: str | None) -> tuple[str | None, str | None]:
    """``--since``/``--until`` in memfs's one date syntax, or a one-line error saying what is wrong."""
    try:
        return iso_range(since, until, names=("--since", "--until"))
    except MemfsError as exc:
        raise _BadValue(str(exc)) from None


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
@click.argument("path", type=click.Path(file_okay=False, path_type=Path), envvar="MEMFS_VAULT", default=".",
                callback=_expand)  # fmt: skip
@author_option
def init(path: Path, author: str | None) -> None:
    """Create a vault at PATH (default: $MEMFS_VAULT, else the current folder)."""
    who, _ = _who(author, path)
    with Vault.open(path, create=True, author=who) as vault:
        _out().print(f"vault ready at [bold]{escape(str(vault.root))}[/]")


@cli.command()
@vault_option
@author_option
@click.option("--namespace", "-n", required=True, help="Namespace such as users/alice.")
@click.option("--title", help="Title; the file name is made from it.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for more).")
@click.option("--type", "type_", help="fact, preference, event, instruction, note, ...")
@click.option("--source", help="Where this was learned (provenance).")
@click.argument("body", required=False)
@_writing
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
    _print_table(table)
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
@click.option(
    "--since",
    metavar="WHEN",
    help="Only memories updated at or after WHEN: 2026-11-01, 2026-11-01T10:00, '2 days ago', yesterday, today.",
)
@click.option("--until", metavar="WHEN", help="Only memories updated at or before WHEN (a date: to its end).")
@click.option("-k", "k", default=10, show_default=True, type=click.IntRange(1, 1000), help="How many hits.")
@click.option("--messages", is_flag=True, help="Search conversation messages in sessions/ instead of memories.")
@click.option("--session", "session_id", help="With --messages: only this session.")
@_with_vault
def search(vault: Vault, as_json: bool, query: str, namespace: str | None, type_: str | None,
           tags: tuple[str, ...], since: str | None, until: str | None, k: int, messages: bool,
           session_id: str | None) -> None:  # fmt: skip
    """Search memories (or, with --messages, conversation messages) with a natural-language QUERY."""
    since, until = _dates(since, until)
    if messages or session_id:
        ignored = [name for name, value in (("--namespace", namespace), ("--type", type_), ("--tag", tags),
                                            ("--since", since), ("--until", until)) if value]  # fmt: skip
        if ignored:
            raise _BadValue(f"{', '.join(ignored)} filter memories, not messages; leave them out with "
                            "--messages/--session")  # fmt: skip
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
@click.option(
    "--since",
    metavar="WHEN",
    help="Only commits at or after WHEN: 2026-11-01, 2026-11-01T10:00, '2 days ago', yesterday, today.",
)
@click.option("--until", metavar="WHEN", help="Only commits at or before WHEN (a date: to its end).")
@click.option("-n", "limit", type=click.IntRange(1), help="At most this many commits.")
@_with_vault
def log(vault: Vault, as_json: bool, path: str | None, author: str | None, agent: str | None,
        session: str | None, since: str | None, until: str | None, limit: int | None) -> None:  # fmt: skip
    """Show who changed a memory (or the vault), when and why."""
    since, until = _dates(since, until)
    rel = vault.resolve(path)[1] if path else None
    revisions = vault.log(rel, author=author or agent, since=since, until=until,
                          limit=None if agent or session else limit)  # fmt: skip
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
        if r.shallow:
            out.print("[dim](older history is not in this shallow clone; `git fetch --unshallow` fetches it)[/]")


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
@author_option
@click.argument("path")
@click.option("--to", "rev", required=True, help="The revision to bring it back to.")
@_writing
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
    _print_table(table)


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
        click.echo(vault.read_bytes(chat.path).decode("utf-8", "replace"), nl=False)  # through the path gate
        return
    out = _out()
    items = chat.items(limit)
    for item in items:
        role = str(item.get("role") or item.get("type") or "item")
        text = text_of(item)
        out.print(f"[bold cyan]{escape(role)}[/]  {escape(text)}")


@cli.command()
@vault_option
@author_option
@click.argument("ref")
@_writing
def rm(vault: Vault, ref: str) -> None:
    """Delete a memory (it stays in history; `memfs restore` brings it back)."""
    store, rel = vault.resolve(ref)
    store.delete(rel)
    _out().print(f"deleted {escape(label(rel))}")


@cli.command()
@vault_option
@author_option
@click.argument("ref")
@click.argument("new_path")
@_writing
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
@author_option
@_writing
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
@author_option
@click.option(
    "--by", "by", metavar="NAME", help="Undo the newest change by this author (an agent's or a person's name or email)."
)
@click.option("--session", help="Undo the newest change made in this session.")
@_writing
def undo(vault: Vault, by: str | None, session: str | None) -> None:
    """Revert the newest change by an author or a session, as a new commit."""
    if not by and not session:
        raise click.UsageError("say whose change to undo: --by NAME or --session ID "
                               "(--author is who the undo is committed as)")  # fmt: skip
    undone = vault.undo(author=by, session=session)
    _out().print(f"undid {undone.short} {escape(undone.subject)} [dim]({escape(str(undone.author))})[/]")


@cli.command()
@vault_option
@author_option
@click.option("-m", "--message", help="The commit message (default: one naming the files).")
def commit(vault_path: Path, author: str | None, message: str | None) -> None:
    """Commit the edits people made outside memfs (in an editor, with cp...) as theirs."""
    if message is not None and not message.strip():
        raise _BadValue("the commit message is empty")
    _, given = _who(author, vault_path)
    with Vault.open(vault_path, person=given, commit_edits=False) as vault:
        before = vault.outside_edits()
        sha = vault.commit(message)
        left = set(vault.outside_edits())
        out = _out()
        if sha is None:
            out.print("nothing to commit" + (f"; {len(left)} files too large to commit" if left else ""))
            return
        done = [p for p in before if p not in left]
        for rel in done:
            out.print(f"[green]committed[/] {escape(rel)}")
        out.print(f"committed {len(done)} edit{'s' if len(done) != 1 else ''} as "
                  f"{escape(str(vault.person))} in {sha[:10]}")  # fmt: skip


@cli.command()
@vault_option
@author_option
@click.option(
    "--commit-delay",
    default=2.0,
    show_default=True,
    type=click.FloatRange(0),
    help="Seconds of quiet before edits are committed.",
)
@click.option("--polling", is_flag=True, help="Poll instead of native file events (network drives).")
def watch(vault_path: Path, author: str | None, commit_delay: float, polling: bool) -> None:
    """Watch the vault: index edits made in an editor at once, commit them under your name."""
    out = _out()
    colours = {"indexed": "cyan", "committed": "green", "problem": "red"}

    def report(kind: str, paths: list[str]) -> None:
        for path in paths:
            out.print(f"[{colours.get(kind, 'white')}]{kind:9}[/] {escape(path)}")

    _, given = _who(author, vault_path)
    with Vault.open(vault_path, person=given) as vault:
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
@author_option
@click.option("--full", is_flag=True, help="Rebuild the index from scratch.")
@_writing
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
    """Check the index against the files, git's state, uncommitted edits and malformed files."""
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
