"""Conversation managers: what of a long session the model sees, recorded in the transcript.

The transcript keeps the whole conversation. A manager decides the *managed view* (what the model
is sent) and writes its decisions into the same file as entries a person can read: ``window``
("messages 1-40 are out of the model's view") and ``summary`` ("summary of messages 1-40", the
summary text itself). The view is rebuilt from the file alone, in any process:
the newest summary (if any) and then every item after the last entry the manager removed.

Cuts never separate a tool call from its result, in any of the four item families memfs keeps:
OpenAI Responses (``function_call`` / ``function_call_output``), Chat Completions (assistant
``tool_calls`` / ``tool`` messages), Anthropic (``tool_use`` / ``tool_result`` blocks) and Strands
(``toolUse`` / ``toolResult``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from . import transcript
from .errors import ContextWindowOverflowError, InvalidArgumentError, ModelError
from .items import Item, summary_item, text_of, tool_links

if TYPE_CHECKING:
    from .models import Model

log = logging.getLogger(__name__)

DECISION_KINDS = ("window", "summary", "truncate")
TOOL_PAIR_MARGIN = 64  # items read before a window, so a cut can keep a tool call with its result

DEFAULT_SUMMARY_PROMPT = """You summarize a conversation between a user and an AI assistant so that the
assistant can continue it without the original messages. Write in the third person, as bullet points,
under these headings:

## Topics
## Tools executed and their results
## Code and technical facts (names, numbers, paths, decisions)
## Key insights and open questions

Keep every fact the assistant may need later; drop greetings and repetition."""


class ConversationManager(Protocol):
    """What every manager offers: the Strands shape, deciding on a transcript's managed view.

    A manager never writes: it looks at the view and returns a :class:`Decision`, which the
    session records in the transcript (so the next view, in any process, reflects it).
    """

    removed_message_count: int

    def apply_management(self, view: View) -> Decision | None:
        """Called after each turn: a decision that brings the view within bounds, or None."""

    def reduce_context(self, view: View, error: BaseException | None = None) -> Decision:
        """Called on a context overflow: a decision that frees room, or ContextWindowOverflowError."""

    def get_state(self) -> dict[str, Any]:
        """The manager's state, JSON-serialisable."""

    def restore(self, view: View) -> list[Item]:
        """Rebuild the state from a view read from the transcript alone; returns the view's items."""


@dataclass(frozen=True)
class Decision:
    """What a manager decided, as the transcript entry that records it.

    Attributes:
        kind: ``window`` (the view starts at ``meta["start"]``), ``summary`` (a summary replaces
            the messages of ``meta["range"]``) or ``truncate`` (the tool result at
            ``meta["position"]`` is shortened to ``meta["keep"]`` characters in the view).
        meta: The machine-readable fields of the entry.
        text: What a person reading the transcript sees.
        item: The item the entry holds (a summary's message); None for a plain note.
    """

    kind: str
    meta: dict[str, Any]
    text: str
    item: Item | None = None

    def __post_init__(self) -> None:
        if self.kind not in DECISION_KINDS:
            raise InvalidArgumentError(f"unknown kind of manager decision {self.kind!r}; one of {DECISION_KINDS}")

    def entry_item(self) -> Item:
        """The item the transcript entry stores."""
        if self.item is not None:
            return dict(self.item)
        return {"role": "user" if self.kind == "summary" else "memfs", "content": self.text}


@dataclass
class View:
    """The managed view of a session, rebuilt from its transcript.

    Attributes:
        items: What the model sees: the summary (as a user message) if any, then the kept items.
        positions: The transcript positions of the kept items (not of the summary).
        summary: The text of the summary in effect, if any.
        summary_range: The first and last positions it covers.
        removed: How many conversation items managers removed from the view so far.
        truncated: Positions of tool results shortened in the view, with the characters kept.
        next_position: The position the next entry will take.
        skipped: Items at the start of the view that were not read (a read bounded to what the
            manager needs, on a transcript with no manager entry): ``items`` holds the rest.
    """

    items: list[Item] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    summary: str | None = None
    summary_range: tuple[int, int] | None = None
    removed: int = 0
    truncated: dict[int, int] = field(default_factory=dict)
    next_position: int = 1
    skipped: int = 0

    @property
    def offset(self) -> int:
        """1 when the view starts with a summary, else 0."""
        return 1 if self.summary is not None else 0


def read_view(fd: int, limit: int | None = None) -> View:
    """The managed view of the transcript open at ``fd``, rebuilt from its entries.

    It reads back only to the newest ``window`` or ``summary`` entry a manager wrote (and to the
    first item that entry keeps), so its cost does not grow with the length of the session. With
    ``limit``, a manager needs only the latest ``limit`` items: on a transcript without manager
    entries (a long session a manager was never attached to) it stops once it has them, and the
    items before are counted in ``View.skipped``, not read. Whether any manager entry lies further
    back is found by a byte search, not by parsing; if one may, the view is read in full.
    """
    if limit == 0:  # the manager looks at nothing: only where the next entry goes
        last, _, _ = transcript.read_tail(fd, 1)
        return View(next_position=last[-1].n + 1 if last else 1, skipped=last[-1].n if last else 0)
    count = 64 if limit is None else max(2, min(64, limit + 1))
    while True:
        entries, _, _ = transcript.read_tail(fd, count)
        marks = [e for e in entries if e.kind in ("window", "summary")]
        start = int(marks[-1].meta.get("start", 1)) if marks else 1
        if (marks and entries[0].n <= start) or len(entries) < count or entries[0].n <= 1:
            return build_view(entries)
        if limit is not None and not marks and sum(e.kind == "item" for e in entries) >= limit:
            if not transcript.kinds_before(fd, entries[0].offset):
                view = build_view(entries)
                view.skipped = entries[0].n - 1  # entries before these are all items
                return view
            limit = None  # a manager entry may lie further back: read back to it
        count *= 4


def extend_view(view: View, items: Sequence[Item]) -> View:
    """The view once ``items`` are appended (from ``view.next_position`` on), as a read would build it."""
    out = View(
        list(view.items),
        list(view.positions),
        view.summary,
        view.summary_range,
        view.removed,
        dict(view.truncated),
        view.next_position + len(items),
        view.skipped,
    )
    opened: set[str] = set()
    for item in view.items:
        opened |= tool_links(item)[0]
    for offset, item in enumerate(items):
        calls, results = tool_links(item)
        if results - opened:  # its call is not in the view: a read leaves it out too
            continue
        opened |= calls
        out.items.append(item)
        out.positions.append(view.next_position + offset)
    return out


def items_needed(manager: Any) -> int | None:
    """How many of the latest items ``manager.apply_management`` needs to see (None: the whole view).

    A manager says so with an ``items_needed()`` method; one without it gets the whole view.
    """
    method = getattr(manager, "items_needed", None)
    needed = method() if callable(method) else None
    if needed is None:
        return None
    if not isinstance(needed, int) or isinstance(needed, bool) or needed < 0:
        raise InvalidArgumentError(f"items_needed() must return a non-negative integer or None, got {needed!r}")
    return needed


def build_view(entries: Sequence[transcript.Entry]) -> View:
    """The managed view from a transcript's entries (its tail back to the newest manager entry)."""
    marks = [e for e in entries if e.kind in ("window", "summary")]
    record = marks[-1] if marks else None
    start = int(record.meta.get("start", 1)) if record is not None else 1
    view = View(next_position=entries[-1].n + 1 if entries else 1)
    if record is not None:
        view.removed = int(record.meta.get("removed", 0))
        view.truncated = {int(k): int(v) for k, v in (record.meta.get("truncated") or {}).items()}
        if record.kind == "summary":
            view.summary = text_of(record.item)
            first, last = record.meta.get("range", (1, 1))
            view.summary_range = (int(first), int(last))
            view.items = [record.item]
    for entry in entries:
        if entry.kind == "truncate" and (record is None or entry.n > record.n):
            view.truncated[int(entry.meta["position"])] = int(entry.meta.get("keep", 200))
    opened: set[str] = set()
    for entry in entries:
        if entry.kind == "item" and entry.n >= start:
            calls, results = tool_links(entry.item)
            if results - opened:  # its call was cut before it arrived: leave both out of the view
                continue
            opened |= calls
            view.items.append(_shortened(entry.item, view.truncated.get(entry.n)))
            view.positions.append(entry.n)
    return view


def _shortened(item: Item, keep: int | None) -> Item:
    """A tool result cut down to ``keep`` characters, for the view only."""
    if keep is None:
        return item
    text = json.dumps(item, ensure_ascii=False)
    note = f"[tool result shortened for the context window: first {keep} of {len(text)} characters] "
    for key in ("output", "content"):
        if isinstance(item.get(key), str):
            return {**item, key: note + item[key][:keep]}
    return {**item, "content": note + text[:keep]} if "content" in item else item


# -- tool pairs ---------------------------------------------------------------------------


def valid_cuts(items: Sequence[Mapping[str, Any]]) -> list[bool]:
    """``cuts[i]`` is True when keeping ``items[i:]`` leaves no tool result without its call."""
    links = [tool_links(item) for item in items]
    n = len(items)
    cuts = [True] * (n + 1)
    # a cut at i is invalid if some result at j >= i answers a call at k < i
    call_at: dict[str, int] = {}
    for index, (calls, _) in enumerate(links):
        for call in calls:
            call_at.setdefault(call, index)
    for j, (_, results) in enumerate(links):
        for result in results:
            k = call_at.get(result)
            if k is not None and k < j:
                for i in range(k + 1, j + 1):
                    cuts[i] = False
    return cuts


def find_cut(items: Sequence[Mapping[str, Any]], at_least: int, at_most: int | None = None) -> int | None:
    """The first valid cut from ``at_least`` (keep ``items[cut:]``), or None if there is none."""
    cuts = valid_cuts(items)
    stop = len(items) if at_most is None else min(at_most, len(items))
    for i in range(max(0, at_least), stop + 1):
        if cuts[i]:
            return i
    return None


# -- selectors and managers --------------------------------------------------------------


def _check_int(name: str, value: Any, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise InvalidArgumentError(f"{name} must be an integer of at least {minimum}, got {value!r}")
    return value


class MessageWindow:
    """A plain selector: the last ``size`` items, moved later if needed to keep tool pairs whole."""

    def __init__(self, size: int) -> None:
        self.size = _check_int("size", size, 0)

    def select(self, items: Sequence[Item]) -> list[Item]:
        """The window of ``items``."""
        cut = find_cut(items, len(items) - self.size) if len(items) > self.size else 0
        return list(items[cut:]) if cut is not None else []


class _Managed:
    """Shared by the managers: the state, and the decision that cuts the view."""

    removed_message_count: int

    def __init__(self) -> None:
        self.removed_message_count = 0
        self.summary: str | None = None

    def items_needed(self) -> int | None:
        """How many of the latest items :meth:`apply_management` needs to see (None: the whole view)."""
        return None

    def get_state(self) -> dict[str, Any]:
        """The state: the manager's name, how many messages it removed, its latest summary."""
        return {
            "__name__": type(self).__name__,
            "removed_message_count": self.removed_message_count,
            "summary": self.summary,
        }

    def restore(self, view: View) -> list[Item]:
        """Rebuild the state from a view read from the transcript alone; returns the view's items."""
        self.removed_message_count = view.removed
        self.summary = view.summary
        return view.items

    def _cut(self, view: View, cut: int, reason: str) -> Decision:
        """The decision that the view now starts at ``view.items[cut]`` (a summary before it drops out)."""
        index = max(0, cut - view.offset)
        start = view.positions[index] if index < len(view.positions) else view.next_position
        self.removed_message_count = view.removed + view.skipped + index
        self.summary = view.summary if cut < 1 else None
        meta = {
            "start": start,
            "removed": self.removed_message_count,
            "drop_summary": view.summary is not None and cut >= 1,
            "reason": reason,
            "manager": type(self).__name__,
            "truncated": _still_truncated(view, start),
        }
        return Decision("window", meta, f"Messages before {start} are out of the model's view ({reason}).")


class NullConversationManager(_Managed):
    """Keeps everything; on overflow it can only give up."""

    def items_needed(self) -> int:
        """It looks at nothing."""
        return 0

    def apply_management(self, view: View) -> Decision | None:
        """Nothing to do."""
        return None

    def reduce_context(self, view: View, error: BaseException | None = None) -> Decision:
        """Raise: a null manager never removes anything."""
        raise ContextWindowOverflowError("the conversation overflowed and NullConversationManager removes nothing")


class SlidingWindowConversationManager(_Managed):
    """The model sees the last ``window_size`` messages, tool pairs kept whole.

    Args:
        window_size: How many messages the model sees at most.
        should_truncate_results: On overflow, first shorten large tool results in the older half
            of the view (in the view only: the transcript keeps them whole), then drop messages.
        truncated_size: The characters of a tool result kept when it is shortened.
    """

    def __init__(
        self, window_size: int = 40, *, should_truncate_results: bool = True, truncated_size: int = 200
    ) -> None:
        super().__init__()
        self.window_size = _check_int("window_size", window_size, 1)
        self.should_truncate_results = bool(should_truncate_results)
        self.truncated_size = _check_int("truncated_size", truncated_size, 0)

    def items_needed(self) -> int:
        """The window, and room before it to keep a tool call with its result."""
        return self.window_size + TOOL_PAIR_MARGIN

    def apply_management(self, view: View) -> Decision | None:
        """Slide the window if the view is longer than ``window_size``."""
        items = view.items
        if len(items) <= self.window_size:
            return None
        cut = find_cut(items, len(items) - self.window_size)
        return self._cut(view, cut, f"window of {self.window_size}") if cut else None

    def reduce_context(self, view: View, error: BaseException | None = None) -> Decision:
        """Shorten an old large tool result if allowed, else drop the oldest messages."""
        items = view.items
        if self.should_truncate_results:
            half = len(view.positions) // 2 or len(view.positions)
            for index, position in enumerate(view.positions[:half]):
                item = items[index + view.offset]
                if tool_links(item)[1] and position not in view.truncated and _size(item) > 2 * self.truncated_size:
                    return Decision(
                        "truncate",
                        {"position": position, "keep": self.truncated_size},
                        f"The tool result of message {position} is shortened in the view.",
                    )
        at_least = 2 if len(items) <= self.window_size else len(items) - self.window_size
        cut = find_cut(items, at_least, len(items) - 1)
        if cut is None:
            raise ContextWindowOverflowError(
                f"cannot reduce the context: no cut after {at_least} of {len(items)} messages keeps every tool "
                "call with its result"
            ) from error
        return self._cut(view, cut, "overflow")


class TokenWindowConversationManager(_Managed):
    """The model sees the latest messages that fit in ``max_tokens``.

    Args:
        max_tokens: The token budget of the view.
        tokenizer: ``None`` for a dependency-free estimate (about four characters a token),
            ``"tiktoken"`` for OpenAI's tokenizer when installed, or a callable ``str -> int``.
    """

    def __init__(self, max_tokens: int, *, tokenizer: str | Callable[[str], int] | None = None) -> None:
        super().__init__()
        self.max_tokens = _check_int("max_tokens", max_tokens, 1)
        self.count = _tokenizer(tokenizer)

    def tokens(self, item: Mapping[str, Any]) -> int:
        """The tokens an item costs (its JSON, plus a few for the message wrapper)."""
        return self.count(json.dumps(item, ensure_ascii=False)) + 4

    def items_needed(self) -> int:
        """More items than the budget can hold (each costs at least 4 tokens), and room for tool pairs."""
        return self.max_tokens // 4 + 1 + TOOL_PAIR_MARGIN

    def apply_management(self, view: View) -> Decision | None:
        """Drop the oldest messages until the view fits the budget."""
        items = view.items
        costs = [self.tokens(i) for i in items]
        running = sum(costs)
        at_least = 0
        while at_least < len(items) and running > self.max_tokens:
            running -= costs[at_least]
            at_least += 1
        cut = find_cut(items, at_least) if at_least else 0
        return self._cut(view, cut, f"token budget of {self.max_tokens}") if cut else None

    def reduce_context(self, view: View, error: BaseException | None = None) -> Decision:
        """Halve the budget's use: drop the oldest half of the view."""
        cut = find_cut(view.items, max(1, len(view.items) // 2), len(view.items) - 1)
        if cut is None:
            raise ContextWindowOverflowError("cannot reduce the context: no cut keeps every tool call whole") from error
        return self._cut(view, cut, "overflow")


class SummarizingConversationManager(_Managed):
    """Older messages are replaced in the view by a summary the ``summarizer`` model writes.

    Args:
        summarizer: The model that writes summaries (required).
        summary_ratio: The share of the view to summarize each time, clamped to 0.1-0.8.
        preserve_recent_messages: Messages at the end that are never summarized.
        max_messages: ``apply_management`` summarizes when the view grows past this many.
        prompt: The system prompt for the summarizer.
    """

    def __init__(
        self,
        summarizer: Model | None = None,
        *,
        summary_ratio: float = 0.3,
        preserve_recent_messages: int = 10,
        max_messages: int = 40,
        prompt: str = DEFAULT_SUMMARY_PROMPT,
    ) -> None:
        super().__init__()
        if summarizer is None or not callable(getattr(summarizer, "complete", None)):
            raise InvalidArgumentError(
                "SummarizingConversationManager needs a summarizer: a Model with a complete() method"
            )
        if isinstance(summary_ratio, bool) or not isinstance(summary_ratio, (int, float)):
            raise InvalidArgumentError(f"summary_ratio must be a number, got {summary_ratio!r}")
        self.summarizer = summarizer
        self.summary_ratio = min(0.8, max(0.1, float(summary_ratio)))
        self.preserve_recent_messages = _check_int("preserve_recent_messages", preserve_recent_messages, 0)
        self.max_messages = _check_int("max_messages", max_messages, 2)
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidArgumentError("prompt must be a non-empty string")
        self.prompt = prompt

    def apply_management(self, view: View) -> Decision | None:
        """Summarize when the view is longer than ``max_messages``."""
        return self.reduce_context(view) if len(view.items) > self.max_messages else None

    def reduce_context(self, view: View, error: BaseException | None = None) -> Decision:
        """Summarize the oldest ``summary_ratio`` of the view (an earlier summary included)."""
        items = view.items
        wanted = max(1, int(len(items) * self.summary_ratio))
        limit = len(items) - self.preserve_recent_messages
        if limit < 1:
            raise ContextWindowOverflowError(
                f"cannot summarize: {len(items)} messages, and the last {self.preserve_recent_messages} are kept"
            ) from error
        cut = find_cut(items, min(wanted, limit), limit)
        if cut is None or cut < 1:
            raise ContextWindowOverflowError(
                "cannot summarize: no cut before the preserved messages keeps every tool call with its result"
            ) from error
        chunk = items[:cut]
        request = [
            {
                "role": "user",
                "content": "Summarize this conversation:\n\n"
                + "\n".join(json.dumps(i, ensure_ascii=False) for i in chunk),
            }
        ]
        try:
            reply = self.summarizer.complete(request, system=self.prompt)
        except Exception as exc:
            name = exc.__class__.__name__
            raise ModelError(f"the summarizer failed ({name}: {exc}); the transcript is unchanged") from exc
        text = (getattr(reply, "text", "") or "").strip()
        if not text:
            raise ModelError("the summarizer returned an empty summary; the transcript is unchanged")
        covered = view.positions[: max(0, cut - view.offset)]
        first = view.summary_range[0] if view.summary_range else (covered[0] if covered else view.next_position)
        last = covered[-1] if covered else (view.summary_range[1] if view.summary_range else first)
        index = cut - view.offset
        start = view.positions[index] if index < len(view.positions) else view.next_position
        self.removed_message_count = view.removed + len(covered)
        self.summary = f"Summary of messages {first}-{last}:\n\n{text}"
        meta = {
            "range": [first, last],
            "start": start,
            "removed": self.removed_message_count,
            "manager": type(self).__name__,
            "truncated": _still_truncated(view, start),
        }
        return Decision("summary", meta, self.summary, summary_item(self.summary, chunk))


def _still_truncated(view: View, start: int) -> dict[str, int]:
    """The shortened tool results a new window or summary entry carries over (those it keeps)."""
    return {str(p): k for p, k in view.truncated.items() if p >= start}


def _size(item: Mapping[str, Any]) -> int:
    return len(json.dumps(item, ensure_ascii=False))


def _tokenizer(tokenizer: str | Callable[[str], int] | None) -> Callable[[str], int]:
    if tokenizer is None:
        return lambda text: max(1, (len(text) + 3) // 4)
    if tokenizer == "tiktoken":
        try:
            import tiktoken
        except ImportError as exc:
            raise InvalidArgumentError("tokenizer='tiktoken' needs the tiktoken package: pip install tiktoken") from exc
        encoding = tiktoken.get_encoding("cl100k_base")
        return lambda text: len(encoding.encode(text))
    if callable(tokenizer):
        return tokenizer
    raise InvalidArgumentError(f"tokenizer must be None, 'tiktoken' or a callable, got {tokenizer!r}")
