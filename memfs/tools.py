"""File-style memory tools for agents, compatible with Anthropic's memory tool.

The agent sees a virtual folder ``/memories`` mapped onto one namespace of a vault (or onto
several, each a sub-folder). The commands and their wording follow the local-filesystem memory
tool in the ``anthropic`` SDK (``memory_20250818``), so a model trained on that tool needs no
adaptation; ``search``, ``history`` and ``restore`` are memfs's own. Every write goes through
the vault: atomic, committed with the tool and session in the trailers, searchable at once.

:meth:`MemoryTools.run` never raises for a bad call: the error comes back as the text the
model reads (``MemoryTools.call`` also says whether it was an error). Differences from the
reference implementation are listed in docs/tools.md. An answer quotes at most a short prefix
of any argument (:func:`~memfs.commands.echo`): a megabyte query never comes back into the model's context.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from . import lifecycle
from .commands import _BOOL, _INT, _STR
from .commands import ECHO_CHARS as ECHO_CHARS
from .commands import REGISTRY as REGISTRY
from .commands import Command as Command
from .commands import Parameter as Parameter
from .commands import ToolResult as ToolResult
from .commands import check_arguments as _check_arguments
from .commands import command as _command
from .commands import echo as _echo
from .commands import schema as _schema
from .content import MAX_CONTENT_BYTES
from .credentials import redact, redact_value
from .engine import engine_of
from .errors import (
    AlreadyExistsError,
    ConflictError,
    ConflictMarkersError,
    ContentError,
    DocumentError,
    FileTooLargeError,
    HistoryError,
    LockTimeoutError,
    MemfsError,
    NotFoundError,
    PathError,
    RepositoryStateError,
    RevisionNotFoundError,
    SearchIndexError,
    ToolCallError,
    ValidityError,
)
from .filetools import DATA_NOTE, PROPOSED_NOTE, FileCommands, _redaction_note
from .filetools import ROOT as ROOT
from .layout import MEMORIES_DIR, has_control, in_namespace, one_line
from .links import backlinks, outlinks
from .paths import clean_namespace, clean_relpath
from .proposals import Proposal
from .scopes import Scope, granted, readable
from .store import MemoryStore

log = logging.getLogger(__name__)

MAX_SEARCH_RESULTS = 50

#: What the search command says it does, by the vault's model: with one it ranks by meaning too.
SEARCH_BY_WORDS = "Search all memories for the words of a query; returns paths, titles and snippets."
SEARCH_BY_MEANING = (
    "Search all memories by meaning: finds memories that answer the query in other words too; "
    "returns paths, titles and snippets."
)


class MemoryTools(FileCommands):
    """Memory commands for an agent, scoped to part of a vault.

    Args:
        vault: The vault to work on.
        namespaces: The namespace ``/memories`` shows (``"users/alice"``), or several, each
            then a folder of ``/memories`` named after the namespace. Each may be a
            :class:`~memfs.scopes.Scope`, whose ``writable`` says whether writes may go there
            (a plain namespace, or ``writable=None``, is writable unless ``writable`` or
            ``read_only`` say otherwise), and whose ``propose`` grants proposing only there.
        session: The session id recorded in each commit's trailers, if known. Writes are an
            agent's: under the vault's review policy (or a proposing scope) they become proposals,
            which this session alone sees in ``view`` and ``search`` until a person accepts them.
        read_only: Offer only view, search and history.
        commands: An explicit list of commands to offer (overrides ``read_only``).
        max_bytes: The largest file a tool may write.
        overwrite: Let ``create`` replace an existing file (Anthropic's API documentation);
            by default it refuses, like the SDK's reference implementation.
        writable: The namespaces writes may go to (default: all of them); the others are read-only.
            A namespace below one of ``namespaces`` makes only that folder writable.
    """

    def __init__(
        self,
        vault: Any,
        namespaces: str | Scope | Sequence[str | Scope],
        *,
        session: str | None = None,
        read_only: bool = False,
        commands: Iterable[str] | None = None,
        max_bytes: int = MAX_CONTENT_BYTES,
        overwrite: bool = False,
        writable: Iterable[str] | None = None,
    ) -> None:
        given = [namespaces] if isinstance(namespaces, (str, Scope)) else list(namespaces)
        if not given:
            raise ValueError("MemoryTools needs at least one namespace")
        self.engine = engine_of(vault)
        allowed = None if writable is None else {clean_namespace(n) for n in writable}
        if allowed is not None:  # plain namespaces are writable only when they or a folder above are listed
            given = [g if isinstance(g, Scope) else Scope(g, _below_any(clean_namespace(g), allowed)) for g in given]
        scopes = granted(given, first=True, others=True)
        names = [s.namespace for s in scopes]
        nested = [Scope(n, True) for n in sorted(allowed or ()) if n not in names and _below_any(n, names)]
        #: The grants: every namespace shown, and whether writes may go there (the innermost decides).
        self.scopes: tuple[Scope, ...] = scopes + tuple(nested)
        self.namespaces = tuple(names)
        self.stores = {n: MemoryStore(self.engine, n, writer="agent", session=session) for n in self.namespaces}
        self.session = session
        chosen = tuple(commands) if commands is not None else (READ_COMMANDS if read_only else COMMANDS)
        unknown = [c for c in chosen if c not in REGISTRY]
        if unknown:
            raise ValueError(f"unknown commands {unknown}; choose from {list(COMMANDS)}")
        self.commands = tuple(c for c in COMMANDS if c in chosen)
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or not 0 < max_bytes <= MAX_CONTENT_BYTES:
            raise ValueError(f"max_bytes must be an integer from 1 to {MAX_CONTENT_BYTES}, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self.overwrite = overwrite
        self.writable = tuple(s.namespace for s in self.scopes if s.writable)
        self._seen: dict[str, str] = {}
        self._call = threading.local()  # what one call resolved (calls may run in several threads)

    # -- calling -----------------------------------------------------------------

    def run(self, command: str, **args: Any) -> str:
        """Run one command and return the text for the model (errors included)."""
        return self.call({"command": command, **args}).text

    def dispatch(self, name: str, arguments: Mapping[str, Any] | str | None) -> ToolResult:
        """Run a call by tool name: ``memory`` (with a ``command`` field) or ``memory_<command>``."""
        if isinstance(arguments, str):  # OpenAI sends arguments as a JSON string
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:
                return ToolResult(f"The arguments are not valid JSON: {exc}", True)
        args = dict(arguments) if isinstance(arguments, Mapping) else ({} if arguments is None else None)
        if args is None:
            return ToolResult("The arguments must be a JSON object.", True)
        if name.startswith("memory_") and name[7:] in REGISTRY:
            args["command"] = name[7:]
        elif name != "memory":
            return ToolResult(
                f"Unknown tool '{_echo(name)}'; the memory tools are named memory or memory_<command>.", True
            )
        return self.call(args)

    def call(self, arguments: Mapping[str, Any]) -> ToolResult:
        """Run a call given as one mapping with a ``command`` field."""
        if not isinstance(arguments, Mapping):
            return ToolResult("The arguments must be a JSON object.", True)
        args = dict(arguments)
        command = args.pop("command", None)
        self._call.targets = {}
        try:
            if not isinstance(command, str) or command not in self.commands:
                offered = ", ".join(self.commands)
                if isinstance(command, str) and command in REGISTRY:
                    raise ToolCallError(f"The {command} command is not allowed here; allowed commands: {offered}.")
                raise ToolCallError(f"Unknown command '{_echo(command)}'; the commands are: {offered}.")
            spec = REGISTRY[command]
            _check_arguments(spec, args)
            if spec.writes:
                for key in ("path", "old_path", "new_path"):
                    if key in args:
                        self._check_writable(args[key])
            # what the model reads never holds a credential, whatever a person left in a file
            answer = spec.handler(self, **args)
            if isinstance(answer, str):
                return ToolResult(redact(answer)[0])
            return ToolResult(redact(answer.text)[0], answer.is_error, redact_value(answer.data))
        except MemfsError as exc:
            return ToolResult(redact(self.explain(exc, command, args))[0], True)
        except Exception:  # a bug must not end the agent's turn: log it, tell the model
            log.exception("memory tool %r failed", command)
            return ToolResult(f"Error: the {command} command failed unexpectedly; the memory is unchanged.", True)
        finally:
            self._call.targets = None

    def explain(self, error: MemfsError, command: Any, args: Mapping[str, Any]) -> str:
        """The sentence a model reads for an error: what failed and what to do, in /memories paths only."""
        shown = next((str(args[k]) for k in ("path", "old_path") if isinstance(args.get(k), str)), ROOT)
        if isinstance(error, ToolCallError):
            return self._scrub(str(error))
        if isinstance(error, FileTooLargeError):
            return (
                f"The file {shown} is {error.size:,} bytes, larger than the {error.limit:,} bytes memory tools "
                "read; a person must shorten or remove it. Nothing was changed."
            )
        if isinstance(error, (ContentError, ValidityError)):
            return self._scrub(f"{error}. Nothing was written.".replace(".. ", ". "))
        if isinstance(error, RevisionNotFoundError):
            revision = str(args.get("revision", ""))
            try:
                self.engine.history.resolve(revision)
            except RevisionNotFoundError as bad:
                return f"Restore failed: {self._scrub(str(bad))}; history {shown} lists the revisions of that file."
            return f"{shown} did not exist at revision '{_echo(revision)}'; history {shown} lists its revisions."
        if isinstance(error, NotFoundError):
            return f"The path {shown} does not exist. Please provide a valid path."
        if isinstance(error, AlreadyExistsError):
            return self._scrub(f"Cannot use {args.get('new_path', shown)}: {error}.")
        if isinstance(error, ConflictMarkersError):
            return (
                f"The file {shown} holds unresolved merge conflict markers from a person's git merge or "
                "rebase; it cannot be changed until a person resolves them. Nothing was changed."
            )
        if isinstance(error, RepositoryStateError):
            return (
                f"Memories cannot be changed right now: a person's git {error.operation} is in progress in "
                "the memory's repository. Nothing was changed; try again later."
            )
        if isinstance(error, ConflictError):
            return (
                f"The file {shown} was changed (by a person or another agent) while you edited it. "
                "View it again, then make your edit."
            )
        if isinstance(error, PathError):
            return self._scrub(f"Invalid path: {error}")
        if isinstance(error, DocumentError):
            return f"The file {shown} is malformed: {self._scrub(error.reason)}."
        if isinstance(error, LockTimeoutError):
            return "The memory is busy (another writer holds it); nothing was changed. Try again in a moment."
        if isinstance(error, HistoryError):
            return f"The {command} command could not be recorded in the memory's history; nothing was changed."
        if isinstance(error, SearchIndexError):
            return "Search is unavailable for a moment while its index is rebuilt; try again."
        return f"Error: {self._scrub(str(error))}"

    # -- memfs's own commands ----------------------------------------------------

    @_command(
        "search",
        SEARCH_BY_WORDS,
        writes=False,
        native=False,
        query=(_STR, True, "What to look for, in plain words."),
        namespace=(_STR, False, "Only this sub-folder of /memories, e.g. travel."),
        type=(_STR, False, "Only memories of this type (fact, preference, instruction, ...)."),
        tag=(_STR, False, "Only memories with this tag, or a tag nested under it (project finds project/atlas)."),
        k=(_INT, False, f"How many results (1-{MAX_SEARCH_RESULTS}, default 5)."),
        history=(
            _BOOL,
            False,
            "Also find memories that no longer hold (superseded or expired), each "
            "with when it held. Default false: only current memories.",
        ),
    )
    def _search(
        self,
        query: str,
        namespace: str | None = None,
        type: str | None = None,
        tag: str | None = None,
        k: int = 5,
        history: bool = False,
    ) -> ToolResult:
        hits, scopes = self._hits(query, namespace, type, tag, k, history)
        # one search, two faces: the text the model reads and the same hits as data (MCP's structured content)
        data = {"query": redact(query)[0], "results": self._results(hits, history)}
        return ToolResult(self._search_text(query, hits, self._own_matches(query, scopes), history), data=data)

    def _search_text(self, query: str, hits: list[Any], own: list[Proposal], history: bool) -> str:
        """What the model reads of a search: the hits, then this session's proposals that match."""
        if not hits and not own:
            return f'No memories match "{_echo(query)}". Try other words, or view {ROOT} to browse.'
        if not hits:
            return self._own_lines(own)
        count = "1 memory matches" if len(hits) == 1 else f"{len(hits)} memories match"
        lines = [f'{count} "{_echo(query)}" ({DATA_NOTE}):']
        for i, hit in enumerate(hits, 1):
            facts = ", ".join(x for x in (hit.type, (hit.updated or "")[:10]) if x)
            shown = self._virtual(hit.path)
            shown = one_line(shown) if has_control(shown) else shown  # a name can never start a line of its own
            lines.append(f"{i}. {shown} — {one_line(hit.title)} ({facts}; score {hit.score:.2f})")
            if history:
                lines.append(f"   {self._held(hit)}")
            if hit.snippet:
                lines.append(f"   {one_line(hit.snippet)}")
        return "\n".join(lines) + ("\n" + self._own_lines(own) if own else "")

    def search_results(self, arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The hits of a ``search`` call as data (for structured tool output): path, title, type, dates, score, snippet.

        The arguments are checked as :meth:`call` checks them; paths are ``/memories`` paths and
        text is redacted as in the text answer. Raises :class:`~memfs.errors.MemfsError` on a bad call.
        A search :meth:`call` carries the same in its result's ``data``, from the search of its text.
        """
        args = dict(arguments)
        args.pop("command", None)
        _check_arguments(REGISTRY["search"], args)
        hits, _ = self._hits(
            args["query"],
            args.get("namespace"),
            args.get("type"),
            args.get("tag"),
            args.get("k", 5),
            args.get("history", False),
        )
        return self._results(hits, args.get("history", False))

    def _results(self, hits: list[Any], history: bool) -> list[dict[str, Any]]:
        """``hits`` as data, redacted as the text is."""
        results = []
        for hit in hits:
            found = {
                "path": self._virtual(hit.path),
                "title": hit.title,
                "type": hit.type,
                "updated": hit.updated,
                "score": round(float(hit.score), 4),
                "snippet": hit.snippet or "",
            }
            if history:
                found["state"] = getattr(hit, "state", None)
            results.append({k: redact(v)[0] if isinstance(v, str) else v for k, v in found.items()})
        return results

    def _hits(
        self, query: str, namespace: str | None, type: str | None, tag: str | None, k: int, history: bool
    ) -> tuple[list[Any], list[str]]:
        """The ranked hits of a search within this memory, and the namespaces searched."""
        if not 1 <= k <= MAX_SEARCH_RESULTS:
            raise ToolCallError(f"k must be from 1 to {MAX_SEARCH_RESULTS}, got {_echo(k)}.")
        scopes = list(self.namespaces)
        if namespace:
            try:
                inner = clean_relpath(namespace.strip("/").removeprefix("memories/"), what="namespace")
            except PathError as exc:
                raise ToolCallError(f"Invalid namespace: {exc}") from None
            if len(self.namespaces) == 1:
                scopes = [f"{self.namespaces[0]}/{inner}"]
            else:
                scopes = [inner] if any(inner == n or inner.startswith(n + "/") for n in self.namespaces) else []
                if not scopes:
                    raise ToolCallError(f"The namespace {_echo(namespace)} is outside your memory.")
        hits = []
        for scope in scopes:
            found = self.engine.catalog.search(
                query, k=k, namespace=scope, type=type, tags=[tag] if tag else [], history=history
            )
            # whatever search returned, only what lies in the folder asked for and in this memory
            hits += [h for h in found if in_namespace(h.path, scope) and readable(self.scopes, h.path)]
        return sorted(hits, key=lambda h: -h.score)[:k], scopes

    def _own_matches(self, query: str, scopes: Sequence[str]) -> list[Proposal]:
        """This session's proposed writes in ``scopes`` whose text holds a word of ``query`` (the index has none)."""
        if not self.session:
            return []
        words = {w for w in re.findall(r"\w+", query.lower()) if len(w) > 1}
        found: dict[str, Proposal] = {}
        for store in self.stores.values():
            for proposal in store.own_proposals():
                text = (proposal.text or "").lower()
                if (
                    proposal.action == "write"
                    and any(in_namespace(proposal.path, s) for s in scopes)
                    and readable(self.scopes, proposal.path)
                    and words & set(re.findall(r"\w+", text))
                ):
                    found[proposal.id] = proposal
        return list(found.values())

    def _own_lines(self, own: list[Proposal]) -> str:
        lines = [f"Your proposals that match ({PROPOSED_NOTE}):"]
        for proposal in own:
            shown = self._virtual(proposal.path)
            lines.append(f"- {one_line(shown)} ({proposal.op})")
        return "\n".join(lines)

    @_command(
        "history",
        "List the past versions of a memory file: revision, date, author and what changed.",
        writes=False,
        native=False,
        path=(_STR, True, "The file whose past versions to list."),
    )
    def _history(self, path: str) -> str:
        target = self._resolve(path)
        if target.is_root:
            raise ToolCallError("history takes a file, not the memory folder.")
        revisions = self.engine.history.log(self._rel(target))
        if not revisions:
            raise ToolCallError(f"The path {path} has no history.")
        lines = [f"History of {path} (newest first):"]
        for rev in revisions:
            tool = rev.trailers.get("Memfs-Tool")
            extra = f" [tool {tool}]" if tool else ""
            lines.append(f"{rev.short}  {rev.date[:19]}  {rev.author.name}  {self._scrub(rev.subject)}{extra}")
            if rev.shallow:
                lines.append("(older history is not available: the repository is a shallow clone)")
        return "\n".join(lines)

    @_command(
        "links",
        "List what a memory file links to ([[wikilinks]], embeds, Markdown links) and which memory "
        "files link to it. Broken links are named.",
        writes=False,
        native=False,
        path=(_STR, True, "The memory file, e.g. /memories/projects/atlas.md."),
    )
    def _links(self, path: str) -> str:
        target = self._resolve(path)
        if target.is_root or target.store is None:
            raise ToolCallError("links takes a memory file, not a folder.")
        rel = self._rel(target)
        if not self.engine.is_file(rel):
            raise ToolCallError(f"No memory at {path}. Use view {ROOT} to list what exists.")
        out = outlinks(self.engine, rel)
        back = [r for r in backlinks(self.engine, rel) if readable(self.scopes, r.source)]
        lines = [f"{path} links to:" if out else f"{path} links to nothing."]
        for found in out:
            written = f"[[{found.link.target}]]" if not found.link.markdown else f"({found.link.target})"
            if found.path is None:
                lines.append(f"- {one_line(written)}: broken (no such file)")
            elif readable(self.scopes, found.path):
                lines.append(f"- {self._virtual(found.path)} (as {one_line(written)})")
            else:
                lines.append(f"- {one_line(written)}: a file outside your memory")
        sources = list(dict.fromkeys(r.source for r in back if r.source != rel))
        lines.append(
            f"Linked from {len(sources)} memor{'y' if len(sources) == 1 else 'ies'}" + (":" if sources else ".")
        )
        lines += [f"- {self._virtual(source)}" for source in sources]
        return "\n".join(lines)

    @_command(
        "restore",
        "Bring a memory file back as it was at a revision listed by history.",
        writes=True,
        native=False,
        path=(_STR, True, "The file to bring back (it may have been deleted)."),
        revision=(_STR, True, "A revision id from the history command."),
    )
    def _restore(self, path: str, revision: str) -> str:
        target = self._resolve(path)
        if target.is_root:
            raise ToolCallError("restore takes a file, not the memory folder.")
        assert target.store is not None
        with self.engine.locked():
            proposal = target.store.restore_file(target.name, revision, trailers=self._trailers("restore"))
        self._seen.pop(self._rel(target), None)
        if proposal is not None:
            return (
                f"Proposed restoring {path} to revision {_echo(revision)}; until a person accepts it, {path} "
                f"stays as it is. (It is a proposal: {PROPOSED_NOTE}.)"
            )
        return f"Restored {path} to revision {_echo(revision)}."

    def _held(self, hit: Any) -> str:
        """When a hit held, as a model reads it in a search with history."""
        held = hit.validity
        span = f"from {held.start or 'the start'} until {held.end or 'now'}"
        if held.superseded_by is not None:
            found = self.engine.catalog.path_of(held.superseded_by)
            by = self._virtual(found) if found and readable(self.scopes, found) else held.superseded_by
            return f"[{hit.state}: held {span}; superseded by {by}]"
        return f"[{hit.state}: holds {span}]" if hit.state == lifecycle.CURRENT else f"[{hit.state}: {span}]"

    @_command(
        "supersede",
        "Replace a memory whose fact changed with a newer one. The old file stays as history "
        "(valid until now, superseded by the new one) and is no longer listed, searched or recalled. Give "
        "new_text for a new memory, or by_path for an existing one that replaces it.",
        writes=True,
        native=False,
        path=(_STR, True, "The memory that no longer holds, e.g. /memories/home-city.md."),
        new_text=(_STR, False, "The changed fact, as the new memory's text (it keeps the old title and type)."),
        by_path=(_STR, False, "Instead of new_text: an existing memory file that replaces it."),
    )
    def _supersede(self, path: str, new_text: str | None = None, by_path: str | None = None) -> str:
        if (new_text is None) == (by_path is None):
            raise ToolCallError(
                "supersede needs exactly one of new_text (the changed fact) or by_path (an existing "
                "memory that replaces it)."
            )
        target = self._resolve(path)
        if target.is_root:
            raise ToolCallError("supersede takes a memory file, not the memory folder.")
        assert target.store is not None
        if not target.name.endswith(".md") or not self._file(target).is_file():
            raise ToolCallError(f"The path {path} does not exist. Please provide a valid path.")
        by_name = None
        if by_path is not None:
            self._check_writable(by_path)
            by = self._resolve(by_path)
            same = by.store is not None and by.store.namespace == target.store.namespace  # not identity: see _resolve
            if not same or not by.name.endswith(".md") or not self._file(by).is_file():
                raise ToolCallError(
                    f"by_path must be an existing memory file in the same folder of your memory "
                    f"as {path}, got {_echo(by_path)}."
                )
            by_name = by.name
        with self.engine.locked():
            new = target.store.supersede(
                target.name,
                new_text,
                by=by_name,
                provenance="agent" if new_text else None,
                session=self.session if new_text else None,
                trailers=self._trailers("supersede"),
            )
        self._seen.pop(self._rel(target), None)
        shown = self._virtual(new.path)
        if new.proposal is not None:
            return (
                f"Proposed superseding {path} by {shown}; until a person accepts it, {path} still holds and is "
                f"listed and recalled. (It is a proposal: {PROPOSED_NOTE}.)"
            ) + (_redaction_note(new_text) if new_text else "")
        return (
            f"Superseded {path} by {shown}: {path} stays as history (valid until "
            f"{new.metadata.get('valid_from', 'now')}) and is no longer listed or recalled."
        ) + (_redaction_note(new_text) if new_text else "")

    def clear_all(self) -> str:
        """Delete every memory file this agent may write, in one commit a person can undo.

        What Anthropic's memory tool calls ``clear_all_memory``: every writable namespace is
        emptied (where writes are proposals, its deletions are proposed); the read-only ones are
        left as they are. The commit carries this session's trailers, so ``vault.undo(session=...)``
        or ``memfs undo`` brings everything back.
        """
        if not self.writable or "delete" not in self.commands:
            raise ToolCallError("Nothing in your memory is writable here; nothing was deleted.")
        trailers = {"Memfs-Op": "delete", **self._trailers("clear_all_memory")}
        with self.engine.locked(), self.engine.batch("memory: clear all memory", trailers=trailers):
            for namespace in self.writable:
                store = self.stores.get(namespace) or MemoryStore(
                    self.engine, namespace, writer="agent", session=self.session
                )
                if (self.engine.root / MEMORIES_DIR / namespace).is_dir():
                    store.delete_folder("", trailers=trailers)
        self._seen.clear()
        return "Every memory file you may write was deleted (one commit; a person can undo it)."

    # -- schemas -----------------------------------------------------------------

    def anthropic_tools(self, *, native: bool = True, single: bool = True) -> list[dict[str, Any]]:
        """Tool definitions for Anthropic's Messages API.

        ``native=True`` offers the built-in ``memory_20250818`` tool for its six commands (when
        all six are allowed) plus custom tools for search, history and restore. Otherwise every
        command is a custom tool: one ``memory`` tool with a ``command`` field (``single``), or
        one ``memory_<command>`` tool each.
        """
        if native and all(c in self.commands for c in NATIVE_COMMANDS):
            extra = [REGISTRY[c] for c in self.commands if c not in NATIVE_COMMANDS]
            return [{"type": "memory_20250818", "name": "memory"}] + [
                {"name": f"memory_{c.name}", "description": self._describe(c), "input_schema": _schema([c])}
                for c in extra
            ]
        return [
            {"name": name, "description": text, "input_schema": schema}
            for name, text, schema in self._definitions(single)
        ]

    def openai_tools(self, *, api: str = "responses", single: bool = True) -> list[dict[str, Any]]:
        """Function tools for OpenAI: ``api="responses"`` or ``api="chat"`` (Chat Completions)."""
        if api not in ("responses", "chat"):
            raise ValueError(f"api must be 'responses' or 'chat', got {api!r}")
        tools = []
        for name, text, schema in self._definitions(single):
            if api == "chat":
                function = {"name": name, "description": text, "parameters": schema}
                tools.append({"type": "function", "function": function})
            else:
                tools.append({"type": "function", "name": name, "description": text, "parameters": schema})
        return tools

    def openai_agents_tools(self, *, single: bool = False) -> list[Any]:
        """The commands as the OpenAI Agents SDK's ``FunctionTool`` s, for ``Agent(tools=...)``.

        One ``memory_<command>`` tool per command (``single=False``) or one ``memory`` tool with a
        ``command`` field, built from the same registry as :meth:`openai_tools`. Each runs in a
        worker thread; its errors reach the model as sentences (the text :meth:`run` returns).
        """
        try:
            from agents import FunctionTool
        except ImportError as exc:
            raise ImportError(
                "openai_agents_tools() needs the OpenAI Agents SDK: pip install 'memfs-vault[agents]'"
            ) from exc

        def invoker(name: str) -> Callable[[Any, str], Awaitable[str]]:
            async def invoke(context: Any, arguments: str) -> str:
                return (await asyncio.to_thread(self.dispatch, name, arguments)).text

            return invoke

        return [
            FunctionTool(
                name=name,
                description=text,
                params_json_schema=schema,
                on_invoke_tool=invoker(name),
                strict_json_schema=False,
            )
            for name, text, schema in self._definitions(single)
        ]

    def _definitions(self, single: bool) -> list[tuple[str, str, dict[str, Any]]]:
        offered = [REGISTRY[c] for c in self.commands]
        if single:
            text = "Your long-term memory: Markdown files under /memories. Commands:\n" + "\n".join(
                f"- {c.name}: {self._describe(c)}" for c in offered
            )
            return [("memory", text, _schema(offered, with_command=True))]
        return [(f"memory_{c.name}", self._describe(c), _schema([c])) for c in offered]

    def _describe(self, command: Command) -> str:
        """What the model reads of a command: search says "by meaning" only when this vault has a model."""
        if command.name == "search" and self.engine.catalog.vectors is not None:
            return SEARCH_BY_MEANING
        return command.description


COMMANDS = tuple(REGISTRY)
READ_COMMANDS = tuple(c for c in COMMANDS if not REGISTRY[c].writes)
WRITE_COMMANDS = tuple(c for c in COMMANDS if REGISTRY[c].writes)
NATIVE_COMMANDS = tuple(c for c in COMMANDS if REGISTRY[c].native)


def _below_any(namespace: str, folders: Iterable[str]) -> bool:
    """True when ``namespace`` is one of ``folders`` or lies below one (whole path components)."""
    return any(namespace == f or namespace.startswith(f + "/") for f in folders)
